// Melvin's turns as the saturation, memory and growth phases run them: a signed delivery through the ingress, then the
// turn's end, with helpers to run many at once.
import type { WorkflowHandle } from '@temporalio/client';
import { workflowIdFor } from '../src/contract/shared';
import type { Conversation, Harness } from '../harness/harness';
import { waitFor } from '../sandbox/wait';

/** A turn that has not ended by then is a failure of the run, not a slow turn. */
const TURN_TIMEOUT_MS = 120_000;

/**
 * One turn of a conversation whose run closes after it (the harness's ingress gives no quiet period): resolves with
 * the run's handle once it has closed.
 */
export async function melvinTurn(harness: Harness, conversation: Conversation): Promise<WorkflowHandle> {
  await harness.deliver(conversation);
  const handle = harness.client.workflow.getHandle(workflowIdFor(conversation.id));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    handle.result(),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`turn ${conversation.id} did not close`)), TURN_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  return handle;
}

/**
 * One turn of a conversation whose run stays open after it (a quiet period): resolves once Finalize has set Melvin
 * Status and snoozed the conversation, after which the run waits for the next message.
 */
export async function openTurn(harness: Harness, conversation: Conversation): Promise<void> {
  await harness.deliver(conversation);
  const intercom = harness.sandbox.intercom;
  await waitFor(
    `turn ${conversation.id} to end`,
    () => intercom.melvinStatus(conversation.id) !== undefined && intercom.snoozedUntil(conversation.id) !== null,
    { timeoutMs: TURN_TIMEOUT_MS, intervalMs: 100 },
  );
}

/**
 * The talent writes again in a conversation whose run waits between turns; resolves with the milliseconds until that
 * turn's reply or hand-over note is in Intercom.
 */
export async function nextTurn(harness: Harness, conversation: Conversation): Promise<number> {
  const intercom = harness.sandbox.intercom;
  const outcomes = () => intercom.replies(conversation.id).length + intercom.notes(conversation.id).length;
  const before = outcomes();
  const started = performance.now();
  const { delivery } = await intercom.userReplies(conversation.id, `When will I get paid? [${conversation.id}]`);
  if (delivery.status !== 202) throw new Error(`the follow-up in ${conversation.id} answered ${delivery.status}`);
  await waitFor(`the next turn of ${conversation.id} to answer`, () => outcomes() > before, {
    timeoutMs: TURN_TIMEOUT_MS,
    intervalMs: 20,
  });
  return performance.now() - started;
}

/** The hops a conversation's turns took: the plan requests the sandbox model received for it. */
export function plannedHops(harness: Harness, conversation: Conversation): number {
  return harness.sandbox.model.requests.filter(
    (r) => r.step === 'plan' && JSON.stringify(r.context.messages ?? []).includes(`[${conversation.id}]`),
  ).length;
}

/** Runs `task` over `items`, at most `concurrency` at once; settles when all have, with each one's failure if any. */
export async function inPool<T>(
  items: T[],
  concurrency: number,
  task: (item: T) => Promise<unknown>,
): Promise<unknown[]> {
  const failures: unknown[] = [];
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await task(item).catch((err: unknown) => failures.push(err));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
  return failures;
}
