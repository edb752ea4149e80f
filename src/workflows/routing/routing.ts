// Routing as pure functions of the state: the decision rules after each node, the escalation table and the status mapping.
import { ESCALATION_MARK, OPEN_FOR_THE_TEAM, REQUESTED_BY, SENSITIVE_REASON } from '../../contract/notes';
import type { DraftRoute, RouteKind } from '../../contract/schemas';
import type {
  EscalationKind,
  EscalationSource,
  Intent,
  MelvinStatus,
  NodeName,
  ResponseType,
  UserTold,
} from '../../contract/state';

interface EscalationRow {
  source: EscalationSource;
  status: MelvinStatus;
  reason: (detail: string) => string;
}

/** Every kind of escalation: which node raises it, the Melvin Status it sets, and the reason the note gives. */
export const ESCALATION_TABLE: Record<EscalationKind, EscalationRow> = {
  hops_exhausted: {
    source: 'coverage',
    status: 'ROUTE_TO_TEAM',
    reason: (maxHops) => `Exceeded maximum hops (${maxHops}). Unable to gather sufficient data.`,
  },
  user_requested_human: { source: 'draft', status: 'ROUTE_TO_TEAM', reason: () => 'User requested to talk to a human' },
  // The draft found no reply it could give safely from the data and the help center; the model says why in the note.
  no_safe_answer: {
    source: 'draft',
    status: 'NO_SAFE_ANSWER',
    reason: () => 'No safe answer: the draft found no reply it could give from the data and the help center',
  },
  // Legal, safety, harassment, fraud: a person handles it, whatever the data says.
  sensitive_request: {
    source: 'draft',
    status: 'SENSITIVE_REQUEST',
    reason: () => `${SENSITIVE_REASON} a person from the team must handle it`,
  },
  validation_failed: {
    source: 'validate',
    status: 'VALIDATION_FAILED',
    reason: () => 'Validation failed - see validation note for details',
  },
  draft_error: { source: 'draft', status: 'RESPONSE_FAILED', reason: (detail) => `Draft generation error: ${detail}` },
  initialization_error: {
    source: 'initialization',
    status: 'error',
    reason: (detail) => `Initialization failed: ${detail}`,
  },
  coverage_error: { source: 'coverage', status: 'error', reason: (detail) => `Coverage analysis failed: ${detail}` },
  validation_error: { source: 'validate', status: 'error', reason: (detail) => `Validation error: ${detail}` },
  operator: { source: 'operator', status: 'ROUTE_TO_TEAM', reason: (detail) => detail },
  plan_error: { source: 'plan', status: 'error', reason: (detail) => `Planning failed: ${detail}` },
  // The reply answered what the data covers, and the team answers the rest of a message that asked several things.
  partial_answer: {
    source: 'draft',
    status: 'partial',
    reason: (detail) => `Partly answered: the reply left ${detail} for the team`,
  },
  // Strong frustration or anger, or the talent's third complaint in the conversation (seed 003's tone): a person answers.
  talent_frustrated: {
    source: 'plan',
    status: 'FRUSTRATED',
    reason: (detail) => `The talent is frustrated (${detail}): a person from the team should answer`,
  },
  // A message of files only: Melvin cannot open files, so a person looks at them.
  attachment_only: {
    source: 'initialization',
    status: 'ROUTE_TO_TEAM',
    reason: (detail) => `The user sent only files, which Melvin cannot read (${detail})`,
  },
};

export interface Escalation {
  kind: EscalationKind;
  source: EscalationSource;
  reason: string;
  requested_by: string | null;
  /** More lines for the team's note, e.g. which questions a partial answer left open. */
  details?: string[];
}

export function escalation(kind: EscalationKind, detail = '', requestedBy: string | null = null): Escalation {
  const row = ESCALATION_TABLE[kind];
  return { kind, source: row.source, reason: row.reason(detail), requested_by: requestedBy };
}

/** A reply that answers some intents: the team gets the others, listed with the user's words, and what was answered. */
export function partialAnswer(intents: Intent[], open: string[]): Escalation {
  const isOpen = (i: Intent) => open.includes(i.intent);
  const line = (i: Intent) => `- ${i.intent}: “${i.question}”`;
  // An open intent the plan did not name is still listed, by the name the draft gave it.
  const unnamed = open.filter((name) => !intents.some((i) => i.intent === name)).map((name) => `- ${name}`);
  const count = open.length === 1 ? 'one question' : `${open.length} questions`;
  return {
    ...escalation('partial_answer', `${count} (${open.join('; ')})`),
    details: [
      OPEN_FOR_THE_TEAM,
      ...intents.filter(isOpen).map(line),
      ...unnamed,
      'Answered in the reply:',
      ...intents.filter((i) => !isOpen(i)).map(line),
    ],
  };
}

/**
 * The note Escalate adds: the reason and its details (with the talent's stage and the draft's suggested next step, when
 * known), plus who asked when an operator forced it, and whether the user was told a person will follow up (so nobody tells them twice, and somebody does when Melvin could not).
 */
export function escalationNote(
  handOver: Escalation,
  told: UserTold | null = null,
  map: string | null = null,
  forTheTeam: string[] = [],
): string {
  const lines = [`${ESCALATION_MARK} ${handOver.reason}`];
  if (handOver.requested_by) lines.push(`${REQUESTED_BY} ${handOver.requested_by}`);
  lines.push(...(handOver.details ?? []), ...forTheTeam);
  if (told?.sent) lines.push(`The user was told: "${told.text}"`);
  else if (told)
    lines.push(`The user could not be told a person will follow up (${told.error}): please reply to them.`);
  // The run's path as a Mermaid flowchart: the inbox draws it, Intercom shows its source.
  if (map) lines.push('How Melvin got here:', '```mermaid', map, '```');
  return lines.join('\n');
}

/** What is wrong with a lead's decision on a draft, or null: the `decideReply` update's validator refuses it with this. */
export function replyDecisionProblem(d: unknown): string | null {
  if (!d || typeof d !== 'object') return 'a decision is an object: { decision, by, text?, reason? }';
  const { decision, by, text, reason } = d as Record<string, unknown>;
  if (decision !== 'approve' && decision !== 'edit' && decision !== 'reject') {
    return 'decision must be "approve", "edit" or "reject"';
  }
  if (typeof by !== 'string' || !by.trim()) return 'by must name who decided';
  if (decision === 'edit' && (typeof text !== 'string' || !text.trim() || text.length > 4000)) {
    return 'an edit needs the text to send, 1 to 4000 characters';
  }
  if (decision === 'reject' && (typeof reason !== 'string' || !reason.trim())) return 'a rejection needs a reason';
  return null;
}

/**
 * The coverage rule: sufficient → Draft; insufficient with hops left → Plan again; else escalate (`hops_exhausted`). With
 * several intents, the last hop drafts a partial answer when the data covers at least one of them.
 */
export function routeAfterCoverage(input: {
  dataSufficient: boolean;
  hop: number;
  maxHops: number;
  /** How many of the plan's intents the data covers; absent when the coverage judged no intents one by one. */
  intentsCovered?: number;
}): {
  next: Extract<NodeName, 'draft' | 'plan' | 'escalate'>;
  escalation: Escalation | null;
} {
  if (input.dataSufficient) return { next: 'draft', escalation: null };
  if (input.hop < input.maxHops) return { next: 'plan', escalation: null };
  if ((input.intentsCovered ?? 0) > 0) return { next: 'draft', escalation: null };
  return { next: 'escalate', escalation: escalation('hops_exhausted', String(input.maxHops)) };
}

/** The escalation kind of each way a draft routes to the team. */
const ROUTE_ESCALATIONS: Record<RouteKind, EscalationKind> = {
  asked_for_person: 'user_requested_human',
  no_safe_answer: 'no_safe_answer',
  sensitive_request: 'sensitive_request',
};

/** Whether a kind is one of a draft's routes to the team (the hand-over texts of runs from before kinds fall back). */
export function isDraftRoute(kind: EscalationKind): boolean {
  return Object.values(ROUTE_ESCALATIONS).includes(kind);
}

/**
 * A draft that routes to the team skips validation (there is no reply to check) and escalates by its route's kind, with
 * the model's explanation for the team. A route without a kind (a JSON-mode answer, or a draft recorded before routes
 * had kinds) is told as what it is: no safe answer, for which the model gave no reason.
 */
export function routeAfterDraft(
  responseType: ResponseType,
  route: DraftRoute | null = null,
): {
  next: 'validate' | 'escalate';
  escalation: Escalation | null;
} {
  if (responseType !== 'ROUTE_TO_TEAM') return { next: 'validate', escalation: null };
  const explanation = route
    ? `The model's explanation: ${route.explanation}`
    : 'The model routed the message to the team without saying why.';
  return {
    next: 'escalate',
    escalation: { ...escalation(ROUTE_ESCALATIONS[route?.kind ?? 'no_safe_answer']), details: [explanation] },
  };
}

export function routeAfterValidation(overallPassed: boolean): {
  next: 'response' | 'escalate';
  escalation: Escalation | null;
} {
  return overallPassed
    ? { next: 'response', escalation: null }
    : { next: 'escalate', escalation: escalation('validation_failed') };
}

/** A turn has something to answer only when the conversation's latest message is the user's (not yet answered). */
export function awaitsReply(messages: { role: string }[]): boolean {
  return messages.at(-1)?.role === 'user';
}

/** Finalize's status: the escalation's row when the run escalated, else whether the reply reached the user. */
export function melvinStatusFor(input: { escalationKind: EscalationKind | null; delivered: boolean }): MelvinStatus {
  if (input.escalationKind) return ESCALATION_TABLE[input.escalationKind].status;
  return input.delivered ? 'success' : 'MESSAGE_FAILED';
}
