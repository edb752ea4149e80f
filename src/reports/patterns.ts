// Pattern figures for support leads, from the turns of a report's window: what causes escalations, which intents succeed
// and fail, which questions the help center does not cover, and the period's flows as graphs with Mermaid source; pure.
import type { TurnSummaryMemo } from './turn-summary-memo';

/** One turn of the window, with the run it belongs to (a report links its examples to the run in the Temporal UI). */
export interface WindowTurn {
  conversationId: string;
  workflowId: string;
  runId: string;
  summary: TurnSummaryMemo;
  endedAt: number;
}

/** Where the Temporal UI shows a run: `<url>/namespaces/<namespace>/workflows/<workflowId>/<runId>`. */
export interface TemporalUi {
  url: string;
  namespace: string;
}

export function runUrl(ui: TemporalUi, workflowId: string, runId: string): string {
  const part = encodeURIComponent;
  return `${ui.url.replace(/\/+$/, '')}/namespaces/${part(ui.namespace)}/workflows/${part(workflowId)}/${part(runId)}`;
}

/** A run shown as an example of a figure: enough to find it, and a link to it when the Temporal UI is known. */
export interface RunExample {
  conversation_id: string;
  workflow_id: string;
  run_id: string;
  ended_at: string;
  status: string;
  escalation_kind: string | null;
  escalation_reason: string | null;
  url: string | null;
}

/**
 * The ways a lead cuts escalations. Each escalated turn falls under exactly one cause per dimension: its escalation's
 * kind and source, the talent's stage, the intents it handed over (joined with " + " when several), and the tool it
 * involved (the first that failed, else the last it called).
 */
export const CAUSE_DIMENSIONS = ['kind', 'source', 'intent', 'stage', 'tool'] as const;
export type CauseDimension = (typeof CAUSE_DIMENSIONS)[number];

export interface CauseRow {
  cause: string;
  turns: number;
  /** Of the escalated turns. */
  share: number | null;
  examples: RunExample[];
}

/** How each turn that asked for an intent ended for that intent. */
export interface IntentOutcome {
  intent: string;
  turns: number;
  /** A reply went out and did not leave this intent for the team. */
  answered: number;
  /** Left for the team: an open intent of a partial answer, or a turn handed over without answering it. */
  handed_over: number;
  /** Neither: the reply failed to go out, or the turn broke without handing over. */
  not_answered: number;
  success_rate: number | null;
}

export interface UncoveredQuestion {
  intent: string;
  /** Turns that handed this intent over because the data did not answer it. */
  handed_over: number;
  /** Turns that asked it at all. */
  asked: number;
  examples: RunExample[];
}

export interface FlowNode {
  id: string;
  label: string;
  /** `step`: a node of the turn; `escalate`: Escalate, or an escalation's kind; `outcome`: where turns ended. */
  kind: 'step' | 'escalate' | 'outcome' | 'source';
}

export interface FlowGraph {
  title: string;
  nodes: FlowNode[];
  /** Turns that went along the edge (once per turn, however often the turn took it). */
  edges: { from: string; to: string; turns: number }[];
  mermaid: string;
}

export interface Patterns {
  /** Turns not skipped, and of those the turns handed to the team by an escalation. */
  turns: number;
  escalated: number;
  /** Turns whose summary names its intents: older runs only counted them. */
  turns_with_intent_names: number;
  causes: Record<CauseDimension, CauseRow[]>;
  intents: IntentOutcome[];
  uncovered: UncoveredQuestion[];
  flows: { resolution_paths: FlowGraph; escalation_flows: FlowGraph };
}

/** Escalation kinds that mean the data or the help center did not answer the question. */
export const MISSING_DATA_KINDS = new Set(['hops_exhausted', 'partial_answer', 'no_safe_answer']);
const EXAMPLES_PER_ROW = 3;
const NODE_LABELS: Record<string, string> = {
  initialize: 'Initialize',
  plan: 'Plan',
  gather: 'Gather',
  coverage: 'Coverage',
  draft: 'Draft',
  validate: 'Validate',
  response: 'Response',
  escalate: 'Escalate',
  finalize: 'Finalize',
};
/** The graph's nodes in the order of the workflow's graph, so a drawing reads left to right. */
const NODE_ORDER = Object.keys(NODE_LABELS);

const rate = (count: number, of: number): number | null => (of > 0 ? Math.round((count / of) * 10_000) / 10_000 : null);

/** Rows by count, most first, then by name: the ranking every table of this module uses. */
function ranked<T extends { turns: number }>(rows: T[], name: (row: T) => string): T[] {
  return rows.sort((a, b) => b.turns - a.turns || name(a).localeCompare(name(b)));
}

function example(t: WindowTurn, ui: TemporalUi | undefined): RunExample {
  return {
    conversation_id: t.conversationId,
    workflow_id: t.workflowId,
    run_id: t.runId,
    ended_at: t.summary.ended_at,
    status: t.summary.status,
    escalation_kind: t.summary.escalation_kind,
    escalation_reason: t.summary.escalation_reason,
    url: ui ? runUrl(ui, t.workflowId, t.runId) : null,
  };
}

/** The intents a turn handed over: its open ones, else the ones Coverage found uncovered, else all it asked. */
function handedOverIntents(s: TurnSummaryMemo): string[] {
  if (s.open_intent_names.length) return s.open_intent_names;
  if (s.uncovered_intent_names.length) return s.uncovered_intent_names;
  return s.intent_names;
}

/** The one cause of an escalated turn along a dimension. */
export function causeOf(s: TurnSummaryMemo, dimension: CauseDimension): string {
  switch (dimension) {
    case 'kind':
      return s.escalation_kind ?? '(no kind)';
    case 'source':
      return s.escalation_source ?? '(no source)';
    case 'stage':
      return s.stage ?? '(no stage recorded)';
    case 'intent': {
      const intents = handedOverIntents(s);
      return intents.length ? intents.join(' + ') : '(no intent recorded)';
    }
    case 'tool': {
      const failed = s.tools.find((t) => !t.ok);
      if (failed) return `${failed.name} (failed)`;
      return s.tools.at(-1)?.name ?? '(no tool called)';
    }
  }
}

/** Turns grouped by key, each group's turns newest first. */
function groups(turns: WindowTurn[], keysOf: (t: WindowTurn) => string[]): Map<string, WindowTurn[]> {
  const byKey = new Map<string, WindowTurn[]>();
  for (const t of [...turns].sort((a, b) => b.endedAt - a.endedAt)) {
    for (const key of new Set(keysOf(t))) byKey.set(key, [...(byKey.get(key) ?? []), t]);
  }
  return byKey;
}

function causes(escalated: WindowTurn[], dimension: CauseDimension, ui: TemporalUi | undefined): CauseRow[] {
  const rows = [...groups(escalated, (t) => [causeOf(t.summary, dimension)])].map(([cause, turns]) => ({
    cause,
    turns: turns.length,
    share: rate(turns.length, escalated.length),
    examples: turns.slice(0, EXAMPLES_PER_ROW).map((t) => example(t, ui)),
  }));
  return ranked(rows, (r) => r.cause);
}

type IntentFate = 'answered' | 'handed_over' | 'not_answered';

/** How a turn ended for one of its intents. */
function intentFate(s: TurnSummaryMemo, intent: string, escalated: boolean): IntentFate {
  if (s.open_intent_names.includes(intent)) return 'handed_over';
  if (s.replied && (s.status === 'success' || s.status === 'partial')) return 'answered';
  return escalated ? 'handed_over' : 'not_answered';
}

/**
 * An intent the turn handed over because the data did not answer it: left open by a partial answer, judged uncovered
 * by Coverage, or asked in a turn that escalated for missing data.
 */
function uncoveredIn(s: TurnSummaryMemo, intent: string, escalated: boolean): boolean {
  if (s.open_intent_names.includes(intent)) return true;
  if (!escalated || s.replied) return false;
  return s.uncovered_intent_names.includes(intent) || MISSING_DATA_KINDS.has(s.escalation_kind ?? '');
}

/** Mermaid ids are letters, digits and underscores; labels are quoted, a quote in them written as Mermaid's entity. */
const mermaidId = (id: string) => id.replace(/[^A-Za-z0-9_]/g, '_');
const mermaidLabel = (label: string) => `"${label.replace(/"/g, '#quot;')}"`;

function mermaidOf(nodes: FlowNode[], edges: FlowGraph['edges']): string {
  const shape = (n: FlowNode) =>
    n.kind === 'outcome'
      ? `([${mermaidLabel(n.label)}])`
      : n.kind === 'source'
        ? `>${mermaidLabel(n.label)}]`
        : `[${mermaidLabel(n.label)}]`;
  const lines = ['flowchart LR', ...nodes.map((n) => `  ${mermaidId(n.id)}${shape(n)}`)];
  for (const e of edges) lines.push(`  ${mermaidId(e.from)} -->|${e.turns}| ${mermaidId(e.to)}`);
  const escalations = nodes.filter((n) => n.kind === 'escalate').map((n) => mermaidId(n.id));
  if (escalations.length) lines.push(`  style ${escalations.join(',')} fill:#ffe7b3,stroke:#d9822b`);
  return lines.join('\n');
}

/** Edges counted once per turn that took them, in the order first seen. */
function countEdges(pathsOf: string[][]): Map<string, { from: string; to: string; turns: number }> {
  const edges = new Map<string, { from: string; to: string; turns: number }>();
  for (const path of pathsOf) {
    const seen = new Set<string>();
    for (let i = 1; i < path.length; i++) {
      const key = `${path[i - 1]}\u0000${path[i]}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const edge = edges.get(key) ?? { from: path[i - 1]!, to: path[i]!, turns: 0 };
      edge.turns += 1;
      edges.set(key, edge);
    }
  }
  return edges;
}

/** Every turn's path through the nodes, ending at its Melvin Status: how the period's turns resolved or did not. */
function resolutionPaths(turns: WindowTurn[]): FlowGraph {
  const withPath = turns.filter((t) => t.summary.path.length > 0);
  const paths = withPath.map((t) => [...t.summary.path, `status:${t.summary.status}`]);
  const edges = [...countEdges(paths).values()];
  const used = new Set(edges.flatMap((e) => [e.from, e.to]));
  const steps = [...NODE_ORDER, ...[...used].filter((n) => !n.startsWith('status:') && !NODE_ORDER.includes(n))];
  const statuses = [...used].filter((n) => n.startsWith('status:')).sort();
  const nodes: FlowNode[] = [
    ...steps
      .filter((n) => used.has(n))
      .map((n): FlowNode => ({ id: n, label: NODE_LABELS[n] ?? n, kind: n === 'escalate' ? 'escalate' : 'step' })),
    ...statuses.map((n): FlowNode => ({ id: n, label: n.slice('status:'.length), kind: 'outcome' })),
  ];
  const title = `Resolution paths: ${withPath.length} turns`;
  return { title, nodes, edges, mermaid: mermaidOf(nodes, edges) };
}

/** Escalated turns from the step that escalated, through the escalation's kind, to the Melvin Status they ended with. */
function escalationFlows(escalated: WindowTurn[]): FlowGraph {
  const paths = escalated.map((t) => [
    `source:${causeOf(t.summary, 'source')}`,
    `kind:${causeOf(t.summary, 'kind')}`,
    `status:${t.summary.status}`,
  ]);
  const edges = [...countEdges(paths).values()].sort((a, b) => b.turns - a.turns || a.from.localeCompare(b.from));
  const ids = [...new Set(paths.flat())];
  const column = (prefix: string) => ids.filter((id) => id.startsWith(prefix)).sort();
  const nodes: FlowNode[] = [
    ...column('source:').map((id): FlowNode => ({ id, label: id.slice(7), kind: 'source' })),
    ...column('kind:').map((id): FlowNode => ({ id, label: id.slice(5), kind: 'escalate' })),
    ...column('status:').map((id): FlowNode => ({ id, label: id.slice(7), kind: 'outcome' })),
  ];
  const title = `Escalation flows: ${escalated.length} turns, from the step that escalated to the status`;
  return { title, nodes, edges, mermaid: mermaidOf(nodes, edges) };
}

/**
 * The patterns over the window's turns (`skipped` turns left out: Melvin sent nothing). `isEscalated` is the report's
 * own rule, so the figures here add up to the report's escalated turns.
 */
export function patternFigures(
  turns: WindowTurn[],
  options: { isEscalated: (s: TurnSummaryMemo) => boolean; ui?: TemporalUi },
): Patterns {
  const answered = turns.filter((t) => t.summary.status !== 'skipped');
  const escalatedSet = new Set(answered.filter((t) => options.isEscalated(t.summary)));
  const escalated = [...escalatedSet];

  const fates = new Map<string, Record<IntentFate, number>>();
  const uncovered = new Map<string, { handed: WindowTurn[]; asked: number }>();
  for (const t of answered) {
    const isEscalated = escalatedSet.has(t);
    for (const intent of new Set(t.summary.intent_names)) {
      const fate = fates.get(intent) ?? { answered: 0, handed_over: 0, not_answered: 0 };
      fate[intentFate(t.summary, intent, isEscalated)] += 1;
      fates.set(intent, fate);
      const entry = uncovered.get(intent) ?? { handed: [], asked: 0 };
      entry.asked += 1;
      if (uncoveredIn(t.summary, intent, isEscalated)) entry.handed.push(t);
      uncovered.set(intent, entry);
    }
  }

  return {
    turns: answered.length,
    escalated: escalated.length,
    turns_with_intent_names: answered.filter((t) => t.summary.intent_names.length > 0).length,
    causes: Object.fromEntries(CAUSE_DIMENSIONS.map((d) => [d, causes(escalated, d, options.ui)])) as Record<
      CauseDimension,
      CauseRow[]
    >,
    intents: ranked(
      [...fates].map(([intent, f]) => ({
        intent,
        turns: f.answered + f.handed_over + f.not_answered,
        ...f,
        success_rate: rate(f.answered, f.answered + f.handed_over + f.not_answered),
      })),
      (r) => r.intent,
    ),
    uncovered: [...uncovered]
      .filter(([, u]) => u.handed.length > 0)
      .map(([intent, u]) => ({
        intent,
        handed_over: u.handed.length,
        asked: u.asked,
        examples: [...u.handed]
          .sort((a, b) => b.endedAt - a.endedAt)
          .slice(0, EXAMPLES_PER_ROW)
          .map((t) => example(t, options.ui)),
      }))
      .sort((a, b) => b.handed_over - a.handed_over || b.asked - a.asked || a.intent.localeCompare(b.intent)),
    flows: { resolution_paths: resolutionPaths(answered), escalation_flows: escalationFlows(escalated) },
  };
}
