// `npm run eval`: runs the evaluation set k times per scenario against its own stack (the sandbox model, or the model
// endpoint the environment names), prints pass^1…pass^k per scenario and overall, and compares with a baseline. A run
// of the whole evaluation set also writes what it printed to docs/figures/eval.md.
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createJudge } from '../eval/judge';
import { USAGE, UsageError, baselineProblems, parseCommandLine, type EvalEnv, type EvalOptions } from '../eval/options';
import { historyNotIndexed, historyProblems, indexTeamHistory, loadTeamHistory } from '../eval/team-history';
import { Baseline, baselineOf, renderReport, summarize, type EvaluatedModel } from '../eval/report';
import { runTries, unfitForEvaluation, type LoadedScenario } from '../eval/tries';
import { evenPlan } from '../sandbox/model/adversary';
import { BaselineAgent } from '../sandbox/model/baselines';
import type { BaselineFigures } from '../eval/safety-net';
import type { Client } from '@temporalio/client';
import { workerModelEnvironment } from '../harness/model-environment';
import { SANDBOX_MODEL_NAME } from '../sandbox/model/server';
import { loadScenario, scenarioFiles } from '../sandbox/scenario-runner';
import { RandomFaultStatus } from '../sandbox/services';
import { generatePayloadKey } from '../src/encryption/payload-codec';
import { freeStackPorts, startDevServer, startStack, type Stack } from '../harness/stack';
import { PREAMBLES, commandLine, figuresBlock, machine, writeFigures } from '../harness/figures';
import { findTemporalCli } from '../harness/temporal-cli';
import { errorMessage } from '../src/observability/error-message';

const ROOT = path.resolve(__dirname, '..');
const DEFAULT_SET = path.join(ROOT, 'eval', 'scenarios');
/** Kept out of daily development: run only with --holdout, to see whether what passes the daily set was fitted to it. */
const HOLDOUT_SET = path.join(ROOT, 'eval', 'holdout');
const DEFAULT_BASELINE = path.join(ROOT, 'eval', 'baseline.json');
/** The team's closed conversations every evaluation indexes before its first try. */
const TEAM_HISTORY = path.join(ROOT, 'eval', 'team-history.json');

/** The set to run: every scenario file under the targets, checked, fit for an evaluation, filtered by `--only`. */
function loadSet(targets: string[], only: string[] | undefined): LoadedScenario[] {
  const missing = targets.filter((t) => !existsSync(t));
  if (missing.length) throw new UsageError(`no such file or folder: ${missing.join(', ')}`);
  const all = scenarioFiles(targets).map((file) => {
    try {
      return { file: path.relative(ROOT, file), scenario: loadScenario(file) };
    } catch (err) {
      // A scenario file with a typo is the caller's to fix: said like any other usage error, naming file and field.
      throw new UsageError(errorMessage(err));
    }
  });
  const unfit = all.flatMap(({ file, scenario }) => {
    const reason = unfitForEvaluation(scenario);
    return reason ? [`${file}: ${reason}`] : [];
  });
  if (unfit.length) throw new UsageError(`not fit for an evaluation:\n  ${unfit.join('\n  ')}`);
  const ids = new Map<string, string>();
  for (const { file, scenario } of all) {
    const other = ids.get(scenario.id) ?? ids.get(`#${scenario.conversation.id}`);
    if (other) throw new UsageError(`${file}: its id or conversation id is also ${other}'s`);
    ids.set(scenario.id, file).set(`#${scenario.conversation.id}`, file);
  }
  if (!only) return all;
  const unknown = only.filter((id) => !ids.has(id));
  if (unknown.length) throw new UsageError(`--only names no scenario of the set: ${unknown.join(', ')}`);
  return all.filter(({ scenario }) => only.includes(scenario.id));
}

function readBaseline(file: string): Baseline {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`${file} is not JSON: ${errorMessage(err)}`);
  }
  const parsed = Baseline.safeParse(json);
  if (!parsed.success) throw new UsageError(`${file} is not a baseline: ${baselineProblems(parsed.error)}`);
  return parsed.data;
}

async function control(url: string, body?: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

/**
 * Each baseline agent over the set once (./eval/safety-net.ts says why): the model honest but for its drafts, the
 * validation service checking; the scenarios each one passed.
 */
async function runBaselines(
  set: LoadedScenario[],
  options: { controlUrl: string; client: Client; concurrency: number; seed: number },
): Promise<BaselineFigures[]> {
  const figures: BaselineFigures[] = [];
  await control(`${options.controlUrl}/model/adversary`, { seed: options.seed, rates: {} });
  for (const agent of BaselineAgent.options) {
    console.error(`Baseline "${agent}": every scenario once…`);
    await control(`${options.controlUrl}/model/agent`, { agent });
    const tries = await runTries(set, { ...options, k: 1, validation: 'checking' });
    figures.push({ agent, scenarios: tries.length, passed: tries.filter((t) => t.passed).length });
  }
  await control(`${options.controlUrl}/model/agent`, { agent: 'melvin' });
  return figures;
}

async function evaluate(options: EvalOptions, env: EvalEnv, targets: string[], args: string[]): Promise<number> {
  const started = Date.now();
  if (options.holdout && targets.length) throw new UsageError('--holdout runs the holdout set: give no files with it');
  const set = loadSet(targets.length ? targets : [options.holdout ? HOLDOUT_SET : DEFAULT_SET], options.only);
  const history = loadTeamHistory(TEAM_HISTORY);
  const misfits = historyProblems(set, history);
  if (misfits.length) throw new UsageError(`the scenarios do not fit the team's history:\n  ${misfits.join('\n  ')}`);
  // The committed baseline and figures are the daily set's.
  const wholeDefaultSet = targets.length === 0 && !options.holdout;
  // A run of a whole set (the daily one, or the holdout): it writes its figures and runs the baselines.
  const wholeSet = targets.length === 0 && !options.only;
  // The committed baseline is the default set's: a run over other files compares only with a baseline it is given.
  const baselineFile = options.baseline ? path.resolve(options.baseline) : DEFAULT_BASELINE;
  if (options.baseline && !existsSync(baselineFile)) throw new UsageError(`no baseline file ${options.baseline}`);
  const compared = options.baseline !== undefined || (wholeDefaultSet && existsSync(baselineFile));
  const baseline = compared ? readBaseline(baselineFile) : undefined;
  if (options['save-baseline'] && !options.baseline && (!wholeDefaultSet || options.only)) {
    throw new UsageError('--save-baseline over part of the set or another set needs --baseline <file> to write to');
  }
  const endpoint = env.OPENAI_BASE_URL
    ? {
        baseURL: env.OPENAI_BASE_URL,
        apiKey: env.OPENAI_API_KEY!,
        model: env.MODEL_NAME,
        responseFormat: env.LLM_RESPONSE_FORMAT,
      }
    : undefined;
  const rate = options.faults === 'off' ? 0 : options.faults;
  const seed = options.seed ?? Math.floor(Math.random() * 1_000_000);
  const outDir = path.resolve(options.out);
  mkdirSync(outDir, { recursive: true });

  console.error(
    endpoint
      ? `Evaluating ${endpoint.model} at ${endpoint.baseURL} (from OPENAI_BASE_URL)`
      : `Evaluating the sandbox model "${SANDBOX_MODEL_NAME}": a deterministic stand-in, no LLM (set OPENAI_BASE_URL to evaluate a real one)`,
  );
  console.error(
    `${set.length} scenarios${options.holdout ? ' (the holdout set)' : ''} × k = ${options.k}, ${options.concurrency} at once; ` +
      `seed ${seed} (wordings, latency jitter 0–${options.jitter} ms, faults ${rate || 'off'})`,
  );

  const stackLog = createWriteStream(path.join(outDir, 'stack.log'));
  const dataDir = mkdtempSync(path.join(tmpdir(), 'melvin-eval-'));
  let stack: Stack | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await stack?.stop();
      rmSync(dataDir, { recursive: true, force: true });
      await new Promise((resolve) => stackLog.end(resolve));
    })());
  // Ctrl-C (or a test's SIGTERM) stops every process the stack started before the evaluation exits.
  const interrupted = (signal: NodeJS.Signals) => {
    console.error(`${signal}: stopping the stack…`);
    void stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    console.error('Starting a Temporal dev server, the sandbox, the worker and the ingress on free ports…');
    const ports = await freeStackPorts();
    const temporal = await startDevServer({
      port: ports.temporal,
      uiPort: ports.temporalUi,
      dataDir,
      cli: await findTemporalCli(),
      // Encrypted as in production, with a key that lives as long as the evaluation's history.
      payloadKeys: [generatePayloadKey('eval')],
    });
    stack = await startStack({
      ports,
      temporal,
      echo: (line) => stackLog.write(`${line}\n`),
      workerLogLevel: 'WARN',
      // The team's history lives in Intercom, as for a team on real Intercom: the index (embedded, beside the run's
      // history; its Schedule runs only when triggered) is where Draft's examples come from, never an MCP search.
      workerEnv: {
        INDEX_DATA_DIR: path.join(dataDir, 'resolved-index'),
        INDEX_INTERVAL: String(7 * 86_400),
        ...(endpoint && workerModelEnvironment(env)),
      },
      sandboxEnv: { SANDBOX_RESOLVED_SEARCH: 'off' },
    });
    const controlUrl = stack.urls.sandboxControl;
    await control(`${controlUrl}/faults/random`, { rate, seed });
    await control(`${controlUrl}/latency`, { min_ms: 0, max_ms: options.jitter, seed });
    // The sandbox model errs on purpose only when it is the model: a real endpoint errs on its own.
    const adversary = !endpoint && options.adversary !== 'off' && options.adversary > 0 ? options.adversary : null;
    if (adversary !== null) await control(`${controlUrl}/model/adversary`, evenPlan(adversary, seed));
    const judge = endpoint && createJudge(endpoint);
    const rubrics = set.filter((s) => s.scenario.rubric).length;

    const indexed = await indexTeamHistory(history, {
      controlUrl,
      client: temporal.client,
      timeoutMs: env.SCENARIO_TIMEOUT_MS,
    });
    if (indexed.error) console.error(`Warning: ${historyNotIndexed(indexed)}`);
    const triesStarted = Date.now();
    const tries = await runTries(set, {
      controlUrl,
      client: temporal.client,
      k: options.k,
      concurrency: options.concurrency,
      timeoutMs: env.SCENARIO_TIMEOUT_MS,
      seed,
      judge,
      validation: options.validation,
      adversary: adversary !== null,
      onTry: (record, done, total) => {
        const outcome = record.passed ? 'pass' : record.error ? `error: ${record.error}` : 'FAIL';
        const seconds = (record.duration_ms / 1000).toFixed(1);
        console.error(`[${done}/${total}] ${record.scenario} try ${record.try}: ${outcome} (${seconds} s)`);
      },
    });
    const triesTimeMs = Date.now() - triesStarted;
    const faults = rate ? RandomFaultStatus.parse(await control(`${controlUrl}/faults/random`)) : null;
    // The baselines draft with the sandbox model: with a real endpoint named, there is none to stand in for it.
    const baselines =
      !endpoint && (options.baselines ?? (wholeSet ? 'on' : 'off')) === 'on'
        ? await runBaselines(set, { controlUrl, client: temporal.client, concurrency: options.concurrency, seed })
        : null;
    await stop();

    const model: Omit<EvaluatedModel, 'stand_in' | 'response_format'> = endpoint
      ? { configured_by: 'environment', base_url: endpoint.baseURL, name: endpoint.model }
      : { configured_by: 'sandbox', base_url: `http://127.0.0.1:${ports.model}/v1`, name: SANDBOX_MODEL_NAME };
    const results = summarize({
      tries,
      k: options.k,
      concurrency: options.concurrency,
      model,
      faults,
      variation: {
        seed,
        jitter_ms: options.jitter,
        worded_scenarios: set.filter(({ scenario }) =>
          [scenario.conversation, ...scenario.turns].some((part) => part.paraphrases?.length),
        ).length,
      },
      judge: endpoint
        ? { enabled: true, note: `${endpoint.model} at ${endpoint.baseURL}`, rubrics }
        : { enabled: false, note: 'the sandbox model is not a judge', rubrics },
      adversary: adversary === null ? null : { rate: adversary, seed },
      validation: options.validation,
      baselines,
      wallTimeMs: Date.now() - started,
      triesTimeMs,
      machine: machine(),
      history: indexed,
      baseline: baseline && {
        file: path.relative(ROOT, baselineFile),
        data: baseline,
        selected: options.only ? new Set(options.only) : undefined,
      },
    });
    const report = renderReport(results);
    console.log(report);
    writeFileSync(path.join(outDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(path.join(outDir, 'table.md'), report);
    const shown = (file: string) => path.relative(process.cwd(), path.join(outDir, file));
    console.error(`Results: ${shown('results.json')}, ${shown('table.md')}; the stack's logs: ${shown('stack.log')}`);
    if (wholeSet) {
      const run = { command: commandLine('eval', args), date: results.created_at, machine: results.machine };
      const file = options.holdout ? 'eval-holdout.md' : 'eval.md';
      const figures = writeFigures(file, `${PREAMBLES[file]}\n\n${figuresBlock({ ...run, output: report })}\n`);
      console.error(`Figures: ${path.relative(process.cwd(), figures)}`);
    }
    if (options['save-baseline']) {
      writeFileSync(baselineFile, `${JSON.stringify(baselineOf(results), null, 2)}\n`);
      console.error(`Baseline written: ${path.relative(ROOT, baselineFile)}`);
    }
    return options.check && results.baseline?.worse.length ? 1 : 0;
  } finally {
    await stop();
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
}

async function main(): Promise<number> {
  try {
    const args = process.argv.slice(2);
    const { options, targets, env } = parseCommandLine(args, process.env);
    if (options.help) {
      console.log(USAGE);
      return 0;
    }
    return await evaluate(options, env, targets, args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${err.message}\n\n${USAGE}`);
    return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);
