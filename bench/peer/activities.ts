// Melvin's activities as the peer's LangGraph tasks: each task runs the worker's own activity function, under the retries
// and timeouts of Melvin's policy table, and records when the node asked for it, when it ran and when it ended.
import { getConfig, task, type RetryPolicy, type TimeoutPolicy } from '@langchain/langgraph';
import { ApplicationFailure, type ActivityOptions, type Logger } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { createActivities } from '../../src/activities';
import { errorMessage } from '../../src/observability/error-message';
import {
  embeddingsPolicy,
  indexConversationPolicy,
  indexStorePolicy,
  intercomPolicy,
  llmPolicy,
  mcpListPolicy,
  promptPolicy,
  retrievalPolicy,
  toolPolicy,
  validationPolicy,
} from '../../src/workflows/activity-options/retry-policies';

export type Activities = ReturnType<typeof createActivities>;
export type ActivityName = keyof Activities;

/** One activity call of a turn, in `performance.now()` ms. */
export interface ActivityCall {
  name: ActivityName;
  /** When the node asked for it: LangGraph's dispatch of the task runs from here to `startMs`. */
  scheduledMs: number;
  startMs: number;
  endMs: number;
}

/**
 * What a turn's tasks reach through LangGraph's run context: the activities, their logger, and the turn's calls. A type,
 * not an interface, so it fits LangGraph's `Record<string, any>` context.
 */
export type TurnContext = {
  activities: Activities;
  logger: Logger;
  calls: ActivityCall[];
};

/** The policy each activity runs under in Melvin: the proxy its node calls it through (src/workflows/activity-options/retry-policies.ts). */
const POLICIES: Record<ActivityName, ActivityOptions> = {
  fetchConversation: intercomPolicy,
  fetchContact: intercomPolicy,
  readOwnership: intercomPolicy,
  readState: intercomPolicy,
  sendReply: intercomPolicy,
  addNote: intercomPolicy,
  setStatus: intercomPolicy,
  snooze: intercomPolicy,
  listTools: mcpListPolicy,
  callTool: toolPolicy,
  loadPrompts: promptPolicy,
  loadBundledPrompts: promptPolicy,
  plan: llmPolicy,
  coverage: llmPolicy,
  draft: llmPolicy,
  resolve: llmPolicy,
  embedTexts: embeddingsPolicy,
  validateDraft: validationPolicy,
  searchClosedConversations: intercomPolicy,
  indexConversation: indexConversationPolicy,
  readIndexWatermark: indexStorePolicy,
  advanceIndexWatermark: indexStorePolicy,
  retrieveTeamExamples: retrievalPolicy,
};

/** A LangGraph retry policy whose attempts and retry test are always set: the task reads both. */
type DefiniteRetryPolicy = RetryPolicy & Required<Pick<RetryPolicy, 'maxAttempts' | 'retryOn'>>;

/**
 * A Temporal retry policy as LangGraph's: the same attempts, first interval, backoff and cap, no jitter (Temporal adds
 * none), and the same error types never retried. A server's Retry-After (`nextRetryDelay`) has no equivalent: LangGraph
 * waits its computed interval.
 */
function retryPolicyOf({ retry }: ActivityOptions): DefiniteRetryPolicy {
  const initialInterval = msToNumber(retry?.initialInterval ?? '1s');
  const nonRetryable = new Set(retry?.nonRetryableErrorTypes ?? []);
  return {
    // Temporal's unset maximum means no limit.
    maxAttempts: retry?.maximumAttempts || Number.POSITIVE_INFINITY,
    initialInterval,
    backoffFactor: retry?.backoffCoefficient ?? 2,
    // Temporal's default cap is a hundred times the first interval.
    maxInterval: retry?.maximumInterval ? msToNumber(retry.maximumInterval) : 100 * initialInterval,
    jitter: false,
    retryOn: (err: unknown) =>
      !(err instanceof ApplicationFailure && err.nonRetryable) && !nonRetryable.has(typeOf(err)),
  };
}

/** An error's type as Temporal's retry policy reads it: an ApplicationFailure's type, else the error class's name. */
function typeOf(err: unknown): string {
  if (err instanceof ApplicationFailure) return err.type ?? 'Error';
  return err instanceof Error ? err.name : 'Error';
}

/** An activity that failed for good, as the node that called it sees it: its type and message, as Melvin's nodes do. */
class ActivityFailed extends Error {
  constructor(failure: { type: string; message: string }) {
    super(failure.message);
    this.name = failure.type;
  }
}

/**
 * Temporal's start-to-close timeout as each attempt's run timeout, and its heartbeat timeout as an idle timeout that only
 * the activity's heartbeats refresh.
 */
function timeoutOf(options: ActivityOptions): TimeoutPolicy {
  return {
    ...(options.startToCloseTimeout ? { runTimeout: msToNumber(options.startToCloseTimeout) } : {}),
    ...(options.heartbeatTimeout ? { idleTimeout: msToNumber(options.heartbeatTimeout), refreshOn: 'heartbeat' } : {}),
  };
}

function turnContext(): TurnContext {
  return getConfig().context as TurnContext;
}

/**
 * The activity as a task. It runs in Temporal's own activity runner without a server (MockActivityEnvironment, as
 * Melvin's activity tests do): the activity code reads its attempt (Intercom's duplicate-post check), its cancellation
 * signal and its heartbeats from that Context. The heartbeats refresh the task's idle timeout, and LangGraph's abort of
 * a timed-out attempt cancels the activity, as Temporal's timeouts do.
 *
 * LangGraph fails the whole step when a task fails for good, even when the node that called it catches the error;
 * Melvin's nodes catch such a failure and escalate. So a failure that will not be retried is the task's result (and
 * checkpointed so), which the node then sees thrown. A timeout on the last attempt is LangGraph's own and still fails
 * the step.
 */
function activityTask(name: ActivityName): (...args: unknown[]) => Promise<unknown> {
  const options = POLICIES[name];
  const retry = retryPolicyOf(options);
  const run = task(
    { name, retry, timeout: timeoutOf(options) },
    async (...args: unknown[]): Promise<{ value: unknown } | { failure: { type: string; message: string } }> => {
      const config = getConfig();
      const turn = config.context as TurnContext;
      const attempt = config.executionInfo?.nodeAttempt ?? 1;
      const env = new MockActivityEnvironment(
        {
          activityType: name,
          attempt,
          startToCloseTimeoutMs: options.startToCloseTimeout ? msToNumber(options.startToCloseTimeout) : undefined,
          heartbeatTimeoutMs: options.heartbeatTimeout ? msToNumber(options.heartbeatTimeout) : undefined,
        },
        { logger: turn.logger },
      );
      env.on('heartbeat', () => config.heartbeat?.());
      const cancel = () => env.cancel();
      config.signal?.addEventListener('abort', cancel, { once: true });
      const call = turn.calls.find((c) => c.name === name && c.startMs < 0) ?? newCall(turn, name);
      call.startMs = performance.now();
      try {
        const activity = turn.activities[name] as (...a: unknown[]) => Promise<unknown>;
        return { value: await env.run(activity, ...args) };
      } catch (err) {
        if (attempt < retry.maxAttempts && retry.retryOn(err)) throw err;
        return { failure: { type: typeOf(err), message: errorMessage(err) } };
      } finally {
        call.endMs = performance.now();
        config.signal?.removeEventListener('abort', cancel);
      }
    },
  );
  return async (...args: unknown[]) => {
    newCall(turnContext(), name);
    const outcome = await run(...args);
    if ('failure' in outcome) throw new ActivityFailed(outcome.failure);
    return outcome.value;
  };
}

/** A call the node has asked for and that has not started yet (`startMs` −1 until then). */
function newCall(turn: TurnContext, name: ActivityName): ActivityCall {
  const call = { name, scheduledMs: performance.now(), startMs: -1, endMs: -1 };
  turn.calls.push(call);
  return call;
}

/** Every activity of Melvin's worker, as a task the peer's nodes call by the activity's name, typed as the activity. */
export const tasks = Object.fromEntries(
  (Object.keys(POLICIES) as ActivityName[]).map((name) => [name, activityTask(name)]),
) as unknown as Activities;
