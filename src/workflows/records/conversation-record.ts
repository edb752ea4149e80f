// The conversation record a workflow carries from turn to turn: the turns, the ledger of handled user parts, the owner,
// and the tool results still fresh.
import type { ToolResultTtl } from '../../contract/shared';
import { complains, turnTone } from '../routing/tone';
import type {
  AgentState,
  ConversationRecord,
  FreshResult,
  GatheredCall,
  ReceivedUserMessage,
  TeamAnswer,
  TurnRecord,
} from '../../contract/state';

/** Enough turns for a lead to read the conversation's course in any run's state; older ones are only counted. */
export const MAX_TURNS_KEPT = 20;
/**
 * Enough ids for any delivery Intercom may still send: it returns the 500 most recent parts, and redelivers for
 * hours, not for a thousand messages.
 */
export const MAX_LEDGER_IDS = 1000;

/** Fresh results kept for later turns: enough for a talent's payments and applications, far below any payload limit. */
export const MAX_FRESH_BYTES = 64 * 1024;
/** A reply kept in the record is cut here: the next turn needs its gist, not every word. */
export const MAX_REMEMBERED_REPLY = 500;

export function newConversationRecord(): ConversationRecord {
  return {
    turns: [],
    turn_count: 0,
    handled_part_ids: [],
    ownership: { owner: 'melvin', since: null, reason: null, team_told_of_new_messages: false },
    fresh_results: [],
    ledger_unread: {},
  };
}

/** One key per tool and arguments, whatever the order the arguments came in. */
function resultKey(toolName: string, parameters: Record<string, unknown>): string {
  const sorted = Object.keys(parameters)
    .sort()
    .map((k) => [k, parameters[k]]);
  return `${toolName} ${JSON.stringify(sorted)}`;
}

/** The earlier turn's result for this very call, while it is fresh. */
export function freshResult(
  record: ConversationRecord,
  toolName: string,
  parameters: Record<string, unknown>,
  now: number,
): FreshResult | undefined {
  const key = resultKey(toolName, parameters);
  return (record.fresh_results ?? []).find(
    (r) => resultKey(r.tool_name, r.parameters) === key && Date.parse(r.expires_at) > now,
  );
}

/**
 * Keeps the turn's successful calls for later turns, each until its tool's TTL passes; drops what has expired, and
 * the oldest results past `MAX_FRESH_BYTES`. A result reused this turn keeps its first fetch time.
 */
export function rememberResults(
  record: ConversationRecord,
  results: GatheredCall[],
  ttl: ToolResultTtl | undefined,
  now: number,
): void {
  let kept = (record.fresh_results ?? []).filter((r) => Date.parse(r.expires_at) > now);
  for (const result of results) {
    if (!result.success || result.reused_from) continue;
    const seconds = ttl?.per_tool[result.tool_name] ?? ttl?.default_seconds ?? 0;
    if (seconds <= 0) continue;
    const key = resultKey(result.tool_name, result.parameters);
    kept = kept.filter((r) => resultKey(r.tool_name, r.parameters) !== key);
    const fetchedAt = Date.parse(result.timestamp);
    kept.push({
      tool_name: result.tool_name,
      parameters: result.parameters,
      data: result.data,
      truncated: result.truncated,
      fetched_at: result.timestamp,
      expires_at: new Date(fetchedAt + seconds * 1000).toISOString(),
    });
  }
  while (kept.length && JSON.stringify(kept).length > MAX_FRESH_BYTES) kept.shift();
  record.fresh_results = kept;
}

/** What earlier turns asked and how each ended, for the plan and the draft of the next. */
export function earlierTurns(
  record: ConversationRecord,
): { asked: string | null; answered: string | null; escalated: string | null }[] {
  return record.turns.map((t) => ({
    asked: t.asked ?? null,
    answered: t.answered ?? null,
    escalated: t.escalation_reason ?? null,
  }));
}

/** Adds part ids to the ledger once each, newest last, dropping the oldest past the bound. */
export function markHandled(record: ConversationRecord, partIds: Iterable<string>): void {
  const ledger = record.handled_part_ids;
  for (const id of partIds) if (!ledger.includes(id)) ledger.push(id);
  if (ledger.length > MAX_LEDGER_IDS) ledger.splice(0, ledger.length - MAX_LEDGER_IDS);
}

/**
 * What the workflows before this one answered or handed over, as a read of the conversation says: the ledger starts
 * from them, once. A read from before reads said so (`undefined`) teaches nothing.
 */
export function learnHandledBefore(record: ConversationRecord, handledBefore: string[] | undefined): void {
  if (!handledBefore) return;
  markHandled(record, handledBefore);
  delete record.ledger_unread;
}

/** Records the run's turn (again, when an operator's escalation after the turn changed its outcome). */
export function recordTurn(record: ConversationRecord, turn: TurnRecord): void {
  markHandled(record, turn.part_ids);
  const index = record.turns.findIndex((t) => t.run_id === turn.run_id);
  if (index >= 0) {
    record.turns[index] = turn;
    return;
  }
  record.turns.push(turn);
  record.turn_count += 1;
  if (record.turns.length > MAX_TURNS_KEPT) record.turns.splice(0, record.turns.length - MAX_TURNS_KEPT);
}

/**
 * Shadow mode's comparison: a teammate's answer goes with the latest turn when that turn only noted a draft and has no
 * answer yet. Returns whether it was kept.
 */
export function recordTeamAnswer(record: ConversationRecord, answer: TeamAnswer): boolean {
  const latest = record.turns.at(-1);
  if (!latest?.shadow_draft || latest.team_answer) return false;
  latest.team_answer = answer;
  return true;
}

/** Deliveries from `from` on that still need an answer: those for a part the ledger holds were answered already. */
export function unansweredDeliveries(
  record: ConversationRecord,
  deliveries: ReceivedUserMessage[],
  from: number,
): ReceivedUserMessage[] {
  return deliveries.slice(from).filter((d) => !(d.part_id && record.handled_part_ids.includes(d.part_id)));
}

export function handOverToTeam(record: ConversationRecord, reason: string, now: string): void {
  if (record.ownership.owner === 'team') return;
  record.ownership = { owner: 'team', since: now, reason, team_told_of_new_messages: false };
}

export function handBackToMelvin(record: ConversationRecord, reason: string, now: string): void {
  record.ownership = { owner: 'melvin', since: now, reason, team_told_of_new_messages: false };
}

/**
 * What a turn's outcome answered or handed over: the user parts its draft saw when the reply went out (or, in shadow
 * mode, was noted), or the whole conversation as it stood when its hand-over note went out; a message that came later
 * is the next turn's, or the team's.
 */
export interface TurnCoverage {
  partIds: string[];
  /** How many of the run's deliveries it consumed, for deliveries that name no part. */
  deliveries: number;
  /** The outcome gives the conversation to the team: an escalation, a reply not delivered or withheld. */
  handsOver: boolean;
}

/**
 * Adds a run's turn to the record (again, when an escalation after the turn changed its outcome): the user parts it
 * answered or handed over, what it was asked and answered, a shadow draft, the results still fresh. Returns how many
 * deliveries the turn consumed. `coverage` says what the outcome covered and whether it hands the conversation to the
 * team; runs from before it was kept (it is absent) consumed what the last fetch held after a reply, and every delivery
 * after a hand-over, and any escalation or undelivered reply handed the conversation over.
 */
export function closeTurn(
  record: ConversationRecord,
  state: AgentState,
  turn: {
    runId: string;
    fetchedUserPartIds: string[];
    gathered: GatheredCall[];
    ttl: ToolResultTtl | undefined;
    teamAnswer: TeamAnswer | null;
    now: number;
    coverage?: TurnCoverage;
  },
): number {
  const { coverage } = turn;
  const handedOver = coverage
    ? coverage.handsOver
    : !!state.escalate || state.finalize?.melvin_status === 'MESSAGE_FAILED';
  const consumed = coverage
    ? coverage.deliveries
    : handedOver
      ? state.metadata.user_messages.length
      : state.metadata.user_messages_fetched;
  const delivered = state.metadata.user_messages.slice(0, consumed).flatMap((d) => d.part_id ?? []);
  const partIds = [...new Set([...(coverage ? coverage.partIds : turn.fetchedUserPartIds), ...delivered])];
  const earlier = record.turns.find((t) => t.run_id === turn.runId);
  const newlyCovered = partIds.filter((id) => !record.handled_part_ids.includes(id));
  const replied = state.response_delivery?.delivery_successful ? (state.response ?? '') : null;
  const approval = state.metadata.approval;
  recordTurn(record, {
    run_id: turn.runId,
    ended_at: new Date(turn.now).toISOString(),
    melvin_status: state.finalize?.melvin_status ?? 'skipped',
    escalation_source: state.escalate?.escalation_source ?? null,
    part_ids: !earlier
      ? newlyCovered
      : coverage
        ? [...new Set([...earlier.part_ids, ...newlyCovered])]
        : earlier.part_ids,
    asked: state.hops.at(-1)?.plan?.user_query ?? null,
    answered: replied === null ? null : replied.slice(0, MAX_REMEMBERED_REPLY),
    escalation_reason: state.escalate?.escalation_reason ?? null,
    ...(complains(turnTone(state)) ? { complained: true } : {}),
    ...(approval?.mode === 'shadow'
      ? { shadow_draft: approval.draft.slice(0, MAX_REMEMBERED_REPLY), team_answer: null }
      : {}),
  });
  if (turn.teamAnswer) recordTeamAnswer(record, turn.teamAnswer);
  rememberResults(record, turn.gathered, turn.ttl, turn.now);
  if (handedOver) {
    const reason = state.escalate?.escalation_reason ?? 'the reply could not be delivered';
    handOverToTeam(record, reason, new Date(turn.now).toISOString());
  }
  return consumed;
}
