// The ingress over real HTTP with a real Temporal server: signatures, body limits, validation, topics, duplicates, and
// how each kind of Temporal failure is answered.
import { createHmac, randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { Client, Connection, ServiceError, WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createIngressApp } from '../../src/ingress/app';
import { openIngressOutbox } from '../../src/ingress/webhook';
import { createIngressMetrics } from '../../src/ingress/metrics';
import type { Outbox } from '../../src/ingress/outbox';
import type { Report } from '../../src/reports/figures';
import { listReportRuns } from '../../src/reports/visibility';
import {
  TURN_SUMMARY_MEMO,
  WORKFLOW_TYPE,
  searchAttributes,
  workflowIdFor,
  type TurnSummary,
} from '../../src/contract/shared';
import { quietRuntime, waitFor } from '../helpers/runtime';
import { startTemporal } from '../helpers/temporal';

quietRuntime();

const SECRET = 'ingress-test-secret';
const ADMIN_TOKEN = 'ingress-admin-token-0123456789';
const MELVIN_ADMIN_ID = '8918000';
const TURN = { taskQueue: 'ingress-test', maxHops: 2, snoozeSeconds: 300, quietPeriodSeconds: 0, handoverMessages: {} };
/** No worker polls this test's task queue, so an operator's request meets no workflow code: a short deadline. */
const OPERATOR_DEADLINE_MS = 1_500;
let env: TestWorkflowEnvironment;
let server: Server;
let baseUrl: string;

function listenOn(app: ReturnType<typeof createIngressApp>): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => {
      const address = s.address() as { port: number };
      resolve({ server: s, url: `http://127.0.0.1:${address.port}` });
    });
  });
}

beforeAll(async () => {
  env = await startTemporal();
  ({ server, url: baseUrl } = await listenOn(
    createIngressApp({
      client: env.client,
      clientSecret: SECRET,
      adminApiToken: ADMIN_TOKEN,
      turn: TURN,
      melvinAdminId: MELVIN_ADMIN_ID,
      operatorDeadlineMs: OPERATOR_DEADLINE_MS,
    }),
  ));
}, 120_000);

afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await env?.teardown();
});

let counter = 0;
function notification(
  topic = 'conversation.user.created',
  conversationId = `ing-${++counter}`,
  id = `notif-${counter}`,
) {
  return {
    type: 'notification_event',
    id,
    topic,
    app_id: 'test',
    created_at: 1795300000,
    data: {
      type: 'notification_event_data',
      item: { type: 'conversation', id: conversationId, conversation_parts: { conversation_parts: [{ id: 'p-1' }] } },
    },
  };
}

const sign = (body: string | Buffer, secret = SECRET) =>
  `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`;

/** A delivery to the ingress at `url` (the shared one by default); `signature: null` sends none. */
async function post(body: string | Buffer, signature: string | null = sign(body), url = baseUrl) {
  const response = await fetch(`${url}/webhooks/intercom`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(signature !== null ? { 'x-hub-signature': signature } : {}) },
    body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function runExists(conversationId: string): Promise<boolean> {
  try {
    await env.client.workflow.getHandle(workflowIdFor(conversationId)).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

test('a signed conversation.user.created starts the conversation’s workflow and answers 202 at once', async () => {
  const event = notification();
  const conversationId = event.data.item.id;
  const { status, body } = await post(JSON.stringify(event));
  expect(status).toBe(202);
  expect(body).toEqual({ workflowId: `intercom-conversation-${conversationId}`, runId: expect.any(String) });
  const description = await env.client.workflow.getHandle(body.workflowId as string).describe();
  expect(description.status.name).toBe('RUNNING');
  expect(description.taskQueue).toBe('ingress-test');
  expect(description.typedSearchAttributes.get(searchAttributes.conversationId)).toBe(conversationId);
  expect(await description.staticSummary()).toBe(`Conversation ${conversationId} · conversation.user.created`);
});

test('a duplicate delivery and a quick follow-up join the run in progress: one run', async () => {
  const first = notification();
  const conversationId = first.data.item.id;
  const a = await post(JSON.stringify(first));
  const again = await post(JSON.stringify(first));
  const followUp = await post(
    JSON.stringify(notification('conversation.user.replied', conversationId, 'notif-follow-up')),
  );
  expect(a.status).toBe(202);
  expect(again).toEqual({ status: 200, body: { duplicate: true, notificationId: first.id } });
  expect(followUp.status).toBe(202);
  expect(followUp.body.runId).toBe(a.body.runId);
  const runs = await waitFor('the run to be visible', async () => {
    const found = [];
    for await (const run of env.client.workflow.list({ query: `WorkflowId = '${workflowIdFor(conversationId)}'` }))
      found.push(run);
    return found.length ? found : undefined;
  });
  expect(runs).toHaveLength(1);
  const history = await env.client.workflow.getHandle(workflowIdFor(conversationId)).fetchHistory();
  const signals = history.events?.filter((e) => e.workflowExecutionSignaledEventAttributes) ?? [];
  expect(signals.map((e) => e.workflowExecutionSignaledEventAttributes?.signalName)).toEqual([
    'newUserMessage',
    'newUserMessage',
  ]);
});

test('ping answers 200; other topics are acknowledged with 202 and start nothing', async () => {
  expect(await post(JSON.stringify(notification('ping')))).toEqual({ status: 200, body: { ok: true } });
  const ignored = notification('contact.user.created');
  expect(await post(JSON.stringify(ignored))).toEqual({
    status: 202,
    body: { ignored: true, topic: 'contact.user.created' },
  });
  expect(await runExists(ignored.data.item.id)).toBe(false);
});

describe('a teammate acting in Intercom', () => {
  /** An admin event on the conversation: its newest part by `authorId`, assigned to `assigneeId`. */
  const adminEvent = (topic: string, conversationId: string, authorId: string, assigneeId: string | null = null) => {
    const event = notification(topic, conversationId, `notif-admin-${++counter}`);
    return {
      ...event,
      data: {
        ...event.data,
        item: {
          type: 'conversation',
          id: conversationId,
          admin_assignee_id: assigneeId === null ? null : Number(assigneeId),
          conversation_parts: {
            conversation_parts: [
              {
                id: `p-${counter}`,
                body: '<p>Hi, Sam here &amp; on it.</p>',
                author: { type: 'admin', id: authorId, name: 'Sam' },
              },
            ],
          },
        },
      },
    };
  };
  const signalsOf = async (conversationId: string) => {
    const history = await env.client.workflow.getHandle(workflowIdFor(conversationId)).fetchHistory();
    return history.events?.flatMap((e) => {
      const signal = e.workflowExecutionSignaledEventAttributes;
      return signal ? [signal.signalName] : [];
    });
  };

  test('a teammate’s reply, assignment or close is signalled to the open workflow; Melvin’s own reply is not', async () => {
    const started = notification();
    const conversationId = started.data.item.id;
    await post(JSON.stringify(started));

    const own = await post(JSON.stringify(adminEvent('conversation.admin.replied', conversationId, MELVIN_ADMIN_ID)));
    const teammate = await post(JSON.stringify(adminEvent('conversation.admin.replied', conversationId, '4242')));
    const backToMelvin = await post(
      JSON.stringify(adminEvent('conversation.admin.assigned', conversationId, '4242', MELVIN_ADMIN_ID)),
    );
    const closed = await post(JSON.stringify(adminEvent('conversation.admin.closed', conversationId, '4242')));

    expect(own).toEqual({ status: 202, body: { ignored: true, reason: 'Melvin’s own reply' } });
    expect(teammate).toEqual({ status: 202, body: { signalled: 'teamAction', action: 'replied' } });
    expect(backToMelvin).toEqual({ status: 202, body: { signalled: 'teamAction', action: 'assigned' } });
    expect(closed).toEqual({ status: 202, body: { signalled: 'teamAction', action: 'closed' } });
    expect(await signalsOf(conversationId)).toEqual(['newUserMessage', 'teamAction', 'teamAction', 'teamAction']);
    // The teammate's answer travels as plain text with its author, for shadow mode's comparison.
    const history = await env.client.workflow.getHandle(workflowIdFor(conversationId)).fetchHistory();
    const replied = history.events?.find(
      (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'teamAction',
    );
    const payload = replied?.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0]?.data;
    expect(JSON.parse(Buffer.from(payload!).toString('utf8'))).toMatchObject({
      action: 'replied',
      text: 'Hi, Sam here & on it.',
      by: 'Sam',
    });
  });

  test('an admin event for a conversation with no open workflow starts nothing', async () => {
    const event = adminEvent('conversation.admin.closed', `ing-${++counter}`, '4242');
    expect(await post(JSON.stringify(event))).toEqual({
      status: 202,
      body: { ignored: true, reason: 'no open workflow' },
    });
    expect(await runExists(event.data.item.id)).toBe(false);
  });
});

describe('bad input gets a 4xx with a JSON error and starts nothing', () => {
  test.each([
    ['no signature', 401, (body: string) => post(body, null)],
    ['a malformed signature', 401, (body: string) => post(body, 'sha256=abc')],
    ['a signature made with the wrong secret', 401, (body: string) => post(body, sign(body, 'wrong-secret'))],
    ['a truncated body under the full body’s signature', 401, (body: string) => post(body.slice(0, -10), sign(body))],
  ])('%s → %i', async (_what, expected, send) => {
    const event = notification();
    const { status, body } = await send(JSON.stringify(event));
    expect(status).toBe(expected);
    expect(body.error).toEqual(expect.stringContaining('signature'));
    expect(await runExists(event.data.item.id)).toBe(false);
  });

  test('a truncated body, correctly signed, is invalid JSON → 400', async () => {
    const event = notification();
    const truncated = JSON.stringify(event).slice(0, 40);
    const { status, body } = await post(truncated);
    expect(status).toBe(400);
    expect(body.error).toMatch(/^invalid JSON/);
    expect(await runExists(event.data.item.id)).toBe(false);
  });

  test('a body past 32 MB → 413; a notification of a few MB (a long message) is delivered', async () => {
    const huge = { ...notification(), padding: 'x'.repeat(33 * 1024 * 1024) };
    const { status, body } = await post(JSON.stringify(huge));
    expect(status).toBe(413);
    expect(body.error).toContain('larger than 33554432 bytes');
    expect(await runExists(huge.data.item.id)).toBe(false);
    const long = { ...notification(), padding: 'x'.repeat(3 * 1024 * 1024) };
    expect((await post(JSON.stringify(long))).status).toBe(202);
    expect(await runExists(long.data.item.id)).toBe(true);
  });

  test('wrong JSON types are named by path', async () => {
    const { status, body } = await post(JSON.stringify({ ...notification(), topic: 42 }));
    expect(status).toBe(400);
    expect(body.issues).toEqual([{ path: 'topic', message: expect.any(String) }]);
    const badId = notification();
    (badId.data.item as { id: string }).id = '../../etc/passwd';
    const invalid = await post(JSON.stringify(badId));
    expect(invalid.status).toBe(400);
    expect(invalid.body.issues).toEqual([
      { path: 'data.item.id', message: 'must be 1-64 letters, digits, "_" or "-"' },
    ]);
  });
});

test('when Temporal cannot be reached the delivery is refused with 503, so Intercom delivers it again', async () => {
  const unreachable = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 500 }) });
  const { server: down, url } = await listenOn(
    createIngressApp({ client: unreachable, clientSecret: SECRET, turn: TURN, melvinAdminId: MELVIN_ADMIN_ID }),
  );
  try {
    const body = JSON.stringify(notification());
    expect((await post(body, sign(body), url)).status).toBe(503);
    expect((await fetch(`${url}/healthz`)).status).toBe(503);
  } finally {
    down.closeAllConnections();
    down.close();
  }
});

describe('a delivery Temporal refuses', () => {
  /** Posts one signed notification to an ingress on `client`; answers with the response and the delivery metrics. */
  async function deliverThrough(client: Client) {
    const metrics = createIngressMetrics();
    const { server: ingress, url } = await listenOn(
      createIngressApp({ client, metrics, clientSecret: SECRET, turn: TURN, melvinAdminId: MELVIN_ADMIN_ID }),
    );
    try {
      const body = JSON.stringify(notification());
      const answer = await post(body, sign(body), url);
      const counted = (await metrics.deliveries.get()).values.map((v) => [v.labels.outcome, v.value]);
      return { ...answer, counted };
    } finally {
      ingress.closeAllConnections();
      ingress.close();
    }
  }

  /** A client whose signal-with-start fails as the SDK fails it: a ServiceError around the server's gRPC status. */
  function failingClient(code: number, details: string): Client {
    const grpc = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
    const client = {
      options: { loadedDataConverter: { payloadCodecs: [] } },
      withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn(),
      workflow: {
        signalWithStart: () => Promise.reject(new ServiceError('Failed to signalWithStart Workflow', { cause: grpc })),
      },
    };
    return client as unknown as Client;
  }

  test('a namespace that does not exist is a permanent failure: 500 with the reason, counted as temporal_rejected', async () => {
    const wrongNamespace = new Client({ connection: env.connection, namespace: 'no-such-namespace' });
    const { status, body, counted } = await deliverThrough(wrongNamespace);
    expect(status).toBe(500);
    expect(body.reason).toMatch(/^NOT_FOUND: .*no-such-namespace/);
    expect(counted).toEqual([['temporal_rejected', 1]]);
  });

  test.each([
    [3, 'INVALID_ARGUMENT', 500, 'temporal_rejected'],
    [7, 'PERMISSION_DENIED', 500, 'temporal_rejected'],
    [16, 'UNAUTHENTICATED', 500, 'temporal_rejected'],
    [8, 'RESOURCE_EXHAUSTED', 503, 'temporal_unavailable'],
    [14, 'UNAVAILABLE', 503, 'temporal_unavailable'],
  ])('gRPC status %i (%s) answers %i, counted as %s', async (code, name, status, outcome) => {
    const answer = await deliverThrough(failingClient(code, 'as the server said'));
    expect(answer.status).toBe(status);
    expect(answer.counted).toEqual([[outcome, 1]]);
    if (status === 500) expect(answer.body.reason).toBe(`${name}: as the server said`);
  });
});

describe('with an outbox (INGRESS_OUTBOX_DIR)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'melvin-ingress-outbox-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** An ingress on `client` whose deliveries go through an outbox in `dir`; `use` runs against it, then all stops. */
  async function withOutboxIngress<T>(
    client: Client,
    use: (url: string, outbox: Outbox, metrics: ReturnType<typeof createIngressMetrics>) => Promise<T>,
  ): Promise<T> {
    const metrics = createIngressMetrics();
    const outbox = await openIngressOutbox(dir, client, TURN, metrics);
    const { server: ingress, url } = await listenOn(
      createIngressApp({ client, metrics, outbox, clientSecret: SECRET, turn: TURN, melvinAdminId: MELVIN_ADMIN_ID }),
    );
    try {
      return await use(url, outbox, metrics);
    } finally {
      ingress.closeAllConnections();
      ingress.close();
      await outbox.close();
    }
  }

  test('a delivery is acknowledged as queued, then starts the workflow; a repeat is a duplicate', async () => {
    const event = notification();
    const conversationId = event.data.item.id;
    await withOutboxIngress(env.client, async (url, outbox, metrics) => {
      const body = JSON.stringify(event);
      const answer = await post(body, sign(body), url);
      expect(answer).toEqual({ status: 202, body: { queued: true, conversationId, notificationId: event.id } });
      expect((await post(body, sign(body), url)).status).toBe(200);
      await outbox.drained();
      const forwarded = (
        await metrics.registry.getSingleMetricAsString('melvin_ingress_outbox_forwarded_total')
      ).trim();
      expect(forwarded).toContain('melvin_ingress_outbox_forwarded_total{kind="message",outcome="signalled"} 1');
    });
    const description = await env.client.workflow.getHandle(workflowIdFor(conversationId)).describe();
    expect(description.status.name).toBe('RUNNING');
    expect(await description.staticSummary()).toBe(`Conversation ${conversationId} · conversation.user.created`);
  });

  test('while Temporal is unreachable deliveries are still acknowledged, and the next process hands them over', async () => {
    const unreachable = new Client({ connection: Connection.lazy({ address: '127.0.0.1:9' }) });
    const events = [notification(), notification(), notification('conversation.admin.closed')];
    await withOutboxIngress(unreachable, async (url, outbox) => {
      for (const event of events) {
        const body = JSON.stringify(event);
        expect((await post(body, sign(body), url)).status).toBe(202);
      }
      // Still taking deliveries: healthy for whatever routes by health, degraded for whoever reads it.
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
      const said = (await health.json()) as { status: string; temporal: string; outbox: { pending: number } };
      expect(said).toMatchObject({ status: 'degraded', outbox: { pending: 3 } });
      expect(said.temporal).not.toBe('serving');
      expect(outbox.backlog.pending).toBe(3);
    });
    // A new ingress process on the same directory, with Temporal back.
    await withOutboxIngress(env.client, async (_url, outbox) => {
      await outbox.drained();
    });
    expect(await runExists(events[0]!.data.item.id)).toBe(true);
    expect(await runExists(events[1]!.data.item.id)).toBe(true);
    // A teammate closing a conversation with no open workflow has nothing to stop: forwarded as ignored, starts nothing.
    expect(await runExists(events[2]!.data.item.id)).toBe(false);
  });

  test('a wrong namespace holds every delivery in the journal with an alert, and the fixed ingress forwards them', async () => {
    const wrongNamespace = new Client({ connection: env.connection, namespace: 'no-such-namespace' });
    const events = [notification(), notification()];
    let errors = '';
    jest.spyOn(process.stderr, 'write').mockImplementation((text: string | Uint8Array) => {
      errors += String(text);
      return true;
    });
    const stderrText = () => errors;
    await withOutboxIngress(wrongNamespace, async (url, outbox) => {
      for (const event of events) {
        const body = JSON.stringify(event);
        expect((await post(body, sign(body), url)).status).toBe(202);
      }
      await waitFor('the alert', async () =>
        stderrText().includes('Temporal refuses the ingress') ? true : undefined,
      );
      expect(outbox.backlog.pending).toBe(2);
    });
    jest.restoreAllMocks();
    expect(errors).not.toContain('outbox entry rejected');
    await expect(readFile(path.join(dir, 'rejected.jsonl'), 'utf8')).rejects.toThrow('ENOENT');
    // The namespace fixed: a new ingress process on the same directory.
    await withOutboxIngress(env.client, async (_url, outbox) => {
      await outbox.drained();
    });
    for (const event of events) expect(await runExists(event.data.item.id)).toBe(true);
  });
});

test('GET /healthz reports the Temporal connection', async () => {
  const response = await fetch(`${baseUrl}/healthz`);
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ status: 'ok', temporal: 'serving' });
});

describe('POST /conversations/:id/escalate', () => {
  /** `token: null` sends no Authorization header. */
  const escalate = (id: string, body: unknown, token: string | null = ADMIN_TOKEN) =>
    fetch(`${baseUrl}/conversations/${id}/escalate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token !== null ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });

  // A conversation with no open workflow gets one, started with the request (update-with-start), which judges it once
  // it has read who owns the conversation; no worker polls this file's task queue, so no judgement comes in time. The
  // model's regression cases (test/model/regressions.test.ts) run the judgement with a worker.
  test('needs the bearer token and checks the body; a conversation with no open workflow gets one that judges the request', async () => {
    expect((await escalate('123', { reason: 'VIP' }, null)).status).toBe(401);
    expect((await escalate('123', { reason: 'VIP' }, 'wrong-token-wrong-token')).status).toBe(401);
    expect((await escalate('123', { reason: '' })).status).toBe(400);
    const conversationId = `ended-${randomUUID()}`;
    const response = await escalate(conversationId, { reason: 'VIP', requestedBy: 'lead@team' });
    expect(response.status).toBe(503);
    const description = await env.client.workflow.getHandle(workflowIdFor(conversationId)).describe();
    expect(description.status.name).toBe('RUNNING');
  });

  test('a running conversation whose workflow does not answer in time (no worker) gets a 503 that says so', async () => {
    const event = notification();
    const conversationId = event.data.item.id;
    await post(JSON.stringify(event));
    const started = Date.now();
    const response = await escalate(conversationId, { reason: 'VIP', requestedBy: 'lead@team' });
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: string }).error).toMatch(
      /^the conversation's workflow did not answer in time/,
    );
    expect(Date.now() - started).toBeLessThan(OPERATOR_DEADLINE_MS + 5_000);
  });

  test('POST /conversations/:id/decision checks the token and the decision, and names a missing workflow', async () => {
    const decide = (id: string, body: unknown, token: string | null = ADMIN_TOKEN) =>
      fetch(`${baseUrl}/conversations/${id}/decision`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
    expect((await decide('123', { decision: 'approve' }, null)).status).toBe(401);
    const malformed = await decide('123', { decision: 'edit' });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: 'invalid decision', issues: [{ path: 'text' }] });
    expect((await decide('123', { decision: 'maybe' })).status).toBe(400);
    expect(await (await decide('no-such-conversation', { decision: 'approve' })).json()).toEqual({
      error: 'conversation no-such-conversation has no open workflow',
    });
  });

  test('POST /conversations/:id/hand-back is checked the same way; with no open workflow a new one judges it', async () => {
    const conversationId = `ended-${randomUUID()}`;
    const handBack = (body: unknown, token: string | null = ADMIN_TOKEN) =>
      fetch(`${baseUrl}/conversations/${conversationId}/hand-back`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
    expect((await handBack({ reason: 'done' }, null)).status).toBe(401);
    expect((await handBack({ reason: 'done', extra: 1 })).status).toBe(400);
    expect((await handBack({ reason: 'Sorted', requestedBy: 'lead@team' })).status).toBe(503);
    const description = await env.client.workflow.getHandle(workflowIdFor(conversationId)).describe();
    expect(description.status.name).toBe('RUNNING');
  });
});

describe('the support leads’ report', () => {
  /** `token: null` sends no Authorization header. */
  const reportData = (query = '', token: string | null = ADMIN_TOKEN, url = baseUrl) =>
    fetch(`${url}/report/data${query}`, { headers: token !== null ? { authorization: `Bearer ${token}` } : {} });

  /** A run with a turn summary in its memo, as a finished turn leaves it, on a task queue no worker polls. */
  const runWithSummary = (conversationId: string, memo: Partial<TurnSummary> | Record<string, unknown>) =>
    env.client.workflow.start(WORKFLOW_TYPE, {
      workflowId: workflowIdFor(conversationId),
      taskQueue: 'report-test-no-worker',
      args: [{ conversationId }],
      typedSearchAttributes: [{ key: searchAttributes.conversationId, value: conversationId }],
      memo: { [TURN_SUMMARY_MEMO]: memo },
    });
  const summary = (over: Partial<TurnSummary>): TurnSummary => ({
    status: 'success',
    escalation_source: null,
    escalation_kind: null,
    escalation_reason: null,
    escalated_at: null,
    replied: true,
    hops: 1,
    turn_ms: 2100,
    // Visibility sets the start time, and a run's own summary always ends after its run started.
    ended_at: new Date(Date.now() + 60_000).toISOString(),
    approval_outcome: null,
    tools: [{ name: 'get_user_payments', ok: true }],
    tokens: 900,
    intents: 1,
    open_intents: 0,
    intent_names: ['payment status'],
    open_intent_names: [],
    uncovered_intent_names: [],
    stage: null,
    path: ['initialize', 'plan', 'gather', 'coverage', 'draft', 'validate', 'response', 'finalize'],
    reopened_by_team: null,
    ...over,
  });

  test('GET /report is the page shell: no token needed, no data in it, only its own script may run', async () => {
    const response = await fetch(`${baseUrl}/report`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toMatch(/default-src 'none'; script-src 'self'/);
    const html = await response.text();
    expect(html).toContain('<div id="chart"></div>');
    expect(html).not.toContain(ADMIN_TOKEN);
    // Its style and script, served beside it without a token.
    for (const [file, type] of [
      ['report.css', /^text\/css/],
      ['report.js', /^(text|application)\/javascript/],
    ] as const) {
      const asset = await fetch(`${baseUrl}/report/${file}`);
      expect({ file, status: asset.status, type: asset.headers.get('content-type') }).toEqual({
        file,
        status: 200,
        type: expect.stringMatching(type),
      });
    }
  });

  test('GET /report/data needs the operator token, and checks since', async () => {
    expect((await reportData('', null)).status).toBe(401);
    expect((await reportData('', 'wrong-token-wrong-token-000')).status).toBe(401);
    const bad = await reportData('?since=7w');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: 'invalid since',
      issues: [{ path: 'since', message: 'a whole number followed by m, h or d, like 90m, 24h or 7d' }],
    });
    expect((await reportData('?since=400d')).status).toBe(400);
    const { server: off, url } = await listenOn(
      createIngressApp({ client: env.client, clientSecret: SECRET, turn: TURN, melvinAdminId: MELVIN_ADMIN_ID }),
    );
    try {
      expect(await (await reportData('', ADMIN_TOKEN, url)).json()).toEqual({
        error: 'the operator API is disabled: ADMIN_API_TOKEN is not set',
      });
      expect((await reportData('', ADMIN_TOKEN, url)).status).toBe(503);
    } finally {
      off.closeAllConnections();
      off.close();
    }
  });

  test('GET /report/data reads the runs’ summaries from this server’s visibility', async () => {
    await runWithSummary('report-1', summary({}));
    await runWithSummary(
      'report-2',
      summary({
        status: 'VALIDATION_FAILED',
        escalation_source: 'validate',
        escalation_kind: 'validation_failed',
        escalation_reason: 'Validation failed - see validation note for details',
        replied: false,
        tools: [{ name: 'get_user_payments', ok: false }],
      }),
    );
    await runWithSummary('report-3', { status: 7 });
    const report = await waitFor('the runs in visibility', async () => {
      const response = await reportData('?since=1d');
      expect(response.status).toBe(200);
      const body = (await response.json()) as Report;
      return body.turns === 2 && body.runs.unreadable === 1 ? body : undefined;
    });
    expect(report).toMatchObject({
      window: { label: '1d' },
      turns: 2,
      resolved: 1,
      resolution_rate: 0.5,
      escalated: 1,
      escalations: { by_source: [{ source: 'validate', turns: 1, rate: 0.5 }] },
      turn_ms: { p50: 2100, p95: 2100 },
      tools: [{ name: 'get_user_payments', calls: 2, failures: 1, failure_rate: 0.5 }],
      tokens: { total: 1800, per_turn: 900 },
    });
    // The conversations the tests above started have no worker: their runs are open, with no summary yet.
    expect(report.runs.without_summary).toBeGreaterThan(0);
    expect(report.runs.listed).toBe(report.runs.without_summary + report.runs.unreadable + 2);
    const firstOnly = await listReportRuns(env.client, new Date(Date.now() - 86_400_000), 1);
    expect(firstOnly).toMatchObject({ truncated: true, runs: [expect.any(Object)] });
  });
});
