// The conversation's controls and the state they keep: its queries, the user's deliveries, operators' escalations and
// hand-backs, teammates' actions in Intercom and leads' decisions on drafts (the model: samples-typescript
// message-passing/safe-message-handlers). Workflow code: the handlers change the run's state, never call activities.
import { ApplicationFailure, CancellationScope, condition, log, setHandler } from '@temporalio/workflow';
import { HANDED_BACK_MARK } from '../contract/notes';
import {
  decideReplyUpdate,
  forceEscalationSignal,
  handBackSignal,
  MESSAGE_PREVIEW_CHARS,
  newUserMessageSignal,
  progressQuery,
  requestEscalationUpdate,
  requestHandBackUpdate,
  stateQuery,
  teamActionSignal,
  type NewUserMessage,
  type OperatorAnswer,
  type ReplyDecision,
  type TeamAction,
} from '../contract/shared';
import type { AgentState, ConversationRecord, OperatorRequest, TeamAnswer } from '../contract/state';
import { handBackToMelvin, handOverToTeam, recordTeamAnswer } from './records/conversation-record';
import { recordTurnSummary } from './graph';
import { inShadowMode, operatorEscalationWaiting } from './nodes/helpers';
import {
  CANNOT_TELL_OWNER,
  escalationRefusal,
  handBackRefusal,
  operatorRequest,
  recordRequest,
  requestProblem,
  type RunMoment,
} from './routing/operator-requests';
import {
  HAND_BACK_NEEDS_A_READ_RULES,
  KEPT_PROMISES_RULES,
  LOCAL_AGENT_CALLS_RULES,
  REQUESTS_ANSWERED_FIRST_RULES,
  TIES_KEEP_THE_TEAM_RULES,
  rulesSince,
} from './versions/patches';
import { replyDecisionProblem } from './routing/routing';
import type { Turn } from './nodes/turn';

/**
 * How long a lead's request that came before the run's first read waits for it: the operator API answers within 10 s
 * (its deadline), and a read Intercom refuses is tried again for a minute and more.
 */
const OWNER_WAIT_MS = 5_000;

export class ConversationControls {
  readonly state: AgentState;
  readonly record: ConversationRecord;
  /** Deliveries before this index are answered or handed over; the rest wait for the next turn. */
  consumedDeliveries = 0;
  /** A teammate closed the conversation in Intercom: the workflow ends once the turn in progress is over. */
  closedByTeam = false;
  /** Shadow mode: a teammate's answer that came while this run's turn was still going. */
  teamAnswerDuringTurn: TeamAnswer | null = null;
  /** Hand-backs accepted whose note has not gone out yet: the note is how the team (and a later workflow) knows. */
  readonly handBackNotes: string[] = [];
  /** Hand-backs that came before a new workflow read the conversation: applied once it knows who owns it. */
  private readonly heldHandBacks: OperatorRequest[] = [];
  /**
   * A teammate acted in Intercom: its webhook was taken at once (a takeover stops Melvin's reply), but webhooks may come
   * late or out of order, and Intercom dates them to the second. Between turns the conversation's course is read again,
   * and its order decides.
   */
  ownerInDoubt = false;
  /** The escalation the run is acting on between turns, while its note and Finalize go out. */
  escalatingAfterTurn: string | null = null;
  /** The run waits for the next message with nothing of its own in flight: what `progress` reports as `idle`. */
  idle = false;
  /** The user's messages as the run's last read of the conversation's course quoted them, by part id. */
  readonly messagesRead = new Map<string, string>();
  /** The run waits, with nothing in flight, only to try again what Intercom refused. */
  waitingForIntercom = false;
  /** The read before the workflow ends failed: the run tries it again before it may end. */
  owedRead = false;
  /** Rounds in a row that left a write (or that read) owed, and when the next may start (workflow time, ms). */
  owedRounds = 0;
  owedDueAt = 0;

  /** The controls of the run whose turn is `turn`, its handlers set: call it before the run's first await. */
  static install(turn: Turn, startedAt: number): ConversationControls {
    const controls = new ConversationControls(turn);
    controls.setHandlers(startedAt);
    return controls;
  }

  private constructor(readonly turn: Turn) {
    this.state = turn.state;
    this.record = turn.state.metadata.conversation;
    turn.ownerKnown = () => this.learnOwner();
    turn.teamClosed = () => this.closedByTeam;
  }

  private setHandlers(startedAt: number): void {
    const { state, record } = this;
    setHandler(stateQuery, () => state);
    setHandler(progressQuery, () => ({
      node: state.metadata.current_node,
      hop: state.hops.length,
      elapsed_ms: Date.now() - startedAt,
      phase: state.metadata.phase,
      idle: this.idle,
      waiting_for_intercom: this.waitingForIntercom,
      turns: record.turn_count,
    }));
    setHandler(newUserMessageSignal, (message) => this.receiveMessage(message));
    setHandler(forceEscalationSignal, (raw) => this.forceEscalation(operatorRequest('escalate', raw, now())));
    setHandler(requestEscalationUpdate, (raw) => this.escalationByUpdate(operatorRequest('escalate', raw, now())), {
      validator: (raw) => {
        const refusal = requestProblem(raw) ?? escalationRefusal(state, this.moment());
        if (refusal) throw new Error(refusal);
      },
    });
    setHandler(handBackSignal, (raw) => this.handBackBySignal(operatorRequest('hand_back', raw, now())));
    setHandler(requestHandBackUpdate, (raw) => this.handBackByUpdate(operatorRequest('hand_back', raw, now())), {
      validator: (raw) => {
        const refusal = requestProblem(raw) ?? handBackRefusal(state, this.moment());
        if (refusal) throw new Error(refusal);
      },
    });
    setHandler(teamActionSignal, (event) => this.takeTeamAction(event));
    setHandler(decideReplyUpdate, (decision) => this.decide(decision), {
      validator: (decision) => this.checkDecision(decision),
    });
  }

  /** Whether the run has no read of the conversation: it fetched none, and its input brought none. */
  private neverRead(): boolean {
    return this.state.metadata.conversation_fetches === 0 && !this.turn.input.conversation;
  }

  /** Where the run is, for the rules that refuse an operator's request: before its first read, or handing over. */
  private moment(): RunMoment {
    const { state, turn } = this;
    return {
      beforeFirstFetch: state.metadata.phase === 'turn' && this.neverRead(),
      unread: rulesSince(HAND_BACK_NEEDS_A_READ_RULES) && this.neverRead(),
      handingOver:
        this.escalatingAfterTurn ?? (state.metadata.phase === 'turn' ? (turn.escalation?.reason ?? null) : null),
    };
  }

  /** The user wrote: a delivery the next turn (or this one, still going) answers, unless it is one already seen. */
  private receiveMessage(message: NewUserMessage | undefined): void {
    const { state, record } = this;
    const notificationId = String(message?.notificationId ?? '');
    // Intercom redelivers webhooks; a delivery already seen is the same message, not a new one.
    if (state.metadata.user_messages.some((m) => m.notification_id === notificationId)) return;
    // Whatever ingress replica sent it, a delivery for a part an earlier turn answered or handed over is no news.
    if (message?.partId && record.handled_part_ids.includes(String(message.partId))) {
      log.info('delivery for a message already handled: ignored', { part_id: String(message.partId) });
      return;
    }
    const preview = typeof message?.preview === 'string' ? message.preview.slice(0, MESSAGE_PREVIEW_CHARS) : '';
    state.metadata.user_messages.push({
      notification_id: notificationId,
      part_id: message?.partId ?? null,
      received_at: now(),
      ...(preview ? { preview } : {}),
    });
  }

  /**
   * Whether a request that comes before the run read the conversation waits for that read, then is judged by who owns
   * it (since KEPT_PROMISES_RULES): a lead's request to a conversation whose workflow had ended starts a new one with
   * it, and is refused there as it would have been by the open one. Runs from before accepted it at once.
   */
  private waitsForFirstRead(): boolean {
    return !this.turn.legacy && rulesSince(KEPT_PROMISES_RULES) && this.moment().beforeFirstFetch;
  }

  /**
   * Whether the run knows who owns the conversation: it has read it, or its turn hands over or ends without a read. The
   * turn says so at that point of its course (`Turn.ownerKnown`).
   */
  private ownerIsKnown = false;

  /** The lead's requests waiting in `judgeAfterFirstRead` for the run to know who owns the conversation. */
  private waitingForOwner = 0;

  /**
   * The turn knows who owns the conversation. Since REQUESTS_ANSWERED_FIRST_RULES the requests that waited for it are
   * answered before the turn goes on: the turn awaits what this returns. A condition alone resumed them only after the
   * activation's other results had run the turn on, so a replay, which groups those results into other activations,
   * answered them at another point of the history. Undefined when nothing waits (the turn then goes on at once).
   */
  private learnOwner(): Promise<void> | undefined {
    this.ownerIsKnown = true;
    if (!this.waitingForOwner || !rulesSince(REQUESTS_ANSWERED_FIRST_RULES)) return undefined;
    return CancellationScope.nonCancellable(() => condition(() => this.waitingForOwner === 0));
  }

  /**
   * A request that came before the run's first read, judged once the run knows who owns the conversation (OWNER_WAIT_MS
   * at most) by `rule`; refused when the run still has not read it (Intercom keeps refusing the read): the lead hears why
   * at once rather than a timeout, and asks again.
   */
  private async judgeAfterFirstRead(
    request: OperatorRequest,
    rule: (state: AgentState, moment: RunMoment) => string | null,
  ): Promise<void> {
    if (!this.ownerIsKnown) {
      this.waitingForOwner += 1;
      try {
        await condition(() => this.ownerIsKnown, OWNER_WAIT_MS);
      } finally {
        this.waitingForOwner -= 1;
      }
    }
    const moment = { ...this.moment(), beforeFirstFetch: false };
    const refusal = rule(this.state, moment) ?? (this.neverRead() ? CANNOT_TELL_OWNER : null);
    if (refusal) this.refuseUpdate(request, refusal);
  }

  /** A refusal the caller of an update hears: the update fails with why, and the run records it. */
  private refuseUpdate(request: OperatorRequest, refusal: string): never {
    this.refuse(request, refusal);
    throw ApplicationFailure.create({ message: refusal, type: 'RequestRefused', nonRetryable: true });
  }

  private async escalationByUpdate(request: OperatorRequest): Promise<OperatorAnswer> {
    if (this.waitsForFirstRead()) await this.judgeAfterFirstRead(request, escalationRefusal);
    return this.acceptEscalation(request);
  }

  private async handBackByUpdate(request: OperatorRequest): Promise<OperatorAnswer> {
    if (!this.waitsForFirstRead()) return this.acceptHandBack(request);
    await this.judgeAfterFirstRead(request, handBackRefusal);
    recordRequest(this.state, request);
    // The run's first turn goes by the owner it read; the hand-back takes effect once that turn is over.
    if (this.state.metadata.phase === 'turn') this.heldHandBacks.push(request);
    else this.handBack(request);
    return { accepted: true, effect: "Melvin answers the user's next message" };
  }

  /** A request that cannot take effect, from a signal (an update's validator refuses it to the caller instead). */
  private refuse(request: OperatorRequest, detail: string): void {
    recordRequest(this.state, { ...request, outcome: 'refused', detail });
    log.warn('operator request refused', { action: request.action, detail });
  }

  private forceEscalation(request: OperatorRequest): void {
    if (this.turn.legacy) {
      if (!this.state.metadata.forced_escalation) this.acceptEscalation(request);
      return;
    }
    const refusal = escalationRefusal(this.state, this.moment());
    if (refusal) this.refuse(request, refusal);
    else this.acceptEscalation(request);
  }

  private acceptEscalation(request: OperatorRequest): OperatorAnswer {
    const { state, turn } = this;
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

  private handBackBySignal(request: OperatorRequest): void {
    const { record } = this;
    if (this.turn.legacy) {
      // Runs from before hand-backs left a note changed the owner only.
      if (record.ownership.owner !== 'team') return;
      handBackToMelvin(record, `${request.reason} (${request.requested_by})`, now());
      log.info('conversation handed back to Melvin', { requested_by: request.requested_by });
      return;
    }
    const refusal = handBackRefusal(this.state, this.moment());
    if (refusal) this.refuse(request, refusal);
    else this.acceptHandBack(request);
  }

  private acceptHandBack(request: OperatorRequest): OperatorAnswer {
    recordRequest(this.state, request);
    if (this.moment().beforeFirstFetch) {
      this.heldHandBacks.push(request);
      return { accepted: true, effect: 'Melvin reads the conversation, then answers the user again' };
    }
    this.handBack(request);
    return { accepted: true, effect: "Melvin answers the user's next message" };
  }

  private handBack(request: OperatorRequest): void {
    handBackToMelvin(this.record, `${request.reason} (${request.requested_by})`, now());
    this.handBackNotes.push(
      `${HANDED_BACK_MARK} by ${request.requested_by}: ${request.reason}. Melvin answers the user's next message.`,
    );
    log.info('conversation handed back to Melvin', { requested_by: request.requested_by });
  }

  /** The hand-backs held until the run knew who owns the conversation: it knows now that its turn is over. */
  applyHeldHandBacks(): void {
    for (const request of this.heldHandBacks.splice(0)) this.handBack(request);
  }

  private takeTeamAction(event: TeamAction | undefined): void {
    const { state, record, turn } = this;
    const notificationId = String(event?.notificationId ?? '');
    // Intercom delivers a webhook again for hours: one already taken, in this run or an earlier one, is no news.
    if (!rememberTeamAction(record, notificationId)) return;
    const at = whenItHappened(event);
    const ownerBefore = record.ownership.owner;
    const stale = !turn.legacy && isStale(event, record.ownership.since);
    // An assignment to Melvin in the second the team got the conversation may have come before that change: in doubt
    // the team keeps it (Melvin does not answer), until the course read again between turns (`ownerInDoubt`) says.
    const tie =
      ownerBefore === 'team' && rulesSince(TIES_KEEP_THE_TEAM_RULES) && sameSecond(event, record.ownership.since);
    this.ownerInDoubt = !turn.legacy;
    // In shadow mode the team answers every message: its replies and assignments do not stop Melvin's drafts.
    const keepOwner = stale || (!turn.legacy && inShadowMode(turn));
    if (event?.action === 'closed') {
      if (!stale) this.closedByTeam = true;
      if (!keepOwner) handOverToTeam(record, 'a teammate closed the conversation in Intercom', at);
    } else if (event?.action === 'assigned' && event.toMelvin) {
      if (!keepOwner && !tie) handBackToMelvin(record, 'assigned to Melvin in Intercom', at);
    } else if (event?.action === 'assigned') {
      if (!keepOwner) handOverToTeam(record, 'a teammate was assigned the conversation in Intercom', at);
    } else if (event?.action === 'replied') {
      if (!keepOwner) handOverToTeam(record, 'a teammate replied in Intercom', at);
      if (typeof event.text === 'string' && event.text) {
        const answer = { text: event.text, by: typeof event.by === 'string' ? event.by : null, at };
        // During a turn the turn is not recorded yet: its close keeps the answer if the turn only noted a draft.
        if (state.metadata.phase === 'turn') this.teamAnswerDuringTurn = answer;
        else recordTeamAnswer(record, answer);
      }
    }
    // After the turn, a takeover reopens what the turn answered: the report then does not count it resolved.
    if (state.metadata.phase === 'waiting' && ownerBefore === 'melvin' && record.ownership.owner === 'team') {
      recordTurnSummary(turn, record.ownership.reason);
    }
    log.info('team action received', { action: event?.action ?? null, owner: record.ownership.owner, stale });
  }

  private decide(decision: ReplyDecision): { accepted: ReplyDecision['decision'] } {
    this.turn.decision = decision;
    return { accepted: decision.decision };
  }

  private checkDecision(decision: ReplyDecision): void {
    const { state, record, turn } = this;
    if (state.metadata.approval?.outcome !== 'waiting' || turn.decision) {
      throw new Error(`no draft of conversation ${turn.input.conversationId} is waiting for a decision`);
    }
    if (!turn.legacy && operatorEscalationWaiting(turn)) {
      throw new Error('the draft no longer waits: an operator escalated the conversation');
    }
    if (!turn.legacy && record.ownership.owner === 'team') {
      throw new Error('the draft no longer waits: a teammate took the conversation over');
    }
    const problem = replyDecisionProblem(decision);
    if (problem) throw new Error(problem);
  }
}

const now = () => new Date().toISOString();

/** Enough teammates' actions for any redelivery: Intercom redelivers for hours, not for hundreds of actions. */
const MAX_TEAM_ACTIONS_SEEN = 30;

/**
 * Keeps a teammate's action's notification id in the record, which continue-as-new carries: false when it was taken
 * already.
 */
function rememberTeamAction(record: ConversationRecord, notificationId: string): boolean {
  const seen = (record.team_actions_seen ??= []);
  if (seen.includes(notificationId)) return false;
  seen.push(notificationId);
  if (seen.length > MAX_TEAM_ACTIONS_SEEN) seen.splice(0, seen.length - MAX_TEAM_ACTIONS_SEEN);
  return true;
}

/**
 * A webhook Intercom delivered late tells of something older than the conversation's current owner, and must not undo
 * it (a teammate's assignment to Melvin arriving after a lead's escalation). Intercom dates events to the second: within
 * the owner's own second it is taken (but for an assignment to Melvin while the team owns it, see `tie`), and the course
 * read again between turns (`ownerInDoubt`) settles the order.
 */
function isStale(event: TeamAction | undefined, since: string | null): boolean {
  if (typeof event?.at !== 'string' || !since) return false;
  return secondOf(event.at) < secondOf(since);
}

function sameSecond(event: TeamAction | undefined, since: string | null): boolean {
  return typeof event?.at === 'string' && !!since && secondOf(event.at) === secondOf(since);
}

const secondOf = (iso: string) => Math.floor(Date.parse(iso) / 1000);

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
