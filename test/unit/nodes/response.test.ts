// Response on its own: the reply's delivery into the state, and where the turn goes once it is out (or not).
import { escalation } from '../../../src/workflows/routing/routing';
import { afterReply, recordDelivery, undeliveredNote } from '../../../src/workflows/nodes/response';
import { freshState } from './fixtures';

const partial = escalation('partial_answer', 'one question (contract)');

test.each([
  [true, null, 'finalize', undefined],
  [true, partial, 'escalate', 'partial_answer'],
  // A partial answer that did not reach the user is not one: the undelivered note already gave the team everything.
  [false, partial, 'finalize', undefined],
  [false, null, 'finalize', undefined],
])('delivered %s with partial %j goes to %s', (delivered, open, next, kind) => {
  const state = freshState();
  recordDelivery(state, Date.now(), delivered ? { part_id: 'part-9' } : { error: 'Intercom 500' });
  const step = afterReply({ state, partial: open });
  expect(step.next).toBe(next);
  expect(step.escalation?.kind).toBe(kind);
});

test('an operator’s escalation while the reply went out wins, once', () => {
  const state = freshState();
  recordDelivery(state, Date.now(), { part_id: 'part-9' });
  state.metadata.forced_escalation = {
    reason: 'VIP',
    requested_by: 'lead@example.com',
    received_at: '2026-11-28T10:00:01.000Z',
    handled: false,
  };
  expect(afterReply({ state, partial })).toMatchObject({ next: 'escalate', escalation: { kind: 'operator' } });
  expect(state.metadata.forced_escalation.handled).toBe(true);
  expect(afterReply({ state, partial: null })).toEqual({ next: 'finalize' });
});

test('an undelivered reply is recorded with its error, and the team’s note carries the draft', () => {
  const state = freshState();
  state.response = 'Your payout is on Friday.';
  recordDelivery(state, Date.now(), { error: 'Intercom 500' });
  expect(state.response_delivery).toMatchObject({ delivery_successful: false, delivery_error: 'Intercom 500' });
  expect(undeliveredNote(state)).toContain('Intercom 500');
  expect(undeliveredNote(state)).toContain('Your payout is on Friday.');
});
