// The reply modes that hold a reply back, for Response: shadow notes the draft, approval waits for a lead's decision.
import { condition, upsertSearchAttributes } from '@temporalio/workflow';
import { APPROVAL_MARK, SHADOW_MARK } from '../../contract/notes';
import { searchAttributes } from '../../contract/shared';
import type { ApprovalData } from '../../contract/state';
import { escalation, type Escalation } from '../routing/routing';
import type { Turn } from './turn';
import { durationText } from '../records/turn-state';
import { operatorEscalationWaiting, postNote, showDetails, takeOperatorEscalation } from './helpers';

function newApproval(turn: Turn, mode: ApprovalData['mode']): ApprovalData {
  return {
    mode,
    draft: turn.state.response ?? '',
    note_added: false,
    requested_at: new Date().toISOString(),
    outcome: mode === 'shadow' ? 'noted' : 'waiting',
    decided_by: null,
    decided_at: null,
    reason: null,
  };
}

/** Shadow mode: the draft goes on the conversation as a note, and nothing is sent. */
export async function noteShadowDraft(turn: Turn): Promise<void> {
  const approval = newApproval(turn, 'shadow');
  approval.note_added = (
    await postNote(turn, `${SHADOW_MARK} Melvin would have replied:\n\n${approval.draft}`, 'note shadow draft')
  ).added;
  turn.state.metadata.approval = approval;
}

/** What the lead's wait came to: send the reply, hand the conversation over, or leave it to the teammate who took it. */
export type Decided = { send: true } | { send: false; escalation: Escalation } | { send: false; withhold: string };

const teamOwns = (turn: Turn) => turn.state.metadata.conversation.ownership.owner === 'team';

/**
 * Approval mode: notes the draft and waits for a lead's decision (the `decideReply` update) until the timeout. A lead's
 * approval or edit sends (the draft, or the edit), unless a teammate took the conversation over meanwhile; a rejection,
 * the timeout or an operator's escalation hands it to the team. A teammate taking over or an operator escalating ends
 * the wait at once: the draft no longer waits, and a decision sent after is refused. Runs from before that waited on
 * through a teammate's takeover and left the draft `waiting` after an escalation.
 */
export async function awaitDecision(turn: Turn): Promise<Decided> {
  const { state } = turn;
  const approval = newApproval(turn, 'approve');
  const timeoutSeconds = state.metadata.reply_mode!.approval_timeout_seconds;
  const waitText = durationText(timeoutSeconds);
  approval.note_added = (
    await postNote(
      turn,
      `${APPROVAL_MARK}: approve, edit or reject it (decideReply). After ${waitText} without a ` +
        `decision the team takes over.\n\n${approval.draft}`,
      'note draft for approval',
    )
  ).added;
  // Set only now: the update's validator accepts a decision once the team can see the draft.
  state.metadata.approval = approval;
  showDetails(turn, `Waiting up to ${waitText} for a lead to approve, edit or reject the draft.`);
  const decided = await condition(
    () => turn.decision !== null || operatorEscalationWaiting(turn) || (!turn.legacy && teamOwns(turn)),
    timeoutSeconds * 1000,
  );
  const decision = turn.decision;
  const settle = (outcome: ApprovalData['outcome'], reason: string | null = null) => {
    approval.outcome = outcome;
    approval.reason = reason;
    upsertSearchAttributes([{ key: searchAttributes.replyDecision, value: outcome }]);
  };
  if (!decided) {
    settle('timed_out');
    return {
      send: false,
      escalation: escalation('operator', `No decision on Melvin's draft within ${waitText}`, 'approval timeout'),
    };
  }
  if (!decision) {
    if (turn.legacy) {
      upsertSearchAttributes([{ key: searchAttributes.replyDecision, value: approval.outcome }]);
      return { send: false, escalation: takeOperatorEscalation(turn) };
    }
    if (operatorEscalationWaiting(turn)) {
      settle('withdrawn', 'an operator escalated the conversation while the draft waited');
      return { send: false, escalation: takeOperatorEscalation(turn) };
    }
    settle('withdrawn', 'a teammate took the conversation over while the draft waited');
    return { send: false, withhold: 'a teammate took the conversation over while the draft waited for a lead' };
  }
  approval.decided_by = decision.by;
  approval.decided_at = new Date().toISOString();
  settle(decision.decision === 'approve' ? 'approved' : decision.decision === 'edit' ? 'edited' : 'rejected');
  if (decision.decision === 'reject') {
    approval.reason = decision.reason;
    return { send: false, escalation: escalation('operator', `Draft rejected: ${decision.reason}`, decision.by) };
  }
  if (decision.decision === 'edit') state.response = decision.text;
  // A teammate who took the conversation over while the decision came has the last word.
  if (!turn.legacy && teamOwns(turn))
    return { send: false, withhold: 'a teammate took the conversation over meanwhile' };
  return { send: true };
}
