// The workflow interceptor that keeps a cancellation (an operator's escalation, a cancelled run) from cancelling a local
// activity other than the agent's own calls: the attempt that runs is waited for, and the cancellation stops the call
// at its next retry wait.
import { CancellationScope, type TimerInput, type WorkflowInterceptorsFactory } from '@temporalio/workflow';
import type { EmbeddingActivities } from '../../activities/embeddings';
import type { LlmActivities } from '../../activities/llm';
import type { McpActivities } from '../../activities/mcp';
import type { ResolvedIndexActivities } from '../../activities/resolved-index';
import { RETRY_WAIT_RULES, UNCANCELLED_LOCAL_CALLS_RULES, rulesSince } from '../versions/patches';

/**
 * The agent's calls by the activities' own names: every model and embeddings call, a tool's call and Draft's retrieval.
 * A call renamed, or one added to the model's or the embeddings' activities, fails to compile until it is listed below.
 */
type AgentCall =
  | keyof LlmActivities
  | keyof EmbeddingActivities
  | Extract<keyof McpActivities, 'callTool'>
  | Extract<keyof ResolvedIndexActivities, 'retrieveTeamExamples'>;

/**
 * The agent's calls, which a cancellation stops at once: their time is the model's, the embeddings endpoint's or a tool
 * server's, up to their timeouts (a model call of 30 s would hold the escalation as long). What cancels one comes with
 * a workflow task of its own (a lead's request, a cancelled run), which the worker gets only when no local activity runs
 * or when the task is extended, so seconds into the call: the race below then needs the call to end within the
 * milliseconds the worker takes over that task.
 */
export const STOPPED_BY_CANCELLATION: ReadonlySet<string> = new Set(
  Object.keys({
    plan: true,
    coverage: true,
    draft: true,
    resolve: true,
    callTool: true,
    embedTexts: true,
    retrieveTeamExamples: true,
  } satisfies Record<AgentCall, true>),
);

/**
 * sdk-core takes a local activity's result as soon as the worker has it, even while the workflow is still working on
 * an activation; if that activation cancels the activity, Core finds it already resolved and fails the workflow task
 * as non-deterministic ("Invalid transition in state machine", temporalio/sdk-core#705, still so in 1.24). The task is
 * retried and the run goes on, but an operator's request waits for the retry and was answered 503. CI met it under
 * load: a lead's escalation, judged once the run's first read was back, cancelled the reads that ran beside it as they
 * ended. So the reads, the listings and the writes of a value (short, bounded by their timeouts, and run side by side)
 * are never cancelled: each attempt runs in a scope of its own that cannot be cancelled, and its result comes back to a
 * caller whose scope may be cancelled by then, whose next step throws. The wait before a retry (a timer,
 * `localRetryThreshold` in retry-policies.ts) ends when the caller is cancelled, and so do the retries.
 */
export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      scheduleLocalActivity: (input, next) =>
        rulesSince(UNCANCELLED_LOCAL_CALLS_RULES) &&
        !STOPPED_BY_CANCELLATION.has(input.activityType) &&
        !CancellationScope.current().consideredCancelled
          ? CancellationScope.nonCancellable(() => next(input))
          : next(input),
      startTimer: (input, next) =>
        rulesSince(RETRY_WAIT_RULES) && isRetryWait(input) ? startedWhateverTheCaller(() => next(input)) : next(input),
    },
  ],
});

/**
 * Whether a timer is the SDK's wait before a local activity's next attempt: the SDK starts it with the activity's
 * event groups, an option Melvin's own timers never set. Should the SDK start it otherwise, the tests of
 * test/workflows/local-activity-cancel.test.ts find the timer missing, or cancelled.
 */
function isRetryWait(input: TimerInput): boolean {
  return input.options !== undefined && Object.hasOwn(input.options, 'eventGroups');
}

/**
 * A local activity's attempt that failed with a wait before the next longer than `localRetryThreshold` asks the
 * workflow for a timer, which the SDK starts in the caller's scope: none at all if the caller was cancelled by then.
 * Whether it was depends on when the attempt's result reached the workflow: while a workflow task is extended for a
 * local activity, a cancellation that comes with the next task may reach the workflow after the attempt's result as the
 * run goes, and before it in a replay, which then finds no command for the run's timer (CI met it twice, under load).
 * So the timer runs in a scope that cannot be cancelled and is started whenever an attempt asks for it; the caller
 * stops waiting for it once cancelled (it throws the cancellation), and a cancelled run leaves it to fire unheard.
 */
function startedWhateverTheCaller(start: () => Promise<void>): Promise<void> {
  const caller = CancellationScope.current();
  const timer = CancellationScope.nonCancellable(start);
  // A scope that cannot be cancelled may still be asked to; only a cancellable one stops waiting.
  return caller.cancellable ? Promise.race([timer, caller.cancelRequested]) : timer;
}
