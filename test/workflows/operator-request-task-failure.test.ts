// A lead's request whose workflow task fails (its worker crashed, or sdk-core failed the task, with the request in it):
// Temporal refuses it, and every request while the task keeps failing, with FAILED_PRECONDITION (WorkflowNotReady),
// having recorded nothing. That passes once a task completes, so the operator API answers 503 (ask again), not 500 as
// for a namespace's state (the model met a 500 to a lead's edit with two workers).
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Worker, bundleWorkflowCode } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { workflowIdFor } from '../../src/contract/shared';
import { operatorRoutes } from '../../src/ingress/operator-routes';
import { classifyTemporalFailure } from '../../src/ingress/temporal-failures';
import { decideReply, type TurnOptions } from '../../src/operations/conversations';
import { quietRuntime } from '../helpers/runtime';
import { startTemporal } from '../helpers/temporal';

quietRuntime();

const TASK_QUEUE = 'operator-request-task-failure';
const TURN: TurnOptions = {
  taskQueue: TASK_QUEUE,
  maxHops: 2,
  snoozeSeconds: 300,
  quietPeriodSeconds: 0,
  handoverMessages: {},
};
let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTemporal();
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

test('a request refused because its workflow task failed is worth asking again: 503 from every operator route', async () => {
  const logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../fixtures/update-task-failure'),
    logger,
  });
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue: TASK_QUEUE, workflowBundle });
  await worker.runUntil(async () => {
    const conversationId = '7100001';
    const handle = await env.client.workflow.start('supportConversation', {
      taskQueue: TASK_QUEUE,
      workflowId: workflowIdFor(conversationId),
    });
    await handle.query('__stack_trace'); // its first task is done: the request comes in a task of its own

    const err = await decideReply(env.client, conversationId, { decision: 'approve', by: 'lead@test' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(classifyTemporalFailure(err)).toEqual({
      retryable: true,
      configuration: false,
      reason: expect.stringMatching(/^FAILED_PRECONDITION \(workflow not ready\): /),
    });
    const failedTasks = (await handle.fetchHistory()).events!.filter((e) => e.workflowTaskFailedEventAttributes);
    expect(failedTasks.length).toBeGreaterThan(0);

    // While the task keeps failing, each route is refused at once; the deadline is far, so it is not what answers.
    const app = express().use(
      operatorRoutes({ client: env.client, turn: TURN, operatorDeadlineMs: 60_000 }, () => true),
    );
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const answers = [];
      for (const [route, body] of [
        ['decision', { decision: 'approve' }],
        ['decision', { decision: 'edit', text: 'Edited by a lead.' }],
        ['decision', { decision: 'reject', reason: 'not this one' }],
        ['escalate', { reason: 'a lead asks' }],
        ['hand-back', { reason: 'a lead asks' }],
      ] as const) {
        const response = await fetch(`http://127.0.0.1:${port}/conversations/${conversationId}/${route}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const { error } = (await response.json()) as { error: string };
        answers.push({ route, status: response.status, error });
      }
      expect(answers).toEqual(
        answers.map(({ route }) => ({ route, status: 503, error: expect.stringMatching(/workflow not ready/) })),
      );
    } finally {
      server.close();
    }
  });
}, 180_000);
