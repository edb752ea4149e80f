// What a conversation's run does once its turn is over: records the turn, acts on what operators and teammates asked
// meanwhile, and waits for the user's next message. Workflow code: every side effect is an activity.
import {
  CancellationScope,
  CancelledFailure,
  condition,
  isCancellation,
  log,
  workflowInfo,
} from '@temporalio/workflow';
import { WROTE_AGAIN_MARK } from '../contract/notes';
import type { ReceivedUserMessage } from '../contract/state';
import { closeTurn, markHandled, unansweredDeliveries, type TurnCoverage } from './conversation-record';
import type { ConversationControls } from './conversation-controls';
import { runTurn } from './graph';
import {
  describeFailure,
  inShadowMode,
  latestOwnerChange,
  operatorEscalationWaiting,
  outcomeDetails,
  postNote,
  showDetails,
  takeOperatorEscalation,
  takeOwnerChange,
} from './nodes/helpers';
import { intercomReads } from './policies';
import { escalation, type Escalation } from './routing';
import { durationText } from './turn-state';

export const CANCELLED_REASON = 'The run was cancelled in Temporal before Melvin finished';

/**
 * What the turn's outcome covered: what its draft saw when the reply went out (or was noted in shadow mode), or the
 * conversation as it stood when a hand-over note went out. Runs from before keep their own rule (undefined).
 */
function turnCoverage(c: ConversationControls): TurnCoverage | undefined {
  const { turn, state, record } = c;
  if (turn.legacy) return undefined;
  if (turn.handedOver) return turn.handedOver;
  const answered = state.response_delivery?.delivery_successful || state.metadata.approval?.mode === 'shadow';
  if (answered && turn.draftSaw) return { ...turn.draftSaw, handsOver: false };
  // A turn that found nothing new to answer consumed the deliveries its fetch held (about messages answered before);
  // one that found the team owning the conversation leaves them for the team to be told of.
  const skippedFor = record.ownership.owner === 'team' ? c.consumedDeliveries : state.metadata.user_messages_fetched;
  return { partIds: [], deliveries: skippedFor, handsOver: false };
}

/** The run's turn into the conversation record; what it did not answer or hand over waits for the next turn. */
export function recordThisTurn(c: ConversationControls): void {
  const { turn } = c;
  const consumed = closeTurn(c.record, c.state, {
    runId: workflowInfo().runId,
    fetchedUserPartIds: turn.fetchedUserPartIds,
    gathered: turn.gathered,
    ttl: turn.input.toolResultTtl,
    teamAnswer: c.teamAnswerDuringTurn,
    now: Date.now(),
    coverage: turnCoverage(c),
  });
  c.consumedDeliveries = Math.max(c.consumedDeliveries, consumed);
}

/**
 * Hands the conversation over once the turn's own course is over or cut short (an operator between turns, a cancelled
 * run): Escalate with its own note, Finalize, and the turn recorded again with its new outcome. Runs from before went
 * straight to Finalize when the turn had escalated already.
 */
export async function escalateAfterTurn(c: ConversationControls, e: Escalation): Promise<void> {
  const { turn } = c;
  turn.escalation = e;
  c.escalatingAfterTurn = e.reason;
  try {
    await runTurn(turn, turn.legacy && c.state.escalate ? 'finalize' : 'escalate');
  } finally {
    c.escalatingAfterTurn = null;
  }
  recordThisTurn(c);
}

/** Runs from before every accepted escalation was acted on acted between turns only while Melvin owned the turn. */
function escalationDue(c: ConversationControls): boolean {
  if (!c.turn.legacy) return operatorEscalationWaiting(c.turn);
  return !!c.state.metadata.forced_escalation && !c.state.escalate && c.record.ownership.owner === 'melvin';
}

/**
 * What operators asked for and the run has yet to do (the notes of hand-backs, then an escalation), after reading who
 * owns the conversation by its course in Intercom when a teammate acted on it.
 */
async function settleOperatorRequests(c: ConversationControls): Promise<void> {
  while (c.handBackNotes.length) {
    await postNote(c.turn, c.handBackNotes[0]!, 'note hand-back');
    c.handBackNotes.shift();
  }
  // Who owns the conversation decides whether the escalation tells the user: a teammate's webhook that came after
  // the turn's own escalation, though it happened before it (same second), must not make Melvin tell them twice.
  if (c.ownerInDoubt) await readOwnerAgain(c);
  if (escalationDue(c)) await escalateAfterTurn(c, takeOperatorEscalation(c.turn));
}

/** The owner the conversation's course says now; when Intercom cannot be read, the webhooks' word stands. */
async function readOwnerAgain(c: ConversationControls): Promise<void> {
  const { record } = c;
  try {
    const course = await intercomReads().readOwnership.executeWithOptions(
      { summary: 'read who owns the conversation' },
      [{ conversationId: c.turn.input.conversationId }],
    );
    c.ownerInDoubt = false;
    const latest = latestOwnerChange(course.ownership_events, inShadowMode(c.turn));
    if (latest && latest.owner !== record.ownership.owner) {
      takeOwnerChange(record, latest);
      log.info('owner read again from the conversation', { owner: record.ownership.owner });
    }
  } catch (err) {
    if (isCancellation(err)) throw err;
    c.ownerInDoubt = false;
    log.warn('could not read who owns the conversation', { error: describeFailure(err) });
  }
}

/** Messages while the team owns the conversation: handed over unanswered, and the team told once. */
async function leaveToTeam(c: ConversationControls, deliveries: ReceivedUserMessage[]): Promise<void> {
  const { record } = c;
  c.consumedDeliveries = c.state.metadata.user_messages.length;
  if (!record.ownership.team_told_of_new_messages) {
    record.ownership.team_told_of_new_messages = true;
    await postNote(
      c.turn,
      `${WROTE_AGAIN_MARK} The team owns this conversation since ${record.ownership.since} ` +
        `(${record.ownership.reason}), so Melvin does not answer until a lead hands it back (handBack).`,
      'note new message for the team',
    );
  }
  markHandled(
    record,
    deliveries.flatMap((d) => d.part_id ?? []),
  );
}

/** A cancellation the run has not met yet (it came while the reply, the hand-over or Finalize went out). */
function throwIfCancelled(): void {
  if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('the run was cancelled');
}

/** The deliveries no turn has answered or handed over yet. */
const unanswered = (c: ConversationControls) =>
  unansweredDeliveries(c.record, c.state.metadata.user_messages, c.consumedDeliveries);

/**
 * Between turns: waits for a message to answer, an operator's request, or the team closing the conversation, until the
 * quiet period passes. Returns the deliveries the next turn answers, or none when the conversation's workflow ends.
 */
export async function waitForNextMessage(
  c: ConversationControls,
  quietPeriodSeconds: number,
): Promise<ReceivedUserMessage[]> {
  const { turn, state, record } = c;
  state.metadata.phase = 'waiting';
  for (;;) {
    if (!turn.legacy) {
      await settleOperatorRequests(c);
      throwIfCancelled();
    }
    // Runs from before ended on a close at once, leaving a message that came with it unanswered and untold.
    if (turn.legacy && c.closedByTeam) return [];
    const waiting = unanswered(c);
    // Before a message is left to the team, Intercom's course has the last word: a teammate's webhook giving the
    // conversation back to Melvin may not have come yet.
    if (waiting.length && record.ownership.owner === 'team' && !turn.legacy) await readOwnerAgain(c);
    if (waiting.length && record.ownership.owner === 'melvin') return waiting;
    if (waiting.length) {
      await leaveToTeam(c, waiting);
      continue;
    }
    if (c.closedByTeam) return [];
    if (turn.legacy && escalationDue(c)) {
      await escalateAfterTurn(c, takeOperatorEscalation(turn));
      continue;
    }
    if (quietPeriodSeconds <= 0) return [];
    showDetails(
      turn,
      `${outcomeDetails(turn)}\n\nTurn over: waiting for the user's next message, for ${durationText(quietPeriodSeconds)} at most.`,
    );
    const woken = await condition(
      () =>
        unanswered(c).length > 0 || escalationDue(c) || c.handBackNotes.length > 0 || c.ownerInDoubt || c.closedByTeam,
      quietPeriodSeconds * 1000,
    );
    if (!woken) return [];
  }
}

/**
 * The run was cancelled after its turn's outcome went out, or between turns: what operators asked is done, and a
 * message nobody answered goes to the team (Melvin will not answer it: its workflow ends), then the run ends cancelled.
 */
export async function endCancelled(c: ConversationControls, err: unknown): Promise<never> {
  await CancellationScope.nonCancellable(async () => {
    await settleOperatorRequests(c);
    const waiting = unanswered(c);
    if (waiting.length && c.record.ownership.owner === 'melvin') {
      await escalateAfterTurn(c, escalation('operator', CANCELLED_REASON, 'temporal'));
    } else if (waiting.length) {
      await leaveToTeam(c, waiting);
    }
  });
  throw err;
}
