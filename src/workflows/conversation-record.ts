// The conversation record a workflow carries from turn to turn: the turns, the ledger of handled user parts, the owner.
import type { ConversationRecord, ReceivedUserMessage, TurnRecord } from '../state';

/** Enough turns for a lead to read the conversation's course in any run's state; older ones are only counted. */
export const MAX_TURNS_KEPT = 20;
/**
 * Enough ids for any delivery Intercom may still send: it returns the 500 most recent parts, and redelivers for
 * hours, not for a thousand messages.
 */
export const MAX_LEDGER_IDS = 1000;

export function newConversationRecord(): ConversationRecord {
  return {
    turns: [],
    turn_count: 0,
    handled_part_ids: [],
    ownership: { owner: 'melvin', since: null, reason: null, team_told_of_new_messages: false },
  };
}

/** Adds part ids to the ledger once each, newest last, dropping the oldest past the bound. */
export function markHandled(record: ConversationRecord, partIds: Iterable<string>): void {
  const ledger = record.handled_part_ids;
  for (const id of partIds) if (!ledger.includes(id)) ledger.push(id);
  if (ledger.length > MAX_LEDGER_IDS) ledger.splice(0, ledger.length - MAX_LEDGER_IDS);
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
