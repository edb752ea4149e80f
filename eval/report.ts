// What an evaluation run reports: the results as JSON (also readable as a baseline), the baseline file itself, and
// the Markdown tables printed and written beside the JSON.
import { z } from 'zod';
import type { RandomFaultStatus } from '../sandbox/services';
import { answerFigures, scenariosBehind, type AnswerFigures, type RateFigure } from './answer-figures';
import {
  compareWithBaseline,
  expectationFigures,
  overallPassHat,
  scenarioFigures,
  type Comparison,
  type KindFigures,
  type ScenarioFigures,
} from './pass-k';
import { MODEL_TIERS, TIER_OF_STEP, type ModelTier } from '../src/contract/schemas';
import type { TierUsage } from '../src/contract/state';
import { TOP_K } from '../src/resolved-index/ranking';
import { historyNotIndexed, type HistoryIndexed } from './team-history';
import {
  actionFigures,
  retrievalFigures,
  stageFigures,
  toneFigures,
  type RetrievalFigures,
  type ToneFigures,
} from './labelled';
import type { TryRecord } from './tries';
import {
  renderBaselines,
  renderSafetyNet,
  safetyNet,
  type BaselineFigures,
  type SafetyNet,
  type ValidationSetting,
} from './safety-net';

export interface TierFigures {
  tier: ModelTier;
  /** The models that answered on the tier, as the runs recorded them. */
  models: string[];
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  duration_ms: number;
}

/** The model a run evaluated, as configured and as the runs recorded it. */
export interface EvaluatedModel {
  /** `sandbox`: the stack's own sandbox model; `environment`: the endpoint `OPENAI_BASE_URL` named. */
  configured_by: 'sandbox' | 'environment';
  base_url: string;
  name: string;
  /** What the runs recorded: whether the endpoint answered as the sandbox's stand-in (null when no run got that far). */
  stand_in: boolean | null;
  response_format: string | null;
}

export interface JudgeStatus {
  enabled: boolean;
  /** Why not, when off; the judge's model when on. */
  note: string;
  rubrics: number;
  judged: number;
  /** Tries whose verdict came from the sandbox's rule-based stand-in judge rather than a model. */
  stand_in_verdicts: number;
  total_tokens: number;
}

export interface EvalResults {
  created_at: string;
  machine: string;
  model: EvaluatedModel;
  k: number;
  concurrency: number;
  faults: RandomFaultStatus | null;
  /** What differs between the tries of a scenario, all drawn from one seed (see forTry in tries.ts). */
  variation: Variation;
  judge: JudgeStatus;
  wall_time_ms: number;
  tries_time_ms: number;
  overall: { scenarios: number; tries: number; passed: number; pass_hat: number[] };
  /** How good the answers were, beside pass^k: false hand-overs, wrong answers, hygiene failures (answer-figures.ts). */
  answers: AnswerFigures;
  /** Plan's reading against what a person labelled the scenarios with (eval/labelled.ts); absent in older results. */
  labelled?: {
    tone: ToneFigures;
    stage?: ReturnType<typeof stageFigures>;
    action?: ReturnType<typeof actionFigures>;
    retrieval?: RetrievalFigures;
  };
  /** Whether the team's history was indexed before the first try; absent in older results. */
  team_history?: HistoryIndexed;
  /** The adversarial model's plan (null: it was off), and how the validation service answered the tries. */
  adversary?: { rate: number; seed: number } | null;
  validation?: ValidationSetting | 'both';
  /** What the planted wrong outputs did, class by class, and the good drafts the guard stopped; absent without plants. */
  safety_net?: SafetyNet;
  /** The baseline agents over the set, once each; absent when they did not run. */
  baselines?: BaselineFigures[] | null;
  expectations: KindFigures[];
  cost: {
    llm_calls: number;
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    mean_tokens_per_try: number;
    mean_try_ms: number;
    median_try_ms: number;
    max_try_ms: number;
    /** Each model tier's share: its model, calls, tokens, and the time its calls took (repair requests included). */
    tiers: TierFigures[];
  };
  scenarios: (ScenarioFigures & { file: string; mean_tokens: number; mean_ms: number })[];
  baseline: (Comparison & { file: string; created_at: string | null; k: number }) | null;
  tries: TryRecord[];
}

/**
 * A baseline: a results file, or the compact form `--save-baseline` writes (the same fields without the tries). Only
 * what the comparison needs is checked; anything else a results file carries is let through.
 */
export const Baseline = z.looseObject({
  created_at: z.string().nullable().optional(),
  k: z.number().int().min(1),
  scenarios: z.array(
    z.looseObject({
      id: z.string().min(1),
      tries: z.number().int().min(1),
      passed: z.number().int().min(0),
      pass_hat: z.array(z.number().min(0).max(1)),
    }),
  ),
});
export type Baseline = z.infer<typeof Baseline>;

/** What `--save-baseline` writes: the run's figures without the tries, stable enough to commit. */
export function baselineOf(results: EvalResults): unknown {
  const { tries: _tries, baseline: _baseline, ...figures } = results;
  return {
    ...figures,
    scenarios: figures.scenarios.map(({ id, file, tries, passed, pass_hat, mean_tokens, mean_ms, failed_checks }) => ({
      id,
      file,
      tries,
      passed,
      pass_hat,
      mean_tokens,
      mean_ms,
      failed_checks,
    })),
  };
}

const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? 0 : sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

export interface Variation {
  seed: number;
  /** Each LLM and MCP call waits a random 0…jitter_ms. */
  jitter_ms: number;
  /** Scenarios with paraphrases of the talent's words, of all the run's scenarios. */
  worded_scenarios: number;
}

/** Every figure of a run, from its tries and what surrounded them. */
export function summarize(input: {
  tries: TryRecord[];
  k: number;
  concurrency: number;
  model: Omit<EvaluatedModel, 'stand_in' | 'response_format'>;
  faults: RandomFaultStatus | null;
  variation: Variation;
  judge: Pick<JudgeStatus, 'enabled' | 'note' | 'rubrics'>;
  wallTimeMs: number;
  triesTimeMs: number;
  machine: string;
  baseline?: { file: string; data: Baseline; selected?: Set<string> };
  /** Whether the team's history was indexed before the first try (eval/team-history.ts). */
  history?: HistoryIndexed;
  adversary?: { rate: number; seed: number } | null;
  validation?: ValidationSetting | 'both';
  baselines?: BaselineFigures[] | null;
  now?: Date;
}): EvalResults {
  const { tries, k } = input;
  const figures = scenarioFigures(tries, k);
  const recorded = tries.find((t) => t.model)?.model ?? null;
  const judged = tries.filter((t) => t.judgement);
  const scenarios = figures.map((f) => {
    const own = tries.filter((t) => t.scenario === f.id);
    return {
      ...f,
      file: own[0]?.file ?? '',
      mean_tokens: Math.round(mean(own.map((t) => t.usage.total_tokens))),
      mean_ms: Math.round(mean(own.map((t) => t.duration_ms))),
    };
  });
  const durations = tries.map((t) => t.duration_ms);
  const sum = (pick: (t: TryRecord) => number) => tries.reduce((total, t) => total + pick(t), 0);
  return {
    created_at: (input.now ?? new Date()).toISOString(),
    machine: input.machine,
    model: {
      ...input.model,
      stand_in: recorded?.stand_in ?? null,
      response_format: recorded?.response_format ?? null,
    },
    k,
    concurrency: input.concurrency,
    faults: input.faults,
    variation: input.variation,
    judge: {
      ...input.judge,
      judged: judged.length,
      stand_in_verdicts: judged.filter((t) => t.judgement?.stand_in).length,
      total_tokens: judged.reduce((total, t) => total + (t.judgement?.total_tokens ?? 0), 0),
    },
    wall_time_ms: input.wallTimeMs,
    tries_time_ms: input.triesTimeMs,
    overall: {
      scenarios: figures.length,
      tries: tries.length,
      passed: tries.filter((t) => t.passed).length,
      pass_hat: overallPassHat(figures, k),
    },
    answers: answerFigures(tries),
    ...(input.history && { team_history: input.history }),
    ...(input.adversary !== undefined && { adversary: input.adversary }),
    ...(input.validation && { validation: input.validation }),
    ...(input.baselines && { baselines: input.baselines }),
    ...(input.adversary && {
      safety_net: safetyNet(
        tries.map((t) => ({ validation: t.validation ?? 'checking', plants: t.plants ?? [], turns: t.turns })),
      ),
    }),
    labelled: {
      tone: toneFigures(tries),
      stage: stageFigures(tries),
      action: actionFigures(tries),
      retrieval: retrievalFigures(tries),
    },
    expectations: expectationFigures(tries),
    cost: {
      llm_calls: sum((t) => t.usage.calls),
      prompt_tokens: sum((t) => t.usage.prompt_tokens),
      completion_tokens: sum((t) => t.usage.completion_tokens),
      total_tokens: sum((t) => t.usage.total_tokens),
      mean_tokens_per_try: Math.round(mean(tries.map((t) => t.usage.total_tokens))),
      mean_try_ms: Math.round(mean(durations)),
      median_try_ms: Math.round(median(durations)),
      max_try_ms: Math.max(0, ...durations),
      tiers: tierFigures(tries),
    },
    scenarios,
    baseline: input.baseline
      ? {
          file: input.baseline.file,
          created_at: input.baseline.data.created_at ?? null,
          k: input.baseline.data.k,
          ...compareWithBaseline(figures, input.baseline.data.scenarios, input.baseline.selected),
        }
      : null,
    tries,
  };
}

const tierSteps = (tier: ModelTier) =>
  (Object.keys(TIER_OF_STEP) as (keyof typeof TIER_OF_STEP)[]).filter((step) => TIER_OF_STEP[step] === tier).join(', ');

function tierFigures(tries: TryRecord[]): TierFigures[] {
  return MODEL_TIERS.map((tier) => {
    const used = tries.flatMap((t) => (t.usage_by_tier?.[tier] ? [t.usage_by_tier[tier]] : []));
    const sum = (pick: (u: TierUsage) => number) => used.reduce((total, u) => total + pick(u), 0);
    return {
      tier,
      models: [...new Set(used.map((u) => u.model))].sort(),
      calls: sum((u) => u.calls),
      prompt_tokens: sum((u) => u.prompt_tokens),
      completion_tokens: sum((u) => u.completion_tokens),
      total_tokens: sum((u) => u.total_tokens),
      duration_ms: sum((u) => u.duration_ms),
    };
  });
}

const ratio = (value: number) => value.toFixed(2);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const duration = (ms: number) => {
  const total = Math.round(ms / 1000);
  return total >= 60 ? `${Math.floor(total / 60)} min ${total % 60} s` : `${total} s`;
};
const percent = (passed: number, checks: number) => (checks ? `${((100 * passed) / checks).toFixed(1)}%` : '—');

/** A Markdown table with its columns padded, so it reads as well in a terminal as rendered. */
export function markdownTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(3, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(rows[0]!), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.slice(1).map(line)].join('\n');
}

function modelLine(model: EvaluatedModel): string {
  const where =
    model.configured_by === 'sandbox'
      ? `the sandbox model at ${model.base_url} (no OPENAI_BASE_URL set)`
      : `${model.base_url} (OPENAI_BASE_URL)`;
  const standIn =
    model.stand_in === null
      ? 'no run recorded what answered'
      : model.stand_in
        ? 'answered as the sandbox stand-in: deterministic rules, no LLM'
        : 'a real model (not the sandbox stand-in)';
  const format = model.response_format ? `, response format ${model.response_format}` : '';
  return `Model: ${model.name}, ${where}; ${standIn}${format}`;
}

function variationLine(v: Variation, scenarios: number): string {
  const jitter = v.jitter_ms ? `latency jitter of 0–${v.jitter_ms} ms on every LLM and tool call` : 'no latency jitter';
  return (
    `Tries differ (seed ${v.seed}): the talent's words (${v.worded_scenarios} of ${scenarios} scenarios have ` +
    `paraphrases, taken in turn), ${jitter}, and which calls the faults hit`
  );
}

function faultsLine(faults: RandomFaultStatus | null): string {
  if (!faults || faults.rate === 0) return 'Faults: off';
  const drawn = Object.entries(faults.drawn)
    .map(([service, count]) => `${service} ${count}`)
    .join(' · ');
  return `Faults: ${(faults.rate * 100).toFixed(0)}% of calls fail with a transient fault (seed ${faults.seed}); injected: ${drawn}`;
}

function judgeLine(judge: JudgeStatus): string {
  if (!judge.enabled) return `Judge: off (${judge.note}); ${judge.rubrics} rubric(s) not checked`;
  const standIn = judge.stand_in_verdicts ? `, ${judge.stand_in_verdicts} from the sandbox stand-in judge` : '';
  return `Judge: on (${judge.note}); ${judge.judged} tries of ${judge.rubrics} rubric(s) judged${standIn}, ${judge.total_tokens} tokens`;
}

/** "1/40 (2.5%)": a figure's count of what could have gone wrong, and its share. */
function rateCell(figure: RateFigure): string {
  return `${figure.count}/${figure.of} (${figure.rate === null ? '—' : `${(100 * figure.rate).toFixed(1)}%`})`;
}

/** At most this many cases of each figure are printed; results.json has them all. */
const CASES_SHOWN = 10;

/** The answer figures: a row each with the scenarios behind it, then each case with its reason. */
function answersSection(answers: AnswerFigures): string {
  const figures: [string, string, RateFigure][] = [
    ['false hand-over rate', 'turns to answer', answers.false_handover],
    ['wrong-answer rate', 'turns with a reply', answers.wrong_answer],
    ['hygiene failures', 'replies', answers.hygiene],
  ];
  const rows = [
    ['answers', 'count / of (share)', 'counted over', 'scenarios behind it'],
    ...figures.map(([name, over, f]) => [name, rateCell(f), over, scenariosBehind(f.cases).join('; ') || '—']),
  ];
  const lines = [markdownTable(rows)];
  const byCheck = answers.hygiene.by_check.filter((c) => c.failed).map((c) => `${c.check} ${c.failed}`);
  if (byCheck.length) lines.push('', `Hygiene failures by check: ${byCheck.join(' · ')}`);
  for (const [name, , f] of figures) {
    if (!f.cases.length) continue;
    lines.push('', `${name[0]!.toUpperCase()}${name.slice(1)}:`);
    for (const c of f.cases.slice(0, CASES_SHOWN)) lines.push(`- ${c.scenario} try ${c.try}, turn ${c.turn}: ${c.why}`);
    if (f.cases.length > CASES_SHOWN) lines.push(`- … ${f.cases.length - CASES_SHOWN} more in results.json`);
  }
  return lines.join('\n');
}

const share = (part: number, whole: number) => `${part}/${whole} (${percent(part, whole)})`;

/**
 * The labelled figures over the labelled scenarios' tries (first turn): complaint detection (recall and precision),
 * urgency, stage accuracy, the suggested next step's precision and recall, and the retrieval's relevance.
 */
function labelledSection(labelled: NonNullable<EvalResults['labelled']>): string {
  const { tone, stage, action, retrieval } = labelled;
  const retrieved = retrieval && retrieval.retrievals + retrieval.without.length;
  if (!tone.tries && !stage?.labelled && !action?.read && !action?.labelled && !retrieved)
    return 'Labelled figures: no scenario of this run has labels.';
  const c = tone.complaints;
  const rows = [
    ['labelled (first turn)', 'value', 'counted over'],
    ['complaints found (recall)', share(c.found, c.labelled), 'tries labelled as a complaint'],
    ['complaints right (precision)', share(c.right, c.read), 'tries Plan read as a complaint'],
    ['urgency as labelled', share(tone.urgency.right, tone.urgency.labelled), 'tries with an urgency label'],
  ];
  if (stage)
    rows.push(['stage as labelled (accuracy)', share(stage.right, stage.labelled), 'tries with a stage label']);
  if (action) {
    rows.push(['next steps right (precision)', share(action.right, action.read), 'tries that proposed one']);
    rows.push(['next steps found (recall)', share(action.found, action.labelled), 'tries labelled with one']);
  }
  if (retrieval && retrieved) {
    const over = 'tries labelled with examples that retrieved';
    rows.push(['examples retrieved', share(retrieval.retrievals, retrieved), 'tries labelled with examples']);
    rows.push(['labelled example ranked first (hit@1)', share(retrieval.first, retrieval.retrievals), over]);
    rows.push([
      `labelled example in the top ${TOP_K} (hit@${TOP_K})`,
      share(retrieval.found, retrieval.retrievals),
      over,
    ]);
    rows.push(['mean reciprocal rank', retrieval.mrr.toFixed(2), over]);
  }
  const lines = [markdownTable(rows)];
  const misread = [
    ...tone.misread.map((m) => `tone: ${m}`),
    ...(stage?.misread ?? []).map((m) => `stage: ${m}`),
    ...(action?.misread ?? []).map((m) => `next step: ${m}`),
    ...(retrieval?.misread ?? []).map((m) => `examples: ${m}`),
    ...(retrieval?.without ?? []).map((m) => `examples: ${m} retrieved none`),
  ];
  if (misread.length) lines.push('', `Read otherwise than labelled: ${misread.join('; ')}`);
  return lines.join('\n');
}

function failedChecks(scenario: ScenarioFigures): string {
  if (!scenario.failed_checks.length) return '';
  const shown = scenario.failed_checks.slice(0, 2).map((c) => {
    const label = c.label.length > 48 ? `${c.label.slice(0, 47)}…` : c.label;
    return `${label} ×${c.count}`;
  });
  const more = scenario.failed_checks.length - shown.length;
  return shown.join('; ') + (more > 0 ? `; +${more} more` : '');
}

function baselineSection(results: EvalResults): string {
  const baseline = results.baseline;
  if (!baseline) return 'Baseline: none (`--baseline <file>` compares with one; `--save-baseline` writes one)';
  const change = (c: { j: number; before: number; now: number }) => `pass^${c.j} ${ratio(c.before)} → ${ratio(c.now)}`;
  const lines = [
    `Baseline: ${baseline.file} (${baseline.created_at ?? 'undated'}, k = ${baseline.k}): ` +
      (baseline.worse.length ? `${baseline.worse.length} scenario(s) got worse` : 'no scenario got worse'),
  ];
  for (const s of baseline.worse) lines.push(`- worse: ${s.id}: ${s.changes.map(change).join(', ')}`);
  for (const s of baseline.better) lines.push(`- better: ${s.id}: ${s.changes.map(change).join(', ')}`);
  if (baseline.added.length) lines.push(`- new (not in the baseline): ${baseline.added.join(', ')}`);
  if (baseline.missing.length) lines.push(`- missing (in the baseline, not run): ${baseline.missing.join(', ')}`);
  return lines.join('\n');
}

const VALIDATION_WORDS: Record<ValidationSetting | 'both', string> = {
  checking: 'the validation service checked every try',
  lenient: 'the validation service passed every draft (lenient)',
  both: 'the validation service checked odd tries and passed every draft of even ones (lenient)',
};

function adversaryLine(results: EvalResults): string {
  const validation = VALIDATION_WORDS[results.validation ?? 'checking'];
  if (!results.adversary) return `Adversary: off; ${validation}`;
  const { rate, seed } = results.adversary;
  return (
    `Adversary: the sandbox model got ${Math.round(rate * 100)}% of its plan and draft answers wrong on purpose ` +
    `(seed ${seed}), spread over the kinds of wrong output below; ${validation}`
  );
}

/** The safety net: each planted class, what reached the talent with the service checking and lenient, the good drafts. */
function safetyNetSection(results: EvalResults): string {
  const net = results.safety_net!;
  const verdict = net.deterministic_reached.length
    ? `Deterministic classes that reached the talent: ${net.deterministic_reached.join(', ')}`
    : 'No class a deterministic check can catch reached the talent.';
  return [markdownTable(renderSafetyNet(net)), '', verdict].join('\n');
}

/**
 * The whole report as printed: what ran (the model that answered, the judge), the pass^k table, the answer figures,
 * checks by kind, cost and time, and the baseline.
 */
export function renderReport(results: EvalResults): string {
  const k = results.k;
  const js = Array.from({ length: k }, (_, j) => `pass^${j + 1}`);
  const scenarioRows = [
    ['scenario', 'passed', ...js, 'tokens/try', 'time/try', 'failed checks'],
    ...results.scenarios.map((s) => [
      s.id,
      `${s.passed}/${s.tries}`,
      ...js.map((_, j) => (s.pass_hat[j] === undefined ? '—' : ratio(s.pass_hat[j]))),
      String(s.mean_tokens),
      seconds(s.mean_ms),
      failedChecks(s),
    ]),
    [
      `overall (mean of ${results.overall.scenarios})`,
      `${results.overall.passed}/${results.overall.tries}`,
      ...results.overall.pass_hat.map(ratio),
      String(results.cost.mean_tokens_per_try),
      seconds(results.cost.mean_try_ms),
      '',
    ],
  ];
  const kindRows = [
    ['expectation', 'checks', 'passed', 'share'],
    ...results.expectations.map((e) => [e.kind, String(e.checks), String(e.passed), percent(e.passed, e.checks)]),
  ];
  const c = results.cost;
  const costRows = [
    ['cost and time', 'value'],
    ['LLM calls (Melvin)', String(c.llm_calls)],
    ['tokens: prompt / completion / total', `${c.prompt_tokens} / ${c.completion_tokens} / ${c.total_tokens}`],
    ['tokens per try (mean)', String(c.mean_tokens_per_try)],
    ['judge tokens', String(results.judge.total_tokens)],
    [
      'try time: mean / median / max',
      `${seconds(c.mean_try_ms)} / ${seconds(c.median_try_ms)} / ${seconds(c.max_try_ms)}`,
    ],
    ['tries at once', String(results.concurrency)],
    ['tries, start to end', duration(results.tries_time_ms)],
    ['wall time (stack start and stop included)', duration(results.wall_time_ms)],
  ];
  const tierRows = [
    ['model tier', 'steps', 'model', 'calls', 'tokens: prompt / completion / total', 'time in calls', 'per call'],
    ...(results.cost.tiers ?? []).map((t) => [
      t.tier,
      tierSteps(t.tier),
      t.models.join(', ') || '—',
      String(t.calls),
      `${t.prompt_tokens} / ${t.completion_tokens} / ${t.total_tokens}`,
      seconds(t.duration_ms),
      t.calls ? `${Math.round(t.duration_ms / t.calls)} ms` : '—',
    ]),
  ];
  return [
    modelLine(results.model),
    `Scenarios: ${results.overall.scenarios} × k = ${k} tries (${results.overall.tries})`,
    variationLine(results.variation, results.overall.scenarios),
    faultsLine(results.faults),
    judgeLine(results.judge),
    ...(results.adversary !== undefined ? [adversaryLine(results)] : []),
    `Machine: ${results.machine}`,
    `Date: ${results.created_at}`,
    '',
    markdownTable(scenarioRows),
    '',
    answersSection(results.answers),
    '',
    ...(results.safety_net ? [safetyNetSection(results), ''] : []),
    ...(results.baselines?.length ? [markdownTable(renderBaselines(results.baselines)), ''] : []),
    ...(results.team_history?.error ? [`Warning: ${historyNotIndexed(results.team_history)}`, ''] : []),
    ...(results.labelled ? [labelledSection(results.labelled), ''] : []),
    markdownTable(kindRows),
    '',
    markdownTable(costRows),
    '',
    markdownTable(tierRows),
    '',
    baselineSection(results),
    '',
  ].join('\n');
}
