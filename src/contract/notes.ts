// The marks Melvin's notes open with. Melvin writes them, the team reads them in Intercom, and a conversation's new
// workflow reads them back from Intercom to learn who answers the user (the team after a hand-over, Melvin after a lead
// handed it back). Neutral: the workflow writes these notes and the Intercom activities read them.

/** A hand-over to the team: `🚨 Escalation: <reason>`. */
export const ESCALATION_MARK = '🚨 Escalation:';
/** How an escalation's reason opens when Melvin handed over a sensitive request (legal, safety, harassment, fraud). */
export const SENSITIVE_REASON = 'Sensitive request:';
/** The line of an escalation note that names the operator who asked: the note's reason is then a person's words. */
export const REQUESTED_BY = 'Requested by:';
/** A reply that could not be delivered: the team has the draft to send. */
export const UNDELIVERED_MARK = '⚠️ Melvin could not deliver its reply';
/** A teammate took the conversation over while Melvin answered: Melvin's draft went to a note, not to the user. */
export const WITHHELD_MARK = 'ℹ️ A teammate took over';
/** The user wrote while the team owns the conversation. */
export const WROTE_AGAIN_MARK = '💬 The user wrote again.';
/** A lead gave the conversation back to Melvin. */
export const HANDED_BACK_MARK = '↩️ Handed back to Melvin';
/** Shadow mode: the draft Melvin would have sent. */
export const SHADOW_MARK = '👁 Shadow mode:';
/** Approval mode: the draft waiting for a lead. */
export const APPROVAL_MARK = "✋ Melvin's draft waits for a lead";
/** The line of a hand-over note before what it leaves the team to answer, one question a line. */
export const OPEN_FOR_THE_TEAM = 'Open for the team:';
/** The validation service's answer, noted raw. */
export const VALIDATION_MARK = 'Validation result:';

/** Notes that hand the conversation to the team when Melvin posts them. */
export const HAND_OVER_MARKS = [ESCALATION_MARK, UNDELIVERED_MARK, WITHHELD_MARK] as const;

/** Whether a note carries an operator's words: an escalation they asked for, whose reason they wrote. */
export function carriesOperatorWords(note: string): boolean {
  return note.split('\n').some((line) => line.startsWith(REQUESTED_BY));
}

/** Whether Melvin's note handed the conversation over as sensitive: such a conversation is never indexed. */
export function handsOverAsSensitive(note: string): boolean {
  return note.trimStart().startsWith(`${ESCALATION_MARK} ${SENSITIVE_REASON}`);
}
