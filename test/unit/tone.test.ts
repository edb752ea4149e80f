// Tone: what the sandbox's plan reads in a talent's own words, and when Melvin hands a conversation over because of it.
import { DEFAULT_TONE_HANDOVER } from '../../src/contract/shared';
import type { PlanOutput } from '../../src/contract/schemas';
import { NEUTRAL_TONE, type AgentState, type Tone } from '../../src/contract/state';
import { newState } from '../../src/workflows/records/turn-state';
import { complains, toneHandoverReason } from '../../src/workflows/routing/tone';
import { sandboxReasoning } from '../../sandbox/model/reasoning';

const toneOf = (text: string): Tone =>
  (sandboxReasoning('plan', { messages: [{ role: 'user', content: text }] }) as PlanOutput).tone;

function stateAfter(tone: Tone, earlierComplaints: number): AgentState {
  const state = newState({ conversationId: '1' }, '2026-11-27T00:00:00.000Z');
  state.hops.push({
    plan: { user_query: 'q', tone, reasoning: '', tool_calls: [] },
    gather: null,
    coverage: null,
  });
  for (let i = 0; i < earlierComplaints + 1; i++) {
    state.metadata.conversation.turns.push({
      run_id: `r${i}`,
      ended_at: '2026-11-26T00:00:00.000Z',
      melvin_status: 'success',
      escalation_source: null,
      part_ids: [],
      // One earlier turn without a complaint, which does not count.
      ...(i < earlierComplaints ? { complained: true } : {}),
    });
  }
  return state;
}

describe('the sandbox plan reads emotions and urgency with the words behind them', () => {
  test.each([
    ['This is unacceptable, I want my money', 'angry', 'strong', 'unacceptable'],
    ['WHERE IS MY PAY for the Reno shift', 'angry', 'strong', 'WHERE IS MY PAY'],
    ["I'm fed up with asking about my payout", 'frustrated', 'strong', 'fed up'],
    ['This is the third time I ask about my application', 'frustrated', 'strong', 'third time'],
    ['Still waiting on my pay for the warehouse shift', 'frustrated', 'mild', 'Still waiting'],
    ['I still haven’t been paid for Tuesday', 'frustrated', 'mild', 'still haven’t'],
    ["I'm worried my bank details are wrong", 'anxious', 'mild', 'worried'],
    ["I don't understand the payout schedule", 'confused', 'mild', "don't understand"],
  ])('"%s" reads %s (%s), from "%s"', (text, emotion, intensity, phrase) => {
    expect(toneOf(text).emotions).toContainEqual({ emotion, intensity, phrase });
  });

  test.each([
    'Is my payment still processing?',
    'When will I get paid for the Austin shift?',
    'How do I update my W-9 and ACH details?',
    'Where is the Denver shift? Is it still on?',
  ])('"%s" is no complaint', (text) => {
    expect(complains(toneOf(text))).toBe(false);
  });

  test('urgency comes from the words that show it', () => {
    expect(toneOf('My rent is due tomorrow, when will I get paid?')).toMatchObject({
      urgency: 'high',
      urgency_phrases: ['rent is due'],
    });
    expect(toneOf('No rush, but when is the next payout?')).toMatchObject({ urgency: 'low' });
    expect(toneOf('When is the next payout?')).toEqual(NEUTRAL_TONE);
  });
});

describe('tone hands a conversation over', () => {
  const angry: Tone = { ...NEUTRAL_TONE, emotions: [{ emotion: 'angry', intensity: 'strong', phrase: 'a scam' }] };
  const mild: Tone = {
    ...NEUTRAL_TONE,
    emotions: [{ emotion: 'frustrated', intensity: 'mild', phrase: 'still waiting' }],
  };

  test('on strong frustration or anger when configured, saying the words behind it', () => {
    expect(toneHandoverReason(stateAfter(angry, 0), { strong: true, complaints: 3 })).toBe('strongly angry: “a scam”');
    // Off by default: an angry talent whose question the data answers gets the answer.
    expect(toneHandoverReason(stateAfter(angry, 0), DEFAULT_TONE_HANDOVER)).toBeNull();
  });

  test('on the third complaining turn, not the first or second; never when switched off', () => {
    expect(toneHandoverReason(stateAfter(mild, 0), DEFAULT_TONE_HANDOVER)).toBeNull();
    expect(toneHandoverReason(stateAfter(mild, 1), DEFAULT_TONE_HANDOVER)).toBeNull();
    expect(toneHandoverReason(stateAfter(mild, 2), DEFAULT_TONE_HANDOVER)).toBe(
      'complaint 3 in this conversation: “still waiting”',
    );
    expect(toneHandoverReason(stateAfter(mild, 2), { strong: true, complaints: 0 })).toBeNull();
    expect(toneHandoverReason(stateAfter(mild, 1), { strong: true, complaints: 2 })).not.toBeNull();
  });

  test('a turn that does not complain is answered, however many complaints came before', () => {
    expect(toneHandoverReason(stateAfter(NEUTRAL_TONE, 5), DEFAULT_TONE_HANDOVER)).toBeNull();
    const grateful: Tone = {
      ...NEUTRAL_TONE,
      emotions: [{ emotion: 'grateful', intensity: 'mild', phrase: 'thanks' }],
    };
    expect(toneHandoverReason(stateAfter(grateful, 5), DEFAULT_TONE_HANDOVER)).toBeNull();
  });
});
