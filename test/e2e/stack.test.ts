// The one-command run: `npm start` brings up Temporal, the sandbox, the worker and the ingress as processes; the
// scenario runner and a person in a browser then talk to Melvin through the signed webhook.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_ARGS, ensureChromium } from '../../harness/chromium';
import type { ScenarioResult } from '../../sandbox/scenario-runner';
import { readDevPayloadKeys } from '../../src/config/dev-payload-keys';
import { createDataConverter } from '../../src/encryption/payload-codec';
import type { Report } from '../../src/reports/figures';
import { SANDBOX_SECRETS } from '../../sandbox/services';
import { textInSomeFrame } from '../helpers/browser';
import { describeNeeding } from '../helpers/requirements';
import { startNpmStart, type NpmStart } from '../helpers/processes';
import { waitFor } from '../helpers/runtime';
import { freeStackPorts, portEnvironment, type StackPorts } from '../../harness/stack';

const ROOT = path.join(__dirname, '..', '..');
const SHARED_SCENARIOS = path.join(ROOT, '..', 'shared', 'scenarios');
const OUTPUT_DIR = path.join(ROOT, 'test-output');
let start: NpmStart;
let env: NodeJS.ProcessEnv;
let urls: { inbox: string; temporalUi: string; report: string };
let ports: StackPorts;

/** `npm run melvin -- <args>` against the stack, as a support lead runs it. */
function runCli(...args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'melvin', '--', ...args], { cwd: ROOT, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

function runScenarios(...targets: string[]) {
  return new Promise<{ code: number | null; results: ScenarioResult[]; summary: string; stderr: string }>((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'scenario', '--', ...targets], { cwd: ROOT, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => {
      const lines = stdout.trim().split('\n');
      resolve({
        code,
        results: lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as ScenarioResult),
        summary: lines.at(-1) ?? '',
        stderr,
      });
    });
  });
}

/** What failed, readable in a test failure: the scenario and its unmet expectations. */
const failures = (results: ScenarioResult[]) =>
  results
    .filter((r) => !r.passed)
    .map((r) => ({ id: r.id, error: r.error, failed: r.expectations.filter((e) => !e.passed) }));

beforeAll(async () => {
  ports = await freeStackPorts();
  env = {
    ...process.env,
    ...portEnvironment(ports),
    MELVIN_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'melvin-stack-')),
    // The worker's info-level logs are checked below for what they must and must not carry.
    LOG_LEVEL: 'INFO',
    SANDBOX_CONTROL_URL: `http://127.0.0.1:${ports.intercom}/_sandbox`,
    TEMPORAL_ADDRESS: `127.0.0.1:${ports.temporal}`,
  };
  start = await startNpmStart(env);
  const output = start.output();
  urls = {
    inbox: /Inbox \(talk to Melvin\):\s+(\S+)/.exec(output)![1]!,
    temporalUi: /Temporal UI:\s+(\S+)/.exec(output)![1]!,
    report: /Reports \(support leads\):\s+(\S+)/.exec(output)![1]!,
  };
}, 300_000);

afterAll(() => start?.stop());

test('npm start prints the inbox, Temporal UI and report URLs, and they answer', async () => {
  expect(urls.inbox).toBe(`http://127.0.0.1:${ports.intercom}/inbox`);
  expect(urls.temporalUi).toBe(`http://127.0.0.1:${ports.temporalUi}`);
  expect(urls.report).toBe(`http://127.0.0.1:${ports.ingress}/report#token=${SANDBOX_SECRETS.adminApiToken}`);
  expect((await fetch(urls.inbox)).status).toBe(200);
  expect((await fetch(urls.temporalUi)).status).toBe(200);
  expect((await fetch(urls.report)).status).toBe(200);
  expect(start.output()).toContain('sandbox stand-in');
});

test('the vendored copies of the shared scenarios are the shared ones', () => {
  if (!existsSync(SHARED_SCENARIOS)) return;
  const vendored = path.join(ROOT, 'scenarios', 'shared');
  const shared = readdirSync(SHARED_SCENARIOS)
    .filter((f) => f.endsWith('.json'))
    .sort();
  expect(readdirSync(vendored).sort()).toEqual(shared);
  for (const file of shared) {
    expect(JSON.parse(readFileSync(path.join(vendored, file), 'utf8'))).toEqual(
      JSON.parse(readFileSync(path.join(SHARED_SCENARIOS, file), 'utf8')),
    );
  }
});

test('npm run scenario -- <shared scenarios> passes against it', async () => {
  const target = existsSync(SHARED_SCENARIOS) ? SHARED_SCENARIOS : path.join(ROOT, 'scenarios', 'shared');
  const { code, results, summary } = await runScenarios(target);
  expect(failures(results)).toEqual([]);
  expect(results.length).toBeGreaterThanOrEqual(4);
  expect(summary).toBe(`${results.length} passed, 0 failed`);
  expect(code).toBe(0);
}, 300_000);

test('Melvin’s own scenarios pass: every escalation row, every fault kind, signals, leads, docs-only answers', async () => {
  const { code, results, summary } = await runScenarios(path.join(ROOT, 'scenarios', 'melvin'));
  expect(failures(results)).toEqual([]);
  expect(results.length).toBeGreaterThanOrEqual(16);
  expect(summary).toBe(`${results.length} passed, 0 failed`);
  expect(code).toBe(0);
}, 600_000);

test('the evaluation set passes: every question the help center does not answer is handed over, no answerable one is', async () => {
  const { code, results, summary } = await runScenarios(path.join(ROOT, 'eval', 'scenarios'));
  expect(failures(results)).toEqual([]);
  expect(results.length).toBeGreaterThanOrEqual(120);
  expect(summary).toBe(`${results.length} passed, 0 failed`);
  expect(code).toBe(0);
  const status = (result: ScenarioResult) => result.expectations.find((e) => e.expectation === 'melvin_status')?.actual;
  const unanswerable = results.filter((r) => r.id?.startsWith('unanswerable-'));
  expect(unanswerable.map((r) => r.id)).toContain('unanswerable-form-8821');
  expect(unanswerable.length).toBeGreaterThanOrEqual(5);
  // Handed over: by the hops (ROUTE_TO_TEAM) or by the draft (NO_SAFE_ANSWER), never answered.
  expect(unanswerable.map(status).filter((s) => !['ROUTE_TO_TEAM', 'NO_SAFE_ANSWER'].includes(String(s)))).toEqual([]);
}, 1_200_000);

test('a scenario file it has never seen is checked: an unknown field fails with its path, and the exit code says so', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'melvin-scenarios-'));
  const scenario = JSON.parse(
    readFileSync(path.join(ROOT, 'scenarios', 'shared', 'application-status.json'), 'utf8'),
  ) as Record<string, unknown>;
  writeFileSync(
    path.join(dir, 'a-valid.json'),
    JSON.stringify({
      ...scenario,
      id: 'fresh-scenario',
      conversation: { ...(scenario.conversation as object), id: '9901' },
    }),
  );
  writeFileSync(path.join(dir, 'b-typo.json'), JSON.stringify({ ...scenario, expect: { melvin_statuss: 'success' } }));
  writeFileSync(
    path.join(dir, 'c-wrong.json'),
    JSON.stringify({
      ...scenario,
      id: 'wrong-expectation',
      conversation: { ...(scenario.conversation as object), id: '9902' },
      expect: { melvin_status: 'ROUTE_TO_TEAM' },
    }),
  );
  const { code, results, summary } = await runScenarios(dir);
  expect(results.map((r) => r.passed)).toEqual([true, false, false]);
  expect(results[1]!.error).toContain('expect.melvin_statuss');
  // Only the status failed; the rest are the decoy records' facts, kept out of the reply (sandbox/decoys.ts).
  expect(results[2]!.expectations.filter((e) => !e.passed)).toEqual([
    { expectation: 'melvin_status', passed: false, expected: 'ROUTE_TO_TEAM', actual: 'success' },
  ]);
  expect(results[2]!.expectations.filter((e) => e.expectation !== 'melvin_status').length).toBeGreaterThan(0);
  expect(
    results[2]!.expectations.every(
      (e) => e.expectation === 'melvin_status' || e.expectation.startsWith('reply_excludes'),
    ),
  ).toBe(true);
  expect(summary).toBe('1 passed, 2 failed');
  expect(code).toBe(1);
}, 120_000);

test('the worker and the ingress serve Prometheus metrics on their documented ports', async () => {
  const worker = await (await fetch(`http://127.0.0.1:${ports.workerMetrics}/metrics`)).text();
  // Conversations wait for their next message here, so turns show as workflow tasks, not completed workflows.
  expect(worker).toMatch(/^temporal_workflow_task_execution_latency_count\{.*\} [1-9]/m);
  expect(worker).toMatch(/^temporal_activity_execution_latency_count\{.*activity_type="sendReply".*\} [1-9]/m);
  // Melvin's own counter: turns by outcome, as the scenarios above ended them.
  expect(worker).toMatch(
    /^melvin_turns(_total)?\{(?=.*melvin_status="success")(?=.*escalation_source="none").*\} [1-9]/m,
  );
  expect(worker).toMatch(
    /^melvin_turns(_total)?\{(?=.*melvin_status="VALIDATION_FAILED")(?=.*escalation_source="validate").*\} [1-9]/m,
  );
  const ingress = await (await fetch(`http://127.0.0.1:${ports.ingressMetrics}/metrics`)).text();
  expect(ingress).toMatch(
    /^melvin_ingress_deliveries_total\{topic="conversation.user.created",outcome="signalled"\} [1-9]/m,
  );
  expect(ingress).toMatch(/^melvin_ingress_ack_seconds_bucket\{le="0.1",outcome="signalled"\} [1-9]/m);
});

test('logs are JSON lines naming conversation, workflow and run, with no secret and no message text', () => {
  const lines = start
    .output()
    .split('\n')
    .filter((l) => /^\[(worker|ingress)\] \{/.test(l));
  const entries = lines.map((l) => JSON.parse(l.slice(l.indexOf('{'))) as Record<string, unknown>);
  const delivered = entries.filter((e) => e.message === 'webhook delivered');
  expect(delivered.length).toBeGreaterThan(20);
  for (const entry of delivered)
    expect(entry).toMatchObject({
      conversation_id: expect.any(String),
      workflow_id: expect.any(String),
      run_id: expect.any(String),
    });
  const finished = entries.filter((e) => e.message === 'turn finished');
  expect(finished.length).toBeGreaterThan(20);
  for (const entry of finished) {
    expect(entry).toMatchObject({
      conversation_id: expect.any(String),
      workflowId: `intercom-conversation-${String(entry.conversation_id)}`,
      runId: expect.any(String),
      melvin_status: expect.any(String),
    });
  }
  const secrets = Object.values(SANDBOX_SECRETS).filter((s) => s.length > 8);
  const messages = [
    'When will I get paid for the Boulder event shift?',
    'Any update on my application',
    'Can I talk to a real person please?',
  ];
  for (const line of lines) {
    for (const text of [...secrets, ...messages])
      expect({ line, leaks: line.includes(text) }).toEqual({ line, leaks: false });
  }
});

test('the support leads’ list filters in docs/operations.md run and find runs', async () => {
  const connection = await Connection.connect({ address: `127.0.0.1:${ports.temporal}` });
  try {
    const client = new Client({
      connection,
      dataConverter: createDataConverter(readDevPayloadKeys(env.MELVIN_DATA_DIR!)),
    });
    const today = new Date(new Date().toISOString().slice(0, 10)).toISOString();
    const count = async (query: string) => {
      let n = 0;
      for await (const _run of client.workflow.list({ query })) n += 1;
      return n;
    };
    await waitFor('visibility to catch up', async () => (await count('HopCount >= 2')) > 0);
    for (const filter of [
      `EscalationSource IS NOT NULL AND CloseTime > "${today}"`,
      'MelvinStatus IN ("error", "RESPONSE_FAILED", "MESSAGE_FAILED", "VALIDATION_FAILED")',
      'ConversationId = "1004"',
      'HopCount >= 2',
      'EscalationSource = "operator"',
      // The evaluation set's sensitive requests routed to the team by the draft.
      'MelvinStatus IN ("NO_SAFE_ANSWER", "SENSITIVE_REQUEST")',
    ]) {
      expect({ filter, found: (await count(filter)) > 0 }).toEqual({ filter, found: true });
    }
  } finally {
    await connection.close();
  }
});

test('npm run melvin -- report shows the scenarios’ turns: outcomes, escalations, approvals, tools, per day', async () => {
  const json = await runCli('report', '--since', '1d', '--json');
  expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  const report = JSON.parse(json.stdout) as Report;
  expect(report.window.label).toBe('1d');
  expect(report.runs.unreadable).toBe(0);
  expect(report.turns).toBeGreaterThan(20);
  expect(report.resolution_rate).toBeGreaterThan(0);
  expect(report.resolution_rate).toBeLessThan(1);
  expect(report.escalation_rate).toBeGreaterThan(0);
  const sources = report.escalations.by_source.map((s) => s.source);
  expect(sources).toEqual(expect.arrayContaining(['validate', 'operator', 'coverage', 'draft']));
  expect(report.escalations.by_reason.find((r) => r.kind === 'hops_exhausted')?.examples[0]).toMatch(
    /^Exceeded maximum hops/,
  );
  // The approval and shadow scenarios end in each of five ways; none has a teammate take over during the wait (the
  // model-based test and test/model/regressions.test.ts do), so the report shows that outcome with no turns.
  expect(Object.fromEntries(report.approvals.map((a) => [a.outcome, a.turns > 0]))).toEqual({
    approved: true,
    edited: true,
    rejected: true,
    timed_out: true,
    noted: true,
    withdrawn: false,
  });
  expect(report.statuses.find((s) => s.status === 'MESSAGE_FAILED')!.turns).toBeGreaterThan(0);
  expect(report.hops.map((h) => h.hops)).toEqual(expect.arrayContaining([1, 2]));
  expect(report.turn_ms.p50).toBeGreaterThan(0);
  expect(report.turn_ms.p95).toBeGreaterThanOrEqual(report.turn_ms.p50!);
  const payments = report.tools.find((t) => t.name === 'get_user_payments');
  expect(payments?.calls).toBeGreaterThan(0);
  // The tool-error scenario's failing call is counted against its tool.
  expect(report.tools.some((t) => t.failures > 0)).toBe(true);
  expect(report.tokens.total).toBeGreaterThan(0);
  // Each turn lands in one column of its day; the teammate who took a conversation over made one reply unresolved.
  const sum = (key: 'turns' | 'resolved' | 'other_replies' | 'escalated' | 'failed') =>
    report.days.reduce((total, day) => total + day[key], 0);
  expect(sum('turns')).toBe(report.turns);
  expect(sum('resolved') + sum('other_replies') + sum('escalated') + sum('failed')).toBe(report.turns);
  expect(sum('resolved')).toBe(report.resolved);
  expect(sum('other_replies')).toBeGreaterThan(0);

  const text = await runCli('report', '--since', '1d');
  expect(text.code).toBe(0);
  mkdirSync(OUTPUT_DIR, { recursive: true });
  writeFileSync(path.join(OUTPUT_DIR, 'report.txt'), text.stdout);
  expect(text.stdout).toContain(`Turns        ${report.turns} `);
  expect(text.stdout).toMatch(/Escalations by source\n( {2}.*\n)* {2}validate +\d+ +\d+\.\d%/);
  const bad = await runCli('report', '--since', 'a week');
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('since: a whole number followed by m, h or d, like 90m, 24h or 7d');
}, 120_000);

describeNeeding(['Chromium'])('the inbox page in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: await ensureChromium(), args: CHROMIUM_ARGS });
  }, 600_000);
  afterAll(() => browser?.close());

  test('a person types a question and sees Melvin’s reply and the Melvin Status appear', async () => {
    const page = await browser.newPage();
    await page.goto(urls.inbox);
    await page.locator('#new-talent').selectOption({ label: 'Ana Ruiz <ana.ruiz@example.com>' });
    await page.locator('#new-body').fill('Hi, when will I get paid for my Austin shift?');
    await page.locator('#new-send').click();
    const reply = page.locator('.part.melvin[data-part-type="comment"] .text');
    await reply.first().waitFor({ timeout: 30_000 });
    expect(await reply.first().textContent()).toContain('November 27');
    await page.locator('#status', { hasText: 'success' }).waitFor({ timeout: 30_000 });
    // Finalize writes the status and the snooze in parallel, so the page may show one a poll before the other.
    await page.locator('#snooze', { hasText: /\d/ }).waitFor({ timeout: 30_000 });

    await page.locator('#message').fill('Can I talk to a real person please?');
    await page.locator('#send').click();
    await page.locator('#status', { hasText: 'ROUTE_TO_TEAM' }).waitFor({ timeout: 30_000 });
    await page.locator('.part.note .text', { hasText: 'Escalation: User requested to talk to a human' }).waitFor();
    // The escalation note's run map is drawn, not shown as Mermaid source.
    const map = page.locator('.part.note .run-map svg');
    await map.first().waitFor({ timeout: 15_000 });
    await expect(map.first().textContent()).resolves.toContain('Draft: ROUTE_TO_TEAM');
    mkdirSync(OUTPUT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT_DIR, 'inbox.png'), fullPage: true });
  }, 120_000);

  test('a lead approves with an edit, or rejects, Melvin’s draft from the inbox in approval mode', async () => {
    const page = await browser.newPage();
    await page.goto(urls.inbox);
    const ask = async (question: string) => {
      await page.locator('#new-talent').selectOption({ label: 'Ana Ruiz <ana.ruiz@example.com>' });
      await page.locator('#new-mode').selectOption('approve');
      await page.locator('#new-body').fill(question);
      await page.locator('#new-send').click();
      await page.locator('.part.note .decision').waitFor({ timeout: 30_000 });
    };
    const melvinReplies = page.locator('.part.melvin[data-part-type="comment"] .text');

    await ask('Hi, when will I get paid for my Austin shift?');
    expect(await melvinReplies.count()).toBe(0);
    await expect(page.locator('.decision .edit-text').inputValue()).resolves.toContain('November 27');
    await page.locator('.decision .edit-text').fill('Hi Ana, your pay arrives on November 27. Sam, payments team');
    await page.locator('.decision button.edit').click();
    await melvinReplies.first().waitFor({ timeout: 30_000 });
    expect(await melvinReplies.first().textContent()).toBe(
      'Hi Ana, your pay arrives on November 27. Sam, payments team',
    );
    await page.locator('#status', { hasText: 'success' }).waitFor({ timeout: 30_000 });

    await ask('And when is the next payout after that?');
    const draft = await page.locator('.decision .edit-text').inputValue();
    // A rejection needs a reason: the operator API's refusal is shown, and nothing is sent.
    await page.locator('.decision button.reject').click();
    await page.locator('.decision .answer', { hasText: 'Not sent' }).waitFor({ timeout: 10_000 });
    await page.locator('.decision .reject-reason').fill('Payout calendars come from the payments team');
    await page.locator('.decision button.reject').click();
    await page.locator('#status', { hasText: 'ROUTE_TO_TEAM' }).waitFor({ timeout: 30_000 });
    await page
      .locator('.part.note .text', { hasText: 'Draft rejected: Payout calendars come from the payments team' })
      .waitFor();
    // The user may be told a person will follow up; the rejected draft never reaches them.
    expect(await melvinReplies.allTextContents()).not.toContain(draft);
    await expect(page.locator('.decision').count()).resolves.toBe(0);
    mkdirSync(OUTPUT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT_DIR, 'inbox-approval.png'), fullPage: true });
  }, 120_000);

  test.each([
    ['1001', 'success', null, 'Ana Ruiz', 'When will I get paid?', 'Reply sent: “'],
    [
      '1004',
      'VALIDATION_FAILED',
      'validate',
      'Sara Okafor',
      'Has my payment',
      'Validation failed - see validation note',
    ],
  ])(
    'the Temporal UI shows support leads run %s: who asked what, the outcome and why, without expanding an event',
    async (id, status, source, talent, question, why) => {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      await page.goto(`${urls.temporalUi}/namespaces/default/workflows/intercom-conversation-${id}`);
      await page.getByText('User Metadata', { exact: true }).click();
      const main = page.locator('main');
      // The UI renders the summary and the current details as Markdown, each in a frame of its own.
      await textInSomeFrame(page, `${talent}: “`);
      await textInSomeFrame(page, `${talent} asked: “`);
      await textInSomeFrame(page, question);
      await textInSomeFrame(page, `Outcome: ${status}`);
      await textInSomeFrame(page, why);
      await textInSomeFrame(page, 'Hop 1: ');
      await textInSomeFrame(page, 'flowchart LR');
      for (const activity of [
        'fetch conversation',
        'plan hop 1',
        'call get_user_payments (hop 1)',
        'coverage hop 1',
        `set Melvin Status ${status}`,
      ]) {
        await main.getByText(activity, { exact: true }).waitFor();
      }
      mkdirSync(OUTPUT_DIR, { recursive: true });
      await page.screenshot({ path: path.join(OUTPUT_DIR, `temporal-ui-${id}.png`), fullPage: true });
      await page.getByText('Search Attributes', { exact: true }).first().click();
      await main.getByText(`"MelvinStatus": "${status}"`).waitFor();
      if (source) await main.getByText(`"EscalationSource": "${source}"`).waitFor();
    },
    120_000,
  );

  test('with the two columns docs/operations.md names, an escalated run stands out in the workflow list', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(`${urls.temporalUi}/namespaces/default/workflows`);
    await page.getByTestId('workflows-summary-table-configuration-button').click();
    for (const column of ['MelvinStatus', 'EscalationSource']) {
      await page.getByTestId(`orderable-list-item-${column}`).locator('button').last().click();
    }
    await page.keyboard.press('Escape');
    // The list as a lead filters it (operations.md): the stack's many runs would push these two off the first page.
    const query = 'ConversationId IN ("1001", "1004")';
    await page.goto(`${urls.temporalUi}/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
    const escalated = page.locator('tr', { hasText: 'intercom-conversation-1004' });
    await escalated.getByText('VALIDATION_FAILED', { exact: true }).waitFor();
    await expect(page.locator('th').allInnerTexts()).resolves.toEqual(
      expect.arrayContaining(['MelvinStatus', 'EscalationSource']),
    );
    await escalated.getByText('validate', { exact: true }).waitFor();
    await page.locator('tr', { hasText: 'intercom-conversation-1001' }).getByText('success', { exact: true }).waitFor();
    mkdirSync(OUTPUT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT_DIR, 'temporal-ui-list.png'), fullPage: true });
  }, 120_000);

  test('the report page shows the figures and the chart of turns per day, with the token from the URL fragment', async () => {
    const ingress = `http://127.0.0.1:${ports.ingress}`;
    const authorization = `Bearer ${SANDBOX_SECRETS.adminApiToken}`;
    // A reason a lead typed reaches the page as text, never as markup.
    const reason = 'Check <img src=x onerror="document.title=1"> and <b id="injected">this</b>';
    const escalated = await fetch(`${ingress}/conversations/1001/escalate`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ reason, requestedBy: 'report test' }),
    });
    expect(escalated.status).toBe(202);
    await waitFor(
      'the escalation in the report',
      async () => {
        const data = (await (
          await fetch(`${ingress}/report/data?since=1d`, { headers: { authorization } })
        ).json()) as Report;
        return data.escalations.by_reason.some((r) => r.examples.includes(reason));
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );

    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    const dataRequests: { url: string; authorization?: string }[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/report/data'))
        dataRequests.push({ url: request.url(), authorization: request.headers().authorization });
    });
    await page.goto(urls.report);
    const bars = page.locator('#turns-chart rect.bar');
    await bars.first().waitFor({ timeout: 30_000 });
    expect(await bars.count()).toBeGreaterThan(0);
    await expect(page.locator('#turns-chart .legend-item').allTextContents()).resolves.toEqual([
      'resolved',
      'other replies',
      'escalated',
      'failed',
    ]);
    await expect(page.locator('#turns-chart text', { hasText: 'turns' }).count()).resolves.toBeGreaterThan(0);
    expect(Number((await page.locator('#turns').textContent())!.replace(/,/g, ''))).toBeGreaterThan(20);
    expect(await page.locator('#resolution-rate').textContent()).toMatch(/^\d{1,2}\.\d%$/);
    expect(await page.locator('#escalation-rate').textContent()).toMatch(/^\d{1,2}\.\d%$/);
    await page.locator('#by-source td', { hasText: 'validate' }).waitFor();
    await page.locator('#by-source td', { hasText: 'operator' }).waitFor();
    await page.locator('#tools td', { hasText: 'get_user_payments' }).waitFor();
    await expect(page.locator('#by-reason').innerText()).resolves.toContain(reason);
    await expect(page.locator('#injected').count()).resolves.toBe(0);
    await expect(page.title()).resolves.toBe('Melvin · report');
    // The token left the address bar, was never in a URL the page requested, and went as a bearer header.
    expect(page.url()).toBe(`${ingress}/report`);
    expect(dataRequests.length).toBeGreaterThan(0);
    for (const request of dataRequests) {
      expect(request).toEqual({ url: `${ingress}/report/data?since=7d`, authorization });
    }
    expect(problems).toEqual([]);
    mkdirSync(OUTPUT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT_DIR, 'report.png'), fullPage: true });
  }, 120_000);
});
