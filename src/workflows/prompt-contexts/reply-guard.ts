// Melvin's own guard over a draft, as a pure function of the run's state: the checks of src/guards/ with the turn's
// sources, and the two that read the turn's own plan and coverage. Validate runs it before the validation service.
import type { LoadedPrompts } from '../../activities/prompts';
import type { AgentState } from '../../contract/state';
import { checkReply, type ReplyCheck } from '../../guards/reply-checks';
import { groundingSources, turnIntents, uncoveredIntents } from './contexts';

/**
 * Melvin's own checks of the draft, before the validation service is asked. `idsAsSubstrings` only for runs from before
 * REPLY_GUARD_ID_TOKENS_PATCH; `grounded` (the facts and claimed actions) for runs of GROUNDED_REPLIES_RULES and since.
 */
export function guardChecks(
  state: AgentState,
  prompts: LoadedPrompts | undefined,
  rules: { idsAsSubstrings: boolean; grounded: boolean },
): ReplyCheck[] {
  const checks = checkReply(
    state.response ?? '',
    {
      userEmail: state.user_email,
      internalNotes: state.metadata.internal_notes,
      toolData: state.tool_data,
      prompts: prompts ? [prompts.plan, prompts.coverage, prompts.draft] : [],
      ...(rules.grounded && { grounding: groundingSources(state) }),
    },
    { idsAsSubstrings: rules.idsAsSubstrings },
  );
  return rules.grounded ? [...checks, onlyCoveredAnswered(state), noReplyWherePersonNeeded(state)] : checks;
}

/**
 * A reply does not answer what Plan read as a person's to answer (the user asks for one, or writes of a legal or safety
 * matter): two readings, on two model calls, must agree before Melvin answers such a message itself.
 */
function noReplyWherePersonNeeded(state: AgentState): ReplyCheck {
  const needed = state.hops.map((hop) => hop.plan?.person_needed).find((p) => p);
  const what = needed?.kind === 'asked_for_person' ? 'asks for a person' : 'writes of a matter a person must handle';
  return {
    name: 'person_needed_routed',
    passed: !needed,
    detail: needed
      ? `answers a message Plan read as a person's to answer: the user ${what} (${needed.why})`
      : 'Plan read no request for a person',
  };
}

/**
 * A reply answers only what Coverage found the data covers: every intent it did not cover stays in the draft's
 * `open_intents`, for the team. A draft that drops one answers it without data, and the team would never hear of it.
 */
function onlyCoveredAnswered(state: AgentState): ReplyCheck {
  const left = new Set(state.draft?.open_intents ?? []);
  const dropped = uncoveredIntents(state).filter((intent) => !left.has(intent));
  const questions = turnIntents(state).filter((i) => dropped.includes(i.intent));
  return {
    name: 'answers_only_covered',
    passed: dropped.length === 0,
    detail: dropped.length
      ? `answers what the data does not cover: ${questions.map((i) => `${i.intent} (“${i.question}”)`).join(', ') || dropped.join(', ')}`
      : 'leaves every question the data does not cover to the team',
  };
}

/** The guard's checks as the validation service's answer when they block the reply, or null when they pass. */
export function guardVerdict(checks: ReplyCheck[]): string | null {
  return checks.some((c) => !c.passed) ? JSON.stringify({ overall_passed: false, checked_by: 'melvin', checks }) : null;
}
