// What the conversation workflow tests share: a testbed per test file, a conversation served by a worker while a test
// talks to it as the ingress and Intercom would, the model's usual answers, and history recording.
import { Worker } from '@temporalio/worker';
import { loadTurnConfig } from '../../src/config/environment';
import {
  type TurnOptions,
  deliverUserMessage,
  forceEscalation,
  handBack,
  turnOptions,
  turnOver,
} from '../../src/operations/conversations';
import type { ForceEscalation, HandBack, OperatorAnswer } from '../../src/contract/shared';
import { workflowIdFor } from '../../src/contract/shared';
import type { AgentState } from '../../src/contract/state';
import type { ScenarioConversation } from '../../sandbox/scenario';
import { keepHistory } from './histories';
import { coverage, draft, plan } from './model-answers';
import { ANA, ANA_TALENT, PAY_REPLY, type startTestbed, useTestbed } from './turns';

const HOUR = 3600;

/** The calling test file's testbed, set once it has started (a live binding, read inside tests). */
export let testbed: Awaited<ReturnType<typeof startTestbed>>;
let nextConversation = 0;

/** Gives the calling test file a testbed of its own (`useTestbed`); its conversation ids start at `firstConversation`. */
export function useConversationTestbed(firstConversation: number): void {
  nextConversation = firstConversation;
  useTestbed((started) => (testbed = started));
}

export function newConversation(...parts: ScenarioConversation['parts']): string {
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
export function sourceId(id: string): string {
  return testbed.sandbox.intercom.mustGet(id).source.id;
}

/** With RECORD_HISTORIES set, keeps one run's history for the determinism gate (./histories). */
export async function recordHistory(id: string, runId: string, name: string): Promise<void> {
  await keepHistory(testbed.env.client.workflow.getHandle(workflowIdFor(id), runId), name);
}

export function answersPayments(): void {
  testbed.sandbox.model
    .script('plan', plan('Pay', ['get_user_payments']))
    .script('coverage', coverage(true))
    .script('draft', draft(PAY_REPLY));
}

export function routesToTeam(): void {
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
export async function withConversation(
  id: string,
  body: (c: {
    deliver(partId?: string): Promise<void>;
    userWrites(text: string): Promise<string>;
    turnOver(turns: number): Promise<AgentState>;
    state(): Promise<AgentState>;
    /** A lead's escalation or hand-back, as the operator API sends it (an update, or a new workflow when none is open). */
    escalate(request: ForceEscalation): Promise<OperatorAnswer>;
    handBack(request: HandBack): Promise<OperatorAnswer>;
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
  const startOptions = { ...turnOptions(taskQueue, loadTurnConfig({})), quietPeriodSeconds: HOUR, ...options };
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
      startOptions,
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
        escalate: (request) => forceEscalation(env.client, id, request, startOptions),
        handBack: (request) => handBack(env.client, id, request, startOptions),
      });
    } finally {
      const description = await handle.describe();
      if (description.status.name === 'RUNNING') await handle.terminate('test over');
    }
  });
}
