// The Validate node: Melvin's own reply guard, then the validation service, and the route its answer gives.
import { log } from '@temporalio/workflow';
import type { ValidationRequest } from '../../activities/validation';
import type { AgentState } from '../../contract/state';
import { namedRecords, turnIntents } from '../prompt-contexts/contexts';
import { guardChecks, guardVerdict } from '../prompt-contexts/reply-guard';
import { validation } from '../activity-options/retry-policies';
import { escalation, routeAfterValidation } from '../routing/routing';
import type { Step, Turn } from './turn';
import { readValidationAnswer } from '../records/turn-state';
import { suggestedStepLine } from '../routing/stage';
import { enter, handOverOnError, postNote } from './helpers';
import {
  GROUNDED_REPLIES_RULES,
  LATE_MESSAGES_RULES,
  LOCAL_AGENT_CALLS_RULES,
  NOTE_BESIDE_REPLY_PATCH,
  REPLY_GUARD_ID_TOKENS_PATCH,
  rulesSince,
  since,
} from '../versions/patches';

/** The user's questions the draft answers, and those it leaves open for the team, in the user's words. */
function answeredAndOpen(state: AgentState): { answered: string[]; open: string[] } {
  const open = state.draft?.open_intents ?? [];
  const intents = turnIntents(state);
  return {
    answered: intents.filter((i) => !open.includes(i.intent)).map((i) => i.question),
    open: intents.filter((i) => open.includes(i.intent)).map((i) => i.question),
  };
}

/** What the validation service is asked about the draft: the reply and the data it rests on. */
export function validationRequest(turn: Pick<Turn, 'state' | 'input'>): ValidationRequest {
  const { state } = turn;
  return {
    conversation_id: turn.input.conversationId,
    response: state.response ?? '',
    user_email: state.user_email,
    user_name: state.metadata.user_name,
    messages: state.messages,
    internal_notes: state.metadata.internal_notes,
    tool_data: state.tool_data,
    docs_data: state.docs_data,
    intents: answeredAndOpen(state),
    ...namedRecords(state),
  };
}

/** The validation service's raw answer, or the escalation when it cannot be had. */
async function askValidationService(turn: Turn): Promise<string | Step> {
  try {
    const answer = await validation().validateDraft.executeWithOptions({ summary: 'validate draft' }, [
      validationRequest(turn),
    ]);
    return answer.raw;
  } catch (err) {
    return validationFailed(turn, err);
  }
}

/** The validation service could not be asked (after its retries): the turn escalates. */
export function validationFailed(turn: Pick<Turn, 'state'>, err: unknown): Step {
  const step = handOverOnError(turn, 'validation_error', err);
  turn.state.validate = {
    validation_response: null,
    overall_passed: false,
    validation_note_added: false,
    escalation_reason: step.escalation!.reason,
    next_action: 'escalate',
  };
  return step;
}

export async function validate(turn: Turn): Promise<Step> {
  enter(turn, 'validate');
  const { state } = turn;
  const grounded = rulesSince(GROUNDED_REPLIES_RULES);
  const checks = guardChecks(state, turn.prompts, { idsAsSubstrings: !since(REPLY_GUARD_ID_TOKENS_PATCH), grounded });
  const problems = checks.filter((c) => !c.passed).map((c) => c.detail);
  if (problems.length && grounded && !state.metadata.held_back_draft) return holdBack(turn, problems);
  const raw = guardVerdict(checks) ?? (await askValidationService(turn));
  if (typeof raw !== 'string') return raw;
  const step = routeValidation(turn, raw, false);
  if (problems.length && grounded && step.escalation) step.escalation.details = heldBackTwice(state, problems);
  const back = step.next === 'response' ? reconsideredAt(turn) : null;
  if (back) return { next: back };
  // The raw answer is always noted, even when it cannot be parsed: it is what the team needs to see why. A reply that
  // passed takes its note along (one activity: see `postReply`); runs from before posted the note beside the reply,
  // and Response waited for it. The team's next step the draft proposes goes with the reply's note, and a draft the
  // guard held back before this one is told too.
  const nextStep = suggestedStepLine(state);
  const heldBack = step.next === 'response' ? heldBackLine(state) : null;
  const text = [`Validation result:\n${raw}`, heldBack, nextStep].filter((part) => part).join('\n\n');
  if (step.next === 'response' && rulesSince(LOCAL_AGENT_CALLS_RULES)) {
    turn.validationNoteText = text;
    return step;
  }
  const note = postNote(turn, text, 'note validation result').then((posted) => {
    state.validate!.validation_note_added = posted.added;
  });
  if (step.next === 'response' && since(NOTE_BESIDE_REPLY_PATCH)) turn.validationNote = note;
  else await note;
  return step;
}

/**
 * Melvin's own guard held the draft back: Draft writes it once more, the model told what was wrong (a model that
 * slipped a date or a name usually fixes it when told), before the turn gives up and hands over. Once a turn.
 */
function holdBack(turn: Turn, problems: string[]): Step {
  turn.state.metadata.held_back_draft = { draft: turn.state.response ?? '', problems };
  turn.repairing = true;
  log.info('Melvin’s own guard held the draft back: it is written once more', { problems });
  return { next: 'draft' };
}

/** The hand-over note's details when the draft written again failed the guard too: what was wrong with each. */
function heldBackTwice(state: AgentState, problems: string[]): string[] {
  const first = state.metadata.held_back_draft?.problems ?? [];
  return [
    'Melvin’s own check held the reply back, written twice. What was wrong with the last one:',
    ...problems.map((p) => `- ${p}`),
    ...(first.length ? ['And with the first:', ...first.map((p) => `- ${p}`)] : []),
  ];
}

/** For the validation note of a reply written again: what the guard found in the draft before it. */
function heldBackLine(state: AgentState): string | null {
  const heldBack = state.metadata.held_back_draft;
  return heldBack
    ? `Melvin’s own check held back a first draft (${heldBack.problems.join('; ')}); this reply is the one written again.`
    : null;
}

/**
 * A draft that passed goes back to Coverage once when the user wrote again since Draft's fetch and the turn has a hop
 * left. The agent's calls run as local activities, and a message that comes while they run reaches the workflow only
 * with the validation check; Coverage fetches it, judges the data against it too, plans a hop for what it asks when the
 * data falls short, and the reply answers both. Without a hop left, or once back already, the message is the next
 * turn's, as one after Draft always was (Coverage could only hand the turn over). The first draft's verdict is not
 * noted: the team sees the reply that went out with its own. A draft that does not pass escalates with what it saw,
 * and the hand-over takes the conversation as it stands then. Runs of LOCAL_AGENT_CALLS_RULES went back to Draft, without
 * a new hop.
 */
function reconsideredAt(turn: Turn): 'coverage' | 'draft' | null {
  const { state } = turn;
  if (!rulesSince(LOCAL_AGENT_CALLS_RULES) || turn.reconsidered || !turn.draftSaw) return null;
  const newer = state.metadata.user_messages.length - turn.draftSaw.deliveries;
  if (newer <= 0) return null;
  const toCoverage = rulesSince(LATE_MESSAGES_RULES);
  if (toCoverage && state.hops.length >= state.max_hops) return null;
  turn.reconsidered = true;
  log.info('the user wrote while the agent worked: the turn goes back', { new_deliveries: newer });
  return toCoverage ? 'coverage' : 'draft';
}

/** The service's answer (or the guard's) into the state, and the route it gives; an unreadable answer escalates. */
export function routeValidation(turn: Pick<Turn, 'state'>, raw: string, noteAdded: boolean): Step {
  const { answer, problem } = readValidationAnswer(raw);
  const route = answer
    ? routeAfterValidation(answer.overall_passed)
    : { next: 'escalate' as const, escalation: escalation('validation_error', problem) };
  turn.state.validate = {
    validation_response: answer ?? raw,
    overall_passed: answer?.overall_passed ?? false,
    validation_note_added: noteAdded,
    escalation_reason: route.escalation?.reason ?? null,
    next_action: route.next,
  };
  return { next: route.next, ...(route.escalation ? { escalation: route.escalation } : {}) };
}
