// The supportConversation workflow: one Intercom conversation's life. Each run answers one user turn (./graph), then
// waits for the next message (./between-turns) and continues as new for it; its controls are ./conversation-controls.
import {
  CancellationScope,
  continueAsNew,
  isCancellation,
  log,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { searchAttributes, type SupportConversationInput } from '../contract/shared';
import type { ConversationOutcome, ReceivedUserMessage } from '../contract/state';
import {
  CANCELLED_REASON,
  endCancelled,
  escalateAfterTurn,
  handOverUntold,
  recordThisTurn,
  waitForNextMessage,
} from './between-turns';
import { ConversationControls } from './conversation-controls';
import { runTurn } from './graph';
import { operatorEscalationWaiting, takeOperatorEscalation } from './nodes/helpers';
import { CURRENT_RULES_PATCH, isLegacyRun, rulesSince } from './versions/patches';
import { escalation } from './routing/routing';
import { newTurn } from './nodes/turn';
import { newState } from './records/turn-state';

export async function supportConversation(input: SupportConversationInput): Promise<ConversationOutcome> {
  const startedAt = Date.now();
  const state = newState(input, new Date(startedAt).toISOString());
  const turn = newTurn(input, state, startedAt);
  turn.legacy = isLegacyRun();
  const conversationId = input.conversationId;
  // Runs started before conversations outlived their turn carry no quiet period, and end after the turn as they did.
  const quietPeriodSeconds = input.quietPeriodSeconds ?? 0;
  const record = state.metadata.conversation;
  const controls = ConversationControls.install(turn, startedAt);

  // Set at the start by the ingress and the CLI, and kept by continue-as-new: written here only for a run started
  // without it (runs from before the current rules always wrote it, and replay so).
  if (
    !rulesSince(CURRENT_RULES_PATCH) ||
    workflowInfo().typedSearchAttributes.get(searchAttributes.conversationId) !== conversationId
  ) {
    upsertSearchAttributes([{ key: searchAttributes.conversationId, value: conversationId }]);
  }
  // Workflow logs carry the workflow and run ids; message text never goes into a log line.
  log.info('turn started', { topic: input.trigger?.topic ?? null, max_hops: state.max_hops });

  try {
    // An operator's escalation that came with the start goes straight to Escalate: there is no agent to run.
    if (operatorEscalationWaiting(turn)) {
      turn.replyStarted = true;
      turn.escalation = takeOperatorEscalation(turn);
      await runTurn(turn, 'escalate');
    } else {
      await runTurn(turn, 'initialize');
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Cancelled from the Temporal UI or CLI during the turn: the conversation still gets its escalation note and Melvin
    // Status, so the team knows nobody is answering; then the run ends as cancelled.
    await CancellationScope.nonCancellable(async () => {
      await escalateAfterTurn(controls, escalation('operator', CANCELLED_REASON, 'temporal'));
      await handOverUntold(controls);
    });
    throw err;
  }
  // The agent is over: an operator's escalation from now on is handled between turns, with nothing left to cancel.
  turn.replyStarted = true;
  const answering = turn.ownerKnown();
  if (answering) await answering;
  recordThisTurn(controls);
  controls.applyHeldHandBacks();
  let next: ReceivedUserMessage[] = [];
  try {
    next = await waitForNextMessage(controls, quietPeriodSeconds);
  } catch (err) {
    if (turn.legacy || !isCancellation(err)) throw err;
    await endCancelled(controls, err);
  }
  const latest = next.at(-1);
  if (latest) {
    log.info('continuing as new for the next turn', { deliveries: next.length });
    // The next run keeps every setting this one was started with (hops, snooze, quiet period, hand-over texts, TTLs).
    await continueAsNew<typeof supportConversation>({
      ...input,
      trigger: {
        topic: 'conversation.user.replied',
        notificationId: latest.notification_id,
        receivedAt: latest.received_at,
      },
      quietPeriodSeconds,
      conversation: record,
      pending: next,
    });
  }
  log.info('conversation workflow ends', { turns: record.turn_count, quiet_period_s: quietPeriodSeconds });
  return {
    conversation_id: conversationId,
    ended_because: controls.closedByTeam
      ? 'closed by the team'
      : quietPeriodSeconds > 0
        ? 'quiet period passed'
        : 'turn over (no quiet period)',
    turns: record.turn_count,
    owner: record.ownership.owner,
    last_turn: record.turns.at(-1) ?? null,
  };
}
