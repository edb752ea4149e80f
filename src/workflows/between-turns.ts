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
import { closeTurn, markHandled, unansweredDeliveries, type TurnCoverage } from './rules/conversation-record';
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
import { intercomReads } from './rules/retry-policies';
import { escalation, type Escalation } from './rules/routing';
import { durationText } from './rules/turn-state';

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

/** The owner the conversation's course says now; when Intercom cannot be read, the webhooks' word stands. */
async function readOwnerAgain(conversation: ConversationControls): Promise<void> {
  const { record } = conversation;
  try {
    const course = await intercomReads().readOwnership.executeWithOptions(
      { summary: 'read who owns the conversation' },
      [{ conversationId: conversation.turn.input.conversationId }],
    );
    conversation.ownerInDoubt = false;
    const latest = latestOwnerChange(course.ownership_events, inShadowMode(conversation.turn));
    if (latest && latest.owner !== record.ownership.owner) {
      takeOwnerChange(record, latest);
      log.info('owner read again from the conversation', { owner: record.ownership.owner });
    }
  } catch (err) {
    if (isCancellation(err)) throw err;
    conversation.ownerInDoubt = false;
    log.warn('could not read who owns the conversation', { error: describeFailure(err) });
  }
}

/** Messages while the team owns the conversation: handed over unanswered, and the team told once. */
async function leaveToTeam(conversation: ConversationControls, deliveries: ReceivedUserMessage[]): Promise<void> {
  const { record } = conversation;
  conversation.consumedDeliveries = conversation.state.metadata.user_messages.length;
  if (!record.ownership.team_told_of_new_messages) {
    record.ownership.team_told_of_new_messages = true;
    await postNote(
      conversation.turn,
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
  for (;;) {
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
    if (conversation.closedByTeam) return [];
    if (turn.legacy && escalationDue(conversation)) {
      await escalateAfterTurn(conversation, takeOperatorEscalation(turn));
      continue;
    }
    if (quietPeriodSeconds <= 0) return [];
    showDetails(
      turn,
      `${outcomeDetails(turn)}\n\nTurn over: waiting for the user's next message, for ${durationText(quietPeriodSeconds)} at most.`,
    );
    conversation.idle = true;
    const woken = await condition(
      () =>
        unanswered(conversation).length > 0 ||
        escalationDue(conversation) ||
        conversation.handBackNotes.length > 0 ||
        conversation.ownerInDoubt ||
        conversation.closedByTeam,
      quietPeriodSeconds * 1000,
    ).finally(() => (conversation.idle = false));
    if (!woken) return [];
  }
}

/**
 * The run was cancelled after its turn's outcome went out, or between turns: what operators asked is done, and a
 * message nobody answered goes to the team (Melvin will not answer it: its workflow ends), then the run ends cancelled.
 */
export async function endCancelled(conversation: ConversationControls, err: unknown): Promise<never> {
  await CancellationScope.nonCancellable(async () => {
    await settleOperatorRequests(conversation);
    const waiting = unanswered(conversation);
    if (waiting.length && conversation.record.ownership.owner === 'melvin') {
      await escalateAfterTurn(conversation, escalation('operator', CANCELLED_REASON, 'temporal'));
    } else if (waiting.length) {
      await leaveToTeam(conversation, waiting);
    }
  });
  throw err;
}
