// The pattern figures for leads: causes of escalation per dimension, intents' outcomes, uncovered questions, flows.
import fc from 'fast-check';
import { isEscalated, reportFigures, type RunRecord } from '../../src/reports/figures';
import { TurnSummaryMemo } from '../../src/reports/turn-summary-memo';
import { CAUSE_DIMENSIONS, causeOf, patternFigures, runUrl, type WindowTurn } from '../../src/reports/patterns';
import { reportText } from '../../src/reports/text';

const SINCE = new Date('2026-11-20T00:00:00.000Z');
const UNTIL = new Date('2026-11-23T00:00:00.000Z');
const UI = { url: 'http://127.0.0.1:8233/', namespace: 'default' };
const SUCCESS_PATH = ['initialize', 'plan', 'gather', 'coverage', 'draft', 'validate', 'response', 'finalize'];

let count = 0;
function run(
  summary: Partial<TurnSummaryMemo> & Record<string, unknown>,
  endedAt = '2026-11-22T10:00:00.000Z',
): RunRecord {
  count += 1;
  return {
    conversationId: String(1000 + count),
    runId: `run-${count}`,
    startTime: new Date(Date.parse(endedAt) - 5000),
    memo: {
      status: 'success',
      replied: true,
      hops: 1,
      turn_ms: 1000,
      ended_at: endedAt,
      tools: [{ name: 'get_user_payments', ok: true }],
      intents: 1,
      open_intents: 0,
      intent_names: ['payment status'],
      path: SUCCESS_PATH,
      ...summary,
    },
  };
}

const hopsExhausted = {
  status: 'ROUTE_TO_TEAM',
  replied: false,
  escalation_source: 'coverage',
  escalation_kind: 'hops_exhausted',
  escalation_reason: 'Exceeded maximum hops (2). Unable to gather sufficient data.',
  intent_names: ['Form 8821 copy'],
  uncovered_intent_names: ['form 8821 copy'],
  tools: [{ name: 'search_talent_docs', ok: true }],
  path: ['initialize', 'plan', 'gather', 'coverage', 'plan', 'gather', 'coverage', 'escalate', 'finalize'],
};
const partial = {
  status: 'partial',
  escalation_source: 'draft',
  escalation_kind: 'partial_answer',
  intent_names: ['payment status', 'form 8821 copy'],
  open_intent_names: ['form 8821 copy'],
  path: [...SUCCESS_PATH.slice(0, -1), 'escalate', 'finalize'],
};
const operator = {
  status: 'ROUTE_TO_TEAM',
  escalation_source: 'operator',
  escalation_kind: 'operator',
  escalation_reason: 'VIP',
  replied: true,
  tools: [{ name: 'get_user_payments', ok: false }],
};

const report = (runs: RunRecord[]) => reportFigures(runs, { since: SINCE, until: UNTIL, label: '3d', ui: UI });

test('causes of escalation by kind, source, intent, stage and tool, with examples linked to their runs', () => {
  const runs = [run(hopsExhausted), run(hopsExhausted), run(partial), run(operator), run({}), run({})];
  const { patterns } = report(runs);
  expect(patterns.escalated).toBe(4);
  expect(patterns.causes.kind.map((c) => [c.cause, c.turns, c.share])).toEqual([
    ['hops_exhausted', 2, 0.5],
    ['operator', 1, 0.25],
    ['partial_answer', 1, 0.25],
  ]);
  expect(patterns.causes.intent.map((c) => [c.cause, c.turns])).toEqual([
    ['form 8821 copy', 3],
    ['payment status', 1],
  ]);
  expect(patterns.causes.stage).toEqual([expect.objectContaining({ cause: '(no stage recorded)', turns: 4 })]);
  expect(patterns.causes.tool.map((c) => [c.cause, c.turns])).toEqual([
    ['search_talent_docs', 2],
    ['get_user_payments', 1],
    ['get_user_payments (failed)', 1],
  ]);
  const example = patterns.causes.kind[0]!.examples[0]!;
  expect(example).toMatchObject({
    workflow_id: `intercom-conversation-${example.conversation_id}`,
    status: 'ROUTE_TO_TEAM',
  });
  expect(example.url).toBe(
    `http://127.0.0.1:8233/namespaces/default/workflows/intercom-conversation-${example.conversation_id}/${example.run_id}`,
  );
});

test('a stage, once turns record it, is a cause of its own', () => {
  const { patterns } = report([run({ ...operator, stage: 'awaiting_payment' }), run({ ...operator, stage: 'hired' })]);
  expect(patterns.causes.stage.map((c) => c.cause).sort()).toEqual(['awaiting_payment', 'hired']);
});

test('intents that succeed and fail: each asked intent ends answered, handed over or not answered', () => {
  const runs = [
    run({}),
    run({}),
    run(partial),
    run(hopsExhausted),
    run({ status: 'MESSAGE_FAILED', replied: false }),
    run({ status: 'skipped', replied: false }),
  ];
  const { patterns } = report(runs);
  expect(patterns.intents).toEqual([
    { intent: 'payment status', turns: 4, answered: 3, handed_over: 0, not_answered: 1, success_rate: 0.75 },
    { intent: 'form 8821 copy', turns: 2, answered: 0, handed_over: 2, not_answered: 0, success_rate: 0 },
  ]);
  expect(patterns.turns_with_intent_names).toBe(5);
});

test('questions the help center does not cover, ranked by how often they were handed over', () => {
  const runs = [
    run(hopsExhausted),
    run(hopsExhausted),
    run(partial),
    run({ ...hopsExhausted, intent_names: ['w-2 form'], uncovered_intent_names: ['W-2 form'] }),
    run(operator),
  ];
  const { patterns } = report(runs);
  expect(patterns.uncovered.map((u) => [u.intent, u.handed_over, u.asked])).toEqual([
    ['form 8821 copy', 3, 3],
    ['w-2 form', 1, 1],
  ]);
  expect(patterns.uncovered[0]!.examples).toHaveLength(3);
});

test('older runs, without intent names, stage or path, stay readable and count as such', () => {
  const old = run({});
  const memo = old.memo as Record<string, unknown>;
  delete memo.intent_names;
  delete memo.path;
  const { patterns, turns } = report([old]);
  expect(turns).toBe(1);
  expect(patterns.turns_with_intent_names).toBe(0);
  expect(patterns.intents).toEqual([]);
  expect(patterns.flows.resolution_paths.edges).toEqual([]);
});

test('the flows: node paths to each status, and escalations from step to kind to status, with counts as Mermaid', () => {
  const { patterns } = report([run({}), run({}), run(hopsExhausted), run(partial)]);
  const paths = patterns.flows.resolution_paths;
  const edge = (from: string, to: string) => paths.edges.find((e) => e.from === from && e.to === to)?.turns;
  expect(edge('initialize', 'plan')).toBe(4);
  expect(edge('coverage', 'plan')).toBe(1);
  expect(edge('finalize', 'status:success')).toBe(2);
  expect(paths.mermaid.split('\n')).toEqual(
    expect.arrayContaining([
      'flowchart LR',
      '  initialize["Initialize"]',
      '  initialize -->|4| plan',
      '  coverage -->|1| plan',
      '  finalize -->|2| status_success',
      '  status_success(["success"])',
      '  style escalate fill:#ffe7b3,stroke:#d9822b',
    ]),
  );
  const flows = patterns.flows.escalation_flows;
  expect(flows.mermaid.split('\n')).toEqual(
    expect.arrayContaining([
      '  source_coverage>"coverage"]',
      '  source_coverage -->|1| kind_hops_exhausted',
      '  kind_partial_answer -->|1| status_partial',
    ]),
  );
});

test('labels from the data cannot break the Mermaid source', () => {
  const { patterns } = report([run({ ...operator, escalation_kind: 'odd "kind"] --> x' })]);
  const flows = patterns.flows.escalation_flows.mermaid;
  expect(flows).toContain('kind_odd__kind_______x["odd #quot;kind#quot;] --> x"]');
});

test('the text report prints the causes, intents, uncovered questions and the flows’ Mermaid source', () => {
  const text = reportText(report([run({}), run(hopsExhausted), run(partial)]));
  expect(text).toContain('Causes of escalation by kind\n  hops_exhausted: 1 of 2 escalated turns (50.0%)');
  expect(text).toMatch(/e\.g\. conversation \d+, run run-\d+ · http:\/\/127\.0\.0\.1:8233\/namespaces\/default\//);
  expect(text).toContain(
    'Questions the help center does not cover, by hand-overs\n  form 8821 copy: handed over 2 of 2 times asked',
  );
  expect(text).toContain('```mermaid\nflowchart LR');
});

test('runUrl escapes what it puts in the path', () => {
  expect(runUrl({ url: 'https://ui.example', namespace: 'a b' }, 'w/1', 'r')).toBe(
    'https://ui.example/namespaces/a%20b/workflows/w%2F1/r',
  );
});

const arbitrarySummary = fc.record({
  status: fc.constantFrom(
    'success',
    'partial',
    'ROUTE_TO_TEAM',
    'error',
    'MESSAGE_FAILED',
    'skipped',
    'VALIDATION_FAILED',
  ),
  escalation_source: fc.option(fc.constantFrom('coverage', 'draft', 'operator', 'validate'), { nil: null }),
  escalation_kind: fc.option(fc.constantFrom('hops_exhausted', 'partial_answer', 'operator', 'validation_failed'), {
    nil: null,
  }),
  replied: fc.boolean(),
  stage: fc.option(fc.constantFrom('applied', 'hired', 'awaiting_payment'), { nil: null }),
  intent_names: fc.uniqueArray(fc.constantFrom('payment status', 'form 8821', 'job status', 'w-2'), { maxLength: 3 }),
  open_intent_names: fc.uniqueArray(fc.constantFrom('payment status', 'form 8821'), { maxLength: 2 }),
  uncovered_intent_names: fc.uniqueArray(fc.constantFrom('form 8821', 'w-2'), { maxLength: 2 }),
  tools: fc.array(fc.record({ name: fc.constantFrom('get_user_payments', 'search_talent_docs'), ok: fc.boolean() }), {
    maxLength: 3,
  }),
  path: fc.array(fc.constantFrom('initialize', 'plan', 'gather', 'coverage', 'draft', 'escalate', 'finalize'), {
    maxLength: 12,
  }),
});

test('property: causes add up to the escalated turns in every dimension, each escalated turn under exactly one', () => {
  fc.assert(
    fc.property(fc.array(arbitrarySummary, { maxLength: 40 }), (summaries) => {
      const r = report(summaries.map((s) => run(s)));
      const p = r.patterns;
      expect(p.escalated).toBe(r.escalated);
      const runs = summaries.map((s) => run(s));
      const turns: WindowTurn[] = runs.map((x) => ({
        conversationId: x.conversationId,
        workflowId: `w-${x.conversationId}`,
        runId: x.runId,
        summary: { ...(x.memo as TurnSummaryMemo), escalated_at: null, escalation_reason: null } as TurnSummaryMemo,
        endedAt: Date.parse('2026-11-22T10:00:00.000Z'),
      }));
      const escalated = turns.filter((t) => t.summary.status !== 'skipped' && isEscalated(t.summary));
      for (const dimension of CAUSE_DIMENSIONS) {
        const rows = p.causes[dimension];
        expect(rows.reduce((sum, c) => sum + c.turns, 0)).toBe(p.escalated);
        // Exactly one cause per turn: the row of each turn's own cause counts it, and causes are distinct.
        expect(new Set(rows.map((c) => c.cause)).size).toBe(rows.length);
        const expected = new Map<string, number>();
        for (const t of escalated) {
          const cause = causeOf(t.summary, dimension);
          expected.set(cause, (expected.get(cause) ?? 0) + 1);
        }
        expect(Object.fromEntries(rows.map((c) => [c.cause, c.turns]))).toEqual(Object.fromEntries(expected));
        // Ranked: most turns first, ties by name.
        for (let i = 1; i < rows.length; i++) {
          const [a, b] = [rows[i - 1]!, rows[i]!];
          expect(a.turns > b.turns || (a.turns === b.turns && a.cause.localeCompare(b.cause) <= 0)).toBe(true);
        }
      }
    }),
  );
});

test('property: every intent’s outcomes add up to the turns that asked it, and the ranking is by turns', () => {
  fc.assert(
    fc.property(fc.array(arbitrarySummary, { maxLength: 40 }), (summaries) => {
      const p = report(summaries.map((s) => run(s))).patterns;
      const asked = new Map<string, number>();
      for (const s of summaries.filter((x) => x.status !== 'skipped'))
        for (const i of s.intent_names) asked.set(i, (asked.get(i) ?? 0) + 1);
      expect(Object.fromEntries(p.intents.map((i) => [i.intent, i.turns]))).toEqual(Object.fromEntries(asked));
      for (const i of p.intents) expect(i.answered + i.handed_over + i.not_answered).toBe(i.turns);
      for (let k = 1; k < p.intents.length; k++)
        expect(p.intents[k - 1]!.turns).toBeGreaterThanOrEqual(p.intents[k]!.turns);
      for (const u of p.uncovered) {
        expect(u.handed_over).toBeLessThanOrEqual(u.asked);
        expect(u.handed_over).toBeLessThanOrEqual(p.intents.find((i) => i.intent === u.intent)!.handed_over);
      }
      for (let k = 1; k < p.uncovered.length; k++)
        expect(p.uncovered[k - 1]!.handed_over).toBeGreaterThanOrEqual(p.uncovered[k]!.handed_over);
      // Each turn with a path enters the resolution graph once: the edges out of its first node count it.
      const withPath = summaries.filter((s) => s.status !== 'skipped' && s.path.length > 0).length;
      const toStatus = p.flows.resolution_paths.edges
        .filter((e) => e.to.startsWith('status:'))
        .reduce((sum, e) => sum + e.turns, 0);
      expect(toStatus).toBe(withPath);
    }),
  );
});

test('patternFigures alone: skipped turns are left out', () => {
  const turn = (status: string): WindowTurn => ({
    conversationId: '1',
    workflowId: 'w',
    runId: 'r',
    endedAt: 0,
    summary: TurnSummaryMemo.parse({ ...(run({ status }).memo as object), intent_names: ['x'] }),
  });
  const p = patternFigures([turn('skipped'), turn('success')], { isEscalated });
  expect(p.turns).toBe(1);
  expect(p.intents).toEqual([expect.objectContaining({ intent: 'x', turns: 1 })]);
});
