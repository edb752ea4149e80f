// One workflow for the life of a conversation, on a real Temporal dev server: approval and shadow modes, telling the
// user of a hand-over, and a run cancelled from Temporal.
import { decideReply } from '../../src/operations/conversations';
import { DEFAULT_HANDOVER_MESSAGE, workflowIdFor } from '../../src/contract/shared';
import type { AgentState } from '../../src/contract/state';
import {
  answersPayments,
  newConversation,
  recordHistory,
  routesToTeam,
  testbed,
  useConversationTestbed,
  withConversation,
} from '../helpers/conversation-testbed';
import { waitFor } from '../helpers/runtime';
import { withoutRunMaps } from '../helpers/sandbox';
import { PAY_REPLY } from '../helpers/turns';

useConversationTestbed(760);

describe('approval and shadow modes', () => {
  const APPROVE = { replyMode: 'approve' as const, approvalTimeoutSeconds: 600 };
  /** A payment question in approval mode, run until its draft waits for a decision; then `body`. */
  const withWaitingDraft = (
    body: (id: string, c: { turnOver(turns: number): Promise<AgentState> }) => Promise<void>,
  ): Promise<void> => {
    const id = newConversation();
    return withConversation(
      id,
      async (c) => {
        answersPayments();
        await c.deliver();
        await waitFor(
          'the draft to wait for a decision',
          async () => (await c.state()).metadata.approval?.outcome === 'waiting',
        );
        await body(id, c);
      },
      APPROVE,
    );
  };

  test('approve sends the draft; the decision and who made it are in the state', async () => {
    await withWaitingDraft(async (id, c) => {
      expect(testbed.sandbox.intercom.replies(id)).toEqual([]);
      expect(withoutRunMaps(testbed.sandbox.intercom.notes(id)).at(-1)).toContain(`✋ Melvin's draft waits for a lead`);

      await expect(decideReply(testbed.env.client, id, { decision: 'approve', by: 'lead@team' })).resolves.toEqual({
        accepted: 'approve',
      });
      const state = await c.turnOver(1);
      expect(testbed.sandbox.intercom.replies(id)).toEqual([PAY_REPLY]);
      expect(state.metadata.approval).toMatchObject({ outcome: 'approved', decided_by: 'lead@team' });
      expect(state.finalize?.melvin_status).toBe('success');
      // Nothing waits any more: a second decision is refused by the update's validator, and changes nothing.
      await expect(decideReply(testbed.env.client, id, { decision: 'approve', by: 'lead@team' })).rejects.toThrow(
        /no draft .* is waiting/,
      );
    });
  });

  test('edit sends the lead’s text instead; a malformed decision is refused with why', async () => {
    await withWaitingDraft(async (id, c) => {
      await expect(
        decideReply(testbed.env.client, id, { decision: 'edit', text: ' ', by: 'lead@team' }),
      ).rejects.toThrow(/an edit needs the text/);
      const edited = 'Your $240 payment is on its way and should arrive on November 27.';
      await decideReply(testbed.env.client, id, { decision: 'edit', text: edited, by: 'lead@team' });
      const state = await c.turnOver(1);
      expect(testbed.sandbox.intercom.replies(id)).toEqual([edited]);
      expect(state.metadata.approval).toMatchObject({ outcome: 'edited', draft: PAY_REPLY });
      // A run with a refused and an accepted update, for the determinism gate.
      await recordHistory(id, state.metadata.conversation.turns[0]!.run_id, 'conversation-approval-edit');
    });
  });

  test('reject keeps the draft from the user and hands the conversation to the team', async () => {
    await withWaitingDraft(async (id, c) => {
      await decideReply(testbed.env.client, id, { decision: 'reject', reason: 'Wrong shift', by: 'lead@team' });
      const state = await c.turnOver(1);
      expect(testbed.sandbox.intercom.replies(id)).toEqual([DEFAULT_HANDOVER_MESSAGE]);
      expect(state.escalate).toMatchObject({
        escalation_source: 'operator',
        escalation_reason: 'Draft rejected: Wrong shift',
        requested_by: 'lead@team',
      });
      expect(state.metadata.approval).toMatchObject({ outcome: 'rejected', reason: 'Wrong shift' });
      expect(state.metadata.conversation.ownership.owner).toBe('team');
    });
  });

  test('no decision before the timeout hands the conversation to the team', async () => {
    const id = newConversation();
    await withConversation(
      id,
      async (c) => {
        answersPayments();
        await c.deliver();
        const state = await c.turnOver(1);
        expect(state.metadata.approval).toMatchObject({ outcome: 'timed_out' });
        expect(state.escalate).toMatchObject({ escalation_source: 'operator', requested_by: 'approval timeout' });
        expect(testbed.sandbox.intercom.replies(id)).toEqual([DEFAULT_HANDOVER_MESSAGE]);
        expect(testbed.sandbox.intercom.melvinStatus(id)).toBe('ROUTE_TO_TEAM');
      },
      { replyMode: 'approve', approvalTimeoutSeconds: 2 },
    );
  });

  test('shadow mode notes the draft and never replies', async () => {
    const id = newConversation();
    await withConversation(
      id,
      async (c) => {
        answersPayments();
        await c.deliver();
        const state = await c.turnOver(1);
        expect(testbed.sandbox.intercom.replies(id)).toEqual([]);
        expect(withoutRunMaps(testbed.sandbox.intercom.notes(id)).at(-1)).toBe(
          `👁 Shadow mode: Melvin would have replied:\n${PAY_REPLY}`,
        );
        expect(state.metadata.approval).toMatchObject({ mode: 'shadow', outcome: 'noted' });
        expect(state.metadata.skipped_reason).toContain('shadow mode');
      },
      { replyMode: 'shadow' },
    );
  });
});

describe('the user is told of a hand-over', () => {
  test('once, even when Intercom accepted the first attempt and its answer was lost; the note says so', async () => {
    const id = newConversation({ author: 'user', type: 'comment', body: 'Can I talk to a real person please?' });
    await withConversation(id, async (c) => {
      testbed.sandbox.intercom.faults.set({ reply: [{ status: 500, after_accept: true }] });
      routesToTeam();
      await c.deliver();
      const state = await c.turnOver(1);

      expect(testbed.sandbox.intercom.requests.filter((r) => r.operation === 'reply').map((r) => r.status)).toEqual([
        500,
      ]);
      expect(testbed.sandbox.intercom.replies(id)).toEqual([DEFAULT_HANDOVER_MESSAGE]);
      expect(withoutRunMaps(testbed.sandbox.intercom.notes(id))).toEqual([
        "🚨 Escalation: User requested to talk to a human\nThe model's explanation: scripted: the user asks for a person\n" +
          `Open for the team:\n- question: “Wants a human”\nThe talent wrote:\n- “Can I talk to a real person please?”\n` +
          `The user was told: "${DEFAULT_HANDOVER_MESSAGE}"`,
      ]);
      expect(state.escalate?.user_told).toMatchObject({ sent: true, text: DEFAULT_HANDOVER_MESSAGE });
    });
  });

  test('when the message cannot be delivered, the note asks the team to reply', async () => {
    const id = newConversation({ author: 'user', type: 'comment', body: 'Can I talk to a real person please?' });
    await withConversation(id, async (c) => {
      testbed.sandbox.intercom.faults.set({ reply: [{ status: 422 }] });
      routesToTeam();
      await c.deliver();
      const state = await c.turnOver(1);

      expect(testbed.sandbox.intercom.replies(id)).toEqual([]);
      expect(withoutRunMaps(testbed.sandbox.intercom.notes(id))).toEqual([
        expect.stringMatching(/could not be told a person will follow up \(.*422.*\): please reply to them\.$/),
      ]);
      expect(state.escalate?.user_told).toMatchObject({ sent: false, error: expect.stringContaining('422') });
    });
  });
});

test('a run cancelled from Temporal during its turn still notes the conversation and sets Melvin Status', async () => {
  const id = newConversation();
  await withConversation(id, async (c) => {
    testbed.sandbox.model.faults.set({ plan: [{ delay_ms: 30_000 }] });
    answersPayments();
    await c.deliver();
    await waitFor('the plan request', () => testbed.sandbox.model.requests.length > 0);
    const handle = testbed.env.client.workflow.getHandle(workflowIdFor(id));
    await handle.cancel();

    await expect(handle.result()).rejects.toThrow(/cancelled/i);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expect(withoutRunMaps(testbed.sandbox.intercom.notes(id))).toEqual([
      `🚨 Escalation: The run was cancelled in Temporal before Melvin finished\nRequested by: temporal\nOpen for the team:\n- “When will I get paid?”\nThe user was told: "${DEFAULT_HANDOVER_MESSAGE}"`,
    ]);
    expect(testbed.sandbox.intercom.melvinStatus(id)).toBe('ROUTE_TO_TEAM');
    expect(testbed.sandbox.intercom.replies(id)).toEqual([DEFAULT_HANDOVER_MESSAGE]);
  });
});
