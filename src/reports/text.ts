// The report as plain text for a terminal (`npm run melvin -- report`): the figures, a bar per day, then the patterns
// (causes of escalation, intents, uncovered questions) and the period's flows as Mermaid source; pure.
import { DAY_OUTCOMES, type DayOutcome, type Report } from './figures';
import type { AnalysisAnswer } from './analysis';
import { CAUSE_DIMENSIONS, type RunExample } from './patterns';

const BAR_WIDTH = 40;
/** One character per day outcome, from the most to the least welcome, as the page's chart stacks them. */
const BAR_CHARS: Record<DayOutcome, string> = { resolved: '█', other_replies: '▓', escalated: '▒', failed: '░' };
const OUTCOME_LABELS: Record<DayOutcome, string> = {
  resolved: 'resolved',
  other_replies: 'other replies',
  escalated: 'escalated',
  failed: 'failed',
};

const percent = (rate: number | null) => (rate === null ? '—' : `${(rate * 100).toFixed(1)}%`);
const seconds = (ms: number | null) => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);
const whole = (n: number) => n.toLocaleString('en-US');
const minute = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

/** Rows of cells as aligned columns; a column of counts or rates is aligned to the right, its heading too. */
function table(rows: (string | number)[][], indent = '  '): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => String(r[i] ?? '').length)));
  const right = widths.map((_, i) => rows.some((r) => typeof r[i] === 'number' || /^[\d.]+%$/.test(String(r[i]))));
  return rows.map(
    (row) =>
      indent +
      row
        .map((cell, i) => (right[i] ? String(cell).padStart(widths[i]!) : String(cell).padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
  );
}

function section(title: string, lines: string[], empty = 'none'): string[] {
  return ['', title, ...(lines.length ? lines : [`  ${empty}`])];
}

/** A day's turns as a bar scaled to the busiest day, one character per outcome. */
function dayBar(day: Report['days'][number], busiest: number): string {
  if (busiest === 0) return '';
  return DAY_OUTCOMES.map((o) => BAR_CHARS[o].repeat(Math.round((day[o] / busiest) * BAR_WIDTH))).join('');
}

export function reportText(report: Report): string {
  const { runs } = report;
  const busiest = Math.max(0, ...report.days.map((d) => d.turns));
  const lines = [
    `Melvin report: turns that ended from ${minute(report.window.since)} to ${minute(report.window.until)} (last ${report.window.label})`,
    `Runs read: ${whole(runs.listed)} · without a summary: ${whole(runs.without_summary)} (older code, or a turn still going)` +
      (runs.unreadable ? ` · unreadable summaries: ${whole(runs.unreadable)}` : '') +
      (runs.truncated ? ` · TRUNCATED: only the first ${whole(runs.listed)} runs were read` : ''),
    '',
    `Turns        ${whole(report.turns)} (and ${whole(report.skipped)} skipped: Melvin sent nothing)`,
    `Resolved     ${whole(report.resolved)} · ${percent(report.resolution_rate)} of turns`,
    `Escalated    ${whole(report.escalated)} · ${percent(report.escalation_rate)} of turns`,
    `Turn time    p50 ${seconds(report.turn_ms.p50)} · p95 ${seconds(report.turn_ms.p95)}`,
    `Tokens       ${whole(report.tokens.total)} in all` +
      (report.tokens.per_turn === null ? '' : ` · ${whole(report.tokens.per_turn)} per turn`),
    ...section(
      'Escalations by source',
      report.escalations.by_source.length
        ? table(report.escalations.by_source.map((s) => [s.source, s.turns, percent(s.rate)]))
        : [],
    ),
    ...section(
      'Escalations by reason',
      report.escalations.by_reason.flatMap((r) => [
        `  ${r.kind}: ${r.turns} (${percent(r.rate)})`,
        ...r.examples.map((e) => `      e.g. “${e}”`),
      ]),
    ),
    ...section('Melvin Status', table(report.statuses.map((s) => [s.status, s.turns]))),
    ...section('Approval outcomes', table(report.approvals.map((a) => [a.outcome, a.turns]))),
    ...section(
      'Hops',
      report.hops.length ? table(report.hops.map((h) => [`${h.hops} hop${h.hops === 1 ? '' : 's'}`, h.turns])) : [],
    ),
    ...section(
      'Top tools',
      report.tools.length
        ? table([
            ['tool', 'calls', 'failed', 'failure rate'],
            ...report.tools.slice(0, 10).map((t) => [t.name, t.calls, t.failures, percent(t.failure_rate)]),
          ])
        : [],
    ),
    ...section('Per day (UTC)', [
      ...table([
        ['date', 'turns', 'resolved', 'other', 'escalated', 'failed', ''],
        ...report.days.map((d) => [
          d.date,
          d.turns,
          d.resolved,
          d.other_replies,
          d.escalated,
          d.failed,
          dayBar(d, busiest),
        ]),
      ]),
      `  ${DAY_OUTCOMES.map((o) => `${BAR_CHARS[o]} ${OUTCOME_LABELS[o]}`).join('   ')}`,
    ]),
    ...patternLines(report),
  ];
  return lines.join('\n');
}

const CAUSE_TITLES = {
  kind: 'kind',
  source: 'step that escalated',
  intent: 'intents handed over',
  stage: 'stage',
  tool: 'tool (the first that failed, else the last called)',
};

/** A run to look at: its conversation and run id, and its Temporal UI link when the report knows the UI. */
const exampleLine = (e: RunExample) =>
  `      e.g. conversation ${e.conversation_id}, run ${e.run_id}${e.url ? ` · ${e.url}` : ''}`;

/** The patterns: causes of escalation along each dimension, the intents, the uncovered questions, the flows. */
function patternLines(report: Report): string[] {
  const p = report.patterns;
  const of = (n: number, all: number) => `${whole(n)} of ${whole(all)}`;
  return [
    ...CAUSE_DIMENSIONS.flatMap((dimension) =>
      section(
        `Causes of escalation by ${CAUSE_TITLES[dimension]}`,
        p.causes[dimension]
          .slice(0, 10)
          .flatMap((c) => [
            `  ${c.cause}: ${of(c.turns, p.escalated)} escalated turns (${percent(c.share)})`,
            ...c.examples.slice(0, 1).map(exampleLine),
          ]),
      ),
    ),
    ...section(
      `Intents (named in ${of(p.turns_with_intent_names, p.turns)} turns)`,
      p.intents.length
        ? table([
            ['intent', 'turns', 'answered', 'handed over', 'not answered', 'success'],
            ...p.intents
              .slice(0, 15)
              .map((i) => [i.intent, i.turns, i.answered, i.handed_over, i.not_answered, percent(i.success_rate)]),
          ])
        : [],
    ),
    ...section(
      'Questions the help center does not cover, by hand-overs',
      p.uncovered
        .slice(0, 10)
        .flatMap((u) => [
          `  ${u.intent}: handed over ${of(u.handed_over, u.asked)} times asked`,
          ...u.examples.slice(0, 1).map(exampleLine),
        ]),
    ),
    ...[p.flows.resolution_paths, p.flows.escalation_flows].flatMap((flow) =>
      section(`${flow.title} (Mermaid)`, flow.edges.length ? ['```mermaid', flow.mermaid, '```'] : []),
    ),
  ];
}

/** The analysis agent's answer, then each figure it used: the tool, its arguments and its result as JSON. */
export function analysisText(answer: AnalysisAnswer): string {
  return [
    `Question (turns that ended in the last ${answer.window.label}): ${answer.question}`,
    '',
    answer.answer,
    ...section(
      `Figures the answer used (${answer.figures.length} tool call${answer.figures.length === 1 ? '' : 's'}, model ${answer.model})`,
      answer.figures.flatMap((f) => [
        `  ${f.tool}(${JSON.stringify(f.arguments)})`,
        ...JSON.stringify(f.result, null, 2)
          .split('\n')
          .map((line) => `    ${line}`),
      ]),
      'none: the answer is not drawn from the run records',
    ),
  ].join('\n');
}
