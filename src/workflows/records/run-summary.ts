// What a support lead reads first about a finished turn in the Temporal UI: who asked what, the outcome, the reply or
// why it was handed over, why each hop ended as it did, and a map of the path. Pure, built from the state.
import { MAX_MEMO_PATH, intentLabels, type TurnSummary } from '../../contract/shared';
import type { AgentState, Hop, NodeName } from '../../contract/state';

const MAX_TOPIC = 120;
const MAX_REPLY_SHOWN = 300;
const MAX_REASON_SHOWN = 200;

/** Text cut to `max` characters on one line, with an ellipsis when cut. */
function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** What the turn was about: the question as Plan read it, else the user's latest message. */
export function turnTopic(state: AgentState): string | null {
  const asked = state.hops[0]?.plan?.user_query ?? state.messages.filter((m) => m.role === 'user').at(-1)?.content;
  return asked ? oneLine(asked, MAX_TOPIC) : null;
}

/** One hop in a line: what it called, and Coverage's verdict with the gap it found. */
function hopLine(hop: Hop, index: number): string {
  const calls = hop.gather?.tool_results.map((r) => `${r.tool_name}${r.success ? '' : ' (failed)'}`) ?? [];
  const coverage = hop.coverage;
  const gaps = coverage?.coverage_analysis?.missing_data.map((m) => m.description).join('; ');
  const verdict = !coverage
    ? 'not judged'
    : coverage.data_sufficient
      ? 'enough data'
      : `not enough: ${oneLine(gaps || coverage.coverage_analysis?.reasoning || coverage.escalation_reason || '', MAX_REASON_SHOWN)}`;
  return `Hop ${index + 1}: ${calls.length ? calls.join(', ') : 'no calls'} → ${verdict}`;
}

/**
 * The run's details once its turn is over, most important first: who asked what, the outcome with its reason, the
 * reply the user got (or the team's hand-over), each hop, then the path. Markdown, as the UI renders details.
 */
export function turnOutcomeDetails(state: AgentState): string[] {
  const who = state.metadata.user_name ?? 'The user';
  const topic = turnTopic(state);
  const lines = [`**${who}**${topic ? ` asked: “${topic}”` : ''}`];
  const status = state.finalize?.melvin_status;
  if (!status) {
    lines.push(`**Outcome: nothing sent** — ${state.metadata.skipped_reason ?? 'nothing to answer'}`);
  } else {
    const reason = state.escalate ? ` — ${oneLine(state.escalate.escalation_reason, MAX_REASON_SHOWN)}` : '';
    lines.push(`**Outcome: ${status}**${reason}`);
  }
  if (state.response_delivery?.delivery_successful) {
    lines.push(`Reply sent: “${oneLine(state.response ?? '', MAX_REPLY_SHOWN)}”`);
  } else if (state.escalate?.user_told?.sent) {
    lines.push(`The user was told: “${oneLine(state.escalate.user_told.text, MAX_REPLY_SHOWN)}”`);
  }
  const intents = intentLine(state);
  if (intents) lines.push(intents);
  lines.push(...state.hops.map(hopLine));
  return lines;
}

/** With several questions, or one left open, which the reply answered and which went to the team. */
function intentLine(state: AgentState): string | null {
  const intents = state.hops.at(-1)?.plan?.intents ?? [];
  const open = state.draft?.open_intents ?? [];
  if (intents.length < 2 && !open.length) return null;
  const answered = intents.filter((i) => !open.includes(i.intent)).map((i) => i.intent);
  return `Questions: ${[...answered.map((i) => `✓ ${i}`), ...open.map((i) => `→ team: ${i}`)].join(' · ')}`;
}

/** A node's box in the run map: what it decided, with hop numbers for the hop's nodes; no personal data. */
function mapLabel(state: AgentState, node: NodeName, hop: number): string {
  const h = state.hops[hop - 1];
  switch (node) {
    case 'plan':
      return `Plan ${hop}`;
    case 'gather': {
      const calls = h?.gather?.tool_results.map((r) => r.tool_name) ?? [];
      return `Gather ${hop}${calls.length ? `: ${calls.join(', ')}` : ''}`;
    }
    case 'coverage':
      return `Coverage ${hop}: ${h?.coverage?.data_sufficient ? 'enough' : 'not enough'}`;
    case 'draft':
      return `Draft${state.draft ? `: ${state.draft.response_type}` : ''}`;
    case 'validate':
      return `Validate${state.validate ? `: ${state.validate.overall_passed ? 'passed' : 'failed'}` : ''}`;
    case 'response':
      return `Response${state.response_delivery ? `: ${state.response_delivery.delivery_successful ? 'sent' : 'failed'}` : ''}`;
    case 'finalize':
      return `Finalize${state.finalize ? `: ${state.finalize.melvin_status}` : ''}`;
    default:
      return node[0]!.toUpperCase() + node.slice(1);
  }
}

/**
 * The path the turn took as a Mermaid flowchart: one box per node visited, hops numbered, the
 * edge into Escalate labelled with the escalation's kind (given while Escalate runs, before the state records it).
 * Coverage is a decision (a rhombus), Escalate stands out.
 */
export function runMap(state: AgentState, escalationKind = state.escalate?.escalation_kind): string {
  const lines = ['flowchart LR'];
  let hop = 0;
  let previous: string | null = null;
  state.metadata.path.forEach((node, index) => {
    if (node === 'end') return;
    if (node === 'plan') hop += 1;
    const id = `n${index}`;
    const label = mapLabel(state, node, hop).replace(/"/g, "'");
    lines.push(node === 'coverage' ? `  ${id}{"${label}"}` : `  ${id}["${label}"]`);
    if (previous) {
      const kind = node === 'escalate' ? escalationKind : undefined;
      lines.push(kind ? `  ${previous} -- "${kind}" --> ${id}` : `  ${previous} --> ${id}`);
    }
    if (node === 'escalate') lines.push(`  style ${id} fill:#ffe7b3,stroke:#d9822b`);
    previous = id;
  });
  return lines.join('\n');
}

/** The turn's summary for its run's memo, which reports read from Temporal visibility without opening any run. */
export function turnSummary(
  state: AgentState,
  turn: { startedAt: number; endedAt: number },
  reopenedByTeam: string | null = null,
): TurnSummary {
  const escalate = state.escalate;
  return {
    status: state.finalize?.melvin_status ?? 'skipped',
    escalation_source: escalate?.escalation_source ?? null,
    escalation_kind: escalate?.escalation_kind ?? null,
    escalation_reason: escalate ? oneLine(escalate.escalation_reason, MAX_REASON_SHOWN) : null,
    escalated_at: escalate?.timestamp ?? null,
    replied: state.response_delivery?.delivery_successful ?? false,
    hops: state.hops.length,
    turn_ms: turn.endedAt - turn.startedAt,
    ended_at: new Date(turn.endedAt).toISOString(),
    approval_outcome: state.metadata.approval?.outcome ?? null,
    tools: state.hops.flatMap(
      (h) =>
        h.gather?.tool_results.filter((r) => !r.reused_from).map((r) => ({ name: r.tool_name, ok: r.success })) ?? [],
    ),
    tokens: state.metadata.usage?.total_tokens ?? 0,
    intents: state.hops.at(-1)?.plan?.intents?.length ?? 0,
    open_intents: state.draft?.open_intents?.length ?? 0,
    intent_names: intentLabels(state.hops.at(-1)?.plan?.intents?.map((i) => i.intent) ?? []),
    open_intent_names: intentLabels(state.draft?.open_intents ?? []),
    uncovered_intent_names: intentLabels(
      state.hops
        .at(-1)
        ?.coverage?.coverage_analysis?.intents?.filter((i) => !i.covered)
        .map((i) => i.intent) ?? [],
    ),
    stage: state.metadata.stage?.stage ?? null,
    path: state.metadata.path.filter((node) => node !== 'end').slice(0, MAX_MEMO_PATH),
    reopened_by_team: reopenedByTeam,
  };
}
