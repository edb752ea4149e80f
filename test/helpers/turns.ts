// Workflow tests' testbed (Temporal dev server, sandbox, workflow bundle), one conversation turn started as the ingress
// starts it on a fresh worker, and the talent the tests ask about.
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { createActivities } from '../../src/activities';
import { deliverUserMessage, type TurnOptions } from '../../src/operations/conversations';
import { stateQuery } from '../../src/contract/shared';
import type { AgentState } from '../../src/contract/state';
import type { SeedData } from '../../sandbox/services';
import { quietRuntime } from './runtime';
import { startSandbox, type Sandbox } from './sandbox';
import { startTemporal } from './temporal';
import { workflowBundleOptions } from '../../src/bundling/workflow-bundle';

export const ANA = { id: 'c-ana', email: 'ana.ruiz@example.com', name: 'Ana Ruiz' };

/** What the talent server knows about Ana: one application, and one payment still on its way. */
export const ANA_TALENT = {
  users: [
    {
      email: ANA.email,
      name: ANA.name,
      applications: [{ id: 'app-11', job_id: 'job-21', status: 'screening', updated_at: '2026-11-10' }],
      payments: [
        {
          id: 'pay-31',
          job_id: 'job-21',
          amount: 240,
          currency: 'USD',
          status: 'processing',
          expected_date: '2026-11-27',
        },
      ],
    },
  ],
  jobs: [{ id: 'job-21', title: 'Event Staff', location: 'Austin, TX', status: 'filled' }],
};

/** A reply the validation service accepts for Ana's payment: every fact in it is in her data. */
export const PAY_REPLY = 'Your payment of $240 for Event Staff is processing and expected on November 27.';

export interface Testbed {
  env: TestWorkflowEnvironment;
  workflowBundle: WorkflowBundleWithSourceMap;
}

/** A Temporal dev server, the sandbox and the workflow bundle, started together; `close()` stops them. */
export async function startTestbed(seed?: SeedData): Promise<Testbed & { sandbox: Sandbox; close(): Promise<void> }> {
  const [env, sandbox, workflowBundle] = await Promise.all([
    startTemporal(),
    startSandbox(seed),
    bundleWorkflowCode(workflowBundleOptions()),
  ]);
  return {
    env,
    sandbox,
    workflowBundle,
    async close() {
      try {
        await sandbox.close();
      } finally {
        await env.teardown();
      }
    },
  };
}

/**
 * Starts a testbed for the calling test file before its first test and hands it to `started`, resets its sandbox
 * before each test, and stops it after the last; each test file so has a Temporal dev server and a sandbox of its own.
 */
export function useTestbed(started: (testbed: Awaited<ReturnType<typeof startTestbed>>) => void): void {
  quietRuntime();
  let testbed: Awaited<ReturnType<typeof startTestbed>> | undefined;
  beforeAll(async () => {
    testbed = await startTestbed();
    started(testbed);
  }, 180_000);
  afterAll(() => testbed?.close());
  beforeEach(() => testbed?.sandbox.reset());
}

/**
 * Delivers the conversation's first message as the ingress does (`conversation.user.created`, at most two hops, no
 * hand-over message unless `options` say otherwise) and runs a fresh worker with these activities until the run
 * completes; `during` runs while the workflow is in flight.
 */
export async function runTurnOnWorker<T = void>(
  { env, workflowBundle }: Testbed,
  conversationId: string,
  activities: ReturnType<typeof createActivities>,
  during?: (handle: WorkflowHandle) => Promise<T>,
  options: Partial<TurnOptions> = {},
): Promise<{ state: AgentState; handle: WorkflowHandle; during: T | undefined }> {
  const taskQueue = `test-${conversationId}`;
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, activities });
  return worker.runUntil(async () => {
    const { workflowId } = await deliverUserMessage(
      env.client,
      {
        conversationId,
        trigger: {
          topic: 'conversation.user.created',
          notificationId: `notif-${conversationId}`,
          receivedAt: new Date().toISOString(),
        },
      },
      { taskQueue, maxHops: 2, snoozeSeconds: 300, quietPeriodSeconds: 0, handoverMessages: {}, ...options },
    );
    const handle = env.client.workflow.getHandle(workflowId);
    const duringResult = during ? await during(handle) : undefined;
    await handle.result();
    // The result is compact; the run's whole state is the query's answer, which a finished run still gives.
    return { state: await handle.query(stateQuery), handle, during: duringResult };
  });
}
