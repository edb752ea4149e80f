// The report page in headless Chromium against a real Temporal server, the ingress and the sandbox model: a lead asks
// "what is causing escalations?" and gets an answer with the figures it used; the flows are drawn; intents are counted.
import type { Server } from 'node:http';
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import OpenAI from 'openai';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_ARGS, ensureChromium } from '../../harness/chromium';
import { SANDBOX_MODEL_NAME, SandboxModel } from '../../sandbox/model/server';
import { createIngressApp } from '../../src/ingress/app';
import { TURN_SUMMARY_MEMO, WORKFLOW_TYPE, searchAttributes, workflowIdFor } from '../../src/contract/shared';
import { describeNeeding } from '../helpers/requirements';
import { quietRuntime, waitFor } from '../helpers/runtime';
import { startTemporal } from '../helpers/temporal';

quietRuntime();

const ADMIN_TOKEN = 'report-page-admin-token-0123456789';
const MODEL_KEY = 'sk-report-page';
const TURN = {
  taskQueue: 'report-page-no-worker',
  maxHops: 2,
  snoozeSeconds: 300,
  quietPeriodSeconds: 0,
  handoverMessages: {},
};
const OUTPUT_DIR = path.join(__dirname, '..', '..', 'test-output');

let env: TestWorkflowEnvironment;
let model: SandboxModel;
let server: Server;
let baseUrl: string;
let browser: Browser | undefined;

const SUCCESS_PATH = ['initialize', 'plan', 'gather', 'coverage', 'draft', 'validate', 'response', 'finalize'];
const summary = (over: Record<string, unknown>) => ({
  status: 'success',
  escalation_source: null,
  escalation_kind: null,
  escalation_reason: null,
  escalated_at: null,
  replied: true,
  hops: 1,
  turn_ms: 1500,
  ended_at: new Date(Date.now() + 60_000).toISOString(),
  approval_outcome: null,
  tools: [{ name: 'get_user_payments', ok: true }],
  tokens: 800,
  intents: 1,
  open_intents: 0,
  intent_names: ['payment status'],
  open_intent_names: [],
  uncovered_intent_names: [],
  stage: null,
  path: SUCCESS_PATH,
  reopened_by_team: null,
  ...over,
});
const hopsExhausted = {
  status: 'ROUTE_TO_TEAM',
  escalation_source: 'coverage',
  escalation_kind: 'hops_exhausted',
  escalation_reason: 'Exceeded maximum hops (2). Unable to gather sufficient data.',
  replied: false,
  hops: 2,
  intent_names: ['form 8821 copy'],
  uncovered_intent_names: ['form 8821 copy'],
  path: ['initialize', 'plan', 'gather', 'coverage', 'plan', 'gather', 'coverage', 'escalate', 'finalize'],
};

describeNeeding(['Chromium'])('the report page in headless Chromium', () => {
  beforeAll(async () => {
    env = await startTemporal();
    model = new SandboxModel({ apiKey: MODEL_KEY });
    const modelUrl = await model.start(0);
    const app = createIngressApp({
      client: env.client,
      clientSecret: 'report-page-secret',
      adminApiToken: ADMIN_TOKEN,
      turn: TURN,
      melvinAdminId: '8918000',
      temporalUiOrigins: ['http://127.0.0.1:8233'],
      analysis: {
        openai: new OpenAI({ baseURL: modelUrl, apiKey: MODEL_KEY, maxRetries: 0 }),
        model: SANDBOX_MODEL_NAME,
      },
    });
    ({ server, baseUrl } = await new Promise<{ server: Server; baseUrl: string }>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () =>
        resolve({ server: s, baseUrl: `http://127.0.0.1:${(s.address() as { port: number }).port}` }),
      );
    }));
    const memos = [
      summary({}),
      summary({}),
      summary({ intent_names: ['payment status', 'job status'] }),
      summary(hopsExhausted),
      summary(hopsExhausted),
      summary({
        ...hopsExhausted,
        escalation_kind: 'operator',
        escalation_source: 'operator',
        escalation_reason: 'VIP',
      }),
    ];
    const stamp = Date.now();
    for (const [i, memo] of memos.entries()) {
      const conversationId = `page-${stamp}-${i}`;
      await env.client.workflow.start(WORKFLOW_TYPE, {
        workflowId: workflowIdFor(conversationId),
        taskQueue: TURN.taskQueue,
        args: [{ conversationId }],
        typedSearchAttributes: [{ key: searchAttributes.conversationId, value: conversationId }],
        memo: { [TURN_SUMMARY_MEMO]: memo },
      });
    }
    await waitFor('the runs in visibility', async () => {
      const response = await fetch(`${baseUrl}/report/data?since=1d`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      return ((await response.json()) as { turns: number }).turns >= memos.length;
    });
    browser = await chromium.launch({ executablePath: await ensureChromium(), args: CHROMIUM_ARGS });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    server?.closeAllConnections();
    server?.close();
    await model?.stop();
    await env?.teardown();
  });

  test('"what is causing escalations?" is answered with figures; the flows are drawn; the intents are counted', async () => {
    const page = await browser!.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${baseUrl}/report?since=1d#token=${ADMIN_TOKEN}`);
    await page.locator('#report').waitFor({ state: 'visible' });

    // The intents are counted, and the uncovered question ranks first, with a link to a run in the Temporal UI.
    const intents = page.locator('#intents tbody tr');
    // Ties rank by name: both intents were asked in three turns.
    await expect(intents.allInnerTexts()).resolves.toEqual([
      expect.stringMatching(/^form 8821 copy\s+3\s+0\s+3\s+0\s+0\.0%/),
      expect.stringMatching(/^payment status\s+3\s+3\s+0\s+0\s+100\.0%/),
      expect.stringMatching(/^job status\s+1\s+1\s+0\s+0\s+100\.0%/),
    ]);
    await expect(page.locator('#intents-note').innerText()).resolves.toContain('recorded in 6 of 6 turns');
    await expect(page.locator('#uncovered tbody tr').first().innerText()).resolves.toMatch(/^form 8821 copy\s+3\s+3/);
    const link = page.locator('#causes tbody tr').first().locator('a').first();
    await expect(link.getAttribute('href')).resolves.toMatch(
      /^http:\/\/127\.0\.0\.1:8233\/namespaces\/default\/workflows\/intercom-conversation-page-\d+-\d\/[0-9a-f-]+$/,
    );
    await expect(page.locator('#causes tbody tr').first().innerText()).resolves.toMatch(/^hops_exhausted\s+2\s+66\.7%/);
    await page.selectOption('#cause-by', 'intent');
    await expect(page.locator('#causes tbody tr').first().innerText()).resolves.toMatch(/^form 8821 copy\s+3/);

    // The flows are drawn as SVG with counts on their edges, and their Mermaid source is on the page.
    const paths = page.locator('#flow-paths svg');
    await expect(paths.locator('g.node').count()).resolves.toBeGreaterThanOrEqual(9);
    await expect(paths.locator('[data-edge="initialize>plan"]').textContent()).resolves.toBe('6');
    await expect(paths.locator('[data-edge="coverage>plan"]').textContent()).resolves.toBe('3');
    await expect(
      page.locator('#flow-escalations svg [data-edge="source:coverage>kind:hops_exhausted"]').textContent(),
    ).resolves.toBe('2');
    await expect(page.locator('#flow-paths pre').textContent()).resolves.toContain('initialize -->|6| plan');

    // The lead asks in words; the answer quotes the tool's figures, shown beneath it.
    await expect(page.locator('#ask-question').inputValue()).resolves.toBe('What is causing escalations?');
    await page.click('#ask-form button');
    await page.locator('#ask-figures details').first().waitFor();
    await expect(page.locator('#ask-answer').innerText()).resolves.toContain('hops_exhausted (turns: 2)');
    await expect(page.locator('#ask-figures summary').first().innerText()).resolves.toBe(
      'escalation_causes({"by":"kind"})',
    );
    await expect(page.locator('#ask-figures pre').first().innerText()).resolves.toContain('"escalated_turns": 3');

    // A question too short is refused with what was wrong and where.
    await page.fill('#ask-question', 'x');
    await page.click('#ask-form button');
    await waitFor('the refusal', async () =>
      (await page.locator('#ask-answer').innerText()).includes('question: the question is too short'),
    );

    mkdirSync(OUTPUT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT_DIR, 'report-patterns.png'), fullPage: true });
    // No script error (the refused question's 400 is the console's only complaint, and expected).
    expect(errors).toEqual([]);
    await page.close();
  });

  test('POST /report/ask needs the operator token and checks its body', async () => {
    const ask = (body: unknown, token: string | null = ADMIN_TOKEN) =>
      fetch(`${baseUrl}/report/ask`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
    expect((await ask({ question: 'what is causing escalations?' }, null)).status).toBe(401);
    const bad = await ask({ question: 'why?', since: '2w' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'invalid question', issues: [{ path: 'since' }] });
    const weather = await ask({ question: 'what is the weather?', since: '1d' });
    expect(await weather.json()).toMatchObject({ figures: [], answer: expect.stringMatching(/cannot answer/) });
  });
});
