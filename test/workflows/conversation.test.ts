// One workflow for the life of a conversation, on a real Temporal dev server: turns, the ledger, ownership, quiet end.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { loadTurnConfig } from '../../src/config';
import {
  type TurnOptions,
  decideReply,
  deliverUserMessage,
  forceEscalation,
  handBack,
  sendTeamAction,
  turnOptions,
  turnOver,
} from '../../src/conversations';
import { DEFAULT_HANDOVER_MESSAGE } from '../../src/shared';
import { workflowIdFor } from '../../src/shared';
import type { AgentState } from '../../src/state';
import type { ScenarioConversation } from '../../sandbox/scenario';
import { coverage, draft, plan } from '../helpers/model-answers';
import { quietRuntime, waitFor } from '../helpers/runtime';
import { ANA, ANA_TALENT, PAY_REPLY, startTestbed } from '../helpers/turns';
import { withoutRunMaps } from '../helpers/sandbox';

quietRuntime();

const HOUR = 3600;
const RECORD_HISTORIES = process.env.RECORD_HISTORIES === '1';

let testbed: Awaited<ReturnType<typeof startTestbed>>;
let nextConversation = 700;

beforeAll(async () => {
  testbed = await startTestbed();
}, 180_000);

afterAll(() => testbed?.close());

beforeEach(() => testbed.sandbox.reset());

function newConversation(...parts: ScenarioConversation['parts']): string {
  const id = String(nextConversation++);
  testbed.sandbox.seed({
    conversation: {
      id,
      contact: ANA,
      parts: parts.length ? parts : [{ author: 'user', type: 'comment', body: 'When will I get paid?' }],
    },
    talent: ANA_TALENT,
  });
  return id;
}

/** The id of the conversation's first message, which a `conversation.user.created` notification is about. */
function sourceId(id: string): string {
  return testbed.sandbox.intercom.mustGet(id).source.id;
}

/** With RECORD_HISTORIES=1, commits one run's history for the determinism gate (test/workflows/replay.test.ts). */
async function recordHistory(id: string, runId: string, name: string): Promise<void> {
  if (!RECORD_HISTORIES) return;
  const history = await testbed.env.client.workflow.getHandle(workflowIdFor(id), runId).fetchHistory();
  writeFileSync(path.join(__dirname, '..', 'histories', `${name}.json`), `${historyToJSON(history)}\n`);
}

function answersPayments(): void {
  testbed.sandbox.model
    .script('plan', plan('Pay', ['get_user_payments']))
    .script('coverage', coverage(true))
    .script('draft', draft(PAY_REPLY));
}

function routesToTeam(): void {
  testbed.sandbox.model
    .script('plan', plan('Wants a human'))
    .script('coverage', coverage(true))
    .script('draft', draft('Let me connect you with the team.', 'ROUTE_TO_TEAM'));
}

/**
 * Runs `body` with a worker serving one conversation, with the default turn options but for `options` (and an hour's
 * quiet period).
 * `deliver` sends a notification as the ingress does (for `partId`, or for the first message when none is given).
 */
async function withConversation(
  id: string,
  body: (c: {
    deliver(partId?: string): Promise<void>;
    userWrites(text: string): Promise<string>;
    turnOver(turns: number): Promise<AgentState>;
    state(): Promise<AgentState>;
  }) => Promise<void>,
  options: Partial<TurnOptions> = {},
): Promise<void> {
  const { env, sandbox, workflowBundle } = testbed;
  const taskQueue = `conversation-${id}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle,
    activities: sandbox.activities,
  });
  let deliveries = 0;
  const deliver = async (partId?: string) => {
    deliveries += 1;
    await deliverUserMessage(
      env.client,
      {
        conversationId: id,
        trigger: {
          topic: deliveries === 1 ? 'conversation.user.created' : 'conversation.user.replied',
          notificationId: `notif-${id}-${deliveries}`,
          receivedAt: new Date().toISOString(),
        },
        partId: partId ?? sourceId(id),
      },
      { ...turnOptions(taskQueue, loadTurnConfig({})), quietPeriodSeconds: HOUR, ...options },
    );
  };
  const handle = env.client.workflow.getHandle(workflowIdFor(id));
  await worker.runUntil(async () => {
    try {
      await body({
        deliver,
        async userWrites(text) {
          const part = sandbox.intercom.addUserMessage(id, text);
          await deliver(part.id);
          return part.id;
        },
        turnOver: (turns) => turnOver(env.client, id, { turns, timeoutMs: 60_000 }),
        state: () => handle.query('state'),
      });
    } finally {
      const description = await handle.describe();
      if (description.status.name === 'RUNNING') await handle.terminate('test over');
    }
  });
}

describe('turns of one conversation', () => {
  test('a message that arrives after a turn found nothing to answer is answered by the next turn', async () => {
    const id = newConversation(
      { author: 'user', type: 'comment', body: 'When will I get paid?' },
      { author: 'bot', type: 'comment', body: PAY_REPLY },
    );
    await withConversation(id, async (c) => {
      await c.deliver();
      const skipped = await c.turnOver(1);
      expect(skipped.metadata.skipped_reason).toContain('nothing to answer');

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
    await withConversation(id, async (c) => {
      await c.deliver();
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

      await handBack(testbed.env.client, id, { reason: 'Sorted the contract question', requestedBy: 'lead@team' });
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

      await forceEscalation(testbed.env.client, id, { reason: 'VIP talent', requestedBy: 'lead@team' });
      await waitFor(
        'the escalation to be final',
        async () => (await c.state()).finalize?.melvin_status === 'ROUTE_TO_TEAM',
      );

      const state = await c.state();
      expect(testbed.sandbox.intercom.replies(id)).toEqual([PAY_REPLY, DEFAULT_HANDOVER_MESSAGE]);
      expect(withoutRunMaps(testbed.sandbox.intercom.notes(id)).filter((n) => n.startsWith('🚨'))).toEqual([
        `🚨 Escalation: VIP talent\nRequested by: lead@team\nThe user was told: "${DEFAULT_HANDOVER_MESSAGE}"`,
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
        `ℹ️ A teammate took over while Melvin was answering, so Melvin did not send its reply.\nDrafted reply:\n${PAY_REPLY}`,
      );
      expect(state.metadata.skipped_reason).toContain('a teammate took over');
      expect(state.metadata.conversation.turns[0]).toMatchObject({ melvin_status: 'skipped' });
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
        `🚨 Escalation: User requested to talk to a human\nThe user was told: "${DEFAULT_HANDOVER_MESSAGE}"`,
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
      `🚨 Escalation: The run was cancelled in Temporal before Melvin finished\nRequested by: temporal\nThe user was told: "${DEFAULT_HANDOVER_MESSAGE}"`,
    ]);
    expect(testbed.sandbox.intercom.melvinStatus(id)).toBe('ROUTE_TO_TEAM');
    expect(testbed.sandbox.intercom.replies(id)).toEqual([DEFAULT_HANDOVER_MESSAGE]);
  });
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
