// A lead's escalation and hand-back requests: whether each can take effect now, and the run's record of each. Pure:
// the workflow's update validators refuse with these reasons, and its signal handlers record them.
import type { AgentState, OperatorRequest } from '../../contract/state';

/** Enough of a run's requests for a lead to read what became of theirs. */
export const MAX_OPERATOR_REQUESTS = 20;

/** What the run knows of its turn when a request comes. */
export interface RunMoment {
  /** A new workflow that has not read the conversation yet: who owns it is known only after the first fetch. */
  beforeFirstFetch: boolean;
  /** The run has not read the conversation at all: it does not know the reply mode its hand-overs went by. */
  unread: boolean;
  /** The run is handing the conversation over already (its turn escalated, or it acts on an escalation), and why. */
  handingOver: string | null;
}

function ownerText(state: AgentState): string {
  const { since, reason } = state.metadata.conversation.ownership;
  return [since && `since ${since}`, reason].filter(Boolean).join(', ');
}

function escalationUnderWay(state: AgentState): string | null {
  const forced = state.metadata.forced_escalation;
  return forced && !forced.handled ? `an escalation requested by ${forced.requested_by} is already under way` : null;
}

/** The refusal of a request the run cannot judge: who owns the conversation depends on a read it could not make. */
export const CANNOT_TELL_OWNER =
  'Melvin could not read the conversation in Intercom (it keeps trying), so it cannot tell who owns it: ' +
  'nothing was done; ask again in a minute';

/** Why an escalation cannot take effect now (the team has the conversation, or is being given it), or null. */
export function escalationRefusal(state: AgentState, moment: RunMoment): string | null {
  const underWay = escalationUnderWay(state);
  if (underWay) return underWay;
  if (moment.beforeFirstFetch) return null;
  if (state.metadata.conversation.ownership.owner === 'team') {
    return `the team already owns this conversation (${ownerText(state)}): hand it back first to escalate it again`;
  }
  if (moment.handingOver) return `Melvin is handing this conversation to the team already (${moment.handingOver})`;
  return null;
}

/** Why a hand-back cannot take effect now (Melvin answers the conversation already), or null. */
export function handBackRefusal(state: AgentState, moment: RunMoment): string | null {
  const underWay =
    escalationUnderWay(state) ?? (moment.handingOver && `a hand-over is under way (${moment.handingOver})`);
  if (underWay) return `${underWay}: hand the conversation back once the team has it`;
  if (moment.beforeFirstFetch) return null;
  // A hand-over made before any read went by the configured reply mode: in shadow mode it gave the team nothing, so a
  // hand-back would give Melvin what it has, and promise an answer no later workflow owes.
  if (moment.unread) return CANNOT_TELL_OWNER;
  if (state.metadata.conversation.ownership.owner === 'melvin') {
    const since = ownerText(state);
    return `Melvin answers this conversation already${since ? ` (${since})` : ''}`;
  }
  return null;
}

/** What is wrong with a request's arguments, or null: `{ reason, requestedBy }`, both text. */
export function requestProblem(request: unknown): string | null {
  if (!request || typeof request !== 'object') return 'a request is an object: { reason, requestedBy }';
  const { reason, requestedBy } = request as Record<string, unknown>;
  if (typeof reason !== 'string' || !reason.trim()) return 'reason must say why, as text';
  if (requestedBy !== undefined && typeof requestedBy !== 'string') return 'requestedBy must name who asks, as text';
  return null;
}

/** A request as the run keeps it: the operator's words, with defaults for what a raw signal left out. */
export function operatorRequest(
  action: OperatorRequest['action'],
  request: { reason?: unknown; requestedBy?: unknown } | undefined,
  now: string,
): OperatorRequest {
  const reason = typeof request?.reason === 'string' && request.reason.trim() ? request.reason.trim() : '';
  return {
    action,
    reason: reason || (action === 'escalate' ? 'Escalation requested by an operator' : 'handed back'),
    requested_by: typeof request?.requestedBy === 'string' && request.requestedBy ? request.requestedBy : 'unknown',
    received_at: now,
    outcome: 'accepted',
    detail: '',
  };
}

/** Adds a request to the run's record, the oldest dropped past the bound. */
export function recordRequest(state: AgentState, request: OperatorRequest): void {
  const requests = (state.metadata.operator_requests ??= []);
  requests.push(request);
  if (requests.length > MAX_OPERATOR_REQUESTS) requests.splice(0, requests.length - MAX_OPERATOR_REQUESTS);
}
