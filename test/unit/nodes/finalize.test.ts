// Escalate's record and Finalize on their own: the hand-over into the state, and the Melvin Status of every outcome.
import fc from 'fast-check';
import { ESCALATION_KINDS } from '../../../src/contract/state';
import { recordEscalation } from '../../../src/workflows/nodes/escalate';
import { finalStatus, recordFinalize } from '../../../src/workflows/nodes/finalize';
import { ESCALATION_TABLE, escalation } from '../../../src/workflows/routing/routing';
import { freshState } from './fixtures';

test('every outcome ends with its status: the escalation’s row, else whether the reply reached the user', () => {
  fc.assert(
    fc.property(fc.option(fc.constantFrom(...ESCALATION_KINDS)), fc.boolean(), (kind, delivered) => {
      const state = freshState();
      state.response_delivery = delivered
        ? {
            delivery_attempted: true,
            status_updated: false,
            delivery_successful: true,
            delivery_error: null,
            delivery_time_ms: 5,
            part_id: 'part-1',
          }
        : null;
      if (kind) recordEscalation(state, escalation(kind, 'detail'), null, { added: true, error: null });
      const expected = kind ? ESCALATION_TABLE[kind].status : delivered ? 'success' : 'MESSAGE_FAILED';
      expect(finalStatus(state)).toBe(expected);
    }),
  );
});

test('Finalize records which of its two writes took, and why the other did not', () => {
  const state = freshState();
  recordFinalize(state, 'success', 300, { status: 'fulfilled', value: null }, { status: 'rejected', reason: 'x' });
  expect(state.finalize).toMatchObject({
    melvin_status: 'success',
    status_updated: true,
    conversation_snoozed: false,
    snooze_duration_seconds: 300,
  });
  expect(state.finalize!.error).toContain('x');
});
