// The supportConversation workflow: one Intercom conversation's life. Each run answers one user turn (./turn), then
// waits for the next message and continues as new for it; signals, queries and the update are its controls.
import {
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  decideReplyUpdate,
  forceEscalationSignal,
  handBackSignal,
  newUserMessageSignal,
  progressQuery,
  searchAttributes,
  stateQuery,
  teamActionSignal,
  type SupportConversationInput,
} from '../shared';
import type { ConversationOutcome, ReceivedUserMessage, TeamAnswer } from '../state';
import {
  closeTurn,
  handBackToMelvin,
  handOverToTeam,
  markHandled,
  recordTeamAnswer,
  unansweredDeliveries,
} from './conversation-record';
import { escalation, replyDecisionProblem, type Escalation } from './routing';
import { operatorEscalation, outcomeDetails, postNote, showDetails } from './nodes/helpers';
import { newTurn, recordTurnSummary, runGraph } from './turn';
import { durationText, newState } from './turn-state';

export async function supportConversation(input: SupportConversationInput): Promise<ConversationOutcome> {
  const startedAt = Date.now();
  const state = newState(input, new Date(startedAt).toISOString());
  const turn = newTurn(input, state, startedAt);
  const conversationId = input.conversationId;
  // Runs started before conversations outlived their turn carry no quiet period, and end after the turn as they did.
  const quietPeriodSeconds = input.quietPeriodSeconds ?? 0;
  const record = state.metadata.conversation;
  /** Deliveries before this index are answered or handed over; the rest wait for the next turn. */
  let consumedDeliveries = 0;
  /** A teammate closed the conversation in Intercom: the workflow ends once the turn in progress is over. */
  let closedByTeam = false;
  /** Shadow mode: a teammate's answer that came while this run's turn was still going. */
  let teamAnswerDuringTurn: TeamAnswer | null = null;
  const teamActionsSeen = new Set<string>();

  setHandler(stateQuery, () => state);
  setHandler(progressQuery, () => ({
    node: state.metadata.current_node,
    hop: state.hops.length,
    elapsed_ms: Date.now() - startedAt,
    phase: state.metadata.phase,
    turns: record.turn_count,
  }));
  setHandler(newUserMessageSignal, (message) => {
    const notificationId = String(message?.notificationId ?? '');
    // Intercom redelivers webhooks; a delivery already seen is the same message, not a new one.
    if (state.metadata.user_messages.some((m) => m.notification_id === notificationId)) return;
    // Whatever ingress replica sent it, a delivery for a part an earlier turn answered or handed over is no news.
    if (message?.partId && record.handled_part_ids.includes(String(message.partId))) {
      log.info('delivery for a message already handled: ignored', { part_id: String(message.partId) });
      return;
    }
    state.metadata.user_messages.push({
      notification_id: notificationId,
      part_id: message?.partId ?? null,
      received_at: new Date().toISOString(),
    });
  });
  setHandler(forceEscalationSignal, (request) => {
    if (state.metadata.forced_escalation) return;
    state.metadata.forced_escalation = {
      reason:
        typeof request?.reason === 'string' && request.reason.trim()
          ? request.reason.trim()
          : 'Escalation requested by an operator',
      requested_by: typeof request?.requestedBy === 'string' && request.requestedBy ? request.requestedBy : 'unknown',
      received_at: new Date().toISOString(),
    };
    log.info('forced escalation received', { reason: state.metadata.forced_escalation.reason });
    if (!turn.replyStarted) turn.agentScope.cancel();
  });
  setHandler(teamActionSignal, (event) => {
    const notificationId = String(event?.notificationId ?? '');
    if (teamActionsSeen.has(notificationId)) return;
    teamActionsSeen.add(notificationId);
    const now = new Date().toISOString();
    const ownerBefore = record.ownership.owner;
    if (event?.action === 'closed') {
      closedByTeam = true;
      handOverToTeam(record, 'a teammate closed the conversation in Intercom', now);
    } else if (event?.action === 'assigned' && event.toMelvin) {
      handBackToMelvin(record, 'assigned to Melvin in Intercom', now);
    } else if (event?.action === 'assigned') {
      handOverToTeam(record, 'a teammate was assigned the conversation in Intercom', now);
    } else if (event?.action === 'replied') {
      handOverToTeam(record, 'a teammate replied in Intercom', now);
      if (typeof event.text === 'string' && event.text) {
        const answer = { text: event.text, by: typeof event.by === 'string' ? event.by : null, at: now };
        // During a turn the turn is not recorded yet: its close keeps the answer if the turn only noted a draft.
        if (state.metadata.phase === 'turn') teamAnswerDuringTurn = answer;
        else recordTeamAnswer(record, answer);
      }
    }
    // After the turn, a takeover reopens what the turn answered: the report then does not count it resolved.
    if (state.metadata.phase === 'waiting' && ownerBefore === 'melvin' && record.ownership.owner === 'team') {
      recordTurnSummary(turn, record.ownership.reason);
    }
    log.info('team action received', { action: event?.action ?? null, owner: record.ownership.owner });
  });
  setHandler(
    decideReplyUpdate,
    (decision) => {
      turn.decision = decision;
      return { accepted: decision.decision };
    },
    {
      validator: (decision) => {
        if (state.metadata.approval?.outcome !== 'waiting' || turn.decision) {
          throw new Error(`no draft of conversation ${conversationId} is waiting for a decision`);
        }
        const problem = replyDecisionProblem(decision);
        if (problem) throw new Error(problem);
      },
    },
  );
  setHandler(handBackSignal, (request) => {
    if (record.ownership.owner !== 'team') return;
    const reason = typeof request?.reason === 'string' && request.reason.trim() ? request.reason.trim() : 'handed back';
    const by = typeof request?.requestedBy === 'string' && request.requestedBy ? request.requestedBy : 'unknown';
    handBackToMelvin(record, `${reason} (${by})`, new Date().toISOString());
    log.info('conversation handed back to Melvin', { requested_by: by });
  });

  upsertSearchAttributes([{ key: searchAttributes.conversationId, value: conversationId }]);
  // Workflow logs carry the workflow and run ids; message text never goes into a log line.
  log.info('turn started', { topic: input.trigger?.topic ?? null, max_hops: state.max_hops });

  /** The run's turn into the conversation record; any escalation or undelivered reply hands it to the team. */
  function recordThisTurn(): void {
    consumedDeliveries = closeTurn(record, state, {
      runId: workflowInfo().runId,
      fetchedUserPartIds: turn.fetchedUserPartIds,
      gathered: turn.gathered,
      ttl: input.toolResultTtl,
      teamAnswer: teamAnswerDuringTurn,
      now: Date.now(),
    });
  }

  /**
   * Hands the conversation over once the turn's own course is over or cut short (an operator between turns, a cancelled
   * run): Escalate unless the turn already escalated, Finalize, and the turn recorded again with its new outcome.
   */
  async function escalateAfterTurn(e: Escalation): Promise<void> {
    turn.escalation = e;
    await runGraph(turn, state.escalate ? 'finalize' : 'escalate');
    recordThisTurn();
  }

  function operatorEscalationPending(): boolean {
    return !!state.metadata.forced_escalation && !state.escalate && record.ownership.owner === 'melvin';
  }

  /** Messages while the team owns the conversation: handed over unanswered, and the team told once. */
  async function leaveToTeam(deliveries: ReceivedUserMessage[]): Promise<void> {
    consumedDeliveries = state.metadata.user_messages.length;
    if (!record.ownership.team_told_of_new_messages) {
      record.ownership.team_told_of_new_messages = true;
      await postNote(
        turn,
        `💬 The user wrote again. The team owns this conversation since ${record.ownership.since} ` +
          `(${record.ownership.reason}), so Melvin does not answer until a lead hands it back (handBack).`,
        'note new message for the team',
      );
    }
    markHandled(
      record,
      deliveries.flatMap((d) => d.part_id ?? []),
    );
  }

  /**
   * Between turns: waits for a message to answer or an operator's escalation, until the quiet period passes. Returns
   * the deliveries the next turn answers, or none when the conversation's workflow ends.
   */
  async function waitForNextMessage(): Promise<ReceivedUserMessage[]> {
    state.metadata.phase = 'waiting';
    for (;;) {
      if (closedByTeam) return [];
      const unanswered = unansweredDeliveries(record, state.metadata.user_messages, consumedDeliveries);
      if (unanswered.length && record.ownership.owner === 'melvin') return unanswered;
      if (unanswered.length) {
        await leaveToTeam(unanswered);
        continue;
      }
      if (operatorEscalationPending()) {
        await escalateAfterTurn(operatorEscalation(turn));
        continue;
      }
      if (quietPeriodSeconds <= 0) return [];
      showDetails(
        turn,
        `${outcomeDetails(turn)}\n\nTurn over: waiting for the user's next message, for ${durationText(quietPeriodSeconds)} at most.`,
      );
      const woken = await condition(
        () =>
          unansweredDeliveries(record, state.metadata.user_messages, consumedDeliveries).length > 0 ||
          operatorEscalationPending() ||
          closedByTeam,
        quietPeriodSeconds * 1000,
      );
      if (!woken) return [];
    }
  }

  try {
    // An operator's escalation that came with the start goes straight to Escalate: there is no agent to run.
    const forced = state.metadata.forced_escalation;
    if (forced) {
      turn.replyStarted = true;
      turn.escalation = operatorEscalation(turn);
    }
    await runGraph(turn, forced ? 'escalate' : 'initialize');
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Cancelled from the Temporal UI or CLI during the turn: the conversation still gets its escalation note and Melvin
    // Status, so the team knows nobody is answering; then the run ends as cancelled.
    await CancellationScope.nonCancellable(() =>
      escalateAfterTurn(escalation('operator', 'The run was cancelled in Temporal before Melvin finished', 'temporal')),
    );
    throw err;
  }
  // The agent is over: an operator's escalation from now on is handled between turns, with nothing left to cancel.
  turn.replyStarted = true;
  recordThisTurn();
  const next = await waitForNextMessage();
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
    ended_because: closedByTeam
      ? 'closed by the team'
      : quietPeriodSeconds > 0
        ? 'quiet period passed'
        : 'turn over (no quiet period)',
    turns: record.turn_count,
    owner: record.ownership.owner,
    last_turn: record.turns.at(-1) ?? null,
  };
}
