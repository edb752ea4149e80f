// What a conversation's run does once its turn is over: records the turn, acts on what operators and teammates asked
// meanwhile, and waits for the user's next message. Workflow code: every side effect is an activity.
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  isCancellation,
  log,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import { WROTE_AGAIN_MARK } from '../contract/notes';
import type { OwedWrite, ReceivedUserMessage } from '../contract/state';
import type { Turn } from './nodes/turn';
import {
  closeTurn,
  learnHandledBefore,
  markHandled,
  unansweredDeliveries,
  type TurnCoverage,
} from './records/conversation-record';
import {
  GIVE_UP_OWED_AFTER_MS,
  noteOwed,
  owed,
  oweSetting,
  ownerChangeOwed,
  retryDelayMs,
  writesOwed,
} from './records/owed-writes';
import {
  CANCELLED_OWED_RULES,
  CANCELLED_WAITING_RULES,
  KEPT_PROMISES_RULES,
  LAST_READ_RULES,
  OWED_OWNER_NOTE_RULES,
  SNOOZE_AFTER_LATE_NOTES_RULES,
  TOLD_WHEN_LANDED_RULES,
  WROTE_AGAIN_UNTIL_POSTED_RULES,
  rulesSince,
} from './versions/patches';
import type { ConversationControls } from './conversation-controls';
import { runTurn } from './graph';
import {
  describeFailure,
  inShadowMode,
  latestOwnerChange,
  operatorEscalationWaiting,
  outcomeDetails,
  post,
  postNote,
  showDetails,
  takeOperatorEscalation,
  takeOwnerChange,
} from './nodes/helpers';
import { intercomReads } from './activity-options/retry-policies';
import { talentWrote } from './prompt-contexts/contexts';
import { escalation, type Escalation } from './routing/routing';
import { durationText } from './records/turn-state';

export const CANCELLED_REASON = 'The run was cancelled in Temporal before Melvin finished';

/**
 * What the turn's outcome covered: what its draft saw when the reply went out (or was noted in shadow mode), or the
 * conversation as it stood when a hand-over note went out. Runs from before keep their own rule (undefined).
 */
function turnCoverage(conversation: ConversationControls): TurnCoverage | undefined {
  const { turn, state, record } = conversation;
  if (turn.legacy) return undefined;
  if (turn.handedOver) return turn.handedOver;
  const answered = state.response_delivery?.delivery_successful || state.metadata.approval?.mode === 'shadow';
  if (answered && turn.draftSaw) return { ...turn.draftSaw, handsOver: false };
  // A turn that found nothing new to answer consumed the deliveries its fetch held (about messages answered before);
  // one that found the team owning the conversation leaves them for the team to be told of.
  const skippedFor =
    record.ownership.owner === 'team' ? conversation.consumedDeliveries : state.metadata.user_messages_fetched;
  return { partIds: [], deliveries: skippedFor, handsOver: false };
}

/** The run's turn into the conversation record; what it did not answer or hand over waits for the next turn. */
export function recordThisTurn(conversation: ConversationControls): void {
  const { turn } = conversation;
  const consumed = closeTurn(conversation.record, conversation.state, {
    runId: workflowInfo().runId,
    fetchedUserPartIds: turn.fetchedUserPartIds,
    gathered: turn.gathered,
    ttl: turn.input.toolResultTtl,
    teamAnswer: conversation.teamAnswerDuringTurn,
    now: Date.now(),
    coverage: turnCoverage(conversation),
  });
  conversation.consumedDeliveries = Math.max(conversation.consumedDeliveries, consumed);
}

/**
 * Hands the conversation over once the turn's own course is over or cut short (an operator between turns, a cancelled
 * run): Escalate with its own note, Finalize, and the turn recorded again with its new outcome. Runs from before went
 * straight to Finalize when the turn had escalated already.
 */
export async function escalateAfterTurn(conversation: ConversationControls, handOver: Escalation): Promise<void> {
  const { turn } = conversation;
  turn.escalation = handOver;
  conversation.escalatingAfterTurn = handOver.reason;
  try {
    await runTurn(turn, turn.legacy && conversation.state.escalate ? 'finalize' : 'escalate');
  } finally {
    conversation.escalatingAfterTurn = null;
  }
  recordThisTurn(conversation);
}

/** Runs from before every accepted escalation was acted on acted between turns only while Melvin owned the turn. */
function escalationDue(conversation: ConversationControls): boolean {
  if (!conversation.turn.legacy) return operatorEscalationWaiting(conversation.turn);
  return (
    !!conversation.state.metadata.forced_escalation &&
    !conversation.state.escalate &&
    conversation.record.ownership.owner === 'melvin'
  );
}

/**
 * What operators asked for and the run has yet to do (the notes of hand-backs, then an escalation), after reading who
 * owns the conversation by its course in Intercom when a teammate acted on it.
 */
async function settleOperatorRequests(conversation: ConversationControls): Promise<void> {
  while (conversation.handBackNotes.length) {
    await postNote(conversation.turn, conversation.handBackNotes[0]!, 'note hand-back');
    conversation.handBackNotes.shift();
  }
  // Who owns the conversation decides whether the escalation tells the user: a teammate's webhook that came after
  // the turn's own escalation, though it happened before it (same second), must not make Melvin tell them twice.
  if (conversation.ownerInDoubt) await readOwnerAgain(conversation);
  if (escalationDue(conversation)) await escalateAfterTurn(conversation, takeOperatorEscalation(conversation.turn));
}

/**
 * The owner the conversation's course says now; when Intercom cannot be read, the webhooks' word stands. Returns the
 * user's messages in the conversation, or null when it could not be read.
 */
async function readOwnerAgain(conversation: ConversationControls, summary = 'read who owns the conversation') {
  const { record } = conversation;
  const unread = record.ledger_unread;
  try {
    const course = await intercomReads().readOwnership.executeWithOptions({ summary }, [
      {
        conversationId: conversation.turn.input.conversationId,
        ...(unread && { ledgerBefore: unread.own_from_part_id ?? null }),
      },
    ]);
    conversation.ownerInDoubt = false;
    // A workflow whose first read failed learns here what the ones before it handled: else the read before it ends
    // would take their answered messages for ones no webhook told of, and answer them again.
    learnHandledBefore(record, course.handled_before_part_ids);
    const latest = latestOwnerChange(course.ownership_events, inShadowMode(conversation.turn));
    // An owed hand-over or hand-back note is not in the course yet: its latest change is older than the record's.
    const recordStands = rulesSince(OWED_OWNER_NOTE_RULES) && ownerChangeOwed(record);
    if (latest && latest.owner !== record.ownership.owner && !recordStands) {
      takeOwnerChange(record, latest);
      log.info('owner read again from the conversation', { owner: record.ownership.owner });
    }
    for (const { part_id, text } of course.user_messages ?? []) conversation.messagesRead.set(part_id, text);
    return course.user_part_ids ?? [];
  } catch (err) {
    if (isCancellation(err)) throw err;
    conversation.ownerInDoubt = false;
    log.warn('could not read who owns the conversation', { error: describeFailure(err) });
    return null;
  }
}

/**
 * Before the workflow ends it reads the conversation once more: a message of the user that no turn answered or handed
 * over, and no webhook told of yet (it may come after the run has ended, or never), becomes a delivery like any other.
 * The next workflow takes every message older than Melvin's newest part as handled, so none may be left behind. Returns
 * whether the run may end: nothing was found, and the conversation could be read.
 */
async function nothingUntold(conversation: ConversationControls): Promise<boolean> {
  const { record, state } = conversation;
  const userParts = await readOwnerAgain(conversation, 'read the conversation before the workflow ends');
  if (userParts === null) {
    conversation.owedRead = true;
    conversation.owedRounds += 1;
    conversation.owedDueAt =
      Date.now() + retryDelayMs(conversation.turn.input.writeRetrySeconds, conversation.owedRounds);
    return false;
  }
  conversation.owedRead = false;
  const delivered = new Set(state.metadata.user_messages.flatMap((d) => d.part_id ?? []));
  const untold = userParts.filter((id) => !record.handled_part_ids.includes(id) && !delivered.has(id));
  for (const partId of untold) {
    log.info('a message no webhook told of', { part_id: partId });
    state.metadata.user_messages.push({ notification_id: `read-${partId}`, part_id: partId, received_at: now() });
  }
  return untold.length === 0;
}

const now = () => new Date().toISOString();

/** Whether the run owes Intercom a write, or the read before it ends: it cannot end yet. */
function somethingOwed(conversation: ConversationControls): boolean {
  return writesOwed(conversation.record) || conversation.owedRead;
}

/**
 * Writes what the run owes Intercom, when its time has come: the notes in order (one still refused holds the later
 * ones back), the settings each on their own. Each round that leaves something owed doubles the wait before the next.
 */
async function writeOwed(conversation: ConversationControls): Promise<void> {
  const { record, turn } = conversation;
  if (!writesOwed(record) || Date.now() < conversation.owedDueAt) return;
  let notesHeld = false;
  let noteWritten = false;
  let noteAfterSnooze = false;
  for (const write of [...owed(record)]) {
    const drop = (why: string) => {
      record.owed_writes = owed(record).filter((w) => w !== write);
      log.warn(`owed ${write.kind} given up`, { why, error: write.error });
    };
    // A snooze would reopen a conversation the team closed.
    if (write.kind === 'snooze' && conversation.closedByTeam) {
      drop('the team closed the conversation');
      continue;
    }
    if (Date.now() - Date.parse(write.owed_since) > GIVE_UP_OWED_AFTER_MS) {
      drop('refused for a week');
      continue;
    }
    if (write.kind === 'note' && notesHeld) continue;
    try {
      await writeOne(turn, write);
      record.owed_writes = owed(record).filter((w) => w !== write);
      noteWritten ||= write.kind === 'note';
      if (write.kind !== 'status') noteAfterSnooze = write.kind === 'note';
      log.info(`owed ${write.kind} written`, { owed_since: write.owed_since });
    } catch (err) {
      if (isCancellation(err)) throw err;
      if (failureType(err) === 'IntercomNotFoundError') {
        drop('the conversation is gone');
        continue;
      }
      write.error = describeFailure(err);
      if (write.kind === 'note') notesHeld = true;
    }
  }
  // A note that lands after the last outcome's snooze ends the conversation's course: the snooze goes after it again,
  // as after any outcome (unless another write is still owed, or the team closed the conversation). Since
  // SNOOZE_AFTER_LATE_NOTES_RULES the record says how the last outcome snoozed, whichever turn or run that was, and a
  // snooze owed and written after the notes is not written twice.
  const { finalize } = turn.state;
  const seconds = rulesSince(SNOOZE_AFTER_LATE_NOTES_RULES)
    ? noteAfterSnooze
      ? record.last_snooze_seconds
      : null
    : noteWritten && finalize?.conversation_snoozed
      ? finalize.snooze_duration_seconds
      : null;
  if (typeof seconds === 'number' && !writesOwed(record) && !conversation.closedByTeam) {
    try {
      await writeOne(turn, { kind: 'snooze', seconds, owed_since: now(), error: '' });
    } catch (err) {
      if (isCancellation(err)) throw err;
      oweSetting(record, { kind: 'snooze', seconds }, describeFailure(err));
    }
  }
  conversation.owedRounds = writesOwed(record) ? conversation.owedRounds + 1 : 0;
  conversation.owedDueAt = Date.now() + retryDelayMs(turn.input.writeRetrySeconds, conversation.owedRounds);
}

async function writeOne(turn: Turn, write: OwedWrite): Promise<void> {
  const conversationId = turn.input.conversationId;
  if (write.kind === 'note') {
    // An attempt Intercom took without answering may be in the conversation: the post looks for it first.
    await post(turn, 'addNote', write.text, write.summary, { mayBePosted: true, notBefore: write.not_before });
  } else if (write.kind === 'status') {
    await intercomReads().setStatus.executeWithOptions({ summary: `set Melvin Status ${write.status} (owed)` }, [
      { conversationId, status: write.status },
    ]);
  } else {
    await intercomReads().snooze.executeWithOptions({ summary: `snooze ${write.seconds}s (owed)` }, [
      { conversationId, seconds: write.seconds },
    ]);
  }
}

/** The type of the application error behind an activity's failure, e.g. `IntercomNotFoundError`. */
function failureType(err: unknown): string | undefined {
  for (let cause = err; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof ApplicationFailure) return cause.type ?? undefined;
  }
  return undefined;
}

/**
 * Messages while the team owns the conversation: handed over unanswered, and the team told once. Since
 * KEPT_PROMISES_RULES the note names them: the deliveries, and every message of the last read of the conversation that
 * no turn answered or handed over yet (one whose webhook is still to come, written before the team took it over).
 * Since WROTE_AGAIN_UNTIL_POSTED_RULES "once" counts from when that note reaches Intercom: while it is owed, what comes
 * is named in a note of its own behind it, or the team would find a message above its notes that none of them names.
 */
async function leaveToTeam(conversation: ConversationControls, deliveries: ReceivedUserMessage[]): Promise<void> {
  const { record } = conversation;
  conversation.consumedDeliveries = conversation.state.metadata.user_messages.length;
  const delivered = deliveries.flatMap((d) => d.part_id ?? []);
  const toldNoteOwed = rulesSince(WROTE_AGAIN_UNTIL_POSTED_RULES) && noteOwed(record, WROTE_AGAIN_MARK);
  if (!record.ownership.team_told_of_new_messages || toldNoteOwed) {
    record.ownership.team_told_of_new_messages = true;
    const naming = rulesSince(KEPT_PROMISES_RULES);
    // The turn's own read quotes what a later read could not (Intercom refused it).
    const ids = conversation.state.metadata.message_part_ids ?? [];
    conversation.state.messages.forEach((m, i) => {
      const id = ids[i];
      if (m.role === 'user' && id && !conversation.messagesRead.has(id)) conversation.messagesRead.set(id, m.content);
    });
    const handled = new Set(record.handled_part_ids);
    const unhandled = [...conversation.messagesRead.keys()].filter((id) => !handled.has(id));
    const named = naming ? [...new Set([...delivered, ...unhandled])] : [];
    // What no read holds (Intercom refused it) is quoted from the preview its webhook carried.
    const preview = (id: string) => deliveries.find((d) => d.part_id === id)?.preview ?? [];
    const quoted = [
      ...named.flatMap((id) => conversation.messagesRead.get(id) ?? preview(id)),
      ...(naming ? deliveries.flatMap((d) => (!d.part_id && d.preview ? d.preview : [])) : []),
    ];
    const note = await postNote(
      conversation.turn,
      `${WROTE_AGAIN_MARK} The team owns this conversation since ${record.ownership.since} ` +
        `(${record.ownership.reason}), so Melvin does not answer until a lead hands it back (handBack).` +
        (quoted.length ? `\n${talentWrote(quoted).join('\n')}` : ''),
      'note new message for the team',
    );
    markHandled(record, named);
    // Since TOLD_WHEN_LANDED_RULES the team counts as told only by a note that went out at once: one queued behind an
    // owed hand-over note lands after it, and a message that comes before the hand-over note lands stands before it in
    // Intercom, while Melvin still owned the conversation there; no note would name it (the model-based test found it).
    if (rulesSince(TOLD_WHEN_LANDED_RULES)) record.ownership.team_told_of_new_messages = note.added;
  }
  markHandled(record, delivered);
}

/** A cancellation the run has not met yet (it came while the reply, the hand-over or Finalize went out). */
function throwIfCancelled(): void {
  if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('the run was cancelled');
}

/** The deliveries no turn has answered or handed over yet. */
const unanswered = (conversation: ConversationControls) =>
  unansweredDeliveries(conversation.record, conversation.state.metadata.user_messages, conversation.consumedDeliveries);

/**
 * Between turns: waits for a message to answer, an operator's request, or the team closing the conversation, until the
 * quiet period passes. Returns the deliveries the next turn answers, or none when the conversation's workflow ends.
 */
export async function waitForNextMessage(
  conversation: ConversationControls,
  quietPeriodSeconds: number,
): Promise<ReceivedUserMessage[]> {
  const { turn, state, record } = conversation;
  state.metadata.phase = 'waiting';
  // Since KEPT_PROMISES_RULES the run does not end while it owes Intercom a write, nor before its last read, nor while
  // a lead's request is still being taken (an update that waited for the run's first read): what came meanwhile is
  // done first.
  const owing = !turn.legacy && rulesSince(KEPT_PROMISES_RULES);
  const mayEnd = async () => {
    if (!owing) return true;
    if (writesOwed(record) || !(await nothingUntold(conversation))) return false;
    await condition(allHandlersFinished);
    return !newsWaiting(conversation);
  };
  for (;;) {
    if (owing) await writeOwed(conversation);
    if (!turn.legacy) {
      await settleOperatorRequests(conversation);
      throwIfCancelled();
    }
    // Runs from before ended on a close at once, leaving a message that came with it unanswered and untold.
    if (turn.legacy && conversation.closedByTeam) return [];
    const waiting = unanswered(conversation);
    // Before a message is left to the team, Intercom's course has the last word: a teammate's webhook giving the
    // conversation back to Melvin may not have come yet.
    if (waiting.length && record.ownership.owner === 'team' && !turn.legacy) await readOwnerAgain(conversation);
    if (waiting.length && record.ownership.owner === 'melvin') return waiting;
    if (waiting.length) {
      await leaveToTeam(conversation, waiting);
      continue;
    }
    if (conversation.closedByTeam && !somethingOwed(conversation)) {
      if (!owing) return [];
      // A message written after the close (it reopens the conversation) whose webhook has not come is found by the
      // read before the run ends, as when the quiet period passes.
      if (rulesSince(LAST_READ_RULES)) {
        if (await mayEnd()) return [];
        continue;
      }
      await condition(allHandlersFinished);
      if (!newsWaiting(conversation)) return [];
      continue;
    }
    if (turn.legacy && escalationDue(conversation)) {
      await escalateAfterTurn(conversation, takeOperatorEscalation(turn));
      continue;
    }
    if (quietPeriodSeconds <= 0 && !somethingOwed(conversation)) {
      if (await mayEnd()) return [];
      continue;
    }
    // While something is owed the run wakes to try again; else it waits out the quiet period.
    const retrying = owing && somethingOwed(conversation);
    const waitMs = retrying ? conversation.owedDueAt - Date.now() : quietPeriodSeconds * 1000;
    // The next try is due already (a condition's timeout of 0 would mean none at all): a write is tried again at the
    // loop's top, the read here.
    if (waitMs <= 0) {
      if (!writesOwed(record) && (await mayEnd())) return [];
      continue;
    }
    showDetails(
      turn,
      retrying
        ? `${outcomeDetails(turn)}\n\nTurn over: Intercom refused a write (${owedError(conversation)}); trying again in ${durationText(Math.ceil(waitMs / 1000))}.`
        : `${outcomeDetails(turn)}\n\nTurn over: waiting for the user's next message, for ${durationText(quietPeriodSeconds)} at most.`,
    );
    conversation.idle = !retrying;
    conversation.waitingForIntercom = retrying;
    const woken = await condition(
      () => newsWaiting(conversation) || (conversation.closedByTeam && !retrying),
      waitMs,
    ).finally(() => {
      conversation.idle = false;
      conversation.waitingForIntercom = false;
    });
    if (!woken && (await mayEnd())) return [];
  }
}

/** Whether something came that the run must act on before it may wait or end. */
function newsWaiting(conversation: ConversationControls): boolean {
  return (
    unanswered(conversation).length > 0 ||
    escalationDue(conversation) ||
    conversation.handBackNotes.length > 0 ||
    conversation.ownerInDoubt
  );
}

/** Why the oldest write owed was refused, for the Temporal UI's details. */
function owedError(conversation: ConversationControls): string {
  if (conversation.owedRead && !writesOwed(conversation.record)) return 'the read before the workflow ends';
  return owed(conversation.record)[0]?.error ?? 'unknown';
}

/**
 * The run was cancelled after its turn's outcome went out, or between turns: what operators asked is done, and a
 * message nobody answered goes to the team (Melvin will not answer it: its workflow ends), then the run ends cancelled.
 */
export async function endCancelled(conversation: ConversationControls, err: unknown): Promise<never> {
  await CancellationScope.nonCancellable(async () => {
    await settleOperatorRequests(conversation);
    await handOverWaiting(conversation);
    await handOverUntold(conversation);
    await writeOwedBeforeTheEnd(conversation);
  });
  throw err;
}

/**
 * Since CANCELLED_OWED_RULES a cancelled run writes what it owes Intercom before it ends, as any other run does: the
 * record that holds the writes ends with the run, so a status, snooze or note Intercom refused until then was never
 * written (the model-based test found a hand-over whose status stayed `success`). It tries again at the same pace, and
 * gives a write up after a week as any run does; an operator who wants the run gone at once terminates it. Once all is
 * written, what came meanwhile goes to the team, which may owe a write again.
 */
async function writeOwedBeforeTheEnd(conversation: ConversationControls): Promise<void> {
  const { turn, record } = conversation;
  if (turn.legacy || !rulesSince(CANCELLED_OWED_RULES)) return;
  while (writesOwed(record)) {
    const waitMs = conversation.owedDueAt - Date.now();
    if (waitMs > 0) {
      showDetails(
        turn,
        `${outcomeDetails(turn)}\n\nCancelled: Intercom refused a write (${owedError(conversation)}); trying again in ${durationText(Math.ceil(waitMs / 1000))} before the run ends.`,
      );
      conversation.waitingForIntercom = true;
      await sleep(waitMs).finally(() => {
        conversation.waitingForIntercom = false;
      });
    }
    await writeOwed(conversation);
    if (writesOwed(record)) continue;
    await settleOperatorRequests(conversation);
    await handOverUntold(conversation);
  }
}

/** What no turn will answer goes to the team: escalated while Melvin owns the conversation, else named in a note. */
async function handOverWaiting(conversation: ConversationControls): Promise<void> {
  const waiting = unanswered(conversation);
  if (waiting.length && conversation.record.ownership.owner === 'melvin') {
    await escalateAfterTurn(conversation, escalation('operator', CANCELLED_REASON, 'temporal'));
  } else if (waiting.length) {
    await leaveToTeam(conversation, waiting);
  }
}

/** Reads of the conversation a cancelled run makes at most before it ends, each after a write of its own. */
const CANCELLED_READS = 3;

/**
 * A cancelled run reads the conversation before it ends, as any run does: a message no webhook told of yet (its
 * webhook may come once the run has ended, or later still from the ingress's outbox) is older than the run's last note,
 * so the next workflow would take it as handled; it goes to the team now. Runs from before KEPT_PROMISES_RULES ended
 * without.
 */
export async function handOverUntold(conversation: ConversationControls): Promise<void> {
  if (conversation.turn.legacy || !rulesSince(KEPT_PROMISES_RULES)) return;
  const waitingToo = rulesSince(CANCELLED_WAITING_RULES);
  for (let read = 0; read < CANCELLED_READS; read++) {
    await handOverWaiting(conversation);
    const allRead = await nothingUntold(conversation);
    // A run that cannot read the conversation now has nobody left to read it again: what its notes said stands.
    if (!waitingToo && (allRead || conversation.owedRead)) return;
    if (conversation.owedRead) break;
    // Since CANCELLED_WAITING_RULES a message whose webhook came while the last note went out is not named by it: it
    // goes to the team too (the read left it alone, since a webhook had told of it).
    if (allRead && unanswered(conversation).length === 0) return;
  }
  await handOverWaiting(conversation);
}
