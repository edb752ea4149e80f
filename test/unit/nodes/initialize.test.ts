// Initialize on its own: whether the turn has anything to answer, from the conversation's owner and its ledger.
import fc from 'fast-check';
import { planUnlessNothingToAnswer } from '../../../src/workflows/nodes/initialize';
import { stateWithMessages } from './fixtures';

const partIds = (n: number) => Array.from({ length: n }, (_, i) => `p${i + 1}`);

test('a user message no turn answered goes to Plan', () => {
  const state = stateWithMessages(['When is my payout?']);
  expect(planUnlessNothingToAnswer({ state, fetchedUserPartIds: ['p1'] })).toEqual({ next: 'plan' });
});

test('the team owning the conversation ends the turn, saying why', () => {
  const state = stateWithMessages(['Hello?']);
  state.metadata.conversation.ownership = {
    owner: 'team',
    since: '2026-11-28T09:00:00.000Z',
    reason: 'a teammate replied in Intercom',
    team_told_of_new_messages: false,
  };
  expect(planUnlessNothingToAnswer({ state, fetchedUserPartIds: ['p1'] })).toEqual({ next: 'end' });
  expect(state.metadata.skipped_reason).toContain('the team owns the conversation (a teammate replied in Intercom)');
});

test('messages of files only go to the team, named', () => {
  const state = stateWithMessages(['contract.pdf', 'payslip.png'], [0, 1]);
  const step = planUnlessNothingToAnswer({ state, fetchedUserPartIds: ['p1', 'p2'] });
  expect(step.next).toBe('escalate');
  expect(step.escalation).toMatchObject({ kind: 'attachment_only', source: 'initialization' });
  expect(step.escalation!.reason).toContain('contract.pdf, payslip.png');
});

test('runs recorded before the ledger take the latest message: one by Melvin leaves nothing to answer', () => {
  const state = stateWithMessages(['Thanks']);
  state.messages.push({ role: 'assistant', content: 'You are welcome.' });
  expect(planUnlessNothingToAnswer({ state, fetchedUserPartIds: [], legacy: true })).toEqual({ next: 'end' });
});

test('whatever the ledger holds: Plan exactly when some message is unanswered and not files only', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 6 }).chain((n) =>
        fc.record({
          n: fc.constant(n),
          handled: fc.subarray(partIds(n)),
          files: fc.subarray(Array.from({ length: n }, (_, i) => i)),
        }),
      ),
      ({ n, handled, files }) => {
        const state = stateWithMessages(
          partIds(n).map((id) => `message ${id}`),
          files,
        );
        state.metadata.conversation.handled_part_ids = [...handled];
        const step = planUnlessNothingToAnswer({ state, fetchedUserPartIds: partIds(n) });
        const unanswered = partIds(n).filter((id) => !handled.includes(id));
        const readable = unanswered.filter((id) => !files.includes(Number(id.slice(1)) - 1));
        if (!unanswered.length) expect(step).toEqual({ next: 'end' });
        else if (!readable.length) expect(step.escalation?.kind).toBe('attachment_only');
        else expect(step).toEqual({ next: 'plan' });
      },
    ),
  );
});
