// `npm run eval` as a person runs it: a real process that starts its own stack, runs a few scenarios k times, prints the
// pass^k table, writes the JSON, compares with a baseline, and evaluates a model endpoint named by the environment.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { EvalResults } from '../../eval/report';
import { loadTeamHistory } from '../../eval/team-history';
import { sandboxReasoning } from '../../sandbox/model/reasoning';
import { SandboxModel } from '../../sandbox/model/server';

const ROOT = path.join(__dirname, '..', '..');
const TEAM_HISTORY = path.join(ROOT, 'eval', 'team-history.json');
const SET = path.join(ROOT, 'eval', 'scenarios');
const running = new Set<ChildProcess>();

/** The environment without a model endpoint: the sandbox model is evaluated unless a test names one. */
function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'MODEL_NAME', 'LLM_RESPONSE_FORMAT']) delete env[name];
  return env;
}

/** Runs `npm run eval -- …` in its own process group, which a failed test stops whole. */
function runEval(args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'eval', '--', ...args], { cwd: ROOT, env, detached: true });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => {
      running.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

afterAll(() => {
  // Only when a test gave up waiting: Ctrl-C to the evaluation, which stops its stack.
  for (const child of running) if (child.pid) process.kill(-child.pid, 'SIGINT');
});

/** A copy of a scenario of the set with another id, conversation and some fields replaced. */
function variant(file: string, id: string, conversationId: string, change: Record<string, unknown>): unknown {
  const scenario = JSON.parse(readFileSync(path.join(SET, file), 'utf8')) as {
    conversation: { contact: object };
  } & Record<string, unknown>;
  return {
    ...scenario,
    id,
    conversation: {
      ...scenario.conversation,
      id: conversationId,
      contact: { ...scenario.conversation.contact, id: `c-${conversationId}` },
    },
    ...change,
  };
}

function scenarioDir(files: string[], variants: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'melvin-eval-set-'));
  for (const file of files) copyFileSync(path.join(SET, file), path.join(dir, file));
  for (const [name, scenario] of Object.entries(variants))
    writeFileSync(path.join(dir, name), JSON.stringify(scenario));
  return dir;
}

const readResults = (dir: string) => JSON.parse(readFileSync(path.join(dir, 'results.json'), 'utf8')) as EvalResults;

test('against the sandbox model: the pass^k table, the JSON, random faults, and a scenario that got worse', async () => {
  const dir = scenarioDir(['payment-processing.json', 'unanswerable-form-8821.json'], {
    // The same question graded on a date the data does not have: it fails every try, so it did worse than its baseline.
    'wrong-date.json': variant('payment-processing.json', 'payment-wrong-date', '4901', {
      expect: { melvin_status: 'success', replied: true, reply_includes: ['December 1'] },
    }),
  });
  const out = mkdtempSync(path.join(tmpdir(), 'melvin-eval-out-'));
  const baseline = path.join(out, 'baseline.json');
  writeFileSync(
    baseline,
    JSON.stringify({
      created_at: '2026-11-20T00:00:00.000Z',
      k: 2,
      scenarios: [
        { id: 'payment-wrong-date', tries: 2, passed: 2, pass_hat: [1, 1] },
        { id: 'unanswerable-form-8821', tries: 2, passed: 2, pass_hat: [1, 1] },
        { id: 'retired-scenario', tries: 2, passed: 2, pass_hat: [1, 1] },
      ],
    }),
  );
  const { code, stdout, stderr } = await runEval(
    // The model honest: the pass figures below are the scenarios', not those of wrong outputs planted on purpose.
    ['--k', '2', '--seed', '5', '--adversary', 'off', '--baseline', baseline, '--check', '--out', out, dir],
    baseEnv(),
  );

  // --check: a scenario got worse than the baseline, so the run says so in its exit code.
  expect({ code, stderr: code === 1 ? '' : stderr }).toEqual({ code: 1, stderr: '' });
  expect(stdout).toMatch(/^Model: melvin-sandbox-model, the sandbox model at .*; answered as the sandbox stand-in/m);
  expect(stdout).toMatch(/^Faults: 10% of calls fail with a transient fault \(seed 5\); injected: intercom \d+/m);
  expect(stdout).toMatch(/^Judge: off \(the sandbox model is not a judge\); 2 rubric\(s\) not checked$/m);
  expect(stdout).toMatch(/^Tries differ \(seed 5\): the talent's words \(\d of 3 scenarios have paraphrases/m);
  // The wrong date is a wrong answer; the other scenarios' replies are right and nothing answerable was handed over.
  expect(stdout).toMatch(/\| false hand-over rate +\| 0\/4 \(0\.0%\) +\|/);
  expect(stdout).toMatch(
    /\| wrong-answer rate +\| 2\/4 \(50\.0%\) +\| turns with a reply +\| payment-wrong-date \(tries 1, 2\)/,
  );
  expect(stdout).toMatch(
    /\| scenario +\| passed \| pass\^1 \| pass\^2 \| tokens\/try \| time\/try \| failed checks +\|/,
  );
  expect(stdout).toMatch(/\| payment-processing +\| 2\/2 +\| 1\.00 +\| 1\.00 +\| \d+ +\| [\d.]+ s +\| +\|/);
  expect(stdout).toMatch(/\| unanswerable-form-8821 +\| 2\/2 +\| 1\.00 +\| 1\.00 +\|/);
  expect(stdout).toMatch(/\| payment-wrong-date +\| 0\/2 +\| 0\.00 +\| 0\.00 +\| .*reply_includes "December 1" ×2 +\|/);
  expect(stdout).toMatch(/\| overall \(mean of 3\) +\| 4\/6 +\| 0\.67 +\| 0\.67 +\|/);
  expect(stdout).toContain('1 scenario(s) got worse');
  expect(stdout).toContain('- worse: payment-wrong-date: pass^1 1.00 → 0.00, pass^2 1.00 → 0.00');
  expect(stdout).toContain('- new (not in the baseline): payment-processing');
  expect(stdout).toContain('- missing (in the baseline, not run): retired-scenario');

  const results = readResults(out);
  expect(readFileSync(path.join(out, 'table.md'), 'utf8').trimEnd()).toBe(
    stdout.slice(stdout.indexOf('Model: ')).trimEnd(),
  );
  expect(results).toMatchObject({
    k: 2,
    model: { configured_by: 'sandbox', stand_in: true },
    judge: { enabled: false },
  });
  expect(results.overall).toMatchObject({ scenarios: 3, tries: 6, passed: 4 });
  // The team's history went into the index first, and Draft's examples came from it, ranked for the labelled figure.
  expect(results.team_history).toEqual({
    conversations: loadTeamHistory(TEAM_HISTORY).conversations.length,
    error: null,
  });
  const labelled = results.tries.filter((t) => t.labels?.examples);
  expect(labelled.length).toBeGreaterThan(0);
  for (const t of labelled) expect(t.examples_read?.length).toBeGreaterThan(0);
  expect(results.labelled?.retrieval?.retrievals).toBe(labelled.length);
  expect(stdout).toMatch(/\| mean reciprocal rank +\| [01]\.\d\d +\|/);
  // Each try was a conversation of its own.
  expect(new Set(results.tries.map((t) => t.conversation_id)).size).toBe(6);
  // The two tries of a scenario with a paraphrase were written in its two wordings.
  const wordings = results.tries.filter((t) => t.scenario === 'payment-processing').map((t) => t.turns[0]?.user);
  expect(new Set(wordings).size).toBe(2);
  expect(results.tries.map((t) => t.conversation_id)).toContain('400101');
  for (const t of results.tries) expect(t.usage.total_tokens).toBeGreaterThan(0);
  const drawn = results.faults!.drawn;
  expect(drawn.intercom + drawn.llm + drawn.mcp + drawn.validation).toBeGreaterThan(0);
  // The question no passage answers was handed over in every try, faults or not.
  const handedOver = results.tries.filter((t) => t.scenario === 'unanswerable-form-8821');
  for (const t of handedOver) {
    expect(t.expectations.find((e) => e.expectation === 'escalation_source')).toMatchObject({ actual: 'coverage' });
  }
  // The stack it started is gone: its sandbox model no longer answers.
  await expect(fetch(`${results.model.base_url}/models`)).rejects.toThrow();
}, 300_000);

test('against an endpoint the environment names: the worker and the judge use it, and the judge can fail a try', async () => {
  const key = 'eval-endpoint-key';
  // A second sandbox model, as a JSON-mode-only endpoint (as DeepSeek is): not the stack's own.
  const endpoint = new SandboxModel({
    apiKey: key,
    responder: sandboxReasoning,
    endpoint: { endpoint: 'json_object', textStyle: 'fenced' },
    models: ['endpoint-under-test'],
  });
  const baseURL = await endpoint.start();
  try {
    const dir = scenarioDir(['payment-processing.json'], {
      'unmet-rubric.json': variant('payment-processing.json', 'payment-unmet-rubric', '4902', {
        rubric: 'Apologises for the wait with "sorry for the delay".',
      }),
    });
    const out = mkdtempSync(path.join(tmpdir(), 'melvin-eval-out-'));
    const { code, stdout, stderr } = await runEval(['--k', '2', '--faults', 'off', '--out', out, dir], {
      ...baseEnv(),
      OPENAI_BASE_URL: baseURL,
      OPENAI_API_KEY: key,
      MODEL_NAME: 'endpoint-under-test',
    });

    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    expect(stderr).toContain(`Evaluating endpoint-under-test at ${baseURL} (from OPENAI_BASE_URL)`);
    // This endpoint embeds nothing: the evaluation goes on without the team's history, and says so.
    expect(stderr).toMatch(/Warning: the team's history \(\d+ conversations\) could not be indexed, so no try had/);
    expect(stdout).toContain("Warning: the team's history");
    expect(stdout).toContain(
      `Model: endpoint-under-test, ${baseURL} (OPENAI_BASE_URL); answered as the sandbox stand-in`,
    );
    expect(stdout).toMatch(
      /^Judge: on \(endpoint-under-test at .*\); 4 tries of 2 rubric\(s\) judged, 4 from the sandbox/m,
    );
    expect(stdout).toMatch(/\| payment-processing +\| 2\/2 +\| 1\.00 +\| 1\.00 +\|/);
    expect(stdout).toMatch(/\| payment-unmet-rubric +\| 0\/2 +\| 0\.00 +\| 0\.00 +\| .*judge ×2 +\|/);
    expect(stdout).toMatch(/\| judge +\| 4 +\| 2 +\| 50\.0% +\|/);

    const results = readResults(out);
    expect(results.model).toMatchObject({
      configured_by: 'environment',
      stand_in: true,
      response_format: 'json_object',
    });
    const judged = results.tries.find((t) => t.scenario === 'payment-processing')!;
    expect(judged.expectations.find((e) => e.expectation === 'judge')).toMatchObject({ passed: true });
    expect(judged.judgement).toMatchObject({ passed: true, stand_in: true });
    // Melvin's steps and the judge all reached this endpoint, with its key.
    const steps = new Set(endpoint.requests.map((r) => r.step));
    expect([...steps].sort()).toEqual(['coverage', 'draft', 'judge', 'plan']);
    expect(endpoint.requests.filter((r) => r.step === 'judge' && !r.refused)).toHaveLength(4);
    expect(new Set(endpoint.requests.map((r) => r.authorization))).toEqual(new Set([`Bearer ${key}`]));
  } finally {
    await endpoint.stop();
  }
}, 300_000);

test('a usage error says what is wrong and starts nothing', async () => {
  const { code, stderr, stdout } = await runEval(['--k', '0', '--faults', 'sometimes'], baseEnv());
  expect(code).toBe(2);
  expect(stderr).toContain('--k: Too small: expected number to be >=1');
  expect(stderr).toContain('--faults: must be a share of calls from 0 to 1, or off');
  expect(stderr).toContain('Usage: npm run eval');
  expect(stdout).toBe('');
}, 60_000);
