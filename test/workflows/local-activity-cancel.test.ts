// A local activity cancelled just as it ends: sdk-core fails the workflow task as non-deterministic (the SDK's race, as
// CI met it under load), and Melvin's interceptor, which never cancels one, leaves the task whole. And the wait before a
// local activity's retry is the same timer whether its caller was cancelled before or after the attempt asked for it.
import { Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { workflowBundleOptions } from '../../src/bundling/workflow-bundle';
import type { WaitActivities } from '../fixtures/local-activity-cancel';
import { quietRuntime } from '../helpers/runtime';
import { startTemporal } from '../helpers/temporal';

quietRuntime();

const FIXTURE = require.resolve('../fixtures/local-activity-cancel');
let env: TestWorkflowEnvironment;
let withInterceptor: WorkflowBundleWithSourceMap;
let without: WorkflowBundleWithSourceMap;

const activities: WaitActivities = {
  waitMs: (ms) => new Promise((resolve) => setTimeout(() => resolve(ms), ms)),
  refuse: async () => {
    throw new Error('refused, as a service that keeps refusing does');
  },
};

beforeAll(async () => {
  const { workflowInterceptorModules } = workflowBundleOptions();
  const logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
  [env, withInterceptor, without] = await Promise.all([
    startTemporal(),
    bundleWorkflowCode({ workflowsPath: FIXTURE, workflowInterceptorModules, logger }),
    bundleWorkflowCode({ workflowsPath: FIXTURE, logger }),
  ]);
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

/** Starts the fixture on `bundle`'s worker, runs `until` while the worker runs, then ends the run if it is open. */
async function run<T>(
  bundle: WorkflowBundleWithSourceMap,
  taskQueue: string,
  until: (handle: WorkflowHandle) => Promise<T>,
  start: { workflow: string; args: unknown[] } = { workflow: 'cancelAsLocalActivityEnds', args: [] },
): Promise<T> {
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities,
  });
  const handle = await env.client.workflow.start(start.workflow, {
    taskQueue,
    workflowId: taskQueue,
    args: start.args,
  });
  try {
    return await worker.runUntil(until(handle));
  } finally {
    await handle.terminate('the test is over').catch(() => undefined);
  }
}

/** The causes of the run's failed workflow tasks so far. */
async function failedTasks(handle: WorkflowHandle): Promise<string[]> {
  const { events } = await handle.fetchHistory();
  return (events ?? []).flatMap((e) =>
    e.workflowTaskFailedEventAttributes
      ? [temporal.api.enums.v1.WorkflowTaskFailedCause[e.workflowTaskFailedEventAttributes.cause ?? 0]!]
      : [],
  );
}

test('without the interceptor, the SDK fails the task that cancels a local activity that has just ended', async () => {
  // Every retry of the task meets the same race, so the run never ends: the test stops at the first failed task. If
  // none comes, the SDK has fixed its race and the interceptor can go.
  const causes = await run(without, 'cancel-without-interceptor', async (handle) => {
    for (let waited = 0; waited < 30_000; waited += 250) {
      const causes = await failedTasks(handle);
      if (causes.length) return causes;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return [];
  });
  expect(causes).toContain('WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR');
}, 60_000);

test('with the interceptor, no task fails and the attempt that ran is waited for', async () => {
  const { result, causes } = await run(withInterceptor, 'cancel-with-interceptor', async (handle) => ({
    result: await handle.result(),
    causes: await failedTasks(handle),
  }));
  expect(causes).toEqual([]);
  expect(result).toBe('the second ended after 80 ms');
}, 60_000);

/**
 * A replay delivers an attempt's result and a cancellation in the order of the history, which may not be the order the
 * run met them in (an attempt that ended while its workflow task was extended); the commands that follow must not
 * depend on it. Before and after the attempts ask to wait, the run starts the timer, never cancels it, and ends
 * cancelled, and its history replays.
 */
test.each([
  ['before', 20],
  ['after', 1_500],
])(
  'a cancellation %s a local activity asks to wait for its retry: the wait is a timer all the same',
  async (_, ms) => {
    const taskQueue = `retry-wait-cancelled-after-${ms}`;
    const { result, history } = await run(
      withInterceptor,
      taskQueue,
      async (handle) => ({ result: await handle.result(), history: await handle.fetchHistory() }),
      { workflow: 'cancelAroundRetryWait', args: [ms] },
    );
    expect(result).toBe('the call was cancelled');
    const types = (history.events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0]);
    expect(types).toContain('EVENT_TYPE_TIMER_STARTED');
    expect(types).not.toContain('EVENT_TYPE_TIMER_CANCELED');
    await Worker.runReplayHistory({ workflowBundle: withInterceptor }, history, taskQueue);
  },
  60_000,
);
