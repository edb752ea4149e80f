// The Validate node: Melvin's own reply guard, then the validation service, and the route its answer gives.
import { patched } from '@temporalio/workflow';
import { checkReply, type ReplyCheck } from '../../reply-checks';
import type { AgentState } from '../../state';
import { turnIntents } from '../contexts';
import { draftValidation } from '../policies';
import { escalation, routeAfterValidation } from '../routing';
import type { Step, Turn } from '../turn';
import { readValidationAnswer } from '../turn-state';
import { enter, failed, postNote } from './helpers';

/**
 * Runs whose guard matched internal ids anywhere in the reply (so "$250" was blocked by an id 250) must replay with
 * that match, or a reply it blocked would now go on to the validation service; every run since records this marker.
 */
const REPLY_GUARD_ID_TOKENS_PATCH = 'reply-guard-id-tokens';

/** Melvin's own checks, before the validation service is asked: a reply that fails them never goes further. */
function guardFindings(t: Turn): ReplyCheck[] {
  const { state, prompts } = t;
  const checks = checkReply(
    state.response ?? '',
    {
      userEmail: state.user_email,
      internalNotes: state.metadata.internal_notes,
      toolData: state.tool_data,
      prompts: prompts ? [prompts.plan, prompts.coverage, prompts.draft] : [],
    },
    { idsAsSubstrings: !patched(REPLY_GUARD_ID_TOKENS_PATCH) },
  );
  return checks.some((c) => !c.passed) ? checks : [];
}

/** The user's questions the draft answers, and those it leaves open for the team, in the user's words. */
function answeredAndOpen(state: AgentState): { answered: string[]; open: string[] } {
  const open = state.draft?.open_intents ?? [];
  const intents = turnIntents(state);
  return {
    answered: intents.filter((i) => !open.includes(i.intent)).map((i) => i.question),
    open: intents.filter((i) => open.includes(i.intent)).map((i) => i.question),
  };
}

/** The validation service's raw answer, or the escalation when it cannot be had. */
async function askValidationService(t: Turn): Promise<string | Step> {
  const { state } = t;
  try {
    const answer = await draftValidation().validateDraft.executeWithOptions({ summary: 'validate draft' }, [
      {
        conversation_id: t.input.conversationId,
        response: state.response ?? '',
        user_email: state.user_email,
        user_name: state.metadata.user_name,
        messages: state.messages,
        internal_notes: state.metadata.internal_notes,
        tool_data: state.tool_data,
        docs_data: state.docs_data,
        intents: answeredAndOpen(state),
      },
    ]);
    return answer.raw;
  } catch (err) {
    const step = failed(t, 'validation_error', err);
    state.validate = {
      validation_response: null,
      overall_passed: false,
      validation_note_added: false,
      escalation_reason: step.escalation!.reason,
      next_action: 'escalate',
    };
    return step;
  }
}

export async function validate(t: Turn): Promise<Step> {
  enter(t, 'validate');
  const blocked = guardFindings(t);
  const raw = blocked.length
    ? JSON.stringify({ overall_passed: false, checked_by: 'melvin', checks: blocked })
    : await askValidationService(t);
  if (typeof raw !== 'string') return raw;
  // The raw answer is always noted, even when it cannot be parsed: it is what the team needs to see why.
  const note = await postNote(t, `Validation result:\n${raw}`, 'note validation result');
  const { answer, problem } = readValidationAnswer(raw);
  const route = answer
    ? routeAfterValidation(answer.overall_passed)
    : { next: 'escalate' as const, escalation: escalation('validation_error', problem) };
  t.state.validate = {
    validation_response: answer ?? raw,
    overall_passed: answer?.overall_passed ?? false,
    validation_note_added: note.added,
    escalation_reason: route.escalation?.reason ?? null,
    next_action: route.next,
  };
  return { next: route.next, ...(route.escalation ? { escalation: route.escalation } : {}) };
}
