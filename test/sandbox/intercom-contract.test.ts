// Melvin's Intercom activities and the Intercom emulator against the project's contract of Intercom's API 2.14: every
// request Melvin sends and every response the emulator gives, on every operation and error path Melvin meets.
import type { ApplicationFailure } from '@temporalio/common';
import { IntercomClient } from 'intercom-client';
import { createIntercomActivities } from '../../src/activities/intercom';
import { IntercomEmulator, MAX_RETURNED_PARTS, type RecordedRequest } from '../../sandbox/intercom/emulator';
import type { ScenarioPart } from '../../sandbox/scenario';
import { failureOf, runAttempt } from '../helpers/activity';
import { allContractProblems, contractProblems, type Exchange } from './intercom-api';

const ADMIN_ID = '8918000';
const TOKEN = 'contract-test-token';
let emulator: IntercomEmulator;
let intercom: IntercomClient;
let activities: ReturnType<typeof createIntercomActivities>;
let nextId = 7000;

beforeAll(async () => {
  emulator = new IntercomEmulator({ token: TOKEN, adminId: ADMIN_ID });
  const url = await emulator.start();
  intercom = new IntercomClient({ token: TOKEN, baseUrl: url, maxRetries: 0 });
  activities = createIntercomActivities(intercom, { adminId: ADMIN_ID });
});

afterAll(() => emulator.stop());

beforeEach(() => {
  emulator.faults.set({});
  emulator.requests.length = 0;
});

function seed(parts: ScenarioPart[] = []): string {
  const id = String(++nextId);
  emulator.seed({
    id,
    contact: { id: `c-${id}`, email: `talent-${id}@example.com`, name: 'Ana Ruiz' },
    parts: [{ author: 'user', type: 'comment', body: 'When will I get paid?' }, ...parts],
  });
  return id;
}

/** Another emulated workspace, with one conversation ('7900') and Melvin's activities pointed at it. */
async function otherWorkspace(options: { rateLimit?: number; conversationAttributes?: Record<string, 'string'> }) {
  const workspace = new IntercomEmulator({ token: TOKEN, adminId: ADMIN_ID, ...options });
  const url = await workspace.start();
  workspace.seed({
    id: '7900',
    contact: { id: 'c-7900', email: 'y@example.com', name: 'Y' },
    parts: [{ author: 'user', type: 'comment', body: 'Hi' }],
  });
  const client = new IntercomClient({ token: TOKEN, baseUrl: url, maxRetries: 0 });
  return { workspace, activities: createIntercomActivities(client, { adminId: ADMIN_ID }) };
}

const exchanges = (): Exchange[] => emulator.requests.map((r: RecordedRequest) => r.exchange);

/** Sends a request the SDK would never send, to see Intercom's side of a refusal. */
async function raw(method: string, path: string, body?: unknown, token = TOKEN) {
  const response = await fetch(`${emulator.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'intercom-version': '2.14', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { errors: { code: string; message: string }[] } };
}

test('every operation Melvin uses, done by its activities through the SDK, keeps the contract on both sides', async () => {
  const id = seed([
    { author: 'bot', type: 'comment', body: 'Let me check.' },
    { author: 'admin', type: 'note', body: 'internal: VIP' },
  ]);
  const notBefore = Math.floor(Date.now() / 1000);

  const fetched = await runAttempt(1, activities.fetchConversation, { conversationId: id });
  await runAttempt(1, activities.sendReply, { conversationId: id, text: 'It is on its way.', notBefore });
  await runAttempt(1, activities.addNote, { conversationId: id, text: 'Validation result: ok', notBefore });
  await runAttempt(1, activities.setStatus, { conversationId: id, status: 'success' });
  await runAttempt(1, activities.snooze, { conversationId: id, seconds: 300 });
  await intercom.admins.identify();

  expect(fetched.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  expect(fetched.omitted_parts).toBe(0);
  expect(exchanges().map((e) => `${e.method} ${e.path.replace(/\d+/g, ':id')} ${e.status}`)).toEqual([
    'GET /conversations/:id 200',
    'GET /contacts/c-:id 200',
    'POST /conversations/:id/reply 200',
    'POST /conversations/:id/reply 200',
    'PUT /conversations/:id 200',
    'POST /conversations/:id/parts 200',
    'GET /me 200',
  ]);
  expect(allContractProblems(exchanges())).toEqual([]);
});

test('a retried reply and note look for the earlier post first, and the lookups keep the contract', async () => {
  const id = seed();
  emulator.faults.set({ reply: [{ status: 500, after_accept: true }], note: [{ status: 502 }] });
  const input = { conversationId: id, text: 'Paid on Friday.', notBefore: Math.floor(Date.now() / 1000) };

  await failureOf(runAttempt(1, activities.sendReply, input));
  expect((await runAttempt(2, activities.sendReply, input)).already_posted).toBe(true);
  await failureOf(runAttempt(1, activities.addNote, input));
  expect((await runAttempt(2, activities.addNote, input)).already_posted).toBe(false);

  expect(allContractProblems(exchanges())).toEqual([]);
});

test('the error paths Melvin meets keep the contract: 401, 404, a non-integer id, 429 and 5xx', async () => {
  const id = seed();
  const wrongToken = createIntercomActivities(
    new IntercomClient({ token: 'not-the-token', baseUrl: emulator.url, maxRetries: 0 }),
    { adminId: ADMIN_ID },
  );
  emulator.faults.set({ fetch: [{ status: 503 }], reply: [{ status: 429, retry_after_s: 7 }] });

  const unavailable = await failureOf(runAttempt(1, activities.fetchConversation, { conversationId: id }));
  const unauthorized = await failureOf(runAttempt(1, wrongToken.fetchConversation, { conversationId: id }));
  const missing = await failureOf(runAttempt(1, activities.fetchConversation, { conversationId: '999999' }));
  const notAnId = await failureOf(runAttempt(1, activities.fetchConversation, { conversationId: 'abc-1' }));
  const limited = await failureOf(
    runAttempt(1, activities.sendReply, { conversationId: id, text: 'Hi', notBefore: 0 }),
  );

  expect([unavailable.name, unauthorized.name, missing.name, notAnId.name]).toEqual([
    'IntercomUnavailableError',
    'IntercomAuthError',
    'IntercomNotFoundError',
    'IntercomNotFoundError',
  ]);
  // Intercom sends no Retry-After: the wait comes from X-RateLimit-Reset, whole seconds ahead.
  expect((limited as ApplicationFailure).type).toBe('IntercomRateLimitedError');
  expect((limited as ApplicationFailure).nextRetryDelay).toBeGreaterThan(6_000);
  expect((limited as ApplicationFailure).nextRetryDelay).toBeLessThanOrEqual(8_000);
  const rateLimited = exchanges().find((e) => e.status === 429)!;
  expect(rateLimited.responseHeaders['retry-after']).toBeUndefined();
  expect(rateLimited.responseHeaders['x-ratelimit-remaining']).toBe('0');

  expect(exchanges().map((e) => e.status)).toEqual([503, 401, 404, 404, 429]);
  expect(allContractProblems(exchanges())).toEqual([]);
});

test('past its limit in a 10-second window the emulator answers a real 429, and Melvin waits for the reset', async () => {
  const { workspace: limited, activities: onLimited } = await otherWorkspace({ rateLimit: 2 });
  // All three requests must fall in one window: start well before its end.
  if (Date.now() % 10_000 > 8_000) await new Promise((resolve) => setTimeout(resolve, 10_000 - (Date.now() % 10_000)));
  // Fetching is two requests (conversation, contact); the third in the window is over the limit.
  await runAttempt(1, onLimited.fetchConversation, { conversationId: '7900' });
  const err = await failureOf(runAttempt(1, onLimited.setStatus, { conversationId: '7900', status: 'success' }));
  await limited.stop();

  expect((err as ApplicationFailure).type).toBe('IntercomRateLimitedError');
  expect((err as ApplicationFailure).nextRetryDelay).toBeLessThanOrEqual(10_000);
  const statuses = limited.requests.map((r) => [r.status, r.exchange.responseHeaders['x-ratelimit-remaining']]);
  expect(statuses).toEqual([
    [200, '1'],
    [200, '0'],
    [429, '0'],
  ]);
  expect(allContractProblems(limited.requests.map((r) => r.exchange))).toEqual([]);
});

test('an Intercom-Version the API does not have is refused, with the rate-limit headers of an authenticated answer', async () => {
  const response = await fetch(`${emulator.url}/me`, {
    headers: { authorization: `Bearer ${TOKEN}`, 'intercom-version': '2.99' },
  });
  expect(response.status).toBe(400);
  expect(((await response.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('intercom_version_invalid');
  expect(exchanges().flatMap((e) => contractProblems(e, 'response'))).toEqual([]);
});

test('a custom attribute the workspace has not defined, or of the wrong type, is refused as parameter_invalid', async () => {
  const id = seed();
  const undefinedAttribute = await raw('PUT', `/conversations/${id}`, { custom_attributes: { 'Melvin Mood': 'ok' } });
  const wrongType = await raw('PUT', `/conversations/${id}`, { custom_attributes: { 'Melvin Status': 5 } });

  expect(undefinedAttribute).toEqual({
    status: 400,
    body: expect.objectContaining({
      errors: [{ code: 'parameter_invalid', message: "Custom attribute 'Melvin Mood' does not exist" }],
    }),
  });
  expect(wrongType.status).toBe(400);
  expect(wrongType.body.errors[0]!.message).toBe("Custom attribute 'Melvin Status' must be of type string");
  expect(emulator.melvinStatus(id)).toBeUndefined();
  expect(exchanges().flatMap((e) => contractProblems(e, 'response'))).toEqual([]);
});

test('a workspace without the Melvin Status attribute refuses setStatus for good, as a request that is wrong', async () => {
  const { workspace: bare, activities: onBare } = await otherWorkspace({ conversationAttributes: {} });
  const err = await failureOf(runAttempt(1, onBare.setStatus, { conversationId: '7900', status: 'success' }));
  await bare.stop();

  expect(err.name).toBe('IntercomRejectedError');
  expect(err.message).toContain("parameter_invalid: Custom attribute 'Melvin Status' does not exist");
  expect(allContractProblems(bare.requests.map((r) => r.exchange))).toEqual([]);
});

test('requests the API description calls invalid are refused with parameter_invalid', async () => {
  const id = seed();
  const refusals = await Promise.all([
    raw('POST', `/conversations/${id}/reply`, { message_type: 'comment', type: 'admin', body: '<p>Hi</p>' }),
    raw('POST', `/conversations/${id}/reply`, { message_type: 'shout', type: 'admin', admin_id: ADMIN_ID, body: 'x' }),
    raw('POST', `/conversations/${id}/reply`, { message_type: 'comment', type: 'admin', admin_id: ADMIN_ID }),
    raw('POST', `/conversations/${id}/parts`, { message_type: 'snoozed', admin_id: ADMIN_ID }),
  ]);

  expect(refusals.map((r) => [r.status, r.body.errors[0]!.code])).toEqual([
    [400, 'parameter_invalid'],
    [400, 'parameter_invalid'],
    [400, 'parameter_invalid'],
    [400, 'parameter_invalid'],
  ]);
  expect(emulator.replies(id)).toEqual([]);
  expect(emulator.snoozedUntil(id)).toBeNull();
  // Intercom's side of each refusal keeps the contract, and the contract sees each request for what it is.
  expect(exchanges().flatMap((e) => contractProblems(e, 'response'))).toEqual([]);
  expect(exchanges().every((e) => contractProblems(e).length > 0)).toBe(true);
});

test('only the 500 most recent parts come back; Melvin counts the rest from total_count and keeps the source', async () => {
  const history: ScenarioPart[] = Array.from({ length: 520 }, (_, n) => ({
    author: n % 2 === 0 ? 'user' : 'bot',
    type: 'comment',
    body: `message ${n + 1}`,
  }));
  const id = seed(history);

  const fetched = await runAttempt(1, activities.fetchConversation, { conversationId: id });

  const returned = emulator.requests[0]!.exchange.responseBody as {
    conversation_parts: { conversation_parts: unknown[]; total_count: number };
  };
  expect(returned.conversation_parts.conversation_parts).toHaveLength(MAX_RETURNED_PARTS);
  expect(returned.conversation_parts.total_count).toBe(520);
  expect(fetched.omitted_parts).toBe(20);
  expect(fetched.messages[0]).toEqual({ role: 'user', content: 'When will I get paid?' });
  expect(fetched.messages[1]).toEqual({ role: 'user', content: 'message 21' });
  expect(fetched.messages.at(-1)).toEqual({ role: 'assistant', content: 'message 520' });
  expect(allContractProblems(exchanges())).toEqual([]);
});

test('the contract fails exchanges that break it, naming what is wrong and where', () => {
  const good: Exchange = {
    method: 'POST',
    path: '/conversations/7001/reply',
    query: {},
    requestHeaders: { authorization: 'Bearer t', 'intercom-version': '2.14', 'content-type': 'application/json' },
    requestBody: { message_type: 'comment', type: 'admin', admin_id: '8918000', body: '<p>Hi</p>' },
    status: 429,
    responseHeaders: {
      'content-type': 'application/json; charset=utf-8',
      'x-ratelimit-limit': '1666',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '1790000000',
    },
    responseBody: { type: 'error.list', request_id: 'r', errors: [{ code: 'rate_limit_exceeded', message: 'x' }] },
  };
  expect(contractProblems(good)).toEqual([]);

  expect(
    contractProblems({
      ...good,
      requestBody: { ...(good.requestBody as object), admin_id: 8918000 },
      responseHeaders: { ...good.responseHeaders, 'retry-after': '7' },
      responseBody: { type: 'error.list', errors: [{ code: 'too_many', message: 'x' }] },
    }),
  ).toEqual([
    'POST /conversations/7001/reply request body: admin_id: Invalid input: expected string, received number',
    'POST /conversations/7001/reply response 429: Intercom sends no Retry-After',
    'POST /conversations/7001/reply response 429: error code "too_many" is not one of rate_limit_exceeded',
  ]);
  expect(contractProblems({ ...good, status: 200, responseBody: { type: 'conversation', id: 7001 } })).toEqual(
    expect.arrayContaining([
      'POST /conversations/7001/reply response 200: id: Invalid input: expected string, received number',
    ]),
  );
  expect(contractProblems({ ...good, method: 'DELETE' })).toEqual([
    "DELETE /conversations/7001/reply: not an operation of Melvin's Intercom contract",
  ]);
});
