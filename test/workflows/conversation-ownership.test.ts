// One workflow for the life of a conversation, on a real Temporal dev server: who owns it after a hand-over, an
// operator's escalation, and a teammate acting in Intercom.
import { sendTeamAction } from '../../src/operations/conversations';
import { DEFAULT_HANDOVER_MESSAGE, workflowIdFor } from '../../src/contract/shared';
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

useConversationTestbed(730);

describe('ownership', () => {
  test('after a hand-over the team owns the conversation: redeliveries change nothing, new messages get one note, no reply until handBack', async () => {
    const id = newConversation({ author: 'user', type: 'comment', body: 'Can I talk to a real person please?' });
    await withConversation(id, async (c) => {
      routesToTeam();
      await c.deliver();
      const escalated = await c.turnOver(1);
      expect(testbed.sandbox.intercom.replies(id)).toEqual([DEFAULT_HANDOVER_MESSAGE]);
      expect(escalated.metadata.conversation.ownership).toMatchObject({
        owner: 'team',
        reason: 'User requested to talk to a human',
      });
      const notesAfterEscalation = withoutRunMaps(testbed.sandbox.intercom.notes(id));

      await c.deliver();
      expect((await c.state()).metadata.user_messages).toHaveLength(1);
      expect(withoutRunMaps(testbed.sandbox.intercom.notes(id))).toEqual(notesAfterEscalation);

      const hello = await c.userWrites('Hello? Anyone there?');
      const again = await c.userWrites('Still waiting.');
      await waitFor('the messages to be handed over', async () => {
        const ledger = (await c.state()).metadata.conversation.handled_part_ids;
        return ledger.includes(hello) && ledger.includes(again);
      });
      expect(testbed.sandbox.intercom.replies(id)).toEqual([DEFAULT_HANDOVER_MESSAGE]);
      expect(withoutRunMaps(testbed.sandbox.intercom.notes(id))).toEqual([
        ...notesAfterEscalation,
        expect.stringMatching(/^💬 The user wrote again\. The team owns this conversation since .* \(User requested/),
      ]);
      expect(testbed.sandbox.model.requests.filter((r) => r.step === 'plan')).toHaveLength(1);

      await c.handBack({ reason: 'Sorted the contract question', requestedBy: 'lead@team' });
      answersPayments();
      await c.userWrites('Thanks! And when will I get paid?');
      const answered = await c.turnOver(2);

      expect(testbed.sandbox.intercom.replies(id)).toEqual([DEFAULT_HANDOVER_MESSAGE, PAY_REPLY]);
      expect(answered.metadata.conversation.ownership).toMatchObject({
        owner: 'melvin',
        reason: 'Sorted the contract question (lead@team)',
      });
      // The first run: an escalated turn, a redelivery, two messages for the team, handBack, continue-as-new.
      await recordHistory(id, answered.metadata.conversation.turns[0]!.run_id, 'conversation-hand-over-and-back');
    });
  });

  test('a MESSAGE_FAILED turn hands the conversation to the team, and its redelivery changes nothing', async () => {
    const id = newConversation();
    await withConversation(id, async (c) => {
      testbed.sandbox.intercom.faults.set({ reply: [{ status: 422 }] });
      answersPayments();
      await c.deliver();
      const failed = await c.turnOver(1);
      expect(failed.finalize?.melvin_status).toBe('MESSAGE_FAILED');
      expect(failed.metadata.conversation.ownership.owner).toBe('team');
      const requests = testbed.sandbox.intercom.requests.length;

      await c.deliver();

      expect((await c.state()).metadata.user_messages).toHaveLength(1);
      expect(testbed.sandbox.intercom.requests).toHaveLength(requests);
    });
  });

  test('an operator escalates between turns: the reply stands, the team gets the note and ROUTE_TO_TEAM', async () => {
    const id = newConversation();
    await withConversation(id, async (c) => {
      answersPayments();
      await c.deliver();
      await c.turnOver(1);

      await c.escalate({ reason: 'VIP talent', requestedBy: 'lead@team' });
      await waitFor(
        'the escalation to be final',
        async () => (await c.state()).finalize?.melvin_status === 'ROUTE_TO_TEAM',
      );

      const state = await c.state();
      expect(testbed.sandbox.intercom.replies(id)).toEqual([PAY_REPLY, DEFAULT_HANDOVER_MESSAGE]);
      expect(withoutRunMaps(testbed.sandbox.intercom.notes(id)).filter((n) => n.startsWith('🚨'))).toEqual([
        `🚨 Escalation: VIP talent\nRequested by: lead@team\nStage: awaiting payment (from the records: payment processing)\nThe user was told: "${DEFAULT_HANDOVER_MESSAGE}"`,
      ]);
      expect(testbed.sandbox.intercom.melvinStatus(id)).toBe('ROUTE_TO_TEAM');
      expect(state.escalate).toMatchObject({ escalation_source: 'operator', requested_by: 'lead@team' });
      expect(state.metadata.path.slice(-3)).toEqual(['escalate', 'finalize', 'end']);
      expect(state.metadata.conversation).toMatchObject({
        turn_count: 1,
        ownership: { owner: 'team' },
        turns: [expect.objectContaining({ melvin_status: 'ROUTE_TO_TEAM', escalation_source: 'operator' })],
      });
    });
  });
});

describe('a teammate acting in Intercom', () => {
  const teamAction = (id: string, action: 'replied' | 'assigned' | 'closed', toMelvin?: boolean) =>
    sendTeamAction(testbed.env.client, id, { notificationId: `admin-${id}-${action}-${toMelvin}`, action, toMelvin });

  test('a teammate’s reply stops Melvin; assigning the conversation to Melvin gives it back', async () => {
    const id = newConversation();
    await withConversation(id, async (c) => {
      answersPayments();
      await c.deliver();
      await c.turnOver(1);

      await teamAction(id, 'replied');
      const ignored = await c.userWrites('Thanks, and the tax form?');
      await waitFor('the message to be handed over', async () =>
        (await c.state()).metadata.conversation.handled_part_ids.includes(ignored),
      );
      expect(testbed.sandbox.intercom.replies(id)).toEqual([PAY_REPLY]);
      expect(withoutRunMaps(testbed.sandbox.intercom.notes(id)).filter((n) => n.startsWith('💬'))).toEqual([
        expect.stringContaining('(a teammate replied in Intercom)'),
      ]);

      await teamAction(id, 'assigned', true);
      answersPayments();
      await c.userWrites('Sorry, when will I get paid again?');
      const answered = await c.turnOver(2);
      expect(testbed.sandbox.intercom.replies(id)).toEqual([PAY_REPLY, PAY_REPLY]);
      expect(answered.metadata.conversation.ownership).toMatchObject({
        owner: 'melvin',
        reason: 'assigned to Melvin in Intercom',
      });
    });
  });

  test('a teammate who replies while Melvin drafts keeps the conversation: Melvin’s draft goes to a note', async () => {
    const id = newConversation();
    await withConversation(id, async (c) => {
      testbed.sandbox.model.faults.set({ draft: [{ delay_ms: 1500 }] });
      answersPayments();
      await c.deliver();
      await waitFor('the draft request', () => testbed.sandbox.model.requests.some((r) => r.step === 'draft'));
      await teamAction(id, 'replied');
      const state = await c.turnOver(1);

      expect(testbed.sandbox.intercom.replies(id)).toEqual([]);
      expect(withoutRunMaps(testbed.sandbox.intercom.notes(id)).at(-1)).toBe(
        // Intercom's plain text puts each paragraph on a line of its own, with no blank line between.
        `ℹ️ A teammate took over while Melvin was answering, so Melvin did not send its reply.\nDrafted reply:\n${PAY_REPLY}\n` +
          'The talent wrote:\n- “When will I get paid?”',
      );
      expect(state.metadata.skipped_reason).toContain('a teammate took over');
      expect(state.metadata.conversation.turns[0]).toMatchObject({ melvin_status: 'ROUTE_TO_TEAM' });
      // The team has it: Melvin Status says so, and a teammate is on it, so it is not snoozed.
      expect(testbed.sandbox.intercom.melvinStatus(id)).toBe('ROUTE_TO_TEAM');
      expect(testbed.sandbox.intercom.snoozedUntil(id)).toBeNull();
    });
  });

  test('closing the conversation in Intercom ends its workflow', async () => {
    const id = newConversation();
    await withConversation(id, async (c) => {
      answersPayments();
      await c.deliver();
      await c.turnOver(1);
      await teamAction(id, 'closed');
      const outcome = await testbed.env.client.workflow.getHandle(workflowIdFor(id)).result();
      expect(outcome).toMatchObject({ ended_because: 'closed by the team', turns: 1, owner: 'team' });
      const state = await c.turnOver(1);
      expect(state.metadata.conversation.ownership).toMatchObject({
        owner: 'team',
        reason: 'a teammate closed the conversation in Intercom',
      });
    });
  });
});
