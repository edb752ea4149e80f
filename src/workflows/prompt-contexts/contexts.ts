// What each LLM step is shown, built from the state: pure, so the model's view of a run is replayable and testable.
import type {
  CoverageContext,
  DraftContext,
  NamedRecordContext,
  PlanContext,
  ResolveContext,
} from '../../contract/llm-contexts';
import type { AgentState, Intent, NamedRecord, ReceivedUserMessage } from '../../contract/state';
import type { GroundingSources } from '../../guards/grounding';
import { OPEN_FOR_THE_TEAM } from '../../contract/notes';
import { recordsAbout } from '../entities/entities';
import { turnTone } from '../routing/tone';
import { earlierTurns } from '../records/conversation-record';
import { identityArgumentNames, offeredTools } from '../entities/tool-calls';

/**
 * Intercom returns only a conversation's 500 most recent parts. When it left some out, the model is told how many, so
 * it does not take the first message and the recent ones for the whole conversation.
 */
function omitted(state: AgentState): { earlier_parts_omitted?: number } {
  const count = state.metadata.omitted_parts;
  return count > 0 ? { earlier_parts_omitted: count } : {};
}

/**
 * The conversation's memory: what its earlier turns asked, answered or handed over, so a follow-up ("and the next
 * one?") is read in that light and Melvin can say "as I said". Absent in a conversation's first turn.
 */
function memory(state: AgentState): Pick<PlanContext, 'earlier_turns'> {
  const turns = earlierTurns(state.metadata.conversation);
  return turns.length ? { earlier_turns: turns } : {};
}

/**
 * The user's messages this turn answers: those whose Intercom part no turn answered or handed over (the ledger), in the
 * order written, wherever they sit in the conversation. Absent when the fetch did not say which part each message is.
 */
function unanswered(state: AgentState): { unanswered_messages?: string[] } {
  return state.metadata.message_part_ids ? { unanswered_messages: unansweredMessages(state) } : {};
}

/** Hop N's plan sees what every earlier hop asked for and which gaps its coverage found (context-aware re-planning). */
export function planContext(state: AgentState, hop: number): PlanContext {
  return {
    hop,
    max_hops: state.max_hops,
    messages: state.messages,
    ...unanswered(state),
    ...omitted(state),
    ...memory(state),
    available_tools: offeredTools(state.available_tools).map(({ name, description, input_schema }) => ({
      name,
      description,
      input_schema,
    })),
    identity_arguments: identityArgumentNames(offeredTools(state.available_tools)),
    tool_data: state.tool_data,
    docs_data: state.docs_data,
    previous_hops: state.hops.slice(0, hop - 1).map((h, index) => ({
      hop: index + 1,
      user_query: h.plan?.user_query ?? '',
      tool_calls: (h.plan?.tool_calls ?? []).map((c) => `${c.tool_name} ${JSON.stringify(c.parameters)}`),
      missing_data: (h.coverage?.coverage_analysis?.missing_data ?? []).map((m) => `${m.gap_type}: ${m.description}`),
    })),
  };
}

/** The intents the latest plan named; a plan that named none asked one thing, its `user_query`. */
export function turnIntents(state: AgentState): Intent[] {
  const plan = state.hops.at(-1)?.plan;
  if (!plan) return [];
  return plan.intents?.length ? plan.intents : [{ intent: 'question', question: plan.user_query }];
}

/**
 * What a hand-over leaves the team to answer, as its note lists it: each thing the plan read the talent asking, in
 * their words; before any plan (a failed start, an operator's escalation), the messages no reply has answered; when
 * the conversation could not be read, that the team must read it.
 */
export function openForTheTeam(state: AgentState): string[] {
  const intents = turnIntents(state);
  const lines = intents.length
    ? intents.map((i) => `- ${i.intent}: ${quoted(i.question)}`)
    : (unanswered(state).unanswered_messages ?? []).map((m) => `- ${quoted(m)}`);
  // A conversation Melvin could not read: its messages are for the team to read in Intercom.
  if (!lines.length && !state.messages.length)
    lines.push('- the talent’s messages: Melvin could not read the conversation');
  return lines.length ? [OPEN_FOR_THE_TEAM, ...lines] : [];
}

/** The user's messages of the last read that no turn has answered or handed over yet, but for the parts `answered`. */
export function unansweredMessages(state: AgentState, answered: ReadonlySet<string> = new Set()): string[] {
  const ids = state.metadata.message_part_ids ?? [];
  const handled = new Set(state.metadata.conversation.handled_part_ids);
  return state.messages
    .filter((m, i) => m.role === 'user' && ids[i] && !handled.has(ids[i]!) && !answered.has(ids[i]!))
    .map((m) => m.content);
}

/**
 * The deliveries of the user's messages the last read did not hold (Intercom refused it, or they came after it), one
 * per part, but for those handled or `answered`: a note names each by the preview its webhook carried.
 */
export function unreadDeliveries(
  state: AgentState,
  answered: ReadonlySet<string> = new Set(),
): (ReceivedUserMessage & { preview: string })[] {
  const read = new Set(state.metadata.message_part_ids ?? []);
  const handled = new Set(state.metadata.conversation.handled_part_ids);
  const seen = new Set<string>();
  return state.metadata.user_messages.filter((d): d is ReceivedUserMessage & { preview: string } => {
    if (!d.preview) return false;
    if (!d.part_id) return true;
    if (read.has(d.part_id) || handled.has(d.part_id) || answered.has(d.part_id) || seen.has(d.part_id)) return false;
    seen.add(d.part_id);
    return true;
  });
}

/** The talent's messages a note hands to the team, each quoted (cut short), so the note names every one. */
export function talentWrote(messages: string[]): string[] {
  return messages.length ? ['The talent wrote:', ...messages.map((m) => `- ${quoted(m)}`)] : [];
}

const quoted = (text: string) => `“${text.length > 300 ? `${text.slice(0, 299)}…` : text}”`;

/** The intents the latest coverage found the data does not answer (by name); all of them when it judged none singly. */
export function uncoveredIntents(state: AgentState): string[] {
  const analysis = state.hops.at(-1)?.coverage?.coverage_analysis;
  const intents = turnIntents(state);
  if (!analysis || analysis.data_sufficient) return [];
  if (!analysis.intents?.length) return intents.map((i) => i.intent);
  const covered = new Set(analysis.intents.filter((i) => i.covered).map((i) => i.intent));
  return intents.filter((i) => !covered.has(i.intent)).map((i) => i.intent);
}

export function coverageContext(state: AgentState, hop: number): CoverageContext {
  return {
    hop,
    max_hops: state.max_hops,
    user_query: state.hops[hop - 1]?.plan?.user_query ?? '',
    messages: state.messages,
    ...unanswered(state),
    ...omitted(state),
    intents: turnIntents(state),
    ...namedRecords(state),
    tool_data: state.tool_data,
    docs_data: state.docs_data,
  };
}

/** The resolve step's context: what the user named, the records it could still be, and their messages. */
export function resolveContext(state: AgentState, open: NamedRecord): ResolveContext {
  return {
    messages: state.messages,
    ...unanswered(state),
    kind: open.kind,
    mention: open.mention,
    candidates: open.candidates.map((c) => ({ ...c, record: recordsAbout(state.tool_data, c.id) })),
  };
}

/** The latest resolution of what the user named (each hop resolves against all data gathered so far), when any. */
export function namedRecords(state: AgentState): { named_records?: NamedRecordContext[] } {
  const named = [...state.hops].reverse().find((h) => h.named_records?.length)?.named_records;
  if (!named) return {};
  return { named_records: named.map(({ score: _score, semantic_error: _error, ...record }) => record) };
}

/**
 * What the user already said and what Melvin holds (its known context), so the reply never asks for it again:
 * the contact's name and email, what the user named, what resolved to their records, what earlier turns asked.
 */
export function knownContext(state: AgentState): string[] {
  const known: string[] = [];
  if (state.metadata.user_name) known.push(`the user's name: ${state.metadata.user_name}`);
  if (state.user_email) known.push("the user's email address (the conversation's contact): never ask for it");
  for (const hop of state.hops) {
    for (const entity of hop.plan?.entities ?? []) known.push(`the user named a ${entity.kind}: “${entity.mention}”`);
    for (const result of hop.gather?.tool_results ?? []) {
      for (const r of result.resolved ?? []) {
        if (r.tier === 'fuzzy') known.push(`“${r.mention}” is the user's ${r.label || r.argument}`);
      }
    }
    for (const r of hop.named_records ?? []) {
      if (r.id !== null && r.tier !== 'exact') known.push(`“${r.mention}” is the user's ${r.label || r.record_kind}`);
    }
  }
  for (const turn of earlierTurns(state.metadata.conversation)) {
    if (turn.asked) known.push(`asked in an earlier turn: ${turn.asked}`);
  }
  return [...new Set(known)];
}

/** What the data still lacks, as the latest coverage listed it. */
export function missingContext(state: AgentState): string[] {
  const analysis = state.hops.at(-1)?.coverage?.coverage_analysis;
  return (analysis?.missing_data ?? []).map((m) => `${m.gap_type}: ${m.description}`);
}

export function draftContext(state: AgentState): DraftContext {
  const open = uncoveredIntents(state);
  const tone = turnTone(state);
  const examples = state.metadata.style_examples?.examples ?? [];
  const retrieved = state.metadata.style_examples?.retrieved ?? [];
  return {
    messages: state.messages,
    ...unanswered(state),
    ...omitted(state),
    ...memory(state),
    user_name: state.metadata.user_name,
    intents: turnIntents(state).map((i) => ({ ...i, covered: !open.includes(i.intent) })),
    open_intents: open,
    known_context: knownContext(state),
    missing_context: missingContext(state),
    ...(examples.length ? { style_examples: examples } : {}),
    ...(retrieved.length ? { team_examples: retrieved.map(({ role, text }) => ({ role, text })) } : {}),
    ...namedRecords(state),
    ...(tone ? { tone } : {}),
    ...(state.metadata.stage ? { stage: state.metadata.stage } : {}),
    tool_data: state.tool_data,
    docs_data: state.docs_data,
  };
}

/** The last line of a team's answer when it is a sign-off ("— Crewline Talent Support"): the team's voice, no fact. */
function signOff(answer: string): string | null {
  const last = answer.trim().split('\n').at(-1)?.trim() ?? '';
  return last.length <= 60 && /^(?:[—–-]|cheers|best|thanks|warmly|kind regards)/i.test(last) ? last : null;
}

/**
 * What Melvin's grounding guard lets a reply state facts from (src/guards/grounding.ts): the turn's tool results and
 * help-center passages, the conversation, the talent's own name and address, and, for names alone, Melvin's and the
 * team's sign-offs. The team's examples are other talents' conversations: nothing else of them counts. A claimed action
 * is backed only by a tool of the turn that may write and ran.
 */
export function groundingSources(state: AgentState): GroundingSources {
  const examples = state.metadata.style_examples;
  const teamAnswers = [
    ...(examples?.examples ?? []).map((e) => e.answer),
    ...(examples?.retrieved ?? []).filter((r) => r.role === 'team').map((r) => r.text),
  ];
  const writes = new Set(state.available_tools.filter((t) => t.grant?.writes ?? true).map((t) => t.name));
  const ran = state.hops.flatMap((hop) => hop.gather?.tool_results ?? []).filter((r) => r.success);
  return {
    data: [state.tool_data, state.docs_data],
    conversation: [
      ...state.messages.map((m) => m.content),
      ...[state.metadata.user_name, state.user_email].filter((v) => v !== null),
    ],
    names: ['Melvin', ...teamAnswers.map(signOff).filter((line) => line !== null)],
    actionsTaken: [...new Set(ran.map((r) => r.tool_name).filter((name) => writes.has(name)))],
    // The workflow's clock in workflow code: a replay reads the same date.
    today: new Date().toISOString().slice(0, 10),
  };
}
