// The reply modes that hold a reply back, for Response: shadow notes the draft, approval waits for a lead's decision.
import { condition, upsertSearchAttributes } from '@temporalio/workflow';
import { searchAttributes } from '../../shared';
import type { ApprovalData } from '../../state';
import { escalation, type Escalation } from '../routing';
import type { Turn } from '../turn';
import { durationText } from '../turn-state';
import { operatorEscalation, postNote, showDetails } from './helpers';

function newApproval(t: Turn, mode: ApprovalData['mode']): ApprovalData {
  return {
    mode,
    draft: t.state.response ?? '',
    note_added: false,
    requested_at: new Date().toISOString(),
    outcome: mode === 'shadow' ? 'noted' : 'waiting',
    decided_by: null,
    decided_at: null,
    reason: null,
  };
}

/** Shadow mode: the draft goes on the conversation as a note, and nothing is sent. */
export async function noteShadowDraft(t: Turn): Promise<void> {
  const approval = newApproval(t, 'shadow');
  approval.note_added = (
    await postNote(t, `👁 Shadow mode: Melvin would have replied:\n\n${approval.draft}`, 'note shadow draft')
  ).added;
  t.state.metadata.approval = approval;
}

/**
 * Approval mode: notes the draft and waits for a lead's decision (the `decideReply` update) until the timeout. Returns
 * null to send (the draft, or the lead's edit), else the escalation: a rejection, the timeout, a forced escalation.
 */
export async function awaitDecision(t: Turn): Promise<Escalation | null> {
  const { state } = t;
  const approval = newApproval(t, 'approve');
  const timeoutSeconds = state.metadata.reply_mode!.approval_timeout_seconds;
  const waitText = durationText(timeoutSeconds);
  approval.note_added = (
    await postNote(
      t,
      `✋ Melvin's draft waits for a lead: approve, edit or reject it (decideReply). After ${waitText} without a ` +
        `decision the team takes over.\n\n${approval.draft}`,
      'note draft for approval',
    )
  ).added;
  // Set only now: the update's validator accepts a decision once the team can see the draft.
  state.metadata.approval = approval;
  showDetails(t, `Waiting up to ${waitText} for a lead to approve, edit or reject the draft.`);
  const decided = await condition(
    () => t.decision !== null || !!state.metadata.forced_escalation,
    timeoutSeconds * 1000,
  );
  const decision = t.decision;
  if (!decided || !decision) {
    approval.outcome = decided ? approval.outcome : 'timed_out';
    upsertSearchAttributes([{ key: searchAttributes.replyDecision, value: approval.outcome }]);
    return decided
      ? operatorEscalation(t)
      : escalation('operator', `No decision on Melvin's draft within ${waitText}`, 'approval timeout');
  }
  approval.decided_by = decision.by;
  approval.decided_at = new Date().toISOString();
  approval.outcome =
    decision.decision === 'approve' ? 'approved' : decision.decision === 'edit' ? 'edited' : 'rejected';
  upsertSearchAttributes([{ key: searchAttributes.replyDecision, value: approval.outcome }]);
  if (decision.decision === 'reject') {
    approval.reason = decision.reason;
    return escalation('operator', `Draft rejected: ${decision.reason}`, decision.by);
  }
  if (decision.decision === 'edit') state.response = decision.text;
  return null;
}
