// Routing as pure functions of the state: seed 000's decision rules, the escalation table and the status mapping.
import type { EscalationKind, EscalationSource, MelvinStatus, NodeName, ResponseType, UserTold } from '../state';

interface EscalationRow {
  source: EscalationSource;
  status: MelvinStatus;
  reason: (detail: string) => string;
}

/** DESIGN.md's escalation table, one row per kind; `plan_error` is ours (the seed is silent on a failed Plan). */
export const ESCALATION_TABLE: Record<EscalationKind, EscalationRow> = {
  hops_exhausted: {
    source: 'coverage',
    status: 'ROUTE_TO_TEAM',
    reason: (maxHops) => `Exceeded maximum hops (${maxHops}). Unable to gather sufficient data.`,
  },
  user_requested_human: { source: 'draft', status: 'ROUTE_TO_TEAM', reason: () => 'User requested to talk to a human' },
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
};

export interface Escalation {
  kind: EscalationKind;
  source: EscalationSource;
  reason: string;
  requested_by: string | null;
}

export function escalation(kind: EscalationKind, detail = '', requestedBy: string | null = null): Escalation {
  const row = ESCALATION_TABLE[kind];
  return { kind, source: row.source, reason: row.reason(detail), requested_by: requestedBy };
}

/**
 * The note Escalate adds: seed 000's format, plus who asked when an operator forced it, and whether the user was told
 * a person will follow up (so nobody tells them twice, and somebody does when Melvin could not).
 */
export function escalationNote(e: Escalation, told: UserTold | null = null): string {
  const lines = [`🚨 Escalation: ${e.reason}`];
  if (e.requested_by) lines.push(`Requested by: ${e.requested_by}`);
  if (told?.sent) lines.push(`The user was told: "${told.text}"`);
  else if (told)
    lines.push(`The user could not be told a person will follow up (${told.error}): please reply to them.`);
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

/** Seed 000's coverage rule: sufficient → Draft; insufficient with hops left → Plan again; else escalate (row 1). */
export function routeAfterCoverage(input: { dataSufficient: boolean; hop: number; maxHops: number }): {
  next: Extract<NodeName, 'draft' | 'plan' | 'escalate'>;
  escalation: Escalation | null;
} {
  if (input.dataSufficient) return { next: 'draft', escalation: null };
  if (input.hop < input.maxHops) return { next: 'plan', escalation: null };
  return { next: 'escalate', escalation: escalation('hops_exhausted', String(input.maxHops)) };
}

/** A draft that routes to the team skips validation: there is no reply to check (seed 000, decision 4). */
export function routeAfterDraft(responseType: ResponseType): {
  next: 'validate' | 'escalate';
  escalation: Escalation | null;
} {
  return responseType === 'ROUTE_TO_TEAM'
    ? { next: 'escalate', escalation: escalation('user_requested_human') }
    : { next: 'validate', escalation: null };
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
