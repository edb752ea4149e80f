// What each model step is shown when Intercom returned only the newest parts of a long conversation.
import { coverageContext, draftContext, planContext } from '../../src/workflows/contexts';
import { newState } from '../../src/workflows/turn-state';

function stateWithOmitted(omitted: number) {
  const state = newState({ conversationId: '4242' }, '2026-11-22T00:00:00.000Z');
  state.messages = [{ role: 'user', content: 'When will I get paid?' }];
  state.metadata.omitted_parts = omitted;
  state.hops.push({ plan: null, gather: null, coverage: null });
  return state;
}

test('every step is told how many earlier parts Intercom left out, so a truncated list is not taken for the whole', () => {
  const state = stateWithOmitted(20);
  for (const context of [planContext(state, 1), coverageContext(state, 1), draftContext(state)]) {
    expect(context.earlier_parts_omitted).toBe(20);
  }
});

test('a conversation Intercom returned whole adds nothing to what the model reads', () => {
  const state = stateWithOmitted(0);
  for (const context of [planContext(state, 1), coverageContext(state, 1), draftContext(state)]) {
    expect(context).not.toHaveProperty('earlier_parts_omitted');
  }
});
