// One workflow for the life of a conversation, on a real Temporal dev server: its turns, memory across them, and the
// quiet end.
import { workflowIdFor } from '../../src/contract/shared';
import { turnOver } from '../../src/operations/conversations';
import {
  answersPayments,
  newConversation,
  sourceId,
  testbed,
  useConversationTestbed,
  withConversation,
} from '../helpers/conversation-testbed';
import { waitFor } from '../helpers/runtime';
import { PAY_REPLY } from '../helpers/turns';

useConversationTestbed(700);

describe('turns of one conversation', () => {
  test('a message that arrives after a turn found nothing to answer is answered by the next turn', async () => {
    const id = newConversation(
      { author: 'user', type: 'comment', body: 'When will I get paid?' },
      { author: 'bot', type: 'comment', body: PAY_REPLY },
    );
    await withConversation(id, async (c) => {
      await c.deliver();
      const skipped = await c.turnOver(1);
      // A new workflow learns from Intercom that Melvin's reply came after the user's message: it was answered.
      expect(skipped.metadata.skipped_reason).toBe(
        'every message of the user was answered or handed over by an earlier turn',
      );

      answersPayments();
      const partId = await c.userWrites('Sorry, when was that again?');
      const answered = await c.turnOver(2);

      expect(testbed.sandbox.intercom.replies(id)).toEqual([PAY_REPLY]);
      expect(answered.metadata.conversation.turns.map((t) => t.melvin_status)).toEqual(['skipped', 'success']);
      expect(answered.metadata.conversation.turns[1]!.part_ids).toEqual([partId]);
      expect(answered.metadata.trigger).toMatchObject({ topic: 'conversation.user.replied' });
    });
  });

  test('a workflow that starts afresh for a conversation a teammate holds in Intercom leaves it to the team', async () => {
    // The conversation's last workflow ended after its quiet period; a teammate still has it assigned in Intercom.
    const id = newConversation();
    testbed.sandbox.intercom.mustGet(id).admin_assignee_id = 990001;
    // The team's note is held in the sandbox: the turn is over, but the run is not idle until the note is out and the
    // message marked handled, and a caller waiting for the turn must not read the state in between.
    testbed.sandbox.gates.arm({ at: 'intercom:note' });
    await withConversation(id, async (c) => {
      await c.deliver();
      await waitFor("the team's note to be held", () => testbed.sandbox.gates.status().held === 'intercom:note');
      const early = turnOver(testbed.env.client, id, { turns: 1, timeoutMs: 1_500 });
      await expect(early).rejects.toThrow('did not finish turn 1 in time');
      testbed.sandbox.gates.release();
      const state = await c.turnOver(1);
      expect(state.metadata.skipped_reason).toBe(
        'the team owns the conversation (assigned to a teammate in Intercom (admin 990001)): Melvin does not answer',
      );
      expect(state.metadata.conversation.ownership).toMatchObject({ owner: 'team' });
      expect(state.metadata.conversation.handled_part_ids).toContain(sourceId(id));
      expect(testbed.sandbox.intercom.replies(id)).toEqual([]);
      expect(testbed.sandbox.model.requests).toEqual([]);
    });
  });

  test('a redelivered message already answered is ignored by the workflow itself', async () => {
    const id = newConversation();
    await withConversation(id, async (c) => {
      answersPayments();
      await c.deliver();
      await c.turnOver(1);
      const requests = testbed.sandbox.intercom.requests.length;

      // Another ingress replica, or a restart: the same message arrives under a new notification id.
      await c.deliver();
      await c.deliver(sourceId(id));

      const state = await c.state();
      expect(state.metadata.conversation.turn_count).toBe(1);
      expect(state.metadata.user_messages).toHaveLength(1);
      expect(testbed.sandbox.intercom.requests).toHaveLength(requests);
      expect(testbed.sandbox.intercom.replies(id)).toEqual([PAY_REPLY]);
    });
  });
});

test('memory across turns: a follow-up reuses fresh data and sees the earlier answer; stale data is fetched again', async () => {
  const id = newConversation();
  const paymentCalls = () => testbed.sandbox.talent.calls.filter((c) => c.tool === 'get_user_payments').length;
  await withConversation(
    id,
    async (c) => {
      answersPayments();
      await c.deliver();
      const first = await c.turnOver(1);
      expect(paymentCalls()).toBe(1);

      answersPayments();
      await c.userWrites('And how much is it again?');
      const second = await c.turnOver(2);
      expect(paymentCalls()).toBe(1);
      const reused = second.hops[0]!.gather!.tool_results[0]!;
      expect(reused).toMatchObject({ tool_name: 'get_user_payments', success: true, execution_time_ms: 0 });
      expect(reused.reused_from).toBe(first.hops[0]!.gather!.tool_results[0]!.timestamp);
      expect(second.tool_data.get_user_payments!.data).toEqual(first.tool_data.get_user_payments!.data);
      const earlier = [{ asked: 'Pay', answered: PAY_REPLY, escalated: null }];
      const [plan2, draft2] = ['plan', 'draft'].map(
        (step) => testbed.sandbox.model.requests.filter((r) => r.step === step)[1]!.context,
      );
      expect(plan2!.earlier_turns).toEqual(earlier);
      expect(draft2!.earlier_turns).toEqual(earlier);

      await new Promise((resolve) => setTimeout(resolve, 3_100));
      answersPayments();
      await c.userWrites('Is it still processing?');
      const third = await c.turnOver(3);
      expect(paymentCalls()).toBe(2);
      expect(third.hops[0]!.gather!.tool_results[0]!.reused_from).toBeUndefined();
      expect(third.metadata.conversation.fresh_results).toHaveLength(1);
    },
    { toolResultTtl: { default_seconds: 3, per_tool: {} } },
  );
});

test('the workflow ends once the conversation has been quiet for the quiet period', async () => {
  const id = newConversation();
  await withConversation(
    id,
    async (c) => {
      answersPayments();
      await c.deliver();
      // The result is compact: how the workflow ended and its last turn; the state stays behind the query.
      const outcome = await testbed.env.client.workflow.getHandle(workflowIdFor(id)).result();
      expect(outcome).toEqual({
        conversation_id: id,
        ended_because: 'quiet period passed',
        turns: 1,
        owner: 'melvin',
        last_turn: expect.objectContaining({ melvin_status: 'success', answered: PAY_REPLY }),
      });
      expect(JSON.stringify(outcome).length).toBeLessThan(2000);
      await expect(c.turnOver(1)).resolves.toMatchObject({ response: PAY_REPLY });
    },
    { quietPeriodSeconds: 2 },
  );
});
