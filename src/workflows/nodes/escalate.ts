// The Escalate node: tells the user a person will follow up, and hands the conversation to the team with a note.
import { CancellationScope, log, upsertSearchAttributes } from '@temporalio/workflow';
import { searchAttributes } from '../../contract/shared';
import type { AgentState, EscalationKind, UserTold } from '../../contract/state';
import { OPEN_FOR_THE_TEAM } from '../../contract/notes';
import { openForTheTeam, talentWrote, unansweredMessages, unreadDeliveries } from '../prompt-contexts/contexts';
import { KEPT_PROMISES_RULES, rulesSince } from '../versions/patches';
import { escalationNote, isDraftRoute, type Escalation } from '../routing/routing';
import { runMap } from '../records/run-summary';
import { settledStage, stageLine, suggestedStepLine } from '../routing/stage';
import type { Step, Turn } from './turn';
import {
  describeFailure,
  enter,
  fetchConversation,
  inShadowMode,
  markHandedOver,
  post,
  postNote,
  postWaitingValidationNote,
  refetchIfNewMessages,
} from './helpers';

/** The hand-over message, sent once like a reply (a retry finds an accepted attempt); never cancelled. */
async function tellUser(turn: Turn, kind: EscalationKind): Promise<UserTold | null> {
  // A run started before a kind existed has no text of its own for it: it has the text of a request for a person.
  const texts = turn.input.handoverMessages;
  const text = (texts?.[kind] ?? (texts && isDraftRoute(kind) ? texts.user_requested_human : undefined))?.trim();
  if (!text) return null;
  try {
    const posted = await post(turn, 'sendReply', text, 'tell the user a person will follow up');
    return { text, sent: true, error: null, part_id: posted.part_id };
  } catch (err) {
    log.warn('could not tell the user of the hand-over', { error: describeFailure(err) });
    return { text, sent: false, error: describeFailure(err), part_id: null };
  }
}

/**
 * A hand-over that comes before the conversation was read (an operator's escalation with the run's start, or one that
 * cut Initialize short) reads it first: whether Melvin may write to the user depends on its reply mode and owner.
 * Never cancelled; when Intercom cannot be read, the configured mode applies.
 */
async function readConversationFirst(turn: Turn): Promise<void> {
  try {
    await CancellationScope.nonCancellable(() => fetchConversation(turn, 'fetch conversation before the hand-over'));
  } catch (err) {
    log.warn('could not read the conversation before the hand-over', { error: describeFailure(err) });
  }
}

export async function escalate(turn: Turn): Promise<Step> {
  const { state } = turn;
  const handOver = turn.escalation!;
  enter(turn, 'escalate', `Reason: ${handOver.reason}`);
  state.escalation_reason = handOver.reason;
  const answering = turn.ownerKnown();
  if (answering) await answering;
  // An operator's escalation right after a draft passed: its validation note, which waited for the reply, goes first.
  await postWaitingValidationNote(turn);
  // An Initialize that failed has just tried to read it: the configured mode applies then.
  if (!turn.legacy && !state.metadata.reply_mode && handOver.source !== 'initialization')
    await readConversationFirst(turn);
  // Since KEPT_PROMISES_RULES a message that came since the last read is read too, so the note can name it.
  else if (rulesSince(KEPT_PROMISES_RULES)) await CancellationScope.nonCancellable(() => refetchIfNewMessages(turn));
  // When a teammate has already taken over, a person is with the user: nothing to tell them. Shadow mode never writes
  // to the user (runs from before did tell them).
  const shadow = !turn.legacy && inShadowMode(turn);
  // A turn that has told the user already (an approval that timed out, then a lead's escalation) tells them once.
  const toldAlready = !turn.legacy && state.escalate?.user_told?.sent ? state.escalate.user_told : null;
  const teamOwns = state.metadata.conversation.ownership.owner === 'team';
  // A conversation no read of this run could show has a reply mode nobody knows (it is set in Intercom): it may be in
  // shadow mode, which never writes to the user, so the user is not told; the team's note says it all.
  const modeUnknown = !turn.legacy && rulesSince(KEPT_PROMISES_RULES) && !state.metadata.reply_mode;
  const told = toldAlready ?? (teamOwns || shadow || modeUnknown ? null : await tellUser(turn, handOver.kind));
  // Every hand-over says what it leaves open: a partial answer's details list it already, and after a reply went out
  // (an operator's escalation) the turn's questions were answered.
  const listed = handOver.details?.includes(OPEN_FOR_THE_TEAM) ?? false;
  const replied = state.response_delivery?.delivery_successful ?? false;
  const open = listed || replied ? [] : openForTheTeam(state);
  // Since KEPT_PROMISES_RULES the note names each message it hands over, when what is open lists the plan's reading of
  // them rather than the messages themselves.
  // A reply that went out answered what its draft saw; a message that came after is handed over with the rest.
  const answered = new Set(replied ? (turn.draftSaw?.partIds ?? []) : []);
  // A message the read did not hold (Intercom refused it) is named by the preview its webhook carried.
  const unread = rulesSince(KEPT_PROMISES_RULES) ? unreadDeliveries(state, answered) : [];
  const waiting = rulesSince(KEPT_PROMISES_RULES)
    ? [...unansweredMessages(state, answered), ...unread.map((d) => d.preview)]
    : [];
  const named = waiting.every((m) => open.some((line) => line.includes(m.slice(0, 200))));
  const forTheTeam = [
    ...open,
    ...(named ? [] : talentWrote(waiting)),
    ...[stageLine(settledStage(state)), suggestedStepLine(state)].filter((l) => l !== null),
  ];
  const note = await postNote(
    turn,
    escalationNote(handOver, told, runMap(state, handOver.kind), forTheTeam),
    'note escalation',
  );
  // In shadow mode the team answers every message anyway: only an operator's escalation keeps Melvin from drafting.
  markHandedOver(turn, !shadow || handOver.source === 'operator', unread);
  recordEscalation(state, handOver, told, note);
  upsertSearchAttributes([{ key: searchAttributes.escalationSource, value: handOver.source }]);
  return { next: 'finalize' };
}

/** The hand-over into the state. Pure: the bench's LangGraph peer escalates with it too. */
export function recordEscalation(
  state: AgentState,
  escalation: Escalation,
  told: UserTold | null,
  note: { added: boolean; error: string | null },
): void {
  state.escalate = {
    escalation_source: escalation.source,
    escalation_kind: escalation.kind,
    escalation_reason: escalation.reason,
    note_added: note.added,
    note_error: note.error,
    requested_by: escalation.requested_by,
    timestamp: new Date().toISOString(),
    user_told: told,
  };
}
