// The resolved-conversation index on a real Temporal dev server: the schedule, a run paging through the sandbox
// Intercom's search into the index, a run that fails midway and the run after it (nothing lost, nothing twice), and
// Draft's retrieval from what was indexed, alone and in a whole turn.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MockActivityEnvironment, type TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { IntercomClient } from 'intercom-client';
import { createOpenAiClient } from '../../src/activities/llm';
import { createResolvedIndexActivities, type TeamExamples } from '../../src/activities/resolved-index';
import { startEmbeddedIndexDatabase, type EmbeddedIndexDatabase } from '../../src/resolved-index/embedded-process';
import { ensureIndexSchedule, INDEX_SCHEDULE_ID } from '../../src/resolved-index/schedule';
import { ResolvedIndexStore } from '../../src/resolved-index/store';
import { SANDBOX_EMBEDDING_MODEL_NAME } from '../../sandbox/model/server';
import { Scenario } from '../../sandbox/scenario';
import { searchAttributes, workflowIdFor } from '../../src/contract/shared';
import { ADMIN_ID, INTERCOM_TOKEN, OPENAI_KEY, type Sandbox } from '../helpers/sandbox';
import { runTurnOnWorker, useTestbed } from '../helpers/turns';

jest.setTimeout(240_000);

let env: TestWorkflowEnvironment;
let sandbox: Sandbox;
let workflowBundle: WorkflowBundleWithSourceMap;
let database: EmbeddedIndexDatabase;
let store: ResolvedIndexStore;
let activities: ReturnType<typeof createResolvedIndexActivities>;

useTestbed((testbed) => ({ env, sandbox, workflowBundle } = testbed));

beforeAll(async () => {
  database = await startEmbeddedIndexDatabase();
  store = await ResolvedIndexStore.open({ url: database.url });
  const openai = createOpenAiClient({ apiKey: OPENAI_KEY, baseURL: sandbox.urls.model });
  activities = createResolvedIndexActivities({
    intercom: new IntercomClient({ token: INTERCOM_TOKEN, baseUrl: sandbox.urls.intercom, maxRetries: 0 }),
    adminId: ADMIN_ID,
    embeddings: { openai, model: SANDBOX_EMBEDDING_MODEL_NAME },
    store: () => Promise.resolve(store),
  });
}, 240_000);

afterAll(async () => {
  await store?.close();
  await database?.stop();
});

/** A conversation a teammate answered and closed (closed by hand: this sandbox has no webhook receiver to tell). */
function resolved(id: string, question: string, answer: string, name = 'Maya Chen'): void {
  sandbox.intercom.seed({
    id,
    contact: { id: `c-${id}`, email: `${name.split(' ')[0]!.toLowerCase()}@example.com`, name },
    parts: [
      { author: 'user', type: 'comment', body: question },
      { author: 'admin', type: 'comment', body: answer },
    ],
  });
  close(id);
}

function close(id: string): void {
  const conversation = sandbox.intercom.mustGet(id);
  const now = Math.floor(Date.now() / 1000);
  Object.assign(conversation, { state: 'closed', open: false });
  Object.assign(conversation.statistics, { first_close_at: now, last_close_at: now });
}

async function runIndex(taskQueue: string, input: Record<string, unknown>) {
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, activities });
  return worker.runUntil(
    env.client.workflow.execute('indexResolvedConversations', {
      taskQueue,
      workflowId: `index-${taskQueue}`,
      args: [input],
    }),
  );
}

const fetchesOf = (id: string) =>
  sandbox.intercom.requests.filter((r) => r.method === 'GET' && r.path === `/conversations/${id}`).length;

test('a run that fails midway indexes nothing twice and loses nothing: the next run stores every message once', async () => {
  resolved(
    '9101',
    'When does my Boulder catering payout land? Call me on +1 415 555 0134',
    'Howdy Maya! Friday.\n— The Maple Crew',
  );
  resolved('9102', 'How do I update my bank details?', 'Hey there! Under Settings → Payouts.\n— The Maple Crew');
  resolved('9103', 'Can I get my W-2?', 'Howdy! It is in Documents.\n— The Maple Crew');
  resolved('9104', 'Where is my tax form?', 'Howdy! Documents, top right.\n— The Maple Crew');
  // Open: not indexed. Closed with only Melvin's reply: nothing of the team's to learn from.
  sandbox.intercom.seed({
    id: '9105',
    contact: { id: 'c-9105', email: 'o@example.com', name: 'Omar Diaz' },
    parts: [{ author: 'user', type: 'comment', body: 'Still open' }],
  });
  sandbox.intercom.seed({
    id: '9106',
    contact: { id: 'c-9106', email: 'p@example.com', name: 'Pia Lund' },
    parts: [
      { author: 'user', type: 'comment', body: 'Hello?' },
      { author: 'bot', type: 'comment', body: 'Hi, how can I help?' },
    ],
  });
  close('9106');

  // The third conversation's fetch is refused for good: the run fails after the first page was stored.
  sandbox.intercom.faults.add('fetch:9103', [{ status: 401 }]);
  await expect(runIndex('index-fail', { perPage: 2, pagesPerRun: 1 })).rejects.toThrow();
  // The first page's two are stored; of the second page's, the one beside the refused fetch may be too.
  const afterFailure = new Set((await store.keys()).map((k) => k.conversation_id));
  expect(afterFailure).toContain('9101');
  expect(afterFailure).toContain('9102');
  expect(afterFailure).not.toContain('9103');
  expect(await store.watermark()).toBeNull();

  const result = await runIndex('index-rerun', { perPage: 2, pagesPerRun: 1 });
  expect(result).toMatchObject({ conversations: 5, skipped: 1, stored: 4 });
  const keys = await store.keys();
  // The team's replies only: the talents' questions are not kept.
  expect(keys.map((k) => `${k.conversation_id}:${k.role}`)).toEqual([
    '9101:team',
    '9102:team',
    '9103:team',
    '9104:team',
  ]);
  expect(new Set(keys.map((k) => `${k.conversation_id}/${k.part_id}`)).size).toBe(keys.length);
  // Redacted before it was embedded and stored.
  const stored = keys.find((k) => k.conversation_id === '9101')!.text;
  expect(stored).toBe('Howdy [name]! Friday.\n— The Maple Crew');
  expect(await store.watermark()).toBe(result.watermark);
  expect(fetchesOf('9105')).toBe(0);
});

test('the schedule is created once and updated after; triggered, its run indexes what was closed since', async () => {
  const taskQueue = 'index-schedule';
  expect(await ensureIndexSchedule(env.client, { taskQueue, intervalSeconds: 3600, lookbackDays: 1 })).toBe('created');
  expect(await ensureIndexSchedule(env.client, { taskQueue, intervalSeconds: 600, lookbackDays: 1 })).toBe('updated');
  const handle = env.client.schedule.getHandle(INDEX_SCHEDULE_ID);
  const described = await handle.describe();
  expect(described.spec.intervals).toMatchObject([{ every: 600_000 }]);
  expect(described.policies.overlap).toBe('SKIP');

  resolved('9107', 'Is my payout late?', 'Howdy Sam! It left on Tuesday.\n— The Maple Crew', 'Sam Ode');
  const before = await store.watermark();
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, activities });
  await worker.runUntil(async () => {
    await handle.trigger();
    for (let i = 0; i < 120 && (await store.keys()).every((k) => k.conversation_id !== '9107'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const runs = (await handle.describe()).info.recentActions;
    await env.client.workflow.getHandle(runs.at(-1)!.action.workflow.workflowId).result();
  });
  await handle.delete();
  expect((await store.keys()).filter((k) => k.conversation_id === '9107')).toHaveLength(1);
  expect(await store.watermark()).toBeGreaterThanOrEqual(before!);
});

test('a conversation Melvin handled is indexed with the stage it settled; one it never saw, with none', async () => {
  // Melvin's run of the conversation, as Finalize leaves it: MelvinStage set (no worker polls this queue).
  const melvinsRun = await env.client.workflow.start('supportConversation', {
    taskQueue: 'nobody-polls',
    workflowId: workflowIdFor('9121'),
    args: [],
    typedSearchAttributes: [{ key: searchAttributes.melvinStage, value: 'awaiting_payment' }],
  });
  try {
    resolved('9120', 'Is my Denver payout late?', 'Hey Jo! It left on Friday.\n— The Maple Crew', 'Jo March');
    resolved('9121', 'Is my Denver payout late?', 'Hey Lou! It left on Friday.\n— The Maple Crew', 'Lou Reed');
    await runIndex('index-stage', {});
  } finally {
    await melvinsRun.terminate('test over');
  }
  const stages = (await store.keys())
    .filter((k) => ['9120', '9121'].includes(k.conversation_id))
    .map((k) => `${k.conversation_id}:${k.role}:${k.stage}`);
  expect(stages).toEqual(['9120:team:null', '9121:team:awaiting_payment']);
  // The same stage boosts: the conversation of the talent's stage comes first, though the other is as similar (and
  // first on a tie).
  const found: TeamExamples = await new MockActivityEnvironment().run(activities.retrieveTeamExamples, {
    query: 'Is my Denver payout late?',
    conversationId: null,
    stage: 'awaiting_payment' as const,
  });
  expect(found.top[0]?.conversation_id).toBe('9121');
});

test("Draft's retrieval: the indexed team reply nearest the question comes first, as an example without its question", async () => {
  const found: TeamExamples = await new MockActivityEnvironment().run(activities.retrieveTeamExamples, {
    query: 'When will my catering payout in Boulder land?',
    conversationId: null,
    stage: null,
  });
  expect(found.configured).toBe(true);
  expect(found.top.length).toBeLessThanOrEqual(8);
  expect(found.top.map((t) => t.conversation_id)[0]).toBe('9101');
  expect(found.pairs[0]).toEqual({ question: '', answer: 'Howdy [name]! Friday.\n— The Maple Crew' });
  expect(found.top.every((t) => t.role === 'team')).toBe(true);
  expect(found.pairs.length).toBeLessThanOrEqual(2);
});

test('a whole turn with no MCP examples tool: Draft writes in the voice of the indexed team reply, none of its facts', async () => {
  const TEAM_VOICE = Scenario.parse(
    JSON.parse(readFileSync(path.join(__dirname, '../../scenarios/melvin/team-voice.json'), 'utf8')),
  );
  sandbox.seed({ conversation: { ...TEAM_VOICE.conversation, id: '9110' }, talent: TEAM_VOICE.talent });
  const { state } = await runTurnOnWorker({ env, workflowBundle }, '9110', { ...sandbox.activities, ...activities });
  expect(state.metadata.style_examples).toMatchObject({ tool: 'resolved-conversation-index', error: null });
  expect(state.metadata.style_examples?.examples[0]?.answer).toBe('Howdy [name]! Friday.\n— The Maple Crew');
  const reply = sandbox.intercom.replies('9110').join('\n');
  expect(reply).toContain('November 27');
  expect(reply).toContain('— The Maple Crew');
  expect(reply).not.toContain('Friday');
});

test('privacy: what one talent and the team wrote of them reaches no other talent’s turn, state or notes', async () => {
  // A closed conversation full of one talent's particulars, in their messages and in the teammate's answer.
  const planted = [
    'Dana Whitfield',
    'dana.w@privmail.example',
    '+44 20 7946 0991',
    '4471 Larkspur Avenue',
    'https://danaw.example/portfolio',
    '$3,480.75',
    'Quillon Logistics',
    'Mr. Oduya',
  ];
  sandbox.intercom.seed({
    id: '9130',
    contact: { id: 'c-9130', email: 'dana.w@privmail.example', name: 'Dana Whitfield' },
    parts: [
      {
        author: 'user',
        type: 'comment',
        body:
          'When does my Boulder catering payout land? It should be $3,480.75 from Quillon Logistics. My supervisor ' +
          'Mr. Oduya said to write. I live at 4471 Larkspur Avenue, call +44 20 7946 0991, see https://danaw.example/portfolio',
      },
      {
        author: 'admin',
        type: 'comment',
        body:
          'Howdy Dana Whitfield! Your $3,480.75 from Quillon Logistics lands Friday; Mr. Oduya is copied, and we post ' +
          'to 4471 Larkspur Avenue. Write to dana.w@privmail.example or https://danaw.example/portfolio.\n— The Maple Crew',
      },
    ],
  });
  close('9130');
  // And one handed over as sensitive: never an example, whatever it says.
  sandbox.intercom.seed({
    id: '9131',
    contact: { id: 'c-9131', email: 'r@example.com', name: 'Rui Sol' },
    parts: [
      {
        author: 'user',
        type: 'comment',
        body: 'When does my Boulder catering payout land? My manager Wendell Kray harasses me',
      },
      { author: 'bot', type: 'note', body: '🚨 Escalation: Sensitive request: a person from the team must handle it' },
      { author: 'admin', type: 'comment', body: 'Howdy! We are on it with Wendell Kray.\n— The Maple Crew' },
    ],
  });
  close('9131');
  await runIndex('index-privacy', {});
  const stored = JSON.stringify(
    (await store.sql.query('SELECT * FROM resolved_examples WHERE conversation_id IN ($1, $2)', ['9130', '9131'])).rows,
  );
  expect(stored).toContain('9130');
  expect(stored).not.toContain('9131');
  // The index keeps no talent's own words (nothing of the question is stored), and no contact detail or amount of the
  // team's answer. The answer's other words are kept, to be shown only once the team used them with several talents.
  expect(stored).not.toContain('supervisor');
  for (const text of ['Dana', 'dana.w@privmail.example', '+44 20 7946 0991', '$3,480.75'])
    expect(stored).not.toContain(text);

  // Another talent asks the same: the retrieval, the turn's state and everything posted hold none of it.
  const found: TeamExamples = await new MockActivityEnvironment().run(activities.retrieveTeamExamples, {
    query: 'When does my Boulder catering payout land?',
    conversationId: null,
    stage: null,
  });
  expect(found.top.map((t) => t.conversation_id)).toContain('9130');
  const TEAM_VOICE = Scenario.parse(
    JSON.parse(readFileSync(path.join(__dirname, '../../scenarios/melvin/team-voice.json'), 'utf8')),
  );
  sandbox.seed({ conversation: { ...TEAM_VOICE.conversation, id: '9132' }, talent: TEAM_VOICE.talent });
  const { state } = await runTurnOnWorker({ env, workflowBundle }, '9132', { ...sandbox.activities, ...activities });
  const seen = [
    JSON.stringify(found),
    JSON.stringify(state),
    ...sandbox.intercom.replies('9132'),
    JSON.stringify(sandbox.intercom.mustGet('9132').conversation_parts),
  ].join('\n');
  const words = [...planted, 'Dana', 'Whitfield', 'Larkspur', 'Quillon', 'Oduya', 'Wendell', 'Kray', 'harass'];
  for (const word of words) expect(seen).not.toContain(word);
});
