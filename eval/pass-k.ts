// The evaluation's arithmetic: pass^k per scenario and overall (τ-bench), checks by expectation kind, and the comparison
// of a run with a saved baseline. Pure functions over the tries' outcomes.

/** What one try of a scenario came to, as far as the figures need it. */
export interface TryOutcome {
  scenario: string;
  passed: boolean;
  /** Why the try could not run to its checks (a delivery refused, a run that never finished); null when it did. */
  error: string | null;
  expectations: { expectation: string; passed: boolean }[];
}

/** n choose k, exactly for the small numbers an evaluation uses. */
export function binomial(n: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(k) || k < 0 || n < 0 || k > n) return 0;
  const m = Math.min(k, n - k);
  let result = 1;
  for (let i = 1; i <= m; i += 1) result = (result * (n - m + i)) / i;
  return Math.round(result);
}

/**
 * τ-bench's pass^k: the chance that k tries drawn from the n made, of which c passed, all pass: C(c, k) / C(n, k).
 * pass^1 is the plain success rate; pass^k falls as soon as any try fails, so it measures reliability, not luck.
 */
export function passHatK(n: number, c: number, k: number): number {
  if (k < 1 || k > n || c < 0 || c > n) throw new RangeError(`pass^${k} needs 1 ≤ k ≤ n (n = ${n}, c = ${c})`);
  return binomial(c, k) / binomial(n, k);
}

export interface ScenarioFigures {
  id: string;
  tries: number;
  passed: number;
  /** pass^1 … pass^k, index j − 1 for pass^j. */
  pass_hat: number[];
  /** Failed checks over the tries, by label ("error" for a try that did not run to its checks), most frequent first. */
  failed_checks: { label: string; count: number }[];
}

/** pass^1 … pass^k of each scenario, in the order scenarios first appear; k is the number of tries each made. */
export function scenarioFigures(tries: TryOutcome[], k: number): ScenarioFigures[] {
  const byScenario = new Map<string, TryOutcome[]>();
  for (const t of tries) byScenario.set(t.scenario, [...(byScenario.get(t.scenario) ?? []), t]);
  return [...byScenario].map(([id, own]) => {
    const passed = own.filter((t) => t.passed).length;
    const failed = new Map<string, number>();
    for (const t of own) {
      const labels = t.error ? ['error'] : t.expectations.filter((e) => !e.passed).map((e) => e.expectation);
      for (const label of labels) failed.set(label, (failed.get(label) ?? 0) + 1);
    }
    return {
      id,
      tries: own.length,
      passed,
      pass_hat: Array.from({ length: Math.min(k, own.length) }, (_, j) => passHatK(own.length, passed, j + 1)),
      failed_checks: [...failed]
        .map(([label, count]) => ({ label, count }))
        .sort((a, b) => b.count - a.count || a.label.localeCompare(b.label)),
    };
  });
}

/** The overall pass^j: the mean over scenarios, each counting once whatever its number of checks. */
export function overallPassHat(scenarios: ScenarioFigures[], k: number): number[] {
  return Array.from({ length: k }, (_, j) => {
    const values = scenarios.map((s) => s.pass_hat[j]).filter((v): v is number => v !== undefined);
    return values.length ? values.reduce((sum, v) => sum + v, 0) / values.length : 0;
  });
}

/**
 * An expectation's kind from its label: `turn 2: reply_includes "November 27"` is a `reply_includes`. A try that did
 * not run to its checks counts as one failed `run` check, so errors show in the same table.
 */
export function expectationKind(label: string): string {
  return label.replace(/^turn \d+: /, '').split(/[\s"]/)[0] ?? label;
}

export interface KindFigures {
  kind: string;
  checks: number;
  passed: number;
}

/** Checks and passes per expectation kind over every try, in a stable order (most checks first). */
export function expectationFigures(tries: TryOutcome[]): KindFigures[] {
  const kinds = new Map<string, KindFigures>();
  const count = (kind: string, passed: boolean) => {
    const figures = kinds.get(kind) ?? { kind, checks: 0, passed: 0 };
    figures.checks += 1;
    if (passed) figures.passed += 1;
    kinds.set(kind, figures);
  };
  for (const t of tries) {
    count('run', t.error === null);
    for (const e of t.expectations) count(expectationKind(e.expectation), e.passed);
  }
  return [...kinds.values()].sort((a, b) => b.checks - a.checks || a.kind.localeCompare(b.kind));
}

/** What a baseline keeps of each scenario: enough to say whether a later run did worse. */
export interface BaselineScenario {
  id: string;
  tries: number;
  passed: number;
  pass_hat: number[];
}

/** A scenario whose pass^1 or pass^k moved since the baseline, with each pass^j that moved that way. */
export interface ScenarioChange {
  id: string;
  changes: { j: number; before: number; now: number }[];
}

export interface Comparison {
  worse: ScenarioChange[];
  better: ScenarioChange[];
  /** Scenarios this run made that the baseline does not have. */
  added: string[];
  /** Scenarios the baseline has that this run was meant to make but did not (leaving out any `--only` filtered). */
  missing: string[];
}

/** Float noise must not count as a drop: pass^k values are ratios of small integers. */
const EPSILON = 1e-9;

/**
 * Compares a run with a baseline, scenario by scenario, on pass^1 and on pass^k for the highest k both have: a scenario
 * is worse when either dropped, better when either rose and neither dropped. `selected`, when given, is the ids the run
 * was asked to make (`--only`); baseline scenarios outside it are not missing.
 */
export function compareWithBaseline(
  current: BaselineScenario[],
  baseline: BaselineScenario[],
  selected?: Set<string>,
): Comparison {
  const before = new Map(baseline.map((s) => [s.id, s]));
  const now = new Set(current.map((s) => s.id));
  const comparison: Comparison = { worse: [], better: [], added: [], missing: [] };
  for (const scenario of current) {
    const old = before.get(scenario.id);
    if (!old) {
      comparison.added.push(scenario.id);
      continue;
    }
    const highest = Math.min(scenario.pass_hat.length, old.pass_hat.length);
    if (highest === 0) continue;
    const js = [...new Set([1, highest])];
    const changes = js.map((j) => ({ j, before: old.pass_hat[j - 1]!, now: scenario.pass_hat[j - 1]! }));
    const drops = changes.filter((c) => c.now < c.before - EPSILON);
    const rises = changes.filter((c) => c.now > c.before + EPSILON);
    if (drops.length) comparison.worse.push({ id: scenario.id, changes: drops });
    else if (rises.length) comparison.better.push({ id: scenario.id, changes: rises });
  }
  for (const old of baseline) {
    if (!now.has(old.id) && (!selected || selected.has(old.id))) comparison.missing.push(old.id);
  }
  return comparison;
}
