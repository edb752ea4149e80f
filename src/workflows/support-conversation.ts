// The supportConversation workflow: one Intercom conversation's life. Each run answers one user turn (./graph), then
// waits for the next message and continues as new for it; signals, queries and updates are its controls.
import {
  CancellationScope,
  CancelledFailure,
  condition,
  continueAsNew,
  isCancellation,
  log,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { HANDED_BACK_MARK, WROTE_AGAIN_MARK } from '../contract/notes';
import {
  decideReplyUpdate,
  forceEscalationSignal,
  handBackSignal,
  newUserMessageSignal,
  progressQuery,
  requestEscalationUpdate,
  requestHandBackUpdate,
  searchAttributes,
  stateQuery,
  teamActionSignal,
  type OperatorAnswer,
  type SupportConversationInput,
  type TeamAction,
} from '../contract/shared';
import type { ConversationOutcome, OperatorRequest, ReceivedUserMessage, TeamAnswer } from '../contract/state';
import {
  closeTurn,
  handBackToMelvin,
  handOverToTeam,
  markHandled,
  recordTeamAnswer,
  unansweredDeliveries,
  type TurnCoverage,
} from './conversation-record';
import { escalation, replyDecisionProblem, type Escalation } from './routing';
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
import {
  escalationRefusal,
  handBackRefusal,
  operatorRequest,
  recordRequest,
  requestProblem,
  type RunMoment,
} from './operator-requests';
import { recordTurnSummary, runTurn } from './graph';
import { newTurn } from './turn';
import { durationText, newState } from './turn-state';
import { CURRENT_RULES_PATCH, LOCAL_AGENT_CALLS_RULES, isLegacyRun, rulesSince } from './patches';

const CANCELLED_REASON = 'The run was cancelled in Temporal before Melvin finished';

/**
 * A webhook Intercom delivered late tells of something older than the conversation's current owner, and must not undo
 * it (a teammate's assignment to Melvin arriving after a lead's escalation). Intercom dates events to the second: within
 * the owner's own second it is taken, and the course read again between turns (`ownerInDoubt`) settles the order.
 */
function isStale(event: TeamAction | undefined, since: string | null): boolean {
  if (typeof event?.at !== 'string' || !since) return false;
  return Math.floor(Date.parse(event.at) / 1000) < Math.floor(Date.parse(since) / 1000);
}

/**
 * When a teammate's action happened, as its notification says: the new owner's `since`, which a later delivery of an
 * older action is compared with. A signal can reach the workflow seconds after it came (it waits while the agent's
 * local activities run), and dating the change then would make an action that happened meanwhile look older than it.
 * Runs from before dated it when it reached them, and replay so.
 */
function whenItHappened(event: TeamAction | undefined): string {
  const at = typeof event?.at === 'string' ? Date.parse(event.at) : NaN;
  if (!rulesSince(LOCAL_AGENT_CALLS_RULES) || Number.isNaN(at)) return new Date().toISOString();
  return new Date(at).toISOString();
}

export async function supportConversation(input: SupportConversationInput): Promise<ConversationOutcome> {
  const startedAt = Date.now();
  const state = newState(input, new Date(startedAt).toISOString());
  const turn = newTurn(input, state, startedAt);
  turn.legacy = isLegacyRun();
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
  /** Hand-backs accepted whose note has not gone out yet: the note is how the team (and a later workflow) knows. */
  const handBackNotes: string[] = [];
  /** Hand-backs that came before a new workflow read the conversation: applied once it knows who owns it. */
  const heldHandBacks: OperatorRequest[] = [];
  /**
   * A teammate acted in Intercom: its webhook was taken at once (a takeover stops Melvin's reply), but webhooks may come
   * late or out of order, and Intercom dates them to the second. Between turns the conversation's course is read again,
   * and its order decides.
   */
  let ownerInDoubt = false;
  const now = () => new Date().toISOString();
  /** The escalation the run is acting on between turns, while its note and Finalize go out. */
  let escalatingAfterTurn: string | null = null;
  const moment = (): RunMoment => ({
    beforeFirstFetch:
      state.metadata.phase === 'turn' && state.metadata.conversation_fetches === 0 && !input.conversation,
    handingOver: escalatingAfterTurn ?? (state.metadata.phase === 'turn' ? (turn.escalation?.reason ?? null) : null),
  });

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
      received_at: now(),
    });
  });

  /** A request that cannot take effect, from a signal (an update's validator refuses it to the caller instead). */
  function refuse(request: OperatorRequest, detail: string): void {
    recordRequest(state, { ...request, outcome: 'refused', detail });
    log.warn('operator request refused', { action: request.action, detail });
  }

  function acceptEscalation(request: OperatorRequest): OperatorAnswer {
    recordRequest(state, request);
    const { reason, requested_by, received_at } = request;
    state.metadata.forced_escalation = { reason, requested_by, received_at, handled: false };
    log.info('forced escalation received', { reason });
    const duringAgent = !turn.replyStarted;
    if (duringAgent) turn.agentScope.cancel();
    return {
      accepted: true,
      effect: duringAgent
        ? 'the turn in progress stops and hands the conversation to the team'
        : 'Melvin hands the conversation to the team as soon as what it is sending has gone out',
    };
  }
  setHandler(forceEscalationSignal, (raw) => {
    const request = operatorRequest('escalate', raw, now());
    if (turn.legacy) {
      if (!state.metadata.forced_escalation) acceptEscalation(request);
      return;
    }
    const refusal = escalationRefusal(state, moment());
    if (refusal) refuse(request, refusal);
    else acceptEscalation(request);
  });
  setHandler(requestEscalationUpdate, (raw) => acceptEscalation(operatorRequest('escalate', raw, now())), {
    validator: (raw) => {
      const refusal = requestProblem(raw) ?? escalationRefusal(state, moment());
      if (refusal) throw new Error(refusal);
    },
  });

  function handBack(request: OperatorRequest): void {
    handBackToMelvin(record, `${request.reason} (${request.requested_by})`, now());
    handBackNotes.push(
      `${HANDED_BACK_MARK} by ${request.requested_by}: ${request.reason}. Melvin answers the user's next message.`,
    );
    log.info('conversation handed back to Melvin', { requested_by: request.requested_by });
  }
  function acceptHandBack(request: OperatorRequest): OperatorAnswer {
    recordRequest(state, request);
    if (moment().beforeFirstFetch) {
      heldHandBacks.push(request);
      return { accepted: true, effect: 'Melvin reads the conversation, then answers the user again' };
    }
    handBack(request);
    return { accepted: true, effect: "Melvin answers the user's next message" };
  }
  setHandler(handBackSignal, (raw) => {
    const request = operatorRequest('hand_back', raw, now());
    if (turn.legacy) {
      // Runs from before hand-backs left a note changed the owner only.
      if (record.ownership.owner !== 'team') return;
      handBackToMelvin(record, `${request.reason} (${request.requested_by})`, now());
      log.info('conversation handed back to Melvin', { requested_by: request.requested_by });
      return;
    }
    const refusal = handBackRefusal(state, moment());
    if (refusal) refuse(request, refusal);
    else acceptHandBack(request);
  });
  setHandler(requestHandBackUpdate, (raw) => acceptHandBack(operatorRequest('hand_back', raw, now())), {
    validator: (raw) => {
      const refusal = requestProblem(raw) ?? handBackRefusal(state, moment());
      if (refusal) throw new Error(refusal);
    },
  });

  setHandler(teamActionSignal, (event) => {
    const notificationId = String(event?.notificationId ?? '');
    if (teamActionsSeen.has(notificationId)) return;
    teamActionsSeen.add(notificationId);
    const at = whenItHappened(event);
    const ownerBefore = record.ownership.owner;
    const stale = !turn.legacy && isStale(event, record.ownership.since);
    ownerInDoubt = !turn.legacy;
    // In shadow mode the team answers every message: its replies and assignments do not stop Melvin's drafts.
    const keepOwner = stale || (!turn.legacy && inShadowMode(turn));
    if (event?.action === 'closed') {
      if (!stale) closedByTeam = true;
      if (!keepOwner) handOverToTeam(record, 'a teammate closed the conversation in Intercom', at);
    } else if (event?.action === 'assigned' && event.toMelvin) {
      if (!keepOwner) handBackToMelvin(record, 'assigned to Melvin in Intercom', at);
    } else if (event?.action === 'assigned') {
      if (!keepOwner) handOverToTeam(record, 'a teammate was assigned the conversation in Intercom', at);
    } else if (event?.action === 'replied') {
      if (!keepOwner) handOverToTeam(record, 'a teammate replied in Intercom', at);
      if (typeof event.text === 'string' && event.text) {
        const answer = { text: event.text, by: typeof event.by === 'string' ? event.by : null, at };
        // During a turn the turn is not recorded yet: its close keeps the answer if the turn only noted a draft.
        if (state.metadata.phase === 'turn') teamAnswerDuringTurn = answer;
        else recordTeamAnswer(record, answer);
      }
    }
    // After the turn, a takeover reopens what the turn answered: the report then does not count it resolved.
    if (state.metadata.phase === 'waiting' && ownerBefore === 'melvin' && record.ownership.owner === 'team') {
      recordTurnSummary(turn, record.ownership.reason);
    }
    log.info('team action received', { action: event?.action ?? null, owner: record.ownership.owner, stale });
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
        if (!turn.legacy && operatorEscalationWaiting(turn)) {
          throw new Error('the draft no longer waits: an operator escalated the conversation');
        }
        if (!turn.legacy && record.ownership.owner === 'team') {
          throw new Error('the draft no longer waits: a teammate took the conversation over');
        }
        const problem = replyDecisionProblem(decision);
        if (problem) throw new Error(problem);
      },
    },
  );

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

  /**
   * What the turn's outcome covered: what its draft saw when the reply went out (or was noted in shadow mode), or the
   * conversation as it stood when a hand-over note went out. Runs from before keep their own rule (undefined).
   */
  function turnCoverage(): TurnCoverage | undefined {
    if (turn.legacy) return undefined;
    if (turn.handedOver) return turn.handedOver;
    const answered = state.response_delivery?.delivery_successful || state.metadata.approval?.mode === 'shadow';
    if (answered && turn.draftSaw) return { ...turn.draftSaw, handsOver: false };
    // A turn that found nothing new to answer consumed the deliveries its fetch held (about messages answered before);
    // one that found the team owning the conversation leaves them for the team to be told of.
    const skippedFor = record.ownership.owner === 'team' ? consumedDeliveries : state.metadata.user_messages_fetched;
    return { partIds: [], deliveries: skippedFor, handsOver: false };
  }

  /** The run's turn into the conversation record; what it did not answer or hand over waits for the next turn. */
  function recordThisTurn(): void {
    const consumed = closeTurn(record, state, {
      runId: workflowInfo().runId,
      fetchedUserPartIds: turn.fetchedUserPartIds,
      gathered: turn.gathered,
      ttl: input.toolResultTtl,
      teamAnswer: teamAnswerDuringTurn,
      now: Date.now(),
      coverage: turnCoverage(),
    });
    consumedDeliveries = Math.max(consumedDeliveries, consumed);
  }

  /**
   * Hands the conversation over once the turn's own course is over or cut short (an operator between turns, a cancelled
   * run): Escalate with its own note, Finalize, and the turn recorded again with its new outcome. Runs from before went
   * straight to Finalize when the turn had escalated already.
   */
  async function escalateAfterTurn(e: Escalation): Promise<void> {
    turn.escalation = e;
    escalatingAfterTurn = e.reason;
    try {
      await runTurn(turn, turn.legacy && state.escalate ? 'finalize' : 'escalate');
    } finally {
      escalatingAfterTurn = null;
    }
    recordThisTurn();
  }

  /** Runs from before every accepted escalation was acted on acted between turns only while Melvin owned the turn. */
  function escalationDue(): boolean {
    if (!turn.legacy) return operatorEscalationWaiting(turn);
    return !!state.metadata.forced_escalation && !state.escalate && record.ownership.owner === 'melvin';
  }

  /**
   * What operators asked for and the run has yet to do (the notes of hand-backs, then an escalation), after reading who
   * owns the conversation by its course in Intercom when a teammate acted on it.
   */
  async function settleOperatorRequests(): Promise<void> {
    while (handBackNotes.length) {
      await postNote(turn, handBackNotes[0]!, 'note hand-back');
      handBackNotes.shift();
    }
    // Who owns the conversation decides whether the escalation tells the user: a teammate's webhook that came after
    // the turn's own escalation, though it happened before it (same second), must not make Melvin tell them twice.
    if (ownerInDoubt) await readOwnerAgain();
    if (escalationDue()) await escalateAfterTurn(takeOperatorEscalation(turn));
  }

  /** The owner the conversation's course says now; when Intercom cannot be read, the webhooks' word stands. */
  async function readOwnerAgain(): Promise<void> {
    try {
      const course = await intercomReads().readOwnership.executeWithOptions(
        { summary: 'read who owns the conversation' },
        [{ conversationId }],
      );
      ownerInDoubt = false;
      const latest = latestOwnerChange(course.ownership_events, inShadowMode(turn));
      if (latest && latest.owner !== record.ownership.owner) {
        takeOwnerChange(record, latest);
        log.info('owner read again from the conversation', { owner: record.ownership.owner });
      }
    } catch (err) {
      if (isCancellation(err)) throw err;
      ownerInDoubt = false;
      log.warn('could not read who owns the conversation', { error: describeFailure(err) });
    }
  }

  /** Messages while the team owns the conversation: handed over unanswered, and the team told once. */
  async function leaveToTeam(deliveries: ReceivedUserMessage[]): Promise<void> {
    consumedDeliveries = state.metadata.user_messages.length;
    if (!record.ownership.team_told_of_new_messages) {
      record.ownership.team_told_of_new_messages = true;
      await postNote(
        turn,
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

  /**
   * Between turns: waits for a message to answer, an operator's request, or the team closing the conversation, until the
   * quiet period passes. Returns the deliveries the next turn answers, or none when the conversation's workflow ends.
   */
  async function waitForNextMessage(): Promise<ReceivedUserMessage[]> {
    state.metadata.phase = 'waiting';
    for (;;) {
      if (!turn.legacy) {
        await settleOperatorRequests();
        throwIfCancelled();
      }
      // Runs from before ended on a close at once, leaving a message that came with it unanswered and untold.
      if (turn.legacy && closedByTeam) return [];
      const unanswered = unansweredDeliveries(record, state.metadata.user_messages, consumedDeliveries);
      // Before a message is left to the team, Intercom's course has the last word: a teammate's webhook giving the
      // conversation back to Melvin may not have come yet.
      if (unanswered.length && record.ownership.owner === 'team' && !turn.legacy) await readOwnerAgain();
      if (unanswered.length && record.ownership.owner === 'melvin') return unanswered;
      if (unanswered.length) {
        await leaveToTeam(unanswered);
        continue;
      }
      if (closedByTeam) return [];
      if (turn.legacy && escalationDue()) {
        await escalateAfterTurn(takeOperatorEscalation(turn));
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
          escalationDue() ||
          handBackNotes.length > 0 ||
          ownerInDoubt ||
          closedByTeam,
        quietPeriodSeconds * 1000,
      );
      if (!woken) return [];
    }
  }

  /**
   * The run was cancelled after its turn's outcome went out, or between turns: what operators asked is done, and a
   * message nobody answered goes to the team (Melvin will not answer it: its workflow ends), then the run ends cancelled.
   */
  async function endCancelled(err: unknown): Promise<never> {
    await CancellationScope.nonCancellable(async () => {
      await settleOperatorRequests();
      const unanswered = unansweredDeliveries(record, state.metadata.user_messages, consumedDeliveries);
      if (unanswered.length && record.ownership.owner === 'melvin') {
        await escalateAfterTurn(escalation('operator', CANCELLED_REASON, 'temporal'));
      } else if (unanswered.length) {
        await leaveToTeam(unanswered);
      }
    });
    throw err;
  }

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
    await CancellationScope.nonCancellable(() =>
      escalateAfterTurn(escalation('operator', CANCELLED_REASON, 'temporal')),
    );
    throw err;
  }
  // The agent is over: an operator's escalation from now on is handled between turns, with nothing left to cancel.
  turn.replyStarted = true;
  recordThisTurn();
  for (const request of heldHandBacks.splice(0)) handBack(request);
  let next: ReceivedUserMessage[] = [];
  try {
    next = await waitForNextMessage();
  } catch (err) {
    if (turn.legacy || !isCancellation(err)) throw err;
    await endCancelled(err);
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
