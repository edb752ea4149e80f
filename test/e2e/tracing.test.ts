// LangSmith tracing of the worker (the official @temporalio/langsmith plugin and the langsmith OpenAI wrapper) against
// a local LangSmith-compatible endpoint: runs arrive with tracing on, and nothing leaves the process with it off.
import express from 'express';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { readBundledPrompts, PROMPT_NAMES } from '../../src/activities/prompts';
import { deliverUserMessage } from '../../src/operations/conversations';
import { listen, type RunningServer } from '../../sandbox/http';
import { coverage, draft, plan } from '../helpers/model-answers';
import { startWorkerProcess, workerEnvironment } from '../helpers/processes';
import { quietRuntime } from '../helpers/runtime';
import { startSandbox, type Sandbox } from '../helpers/sandbox';
import { startTemporal } from '../helpers/temporal';

quietRuntime();

const LANGSMITH_KEY = 'ls-tracing-test-key';
let env: TestWorkflowEnvironment;
let sandbox: Sandbox;
let langsmith: RunningServer;
const received: { method: string; path: string; apiKey: string | undefined; body: string }[] = [];

beforeAll(async () => {
  [env, sandbox] = await Promise.all([startTemporal(), startSandbox()]);
  const prompts = await readBundledPrompts();
  const app = express();
  app.use(express.raw({ type: () => true, limit: '50mb' }));
  app.use((req, _res, next) => {
    received.push({
      method: req.method,
      path: req.path,
      apiKey: req.header('x-api-key'),
      body: String(req.body ?? ''),
    });
    next();
  });
  app.get('/info', (_req, res) => {
    res.json({ version: '0.10.0', batch_ingest_config: { use_multipart_endpoint: true } });
  });
  app.get('/commits/:owner/:name/:commit', (req, res) => {
    const step = (Object.keys(PROMPT_NAMES) as (keyof typeof PROMPT_NAMES)[]).find(
      (k) => PROMPT_NAMES[k] === req.params.name,
    );
    if (!step) return res.status(404).json({ detail: 'not found' });
    res.json({
      commit_hash: 'c0ffee',
      manifest: { id: ['PromptTemplate'], kwargs: { template: prompts[step] } },
      examples: [],
    });
  });
  app.use((_req, res) => {
    res.status(202).json({});
  });
  langsmith = await listen(app);
}, 120_000);

afterAll(async () => {
  await langsmith?.close();
  await sandbox?.close();
  await env?.teardown();
});

/** Runs one turn on a worker process with `extraEnv`, then stops the worker (which flushes pending traces). */
async function turnOnWorker(conversationId: string, extraEnv: NodeJS.ProcessEnv): Promise<void> {
  const taskQueue = `tracing-${conversationId}`;
  sandbox.seed({
    conversation: {
      id: conversationId,
      contact: { id: `c-${conversationId}`, email: 'ana@example.com', name: 'Ana' },
      parts: [{ author: 'user', type: 'comment', body: 'Hi' }],
    },
  });
  sandbox.model.script('plan', plan('Greeting')).script('coverage', coverage(true)).script('draft', draft('Hi Ana!'));
  const worker = startWorkerProcess({
    ...(await workerEnvironment(sandbox, { temporalAddress: env.connection.options.address, taskQueue })),
    ...extraEnv,
  });
  try {
    const { workflowId } = await deliverUserMessage(
      env.client,
      {
        conversationId,
        trigger: { topic: 'test', notificationId: `n-${conversationId}`, receivedAt: new Date().toISOString() },
      },
      { taskQueue, maxHops: 2, snoozeSeconds: 300, quietPeriodSeconds: 0, handoverMessages: {} },
    );
    await env.client.workflow.getHandle(workflowId).result();
  } finally {
    await worker.stop();
  }
}

test('with tracing off, no request reaches LangSmith', async () => {
  received.length = 0;
  await turnOnWorker('9201', { LANGSMITH_ENDPOINT: langsmith.url });
  expect(sandbox.intercom.replies('9201')).toEqual(['Hi Ana!']);
  expect(received).toEqual([]);
}, 120_000);

test('with an API key but tracing off, only the prompts are pulled', async () => {
  received.length = 0;
  await turnOnWorker('9202', { LANGSMITH_ENDPOINT: langsmith.url, LANGSMITH_API_KEY: LANGSMITH_KEY });
  expect(received.length).toBeGreaterThan(0);
  expect(received.every((r) => r.method === 'GET' && r.path.startsWith('/commits/-/'))).toBe(true);
}, 120_000);

test('with LANGSMITH_TRACING=true, the workflow, its activities and each model call arrive as runs', async () => {
  received.length = 0;
  await turnOnWorker('9203', {
    LANGSMITH_ENDPOINT: langsmith.url,
    LANGSMITH_API_KEY: LANGSMITH_KEY,
    LANGSMITH_TRACING: 'true',
    LANGSMITH_PROJECT: 'melvin-test',
  });
  const ingested = received.filter((r) => r.method === 'POST' && r.path.startsWith('/runs'));
  expect(ingested.length).toBeGreaterThan(0);
  expect(ingested.every((r) => r.apiKey === LANGSMITH_KEY)).toBe(true);
  const bodies = ingested.map((r) => r.body).join('\n');
  for (const name of [
    'RunWorkflow:supportConversation',
    'RunActivity:plan',
    'RunActivity:coverage',
    'RunActivity:draft',
  ]) {
    expect(bodies).toContain(name);
  }
  expect(bodies).toContain('"run_type":"llm"');
  expect(bodies).toContain('melvin-test');
}, 120_000);
