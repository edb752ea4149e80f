// The evaluation's arithmetic and bookkeeping: pass^k as τ-bench defines it, checks by kind, the baseline comparison,
// the report, the command line, and how tries are numbered and scheduled side by side.
import { Baseline, renderReport, summarize } from '../../eval/report';
import { UsageError, parseCommandLine } from '../../eval/options';
import {
  binomial,
  compareWithBaseline,
  expectationFigures,
  expectationKind,
  overallPassHat,
  passHatK,
  scenarioFigures,
  type TryOutcome,
} from '../../eval/pass-k';
import { forTry, runPool, seedConflict, tryConversationId, unfitForEvaluation, type TryRecord } from '../../eval/tries';
import { Scenario } from '../../sandbox/scenario';

const outcome = (scenario: string, passed: boolean, extra: Partial<TryOutcome> = {}): TryOutcome => ({
  scenario,
  passed,
  error: null,
  expectations: [{ expectation: 'melvin_status', passed }],
  ...extra,
});

describe('pass^k', () => {
  test('is C(c, k) / C(n, k): the chance that k of the n tries, drawn without replacement, all passed', () => {
    expect(binomial(4, 2)).toBe(6);
    expect(binomial(10, 3)).toBe(120);
    expect(binomial(3, 4)).toBe(0);
    // Three of four tries passed: pass^1 is the success rate, and every higher k is harder to meet.
    expect([1, 2, 3, 4].map((k) => passHatK(4, 3, k))).toEqual([0.75, 0.5, 0.25, 0]);
    expect([1, 2, 3, 4].map((k) => passHatK(4, 4, k))).toEqual([1, 1, 1, 1]);
    expect([1, 2].map((k) => passHatK(4, 0, k))).toEqual([0, 0]);
    expect(passHatK(8, 6, 4)).toBeCloseTo(15 / 70);
    expect(() => passHatK(2, 1, 3)).toThrow(RangeError);
  });

  test('per scenario and overall: the mean over scenarios, each counting once', () => {
    const tries = [
      ...[true, true, true, true].map((p) => outcome('steady', p)),
      ...[true, false, true, true].map((p) => outcome('flaky', p)),
    ];
    const figures = scenarioFigures(tries, 4);
    expect(figures.map((f) => [f.id, f.passed, f.pass_hat])).toEqual([
      ['steady', 4, [1, 1, 1, 1]],
      ['flaky', 3, [0.75, 0.5, 0.25, 0]],
    ]);
    expect(overallPassHat(figures, 4)).toEqual([0.875, 0.75, 0.625, 0.5]);
  });

  test('failed checks are counted by label, a try that never reached its checks as "error"', () => {
    const tries = [
      outcome('s', false, {
        expectations: [
          { expectation: 'reply_includes "November 27"', passed: false },
          { expectation: 'replied', passed: true },
        ],
      }),
      outcome('s', false, { error: 'the ingress did not start a run: 503', expectations: [] }),
      outcome('s', false, { expectations: [{ expectation: 'reply_includes "November 27"', passed: false }] }),
    ];
    expect(scenarioFigures(tries, 3)[0]!.failed_checks).toEqual([
      { label: 'reply_includes "November 27"', count: 2 },
      { label: 'error', count: 1 },
    ]);
  });
});

describe('checks by expectation kind', () => {
  test('a label names its kind, whatever the turn or the text checked', () => {
    expect(expectationKind('reply_includes "November 27"')).toBe('reply_includes');
    expect(expectationKind('turn 2: reply_excludes "pay-31"')).toBe('reply_excludes');
    expect(expectationKind('tools_called get_user_payments')).toBe('tools_called');
    expect(expectationKind('escalation_source')).toBe('escalation_source');
    expect(expectationKind('judge')).toBe('judge');
  });

  test('every try adds a `run` check, failed when the try errored', () => {
    const tries = [
      outcome('a', true, {
        expectations: [
          { expectation: 'reply_includes "x"', passed: true },
          { expectation: 'turn 2: reply_includes "y"', passed: false },
        ],
      }),
      outcome('a', false, { error: 'timed out', expectations: [] }),
    ];
    expect(expectationFigures(tries)).toEqual([
      { kind: 'reply_includes', checks: 2, passed: 1 },
      { kind: 'run', checks: 2, passed: 1 },
    ]);
  });
});

describe('the baseline comparison', () => {
  const scenario = (id: string, tries: number, passed: number, k = tries) => ({
    id,
    tries,
    passed,
    pass_hat: Array.from({ length: k }, (_, j) => passHatK(tries, passed, j + 1)),
  });

  test('names the scenarios whose pass^1 or pass^k dropped, the ones that rose, and new and missing ones', () => {
    const baseline = [
      scenario('held', 4, 4),
      scenario('slipped', 4, 4),
      scenario('recovered', 4, 2),
      scenario('gone', 4, 4),
    ];
    const current = [
      scenario('held', 4, 4),
      scenario('slipped', 4, 3),
      scenario('recovered', 4, 4),
      scenario('new', 4, 4),
    ];
    const comparison = compareWithBaseline(current, baseline);
    expect(comparison.worse).toEqual([
      {
        id: 'slipped',
        changes: [
          { j: 1, before: 1, now: 0.75 },
          { j: 4, before: 1, now: 0 },
        ],
      },
    ]);
    expect(comparison.better.map((s) => s.id)).toEqual(['recovered']);
    expect(comparison.added).toEqual(['new']);
    expect(comparison.missing).toEqual(['gone']);
  });

  test('a drop of pass^k alone is worse; k is the highest both runs have', () => {
    // Half the tries passed both times, but the baseline made more tries: pass^2 = 1/6 then, 0 now.
    const comparison = compareWithBaseline([scenario('s', 2, 1)], [scenario('s', 4, 2)]);
    expect(comparison.worse).toEqual([{ id: 's', changes: [{ j: 2, before: 1 / 6, now: 0 }] }]);
  });

  test('scenarios left out with --only are not missing', () => {
    const comparison = compareWithBaseline(
      [scenario('a', 2, 2)],
      [scenario('a', 2, 2), scenario('b', 2, 2)],
      new Set(['a']),
    );
    expect(comparison).toEqual({ worse: [], better: [], added: [], missing: [] });
  });

  test('a baseline file is checked: a results file reads as one, a file without pass^k does not', () => {
    expect(Baseline.safeParse({ k: 2, scenarios: [scenario('a', 2, 1)], tries: [], machine: 'm' }).success).toBe(true);
    expect(Baseline.safeParse({ k: 2, scenarios: [{ id: 'a', tries: 2, passed: 1 }] }).success).toBe(false);
  });
});

describe('the report', () => {
  const record = (scenario: string, attempt: number, passed: boolean): TryRecord => ({
    scenario,
    file: `eval/scenarios/${scenario}.json`,
    try: attempt,
    conversation_id: tryConversationId('4001', attempt),
    passed,
    error: null,
    duration_ms: 1000 * attempt,
    usage: { calls: 3, prompt_tokens: 900, completion_tokens: 100, total_tokens: 1000 },
    model: { name: 'melvin-sandbox-model', stand_in: true, response_format: 'json_schema' },
    expectations: [{ expectation: 'reply_includes "November 27"', passed, expected: 'November 27', actual: '' }],
    judgement: null,
  });

  test('prints pass^1…pass^k per scenario and overall, checks by kind, cost, and what got worse', () => {
    const results = summarize({
      tries: [
        record('steady', 1, true),
        record('steady', 2, true),
        record('flaky', 1, true),
        record('flaky', 2, false),
      ],
      k: 2,
      concurrency: 3,
      model: { configured_by: 'sandbox', base_url: 'http://127.0.0.1:1/v1', name: 'melvin-sandbox-model' },
      faults: { rate: 0.1, seed: 7, drawn: { intercom: 3, mcp: 1, llm: 2, validation: 0 } },
      judge: { enabled: false, note: 'the sandbox model is not a judge', rubrics: 1 },
      wallTimeMs: 90_000,
      triesTimeMs: 60_000,
      machine: 'test machine',
      baseline: {
        file: 'eval/baseline.json',
        data: {
          k: 2,
          created_at: '2026-11-20T00:00:00.000Z',
          scenarios: [{ id: 'flaky', tries: 2, passed: 2, pass_hat: [1, 1] }],
        },
      },
    });
    expect(results.overall).toEqual({ scenarios: 2, tries: 4, passed: 3, pass_hat: [0.75, 0.5] });
    expect(results.cost).toMatchObject({
      llm_calls: 12,
      total_tokens: 4000,
      mean_tokens_per_try: 1000,
      max_try_ms: 2000,
    });
    const report = renderReport(results);
    expect(report).toMatch(
      /\| scenario +\| passed \| pass\^1 \| pass\^2 \| tokens\/try \| time\/try \| failed checks +\|/,
    );
    expect(report).toMatch(
      /\| flaky +\| 1\/2 +\| 0\.50 +\| 0\.00 +\| 1000 +\| 1\.5 s +\| reply_includes "November 27" ×1 \|/,
    );
    expect(report).toMatch(/\| overall \(mean of 2\) +\| 3\/4 +\| 0\.75 +\| 0\.50 +\|/);
    expect(report).toMatch(/\| reply_includes +\| 4 +\| 3 +\| 75\.0% +\|/);
    expect(report).toContain('answered as the sandbox stand-in');
    expect(report).toContain('Judge: off (the sandbox model is not a judge); 1 rubric(s) not checked');
    expect(report).toContain('injected: intercom 3 · mcp 1 · llm 2 · validation 0');
    expect(report).toContain('1 scenario(s) got worse');
    expect(report).toContain('- worse: flaky: pass^1 1.00 → 0.50, pass^2 1.00 → 0.00');
    expect(report).toContain('- new (not in the baseline): steady');
  });
});

describe('the command line', () => {
  test('defaults: k = 4, faults at 10%, three tries at once, the sandbox model', () => {
    const { options, targets, env } = parseCommandLine([], {});
    expect(options).toMatchObject({ k: 4, faults: 0.1, concurrency: 3, check: false, 'save-baseline': false });
    expect(targets).toEqual([]);
    expect(env.OPENAI_BASE_URL).toBeUndefined();
  });

  test('options with values, flags and targets; an endpoint from the environment', () => {
    const { options, targets, env } = parseCommandLine(
      ['--k=2', '--only', 'a, b', '--faults', 'off', '--seed', '9', '--check', 'eval/scenarios'],
      { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'key', LLM_RESPONSE_FORMAT: 'json_object' },
    );
    expect(options).toMatchObject({ k: 2, only: ['a', 'b'], faults: 'off', seed: 9, check: true });
    expect(targets).toEqual(['eval/scenarios']);
    expect(env).toMatchObject({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', MODEL_NAME: 'gpt-4o-mini' });
  });

  test('a usage error says what is wrong', () => {
    const error = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
      try {
        parseCommandLine(argv, env);
      } catch (err) {
        expect(err).toBeInstanceOf(UsageError);
        return (err as Error).message;
      }
      throw new Error('no usage error');
    };
    expect(error(['--k', '0'])).toBe('--k: Too small: expected number to be >=1');
    expect(error(['--k'])).toBe('--k needs a value');
    expect(error(['--faults', 'often'])).toBe('--faults: must be a share of calls from 0 to 1, or off');
    expect(error(['--tries', '3'])).toBe('unknown option --tries');
    expect(error([], { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' })).toBe(
      'OPENAI_API_KEY: is required when OPENAI_BASE_URL names a model endpoint',
    );
    // An empty variable is an unset one: `OPENAI_BASE_URL= npm run eval` evaluates the sandbox model.
    expect(parseCommandLine([], { OPENAI_BASE_URL: '' }).env.OPENAI_BASE_URL).toBeUndefined();
  });
});

describe('tries', () => {
  const base = Scenario.parse({
    id: 'payment',
    description: 'd',
    conversation: {
      id: '4001',
      contact: { id: 'c-4001', email: 'ana@example.com', name: 'Ana' },
      parts: [{ author: 'user', body: 'When will I get paid?' }],
    },
    talent: { users: [{ email: 'ana@example.com', name: 'Ana' }] },
    expect: { replied: true },
  });

  test('each try has a conversation of its own, an integer id as Intercom’s are', () => {
    expect(tryConversationId('4001', 1)).toBe('400101');
    expect(tryConversationId('4001', 12)).toBe('400112');
    expect(forTry(base, 3)).toEqual({ ...base, conversation: { ...base.conversation, id: '400103' } });
    expect(() => tryConversationId('1234567890123456789', 1)).toThrow(/too long/);
  });

  test('scenarios that seed the same talent, job, contact or doc differently conflict; the same seed does not', () => {
    const sameUser = { ...base, id: 'other', conversation: { ...base.conversation, id: '4002' } };
    expect(seedConflict(base, sameUser)).toBe(false);
    const richer = Scenario.parse({
      ...sameUser,
      talent: {
        users: [
          {
            email: 'ANA@example.com',
            name: 'Ana',
            payments: [],
            applications: [{ id: 'app-1', job_id: 'job-1', status: 'hired', updated_at: '2026-11-01' }],
          },
        ],
      },
    });
    expect(seedConflict(base, richer)).toBe(true);
    expect(
      seedConflict(base, Scenario.parse({ ...sameUser, talent: { users: [] }, docs: [{ title: 'A', body: 'b' }] })),
    ).toBe(false);
  });

  test('planned faults, signals and a lead’s decision are not for an evaluation', () => {
    expect(unfitForEvaluation(base)).toBeNull();
    const unfit = Scenario.parse({
      ...base,
      faults: { llm: { plan: [{ status: 503 }] } },
      signals: [{ after_node: 'plan', name: 'forceEscalation' }],
    });
    expect(unfitForEvaluation(unfit)).toBe('planned faults, signals (an evaluation draws its faults at random)');
  });

  test('the pool runs at most n at once and never two that conflict', async () => {
    const running = new Set<string>();
    const overlaps: string[][] = [];
    let most = 0;
    const items = ['a1', 'a2', 'b1', 'b2', 'c1', 'c2'];
    // Items of scenario "a" conflict with those of "b" (they seed the same talent differently).
    const conflict = (x: string, y: string) => [x[0], y[0]].sort().join('') === 'ab';
    await runPool(items, 3, conflict, async (item) => {
      running.add(item);
      most = Math.max(most, running.size);
      overlaps.push([...running]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      running.delete(item);
    });
    expect(most).toBe(3);
    for (const together of overlaps) {
      expect(together.some((i) => i.startsWith('a')) && together.some((i) => i.startsWith('b'))).toBe(false);
    }
  });
});
