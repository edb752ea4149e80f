// The evaluation's arithmetic and bookkeeping: pass^k as τ-bench defines it, checks by kind, the baseline comparison,
// the report, the command line, and how tries are numbered and scheduled side by side.
import path from 'node:path';
import { Baseline, baselineOf, renderReport, summarize } from '../../eval/report';
import { answerFigures, scenariosBehind } from '../../eval/answer-figures';
import { checkReplies, loadHelpCenter } from '../../eval/reply-checks';
import { retrievalFigures, toneFigures } from '../../eval/labelled';
import { historyProblems, loadTeamHistory, TeamHistory } from '../../eval/team-history';
import { UsageError, parseCommandLine } from '../../eval/options';
import { workerModelEnvironment } from '../../harness/model-environment';
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
import { evaluate, loadScenario, scenarioFiles, type TurnOutcome } from '../../sandbox/scenario-runner';
import type { AgentState } from '../../src/contract/state';

/** A run of `tries` summarized with the sandbox model, no faults and no judge, unless `given` says otherwise. */
function summarizeRun(tries: TryRecord[], given: Partial<Parameters<typeof summarize>[0]> = {}) {
  return summarize({
    tries,
    k: 1,
    concurrency: 1,
    model: { configured_by: 'sandbox', base_url: 'http://127.0.0.1:1/v1', name: 'melvin-sandbox-model' },
    faults: null,
    variation: { seed: 1, jitter_ms: 0, worded_scenarios: 0 },
    judge: { enabled: false, note: 'the sandbox model is not a judge', rubrics: 0 },
    wallTimeMs: 1000,
    triesTimeMs: 1000,
    machine: 'test machine',
    ...given,
  });
}

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
    usage_by_tier: {
      plan: {
        model: 'small',
        calls: 2,
        prompt_tokens: 700,
        completion_tokens: 50,
        total_tokens: 750,
        duration_ms: 300,
      },
      draft: { model: 'big', calls: 1, prompt_tokens: 200, completion_tokens: 50, total_tokens: 250, duration_ms: 500 },
    },
    model: { name: 'melvin-sandbox-model', stand_in: true, response_format: 'json_schema' },
    expectations: [{ expectation: 'reply_includes "November 27"', passed, expected: 'November 27', actual: '' }],
    turns: [],
    reply_checks: [],
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
      variation: { seed: 7, jitter_ms: 200, worded_scenarios: 1 },
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
    // Each model tier's calls, tokens and time, summed over the tries.
    expect(results.cost.tiers).toEqual([
      {
        tier: 'plan',
        models: ['small'],
        calls: 8,
        prompt_tokens: 2800,
        completion_tokens: 200,
        total_tokens: 3000,
        duration_ms: 1200,
      },
      {
        tier: 'draft',
        models: ['big'],
        calls: 4,
        prompt_tokens: 800,
        completion_tokens: 200,
        total_tokens: 1000,
        duration_ms: 2000,
      },
    ]);
    expect(report).toMatch(
      /\| plan +\| plan, coverage, resolve \| small +\| 8 +\| 2800 \/ 200 \/ 3000 +\| 1\.2 s +\| 150 ms +\|/,
    );
    expect(report).toMatch(/\| draft +\| draft +\| big +\| 4 +\| 800 \/ 200 \/ 1000 +\| 2\.0 s +\| 500 ms +\|/);
    expect(report).toContain('answered as the sandbox stand-in');
    expect(report).toContain('Judge: off (the sandbox model is not a judge); 1 rubric(s) not checked');
    expect(report).toContain('injected: intercom 3 · mcp 1 · llm 2 · validation 0');
    expect(report).toContain(
      "Tries differ (seed 7): the talent's words (1 of 2 scenarios have paraphrases, taken in turn), latency jitter " +
        'of 0–200 ms on every LLM and tool call, and which calls the faults hit',
    );
    expect(report).toContain('1 scenario(s) got worse');
    expect(report).toContain('- worse: flaky: pass^1 1.00 → 0.50, pass^2 1.00 → 0.00');
    expect(report).toContain('- new (not in the baseline): steady');
  });
});

describe('the answer figures', () => {
  const helpCenter = loadHelpCenter();
  const HANDOVER = 'A person from the team will follow up here.';

  /** One turn as a scenario states it and as it went: the talent's message, Melvin's replies, whether it escalated. */
  interface Played {
    user: string;
    expect: Scenario['expect'];
    replies: string[];
    escalated?: 'coverage' | 'draft';
  }

  /**
   * A try as `runTries` records it: expectations judged by the scenario runner's own `evaluate` (so their labels and
   * expected values are the runner's), turns as the talent saw them, and the reply checks.
   */
  function played(scenario: string, attempt: number, turns: Played[]): TryRecord {
    const parsed = Scenario.parse({
      id: scenario,
      description: 'd',
      conversation: {
        id: '4001',
        contact: { id: 'c-1', email: 'ana.ruiz@example.com', name: 'Ana Ruiz' },
        parts: [{ author: 'user', body: turns[0]!.user }],
      },
      talent: {
        users: [
          {
            email: 'ana.ruiz@example.com',
            name: 'Ana Ruiz',
            applications: [{ id: 'app-11', job_id: 'job-21', status: 'hired', updated_at: '2026-10-30' }],
          },
        ],
        jobs: [{ id: 'job-21', title: 'Event Staff', location: 'Austin, TX', status: 'filled' }],
      },
      expect: turns[0]!.expect,
      turns: turns.slice(1).map((t) => ({ user: t.user, expect: t.expect })),
    });
    const outcomes: TurnOutcome[] = [];
    const expectations = turns.flatMap((t, index) => {
      const told = { text: HANDOVER, sent: true, error: null, part_id: '9' };
      const state = {
        hops: [],
        messages: [{ role: 'user', content: t.user }],
        escalate: t.escalated ? { escalation_source: t.escalated, user_told: told } : null,
      } as unknown as AgentState;
      const replies = t.escalated ? [...t.replies, HANDOVER] : t.replies;
      const status = t.escalated ? 'ROUTE_TO_TEAM' : 'success';
      // A hand-over's note, as Melvin writes it: its kind, and the talent's message left open.
      const notes = t.escalated
        ? [`🚨 Escalation: User requested to talk to a human\nOpen for the team:\n- “${t.user}”`]
        : [];
      outcomes.push({
        user: t.user,
        replies: t.replies,
        handed_over: t.escalated !== undefined,
        melvin_status: status,
      });
      const judged = evaluate(t.expect, state, { replies, notes, melvin_status: status, snoozed_until: null });
      return judged.map((e) => (index === 0 ? e : { ...e, expectation: `turn ${index + 1}: ${e.expectation}` }));
    });
    return {
      scenario,
      file: `eval/scenarios/${scenario}.json`,
      try: attempt,
      conversation_id: tryConversationId('4001', attempt),
      passed: expectations.every((e) => e.passed),
      error: null,
      duration_ms: 1000,
      usage: { calls: 3, prompt_tokens: 900, completion_tokens: 100, total_tokens: 1000 },
      usage_by_tier: {},
      model: { name: 'melvin-sandbox-model', stand_in: true, response_format: 'json_schema' },
      expectations,
      turns: outcomes,
      reply_checks: checkReplies(parsed, outcomes, helpCenter),
      judgement: null,
    };
  }

  const answer = (...reply_includes: string[]): Scenario['expect'] => ({
    melvin_status: 'success',
    replied: true,
    escalation_source: null,
    reply_includes,
  });
  const handOver: Scenario['expect'] = {
    melvin_status: 'ROUTE_TO_TEAM',
    replied: false,
    escalation_source: 'coverage',
  };
  const STAGES =
    'Every application moves through these stages: submitted, screening, interview, offer, hired. Screening means ' +
    'the hiring team is reviewing your profile and documents; most screenings finish within five business days.';

  const tries = [
    played('answered', 1, [
      { user: 'Any news on my application?', expect: answer('hired'), replies: ['Hi Ana, you were hired.'] },
    ]),
    // An answerable question handed over: the one false hand-over.
    played('handed-over', 2, [
      { user: 'Any news on my application?', expect: answer('hired'), replies: [], escalated: 'draft' },
    ]),
    // A question for the team, handed over as expected: in no figure.
    played('unanswerable', 1, [{ user: 'Can I get a W-2?', expect: handOver, replies: [], escalated: 'coverage' }]),
    // A reply where the team should have answered.
    played('replied-anyway', 1, [{ user: 'Can I get a W-2?', expect: handOver, replies: ['Hi Ana, yes.'] }]),
    // The second turn misses its fact and says the passage twice.
    played('two-turns', 3, [
      { user: 'Any news on my application?', expect: answer('hired'), replies: ['Hi Ana, you were hired.'] },
      {
        user: 'How long does screening take?',
        expect: answer('five business days'),
        replies: [
          `Hi Ana, every application moves through stages. ${STAGES} ${STAGES}`.replace(/five business/g, 'a few'),
        ],
      },
    ]),
    // The reply: about a job the talent did not name, a status used as a place.
    played('barista', 1, [
      {
        user: 'Is my application for the barista job still open?',
        expect: answer('Event Staff'),
        replies: ['Hi Ana, your application for Event Staff in Austin, TX is in hired.'],
      },
    ]),
  ];

  test('false hand-overs: answerable turns handed to the team, of the turns whose expectation is an answer', () => {
    const { false_handover } = answerFigures(tries);
    expect(false_handover).toEqual({
      count: 1,
      of: 5,
      rate: 0.2,
      cases: [{ scenario: 'handed-over', try: 2, turn: 1, why: 'handed over (Melvin Status ROUTE_TO_TEAM)' }],
    });
  });

  test('wrong answers: a reply where none was expected, a fact missing, a named job not answered, of turns with a reply', () => {
    const { wrong_answer } = answerFigures(tries);
    expect([wrong_answer.count, wrong_answer.of]).toEqual([3, 5]);
    expect(wrong_answer.cases.map((c) => [c.scenario, c.try, c.turn])).toEqual([
      ['replied-anyway', 1, 1],
      ['two-turns', 3, 2],
      ['barista', 1, 1],
    ]);
    expect(wrong_answer.cases[0]!.why).toBe('a reply where none was expected');
    expect(wrong_answer.cases[1]!.why).toBe('reply_includes "five business days" failed');
    expect(wrong_answer.cases[2]!.why).toContain('the message names "barista"');
  });

  test('hygiene failures: replies failing no_repeat, passage_on_subject or wording, of all replies, by check', () => {
    const { hygiene } = answerFigures(tries);
    expect([hygiene.count, hygiene.of]).toEqual([2, 5]);
    expect(hygiene.by_check).toEqual([
      { check: 'no_repeat', failed: 1 },
      { check: 'passage_on_subject', failed: 0 },
      { check: 'wording', failed: 1 },
    ]);
    expect(hygiene.cases.map((c) => [c.scenario, c.turn, c.why.split(':')[0]])).toEqual([
      ['two-turns', 2, 'no_repeat'],
      ['barista', 1, 'wording'],
    ]);
    expect(scenariosBehind([...hygiene.cases, { ...hygiene.cases[0]!, try: 1 }])).toEqual([
      'two-turns (tries 1, 3)',
      'barista (try 1)',
    ]);
  });

  test('a try recorded before the reply checks counts by its expectations alone; one that never got to its turns, in no figure', () => {
    const { reply_checks: _checks, ...older } = tries[0]!;
    const figures = answerFigures([older, { ...tries[1]!, turns: [] }]);
    expect([figures.false_handover.of, figures.wrong_answer.of, figures.hygiene.of]).toEqual([1, 1, 0]);
    expect(figures.false_handover.rate).toBe(0);
    expect(answerFigures([]).wrong_answer.rate).toBeNull();
  });

  test('the report prints them after pass^k with the scenarios behind them; results and the baseline carry them', () => {
    const results = summarizeRun(tries, {
      k: 3,
      concurrency: 2,
      variation: { seed: 3, jitter_ms: 0, worded_scenarios: 0 },
      judge: { enabled: true, note: 'gpt-4o-mini at http://127.0.0.1:9/v1', rubrics: 0 },
    });
    expect(results.answers.false_handover.count).toBe(1);
    const report = renderReport(results);
    expect(report).toMatch(/^Model: melvin-sandbox-model, the sandbox model at http:\/\/127\.0\.0\.1:1\/v1/);
    expect(report).toContain('Judge: on (gpt-4o-mini at http://127.0.0.1:9/v1)');
    expect(report.indexOf('| answers')).toBeGreaterThan(report.indexOf('| overall (mean of'));
    expect(report).toMatch(
      /\| false hand-over rate +\| 1\/5 \(20\.0%\) +\| turns to answer +\| handed-over \(try 2\) +\|/,
    );
    expect(report).toMatch(
      /\| wrong-answer rate +\| 3\/5 \(60\.0%\) +\| turns with a reply +\| replied-anyway \(try 1\); two-turns \(try 3\); barista \(try 1\) \|/,
    );
    expect(report).toMatch(
      /\| hygiene failures +\| 2\/5 \(40\.0%\) +\| replies +\| two-turns \(try 3\); barista \(try 1\) +\|/,
    );
    expect(report).toContain('Hygiene failures by check: no_repeat 1 · wording 1');
    expect(report).toContain('- two-turns try 3, turn 2: reply_includes "five business days" failed');
    const baseline = Baseline.parse(JSON.parse(JSON.stringify(baselineOf(results))));
    expect(baseline).toMatchObject({ k: 3, answers: { wrong_answer: { count: 3, of: 5 } } });
  });
});

describe('the command line', () => {
  test('defaults: k = 4, faults at 10%, three tries at once, the sandbox model', () => {
    const { options, targets, env } = parseCommandLine([], {});
    expect(options).toMatchObject({
      k: 4,
      faults: 0.1,
      concurrency: 3,
      check: false,
      'save-baseline': false,
      jitter: 200,
      holdout: false,
    });
    expect(targets).toEqual([]);
    expect(env.OPENAI_BASE_URL).toBeUndefined();
  });

  test('options with values, flags and targets; an endpoint from the environment', () => {
    const { options, targets, env } = parseCommandLine(
      ['--k=2', '--only', 'a, b', '--faults', 'off', '--seed', '9', '--check', 'eval/scenarios'],
      { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'key', LLM_RESPONSE_FORMAT: 'json_object' },
    );
    expect(options).toMatchObject({ k: 2, only: ['a', 'b'], faults: 'off', seed: 9, check: true });
    expect(parseCommandLine(['--holdout', '--jitter', '0'], {}).options).toMatchObject({ holdout: true, jitter: 0 });
    expect(targets).toEqual(['eval/scenarios']);
    expect(env).toMatchObject({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', MODEL_NAME: 'gpt-4o-mini' });
    // The worker gets the endpoint and every tier on MODEL_NAME unless a tier names its own.
    expect(workerModelEnvironment(env)).toEqual({
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      OPENAI_API_KEY: 'key',
      MODEL_NAME: 'gpt-4o-mini',
      LLM_RESPONSE_FORMAT: 'json_object',
      PLAN_MODEL_NAME: 'gpt-4o-mini',
      DRAFT_MODEL_NAME: 'gpt-4o-mini',
      EMBEDDING_MODEL_NAME: 'text-embedding-3-small',
    });
    const tiered = parseCommandLine([], {
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      OPENAI_API_KEY: 'key',
      MODEL_NAME: 'big',
      PLAN_MODEL_NAME: 'small',
      PLAN_OPENAI_BASE_URL: 'http://127.0.0.1:8/v1',
      DRAFT_LLM_RESPONSE_FORMAT: '',
    });
    expect(workerModelEnvironment(tiered.env)).toEqual({
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      OPENAI_API_KEY: 'key',
      MODEL_NAME: 'big',
      PLAN_MODEL_NAME: 'small',
      PLAN_OPENAI_BASE_URL: 'http://127.0.0.1:8/v1',
      DRAFT_MODEL_NAME: 'big',
      EMBEDDING_MODEL_NAME: 'text-embedding-3-small',
    });
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
    expect: { melvin_status: 'success', replied: true, reply_includes: ['November 27'] },
  });

  test('each try has a conversation of its own, an integer id as Intercom’s are', () => {
    expect(tryConversationId('4001', 1)).toBe('400101');
    expect(tryConversationId('4001', 12)).toBe('400112');
    expect(forTry(base, 3)).toEqual({ ...base, conversation: { ...base.conversation, id: '400103' } });
    expect(() => tryConversationId('1234567890123456789', 1)).toThrow(/too long/);
  });

  test('each try takes the scenario’s wordings in turn, from an offset the seed draws; k tries use every one', () => {
    const worded = Scenario.parse({
      ...base,
      conversation: {
        ...base.conversation,
        parts: [{ author: 'user', body: 'hi' }, { author: 'bot', body: 'Hello!' }, ...base.conversation.parts],
        paraphrases: ['when do i get paid', 'Where is my money??'],
      },
      turns: [{ user: 'And my application?', paraphrases: ['application status pls'], expect: {} }],
    });
    const wordings = (seed: number) =>
      [1, 2, 3].map((attempt) => {
        const scenario = forTry(worded, attempt, seed);
        expect(scenario.conversation.paraphrases).toBeUndefined();
        // Only the last user part is reworded; the greeting before it stays.
        expect(scenario.conversation.parts[0]!.body).toBe('hi');
        return scenario.conversation.parts[2]!.body;
      });
    for (const seed of [1, 2, 3, 4, 5]) {
      expect(new Set(wordings(seed))).toEqual(
        new Set(['When will I get paid?', 'when do i get paid', 'Where is my money??']),
      );
      expect(wordings(seed)).toEqual(wordings(seed));
    }
    // Some seeds start elsewhere: the first try is not always the scenario's own words.
    expect(new Set([1, 2, 3, 4, 5, 6, 7, 8].map((seed) => wordings(seed)[0])).size).toBeGreaterThan(1);
    expect(new Set([1, 2].map((attempt) => forTry(worded, attempt, 9).turns[0]!.user))).toEqual(
      new Set(['And my application?', 'application status pls']),
    );
    // Without paraphrases every try has the scenario's own words.
    expect(forTry(base, 2, 7).conversation.parts[0]!.body).toBe('When will I get paid?');
  });

  test('tries that seed a user, job or contact in common, or seed what every try searches, never run at once', () => {
    const other = (id: string, email: string, extra: Record<string, unknown> = {}) =>
      Scenario.parse({
        ...base,
        id,
        conversation: { ...base.conversation, id: '4002', contact: { id: `c-${id}`, email, name: 'B' } },
        talent: { users: [{ email, name: 'B' }] },
        ...extra,
      });
    // Each try takes back what it seeded when it ends: even the same seed would be pulled from under the other.
    expect(seedConflict(base, base)).toBe(true);
    expect(seedConflict(base, other('b', 'ANA@example.com'))).toBe(true);
    expect(seedConflict(base, other('b', 'bo@example.com'))).toBe(false);
    const job = { id: 'job-1', title: 'Barista', location: 'Austin, TX', status: 'open' };
    expect(
      seedConflict(
        Scenario.parse({ ...base, talent: { ...base.talent, jobs: [job] } }),
        other('b', 'bo@example.com', { talent: { users: [], jobs: [job] } }),
      ),
    ).toBe(true);
    expect(seedConflict(base, other('b', 'bo@example.com', { docs: [{ title: 'A', body: 'b' }] }))).toBe(true);
    expect(
      seedConflict(other('b', 'bo@example.com', { resolved_conversations: [{ question: 'q', answer: 'a' }] }), base),
    ).toBe(true);
    // A conversation closed by the team goes into the index every try retrieves from.
    const closed = {
      id: '7901',
      contact: { id: 'c-7901', email: 'kai@example.com', name: 'Kai' },
      parts: [{ author: 'user', body: 'q' }],
    };
    expect(seedConflict(base, other('b', 'bo@example.com', { closed_by_team: [closed] }))).toBe(true);
  });

  test('an evaluation keeps the team’s history in Intercom and the index, never in a scenario’s MCP search', () => {
    const searched = Scenario.parse({ ...base, resolved_conversations: [{ question: 'q', answer: 'a' }] });
    expect(unfitForEvaluation(searched)).toMatch(/^resolved_conversations .*closed_by_team/);
  });

  test('an evaluation’s scenario pins every turn: its status, one reply or none, and the facts a reply carries', () => {
    expect(unfitForEvaluation(base)).toBeNull();
    const vague = Scenario.parse({
      ...base,
      expect: { replied: true },
      turns: [{ user: 'thanks', expect: { melvin_status: 'success' } }],
    });
    expect(unfitForEvaluation(vague)).toBe(
      'expectations that do not pin the outcome: expect states no melvin_status; expect replies without ' +
        'reply_includes (the facts it carries); turns[0].expect states no "replied" (exactly one reply, or none)',
    );
    const handedOver = Scenario.parse({ ...base, expect: { melvin_status: 'NO_SAFE_ANSWER', replied: false } });
    expect(unfitForEvaluation(handedOver)).toBeNull();
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

describe('the labelled figures', () => {
  const tried = (
    scenario: string,
    label: { complains: boolean; urgency?: 'low' | 'normal' | 'high' },
    read: { complains: boolean; urgency: string } | null,
  ) => ({ scenario, try: 1, labels: { tone: label }, tone_read: read }) as unknown as TryRecord;

  test('complaint recall and precision, urgency as labelled, and the tries read otherwise', () => {
    const figures = toneFigures([
      tried('angry', { complains: true, urgency: 'normal' }, { complains: true, urgency: 'normal' }),
      tried('quietly-angry', { complains: true }, { complains: false, urgency: 'normal' }),
      tried('plain', { complains: false, urgency: 'normal' }, { complains: true, urgency: 'normal' }),
      tried('urgent', { complains: false, urgency: 'high' }, { complains: false, urgency: 'normal' }),
      tried('never-planned', { complains: true }, null),
      { scenario: 'unlabelled', try: 1 } as unknown as TryRecord,
    ]);
    expect(figures).toEqual({
      tries: 5,
      complaints: { found: 1, labelled: 3, right: 1, read: 2 },
      urgency: { right: 2, labelled: 3 },
      misread: ['quietly-angry (try 1)', 'plain (try 1)', 'urgent (try 1)', 'never-planned (try 1)'],
    });
  });
});

describe('retrieval relevance', () => {
  const tried = (scenario: string, labelled: string[] | undefined, ranked: string[] | null) =>
    ({ scenario, try: 1, labels: labelled && { examples: labelled }, examples_read: ranked }) as unknown as TryRecord;

  test('hit@1, hit@k and the mean reciprocal rank over the tries that retrieved, with the misses named', () => {
    const figures = retrievalFigures([
      tried('first', ['7001'], ['7001', '7002']),
      tried('either-label', ['7003', '7002'], ['7002', '7003']),
      tried('third', ['7005'], ['7016', '7007', '7005']),
      tried('missed', ['7009'], ['7005', '7007']),
      tried('empty-index', ['7010'], []),
      tried('handed-over', ['7004'], null),
      tried('unlabelled', undefined, ['7001']),
      { scenario: 'no-labels', try: 1 } as unknown as TryRecord,
    ]);
    expect(figures).toEqual({
      retrievals: 5,
      first: 2,
      found: 3,
      mrr: (1 + 1 + 1 / 3 + 0 + 0) / 5,
      without: ['handed-over (try 1)'],
      misread: [
        'third (try 1: 7016, labelled 7005)',
        'missed (try 1: 7005, labelled 7009)',
        'empty-index (try 1: none, labelled 7010)',
      ],
    });
    expect(retrievalFigures([tried('handed-over', ['7004'], null)]).mrr).toBe(0);
    // The tries of a scenario read the same way are named once.
    const again = (attempt: number, ranked: string[]) => ({ ...tried('missed', ['7009'], ranked), try: attempt });
    expect(retrievalFigures([again(3, ['7005']), again(1, ['7005']), again(2, ['7007'])]).misread).toEqual([
      'missed (tries 1, 3: 7005, labelled 7009)',
      'missed (try 2: 7007, labelled 7009)',
    ]);
  });

  test('the report gives the figures in its labelled section and names the misses', () => {
    const base = { file: 'f.json', passed: true, error: null, duration_ms: 1, expectations: [], turns: [] };
    const tries = [tried('first', ['7001'], ['7001']), tried('missed', ['7009'], ['7005', '7009'])].map(
      (t) =>
        ({ ...base, ...t, usage: { calls: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } }) as TryRecord,
    );
    const results = summarizeRun(tries);
    expect(results.labelled?.retrieval).toMatchObject({ retrievals: 2, first: 1, found: 2, mrr: 0.75 });
    const report = renderReport(results);
    expect(report).toMatch(/labelled example ranked first \(hit@1\)\s*\|\s*1\/2 \(50\.0%\)/);
    expect(report).toMatch(/mean reciprocal rank\s*\|\s*0\.75/);
    expect(report).toContain('examples: missed (try 1: 7005, labelled 7009)');
  });
});

describe('the team’s history', () => {
  const q = { author: 'user', body: 'q' };
  const history = TeamHistory.parse({
    description: 'd',
    conversations: [
      { id: '7001', contact: { id: 'c-7001', email: 'sam@example.net', name: 'Sam' }, parts: [q] },
      { id: '400102', contact: { id: 'c-7002', email: 'nia@example.net', name: 'Nia' }, parts: [q] },
    ],
  });
  const scenario = (id: string, conversationId: string, examples?: string[]) => ({
    file: `${id}.json`,
    scenario: Scenario.parse({
      id,
      description: 'd',
      conversation: {
        id: conversationId,
        contact: { id: `c-${id}`, email: 'ana@example.com', name: 'Ana' },
        parts: [q],
      },
      expect: {},
      ...(examples && { labels: { examples } }),
    }),
  });

  test('example labels name conversations of the history, and no try shares an id with one', () => {
    expect(historyProblems([scenario('fine', '4005', ['7001'])], history)).toEqual([]);
    expect(historyProblems([scenario('unknown', '4006', ['7001', '7999'])], history)).toEqual([
      'unknown.json: labels.examples names no conversation of the history: 7999',
    ]);
    // Try 2 of conversation 4001 is conversation 400102.
    expect(historyProblems([scenario('taken', '4001')], history)).toEqual([
      'taken.json: its conversations share ids with the history: 400102',
    ]);
  });

  test('the committed history loads, and every label of the daily and holdout sets names one of it', () => {
    const committed = loadTeamHistory(path.join(__dirname, '../../eval/team-history.json'));
    expect(committed.conversations.length).toBeGreaterThan(10);
    const set = scenarioFiles([
      path.join(__dirname, '../../eval/scenarios'),
      path.join(__dirname, '../../eval/holdout'),
    ]).map((file) => ({ file, scenario: loadScenario(file) }));
    expect(historyProblems(set, committed)).toEqual([]);
    expect(set.filter(({ scenario }) => scenario.labels?.examples).length).toBeGreaterThan(40);
  });
});
