// The support leads' report from hand-built runs: which turns count, what resolves, rates, percentiles, days and text.
import { Since, percentile, readSummary, reportFigures, type RunRecord } from '../../src/reports/figures';
import type { TurnSummaryMemo } from '../../src/reports/turn-summary-memo';
import { reportText } from '../../src/reports/text';

const SINCE = new Date('2026-11-20T10:00:00.000Z');
const UNTIL = new Date('2026-11-23T09:30:00.000Z');
const WINDOW = { since: SINCE, until: UNTIL, label: '3d' };

let runs = 0;
/** A run of `conversationId` whose turn ended at `endedAt`, started five seconds before; a plain success unless told. */
function run(conversationId: string, endedAt: string, summary: Partial<TurnSummaryMemo> = {}): RunRecord {
  runs += 1;
  return {
    conversationId,
    runId: `run-${runs}`,
    startTime: new Date(Date.parse(endedAt) - 5000),
    memo: {
      status: 'success',
      escalation_source: null,
      escalation_kind: null,
      escalation_reason: null,
      escalated_at: null,
      replied: true,
      hops: 1,
      turn_ms: 2000,
      ended_at: endedAt,
      approval_outcome: null,
      tools: [],
      tokens: 100,
      intents: 1,
      open_intents: 0,
      reopened_by_team: null,
      ...summary,
    },
  };
}

const validationFailed = {
  status: 'VALIDATION_FAILED',
  escalation_source: 'validate',
  escalation_kind: 'validation_failed',
  escalation_reason: 'Validation failed - see validation note for details',
  replied: false,
} as const;
const operator = (reason: string) =>
  ({
    status: 'ROUTE_TO_TEAM',
    escalation_source: 'operator',
    escalation_kind: 'operator',
    escalation_reason: reason,
  }) as const;

test('no runs: nothing counted, rates and times unknown, every day of the window shown empty', () => {
  const report = reportFigures([], WINDOW);
  expect(report).toMatchObject({
    runs: { listed: 0, without_summary: 0, unreadable: 0, in_window: 0, truncated: false },
    turns: 0,
    skipped: 0,
    resolved: 0,
    resolution_rate: null,
    escalated: 0,
    escalation_rate: null,
    escalations: { by_source: [], by_reason: [] },
    hops: [],
    turn_ms: { p50: null, p95: null },
    tools: [],
    tokens: { total: 0, per_turn: null },
  });
  expect(report.days.map((d) => d.date)).toEqual(['2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23']);
  expect(report.days.every((d) => d.turns === 0)).toBe(true);
  // Every status and approval outcome is listed, so a lead sees a zero rather than a missing row.
  expect(report.statuses.map((s) => s.status)).toEqual([
    'success',
    'partial',
    'ROUTE_TO_TEAM',
    'NO_SAFE_ANSWER',
    'SENSITIVE_REQUEST',
    'FRUSTRATED',
    'VALIDATION_FAILED',
    'RESPONSE_FAILED',
    'error',
    'MESSAGE_FAILED',
    'skipped',
  ]);
  expect(report.approvals.map((a) => a.outcome)).toEqual([
    'approved',
    'edited',
    'rejected',
    'timed_out',
    'withdrawn',
    'noted',
  ]);
  expect(reportText(report)).toContain('Resolved     0 · — of turns');
});

test('runs without a summary, with an unreadable one, or with an earlier run’s are counted apart and ignored', () => {
  const withSummary = run('1', '2026-11-21T10:00:00.000Z');
  const carriedOver = { ...run('2', '2026-11-21T11:00:00.000Z'), startTime: new Date('2026-11-21T12:00:00.000Z') };
  const report = reportFigures(
    [
      withSummary,
      { ...withSummary, runId: 'old-code', memo: undefined },
      { ...withSummary, runId: 'garbled', memo: { status: 5 } },
      carriedOver,
    ],
    WINDOW,
  );
  expect(report.runs).toEqual({ listed: 4, without_summary: 2, unreadable: 1, in_window: 1, truncated: false });
  expect(report.turns).toBe(1);
  expect(readSummary({ ...withSummary, memo: { status: 5 } })).toEqual({
    kind: 'unreadable',
    problem: 'status: Invalid input: expected string, received number',
  });
});

test('a turn counts by when it ended: an open run whose turn ended before the window is left out', () => {
  const report = reportFigures(
    [run('1', '2026-11-20T09:59:59.999Z'), run('2', '2026-11-20T10:00:00.000Z', { status: 'skipped', replied: false })],
    WINDOW,
  );
  expect(report.runs.in_window).toBe(1);
  expect(report).toMatchObject({ turns: 0, skipped: 1, resolution_rate: null });
});

describe('resolution', () => {
  test('a delivered reply the team did not take over and nobody escalated later is resolved', () => {
    const report = reportFigures([run('1', '2026-11-21T10:00:00.000Z')], WINDOW);
    expect(report).toMatchObject({ turns: 1, resolved: 1, resolution_rate: 1, escalated: 0, escalation_rate: 0 });
  });

  test('a reply the team took over afterwards (reopened_by_team) is not resolved', () => {
    const report = reportFigures(
      [
        run('1', '2026-11-21T10:00:00.000Z', { reopened_by_team: 'a teammate replied in Intercom' }),
        run('2', '2026-11-21T10:00:00.000Z'),
      ],
      WINDOW,
    );
    expect(report).toMatchObject({ turns: 2, resolved: 1, resolution_rate: 0.5, escalated: 0 });
    expect(report.days.find((d) => d.date === '2026-11-21')).toMatchObject({ resolved: 1, other_replies: 1 });
  });

  test('a later turn of the same conversation that escalated or went to the team reopens every earlier success', () => {
    const report = reportFigures(
      [
        run('1', '2026-11-21T10:00:00.000Z'),
        run('1', '2026-11-21T10:05:00.000Z'),
        run('1', '2026-11-22T08:00:00.000Z', validationFailed),
        // Another conversation's escalation changes nothing for this one.
        run('2', '2026-11-21T10:00:00.000Z'),
        run('3', '2026-11-21T12:00:00.000Z', validationFailed),
        // A success after the hand-over stands.
        run('3', '2026-11-21T13:00:00.000Z'),
        // An undelivered reply hands the conversation over; so does a takeover after a turn that answered nothing.
        run('4', '2026-11-21T10:00:00.000Z'),
        run('4', '2026-11-21T10:01:00.000Z', { status: 'MESSAGE_FAILED', replied: false }),
        run('5', '2026-11-21T10:00:00.000Z'),
        run('5', '2026-11-21T10:01:00.000Z', { status: 'skipped', replied: false, reopened_by_team: 'assigned' }),
      ],
      WINDOW,
    );
    expect(report.turns).toBe(9);
    expect(report.resolved).toBe(2);
    expect(report.resolution_rate).toBe(0.2222);
    expect(report.escalated).toBe(2);
    expect(report.days.find((d) => d.date === '2026-11-21')).toEqual({
      date: '2026-11-21',
      turns: 8,
      resolved: 2,
      other_replies: 4,
      escalated: 1,
      failed: 1,
    });
  });

  test('partial (answered part, handed the rest over) is escalated and never resolved', () => {
    const report = reportFigures(
      [
        run('1', '2026-11-21T10:00:00.000Z', {
          status: 'partial',
          escalation_source: 'draft',
          escalation_kind: 'partial_answer',
          escalation_reason: 'The tax question needs a person',
        }),
        run('2', '2026-11-21T10:00:00.000Z', { status: 'partial' }),
      ],
      WINDOW,
    );
    expect(report).toMatchObject({ turns: 2, resolved: 0, escalated: 2, escalation_rate: 1 });
    expect(report.statuses.find((s) => s.status === 'partial')).toEqual({ status: 'partial', turns: 2 });
    expect(report.escalations.by_source).toEqual([
      { source: '(no source)', turns: 1, rate: 0.5 },
      { source: 'draft', turns: 1, rate: 0.5 },
    ]);
  });
});

test('escalations by source and by reason, with the most recent distinct reasons as examples', () => {
  const report = reportFigures(
    [
      run('1', '2026-11-21T10:00:00.000Z', validationFailed),
      run('2', '2026-11-21T10:01:00.000Z', validationFailed),
      run('3', '2026-11-21T10:02:00.000Z', operator('VIP talent')),
      run('4', '2026-11-21T10:03:00.000Z', operator('Contract question')),
      run('5', '2026-11-21T10:04:00.000Z', operator('Legal')),
      run('6', '2026-11-21T10:05:00.000Z', operator('Refund over the limit')),
      run('7', '2026-11-21T10:06:00.000Z', operator('VIP talent')),
      run('8', '2026-11-21T10:07:00.000Z'),
    ],
    WINDOW,
  );
  expect(report).toMatchObject({ turns: 8, escalated: 7, escalation_rate: 0.875, resolved: 1 });
  expect(report.escalations.by_source).toEqual([
    { source: 'operator', turns: 5, rate: 0.625 },
    { source: 'validate', turns: 2, rate: 0.25 },
  ]);
  expect(report.escalations.by_reason).toEqual([
    {
      kind: 'operator',
      turns: 5,
      rate: 0.625,
      examples: ['VIP talent', 'Refund over the limit', 'Legal'],
    },
    {
      kind: 'validation_failed',
      turns: 2,
      rate: 0.25,
      examples: ['Validation failed - see validation note for details'],
    },
  ]);
});

test('a lead’s escalation of an old turn is a recent example: examples are ordered by when the turn escalated', () => {
  const report = reportFigures(
    [
      run('1', '2026-11-21T10:00:00.000Z', {
        ...operator('Escalated days later'),
        escalated_at: '2026-11-23T09:00:00Z',
      }),
      run('2', '2026-11-22T10:00:00.000Z', operator('B')),
      run('3', '2026-11-22T10:01:00.000Z', operator('C')),
      run('4', '2026-11-22T10:02:00.000Z', operator('D')),
    ],
    WINDOW,
  );
  expect(report.escalations.by_reason[0]?.examples).toEqual(['Escalated days later', 'D', 'C']);
});

test('per UTC day, each turn in one column: failed before escalated before resolved before other replies', () => {
  const report = reportFigures(
    [
      run('1', '2026-11-21T23:59:59.999Z'),
      // Written with an offset, it ended on the 21st in UTC.
      run('6', '2026-11-22T01:00:00.000+05:00'),
      run('2', '2026-11-22T00:00:00.000Z', {
        status: 'error',
        escalation_source: 'plan',
        escalation_kind: 'plan_error',
        escalation_reason: 'Planning failed: 500',
        replied: false,
      }),
      run('3', '2026-11-22T00:00:01.000Z', validationFailed),
      run('4', '2026-11-22T12:00:00.000Z', { status: 'RESPONSE_FAILED', escalation_source: 'draft', replied: false }),
      run('5', '2026-11-22T13:00:00.000Z', { status: 'skipped', replied: false }),
    ],
    WINDOW,
  );
  expect(report.days).toEqual([
    { date: '2026-11-20', turns: 0, resolved: 0, other_replies: 0, escalated: 0, failed: 0 },
    { date: '2026-11-21', turns: 2, resolved: 2, other_replies: 0, escalated: 0, failed: 0 },
    { date: '2026-11-22', turns: 3, resolved: 0, other_replies: 0, escalated: 1, failed: 2 },
    { date: '2026-11-23', turns: 0, resolved: 0, other_replies: 0, escalated: 0, failed: 0 },
  ]);
  // The headline escalation rate counts every hand-over, those that failed on the way included.
  expect(report).toMatchObject({ turns: 5, skipped: 1, escalated: 3, escalation_rate: 0.6 });
});

test('turn time percentiles by nearest rank, also with few turns; skipped turns are not timed', () => {
  expect(percentile([], 95)).toBeNull();
  expect(percentile([700], 95)).toBe(700);
  expect([percentile([300, 100, 200], 50), percentile([300, 100, 200], 95)]).toEqual([200, 300]);
  const twenty = Array.from({ length: 20 }, (_, i) => (i + 1) * 100);
  expect([percentile(twenty, 50), percentile(twenty, 95)]).toEqual([1000, 1900]);
  const report = reportFigures(
    [
      run('1', '2026-11-21T10:00:00.000Z', { turn_ms: 1200 }),
      run('2', '2026-11-21T10:00:00.000Z', { turn_ms: 4800 }),
      run('3', '2026-11-21T10:00:00.000Z', { status: 'skipped', replied: false, turn_ms: 90_000 }),
    ],
    WINDOW,
  );
  expect(report.turn_ms).toEqual({ p50: 1200, p95: 4800 });
});

test('hops, approval outcomes, tools with their failure rates, and tokens', () => {
  const get = (ok = true) => ({ name: 'get_user_payments', ok });
  const docs = { name: 'search_talent_docs', ok: true };
  const report = reportFigures(
    [
      run('1', '2026-11-21T10:00:00.000Z', { hops: 1, tools: [get(), docs], tokens: 1000 }),
      run('2', '2026-11-21T10:00:00.000Z', { hops: 2, tools: [get(false), get(), get()], approval_outcome: 'edited' }),
      run('3', '2026-11-21T10:00:00.000Z', { hops: 2, ...operator('Draft rejected'), approval_outcome: 'rejected' }),
      // A shadow draft ends skipped: its calls, tokens and approval outcome still count.
      run('4', '2026-11-21T10:00:00.000Z', {
        status: 'skipped',
        replied: false,
        hops: 1,
        tools: [get(false)],
        tokens: 400,
        approval_outcome: 'noted',
      }),
    ],
    WINDOW,
  );
  expect(report.hops).toEqual([
    { hops: 1, turns: 1 },
    { hops: 2, turns: 2 },
  ]);
  expect(report.approvals).toEqual([
    { outcome: 'approved', turns: 0 },
    { outcome: 'edited', turns: 1 },
    { outcome: 'rejected', turns: 1 },
    { outcome: 'timed_out', turns: 0 },
    { outcome: 'withdrawn', turns: 0 },
    { outcome: 'noted', turns: 1 },
  ]);
  expect(report.tools).toEqual([
    { name: 'get_user_payments', calls: 5, failures: 2, failure_rate: 0.4 },
    { name: 'search_talent_docs', calls: 1, failures: 0, failure_rate: 0 },
  ]);
  expect(report.tokens).toEqual({ total: 1600, per_turn: 533 });
});

test('the plain-text report reads as the figures say, with a bar per day', () => {
  const text = reportText(
    reportFigures(
      [
        run('1', '2026-11-22T10:00:00.000Z', { tools: [{ name: 'get_user_payments', ok: true }] }),
        run('2', '2026-11-22T11:00:00.000Z', validationFailed),
      ],
      { ...WINDOW, truncated: true },
    ),
  );
  expect(text).toContain('from 2026-11-20 10:00 UTC to 2026-11-23 09:30 UTC (last 3d)');
  expect(text).toContain('TRUNCATED');
  expect(text).toContain('Resolved     1 · 50.0% of turns');
  expect(text).toContain('Escalated    1 · 50.0% of turns');
  expect(text).toContain('Turn time    p50 2.0 s · p95 2.0 s');
  expect(text).toMatch(
    /validation_failed: 1 \(50\.0%\)\n {6}e\.g\. “Validation failed - see validation note for details”/,
  );
  expect(text).toMatch(/get_user_payments +1 +0 +0\.0%/);
  expect(text).toMatch(/2026-11-22 +2 +1 +0 +1 +0 +█{20}▒{20}/);
});

describe('the window', () => {
  test.each([
    ['7d', 7 * 86_400_000],
    ['24h', 86_400_000],
    ['90m', 90 * 60_000],
    [' 366d ', 366 * 86_400_000],
  ])('%j', (text, ms) => {
    expect(Since.parse(text)).toEqual({ text: text.trim(), ms });
  });

  test.each([['7'], ['0d'], ['7w'], ['-1d'], ['1.5h'], ['367d'], ['']])('%j is refused with the reason', (text) => {
    const result = Since.safeParse(text);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/^(a whole number followed by m, h or d|at most 366d)/);
  });
});
