// The figures of a report for support leads, computed from the runs' turn summaries (memo `melvin_turn`); pure.
import { z } from 'zod';
import { workflowIdFor } from '../contract/shared';
import { TurnSummaryMemo } from './turn-summary-memo';
import { patternFigures, type Patterns, type TemporalUi, type WindowTurn } from './patterns';

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** The longest window a report reads: a year of runs is already a long visibility listing. */
export const MAX_WINDOW_DAYS = 366;

/** How far back a report looks: `90m`, `24h`, `7d`. */
export const Since = z
  .string({ error: 'a window like 90m, 24h or 7d is required' })
  .trim()
  .regex(/^[1-9]\d{0,5}[mhd]$/, 'a whole number followed by m, h or d, like 90m, 24h or 7d')
  .transform((text) => ({ text, ms: Number(text.slice(0, -1)) * UNIT_MS[text.slice(-1) as keyof typeof UNIT_MS] }))
  .refine((since) => since.ms <= MAX_WINDOW_DAYS * UNIT_MS.d, `at most ${MAX_WINDOW_DAYS}d`);
export type Since = z.output<typeof Since>;

/** One run as visibility lists it: who it belongs to, when it started, and its memo's turn summary, unchecked. */
export interface RunRecord {
  conversationId: string;
  /** The run's workflow id; absent, the conversation's (`intercom-conversation-<id>`). */
  workflowId?: string;
  runId: string;
  startTime: Date;
  memo: unknown;
}

export type SummaryReading =
  { kind: 'summary'; summary: TurnSummaryMemo } | { kind: 'none' } | { kind: 'unreadable'; problem: string };

/**
 * The run's own turn summary. A summary that ended before its run started is an earlier run's, carried over by
 * continue-as-new (SDKs that inherit the memo do this): the run's own turn is still going, so it has none yet.
 */
export function readSummary(run: RunRecord): SummaryReading {
  if (run.memo === undefined || run.memo === null) return { kind: 'none' };
  const parsed = TurnSummaryMemo.safeParse(run.memo);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { kind: 'unreadable', problem: `${issue.path.join('.') || '(root)'}: ${issue.message}` };
  }
  if (Date.parse(parsed.data.ended_at) < run.startTime.getTime()) return { kind: 'none' };
  return { kind: 'summary', summary: parsed.data };
}

/** Every Melvin Status, in the order a lead reads them; `partial` answered part and handed the rest over. */
export const STATUSES = [
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
] as const;
export const APPROVAL_OUTCOMES = ['approved', 'edited', 'rejected', 'timed_out', 'withdrawn', 'noted'] as const;
/** Statuses that mean something broke: an error, a draft that could not be written, a reply Intercom refused. */
const FAILED_STATUSES = new Set(['error', 'RESPONSE_FAILED', 'MESSAGE_FAILED']);
/**
 * Statuses that hand the conversation to the team even without an escalation source (`partial`): all but an answer, a
 * reply Intercom refused (its note asks a person to send it) and a turn skipped.
 */
const ESCALATED_STATUSES = new Set<string>(
  STATUSES.filter((s) => s !== 'success' && s !== 'MESSAGE_FAILED' && s !== 'skipped'),
);
/** Example reasons shown per escalation kind: the most recent distinct ones. */
const EXAMPLES_PER_KIND = 3;

/** Each turn lands in one of these, in this order of precedence, for the day table and the chart. */
export const DAY_OUTCOMES = ['resolved', 'other_replies', 'escalated', 'failed'] as const;
export type DayOutcome = (typeof DAY_OUTCOMES)[number];

export interface DayFigures extends Record<DayOutcome, number> {
  /** UTC date, `YYYY-MM-DD`. */
  date: string;
  turns: number;
}

export interface Report {
  window: { since: string; until: string; label: string };
  runs: {
    /** Runs visibility listed: every run still open, and every run closed since the window's start. */
    listed: number;
    /** Listed runs without a summary of their own: written by older code, or their turn is still going. */
    without_summary: number;
    /** Listed runs whose memo is not a turn summary this report can read (counted, otherwise ignored). */
    unreadable: number;
    /** Summaries whose turn ended in the window: the turns below. */
    in_window: number;
    /** The listing stopped at its limit: the figures cover only the runs read. */
    truncated: boolean;
  };
  /** Turns that answered or handed over something: every summary in the window but `skipped` ones. */
  turns: number;
  skipped: number;
  resolved: number;
  resolution_rate: number | null;
  /** Turns handed to the team by an escalation (any source, `partial` included). */
  escalated: number;
  escalation_rate: number | null;
  escalations: {
    by_source: { source: string; turns: number; rate: number | null }[];
    by_reason: { kind: string; turns: number; rate: number | null; examples: string[] }[];
  };
  statuses: { status: string; turns: number }[];
  approvals: { outcome: string; turns: number }[];
  hops: { hops: number; turns: number }[];
  turn_ms: { p50: number | null; p95: number | null };
  tools: { name: string; calls: number; failures: number; failure_rate: number }[];
  tokens: { total: number; per_turn: number | null };
  days: DayFigures[];
  /** Causes of escalation, intents' outcomes, uncovered questions and the period's flows. */
  patterns: Patterns;
}

type Turn = WindowTurn;

export function isEscalated(s: TurnSummaryMemo): boolean {
  return s.escalation_source !== null || ESCALATED_STATUSES.has(s.status);
}

/** The conversation went to the team with this turn: an escalation, an undelivered reply, or a takeover after it. */
function handedOver(s: TurnSummaryMemo): boolean {
  return isEscalated(s) || s.status === 'MESSAGE_FAILED' || s.reopened_by_team !== null;
}

const rate = (count: number, of: number): number | null => (of > 0 ? Math.round((count / of) * 10_000) / 10_000 : null);

/** Nearest-rank percentile: the smallest value with at least `p`% of the values at or below it. */
export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Counts by key, in the order `known` lists them first, then any other key by count. */
function countsOf(keys: string[], known: readonly string[] = []): [string, number][] {
  const counts = new Map<string, number>(known.map((k) => [k, 0]));
  for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
  const rest = [...counts].filter(([k]) => !known.includes(k)).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return [...known.map((k) => [k, counts.get(k)!] as [string, number]), ...rest];
}

/** UTC dates from `since` to `until`, both included. */
function daysBetween(since: Date, until: Date): string[] {
  const days: string[] = [];
  const day = new Date(since.toISOString().slice(0, 10));
  while (day <= until) {
    days.push(day.toISOString().slice(0, 10));
    day.setUTCDate(day.getUTCDate() + 1);
  }
  return days;
}

/** The turns of the window, oldest first: each run's own summary whose turn ended at or after `since`. */
export function windowTurns(
  runs: RunRecord[] | { run: RunRecord; reading: SummaryReading }[],
  since: Date,
): WindowTurn[] {
  const readings = runs.map((r) => ('reading' in r ? r : { run: r, reading: readSummary(r) }));
  return readings
    .flatMap(({ run, reading }) =>
      reading.kind === 'summary'
        ? [
            {
              conversationId: run.conversationId,
              workflowId: run.workflowId ?? workflowIdFor(run.conversationId),
              runId: run.runId,
              summary: reading.summary,
              endedAt: Date.parse(reading.summary.ended_at),
            },
          ]
        : [],
    )
    .filter((t) => t.endedAt >= since.getTime())
    .sort((a, b) => a.endedAt - b.endedAt);
}

/**
 * The report over the runs visibility listed. A turn counts in the window when its summary's `ended_at` is at or after
 * `since`. It is resolved when Melvin's reply went out (`success`), the team did not take the conversation over after it,
 * and no later turn of the conversation in the window escalated or went to the team.
 */
export function reportFigures(
  runs: RunRecord[],
  options: { since: Date; until: Date; label: string; truncated?: boolean; ui?: TemporalUi },
): Report {
  const readings = runs.map((run) => ({ run, reading: readSummary(run) }));
  const turns = windowTurns(readings, options.since);
  const answered = turns.filter((t) => t.summary.status !== 'skipped');

  // A conversation's last hand-over in the window: a success before it was not the end of the matter.
  const lastHandOver = new Map<string, number>();
  for (const t of turns) if (handedOver(t.summary)) lastHandOver.set(t.conversationId, t.endedAt);
  const isResolved = (t: Turn) =>
    t.summary.status === 'success' &&
    t.summary.reopened_by_team === null &&
    !((lastHandOver.get(t.conversationId) ?? -Infinity) > t.endedAt);
  const dayOutcome = (t: Turn): DayOutcome =>
    FAILED_STATUSES.has(t.summary.status)
      ? 'failed'
      : isEscalated(t.summary)
        ? 'escalated'
        : isResolved(t)
          ? 'resolved'
          : 'other_replies';

  const escalated = answered.filter((t) => isEscalated(t.summary));
  const resolved = answered.filter(isResolved).length;
  const kindOf = (t: Turn) => t.summary.escalation_kind ?? '(no kind)';
  // Newest escalation first, so a lead sees what is escalating lately; a lead may hand a turn over long after it ended.
  const escalatedAt = (t: Turn) => Date.parse(t.summary.escalated_at ?? t.summary.ended_at);
  const examples = new Map<string, Set<string>>();
  for (const t of [...escalated].sort((a, b) => escalatedAt(b) - escalatedAt(a))) {
    const kept = examples.get(kindOf(t)) ?? new Set<string>();
    if (t.summary.escalation_reason && kept.size < EXAMPLES_PER_KIND) kept.add(t.summary.escalation_reason);
    examples.set(kindOf(t), kept);
  }

  const tools = new Map<string, { calls: number; failures: number }>();
  for (const call of turns.flatMap((t) => t.summary.tools)) {
    const tool = tools.get(call.name) ?? { calls: 0, failures: 0 };
    tool.calls += 1;
    if (!call.ok) tool.failures += 1;
    tools.set(call.name, tool);
  }

  const days = new Map<string, DayFigures>();
  const lastEnd = turns.at(-1)?.endedAt ?? 0;
  for (const date of daysBetween(options.since, new Date(Math.max(options.until.getTime(), lastEnd)))) {
    days.set(date, { date, turns: 0, resolved: 0, other_replies: 0, escalated: 0, failed: 0 });
  }
  for (const t of answered) {
    const day = days.get(new Date(t.endedAt).toISOString().slice(0, 10));
    if (!day) continue;
    day.turns += 1;
    day[dayOutcome(t)] += 1;
  }

  const tokens = turns.reduce((sum, t) => sum + t.summary.tokens, 0);
  const turnMs = answered.map((t) => t.summary.turn_ms);
  return {
    window: { since: options.since.toISOString(), until: options.until.toISOString(), label: options.label },
    runs: {
      listed: runs.length,
      without_summary: readings.filter((r) => r.reading.kind === 'none').length,
      unreadable: readings.filter((r) => r.reading.kind === 'unreadable').length,
      in_window: turns.length,
      truncated: options.truncated ?? false,
    },
    turns: answered.length,
    skipped: turns.length - answered.length,
    resolved,
    resolution_rate: rate(resolved, answered.length),
    escalated: escalated.length,
    escalation_rate: rate(escalated.length, answered.length),
    escalations: {
      by_source: countsOf(escalated.map((t) => t.summary.escalation_source ?? '(no source)')).map(([source, n]) => ({
        source,
        turns: n,
        rate: rate(n, answered.length),
      })),
      by_reason: countsOf(escalated.map(kindOf)).map(([kind, n]) => ({
        kind,
        turns: n,
        rate: rate(n, answered.length),
        examples: [...examples.get(kind)!],
      })),
    },
    statuses: countsOf(
      turns.map((t) => t.summary.status),
      STATUSES,
    ).map(([status, n]) => ({ status, turns: n })),
    approvals: countsOf(
      turns.flatMap((t) => t.summary.approval_outcome ?? []),
      APPROVAL_OUTCOMES,
    ).map(([outcome, n]) => ({ outcome, turns: n })),
    hops: [...countsOf(answered.map((t) => String(t.summary.hops)))]
      .map(([hops, n]) => ({ hops: Number(hops), turns: n }))
      .sort((a, b) => a.hops - b.hops),
    turn_ms: { p50: percentile(turnMs, 50), p95: percentile(turnMs, 95) },
    tools: [...tools]
      .map(([name, t]) => ({ name, ...t, failure_rate: rate(t.failures, t.calls)! }))
      .sort((a, b) => b.calls - a.calls || a.name.localeCompare(b.name)),
    tokens: { total: tokens, per_turn: answered.length ? Math.round(tokens / answered.length) : null },
    days: [...days.values()],
    patterns: patternFigures(turns, { isEscalated, ui: options.ui }),
  };
}
