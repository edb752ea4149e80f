// The workflow interceptor that keeps a cancellation (an operator's escalation, a cancelled run) from cancelling a local
// activity: the attempt that runs is waited for, and the cancellation stops the call at its next retry wait.
import { CancellationScope, type WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { UNCANCELLED_LOCAL_CALLS_RULES, rulesSince } from './patches';

/**
 * sdk-core takes a local activity's result as soon as the worker has it, even while the workflow is still working on
 * an activation; if that activation cancels the activity, Core finds it already resolved and fails the workflow task
 * as non-deterministic ("Invalid transition in state machine", temporalio/sdk-core#705, still so in 1.24). The task is
 * retried and the run goes on, but an operator's request waits for the retry and was answered 503 (CI found it under
 * load: an escalation as the run's reads came back). So the run never asks Core to cancel one: each attempt runs in a
 * scope of its own that cannot be cancelled, and its result comes back to a caller whose scope may be cancelled by
 * then, whose next step throws. The wait before a retry (a timer, `localRetryThreshold` in retry-policies.ts) runs in
 * the caller's scope, so a cancellation ends the retries there. What it costs: what the cancellation brings about waits
 * for the attempt that was running (a model call of seconds), where a cancelled call ended at once. Leaving the attempt
 * to run on its own would not be sooner: Core completes no workflow task while a local activity runs, until the task is
 * extended.
 */
export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      scheduleLocalActivity: (input, next) =>
        rulesSince(UNCANCELLED_LOCAL_CALLS_RULES) && !CancellationScope.current().consideredCancelled
          ? CancellationScope.nonCancellable(() => next(input))
          : next(input),
    },
  ],
});
