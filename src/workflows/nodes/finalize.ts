// The Finalize node: sets Melvin Status on the conversation and snoozes it (unless a teammate closed it meanwhile).
import { CancellationScope, isCancellation, log, upsertSearchAttributes } from '@temporalio/workflow';
import { DEFAULT_SNOOZE_SECONDS, searchAttributes } from '../../contract/shared';
import { intercomReads } from '../activity-options/retry-policies';
import { oweSetting, settled } from '../records/owed-writes';
import {
  CLOSED_STAYS_CLOSED_RULES,
  KEPT_PROMISES_RULES,
  SNOOZE_AFTER_LATE_NOTES_RULES,
  rulesSince,
} from '../versions/patches';
import { melvinStatusFor } from '../routing/routing';
import { settledStage, suggestedStep } from '../routing/stage';
import type { AgentState, MelvinStatus } from '../../contract/state';
import type { Step, Turn } from './turn';
import { afterWrites, describeFailure, enter } from './helpers';

export async function finalize(turn: Turn): Promise<Step> {
  const { state, input } = turn;
  enter(turn, 'finalize');
  const conversationId = input.conversationId;
  const snoozeSeconds = input.snoozeSeconds ?? DEFAULT_SNOOZE_SECONDS;
  const status = finalStatus(state);
  if (!turn.legacy && rulesSince(CLOSED_STAYS_CLOSED_RULES) && (await staysClosed(turn))) {
    await setStatusOnly(turn, status);
    const stageAndStep = stageAndAction(state);
    if (stageAndStep.length) upsertSearchAttributes(stageAndStep);
    return afterWrites(turn, 'end');
  }
  const intercom = intercomReads();
  const writes = () =>
    Promise.allSettled([
      intercom.setStatus.executeWithOptions({ summary: `set Melvin Status ${status}` }, [{ conversationId, status }]),
      intercom.snooze.executeWithOptions({ summary: `snooze ${snoozeSeconds}s` }, [
        { conversationId, seconds: snoozeSeconds },
      ]),
    ]);
  let [statusSet, snoozed] = await writes();
  // Once the turn's outcome is out, its status and snooze must follow it even when the run is cancelled meanwhile (runs
  // from before let a cancellation stop them). Only then are they written again, outside the cancellation: local
  // activities inside a non-cancellable scope on every turn let a worker restart split their markers from the commands
  // that follow, and the replay then failed.
  if (!turn.legacy && CancellationScope.current().consideredCancelled) {
    [statusSet, snoozed] = await CancellationScope.nonCancellable(writes);
  }
  recordFinalize(state, status, snoozeSeconds, statusSet, snoozed);
  if (!turn.legacy && rulesSince(SNOOZE_AFTER_LATE_NOTES_RULES))
    state.metadata.conversation.last_snooze_seconds = snoozeSeconds;
  if (!turn.legacy && rulesSince(KEPT_PROMISES_RULES)) oweWhatFailed(turn, status, snoozeSeconds, statusSet, snoozed);
  if (state.finalize?.error) log.warn('Melvin Status or the snooze not written', { error: state.finalize.error });
  upsertSearchAttributes([{ key: searchAttributes.melvinStatus, value: status }, ...stageAndAction(state)]);
  return afterWrites(turn, 'end');
}

/**
 * Whether the conversation a teammate closed during the run is closed still: a snooze would reopen it. Only a message
 * of the user's opens it again (Intercom reopens a conversation the user writes to), and only Intercom knows of one
 * whose webhook has not come; when it cannot be read, the teammate's close stands.
 */
async function staysClosed(turn: Turn): Promise<boolean> {
  if (!turn.teamClosed()) return false;
  try {
    const state = await intercomReads().readState.executeWithOptions({ summary: 'read whether it is still closed' }, [
      { conversationId: turn.input.conversationId },
    ]);
    return state !== 'open' && state !== 'snoozed';
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('could not read whether the conversation is still closed', { error: describeFailure(err) });
    return true;
  }
}

/**
 * A write that failed for good is owed and written again between turns; one that took settles any owed before it.
 * A cancellation is not a failure of Intercom's: the writes were made again outside it.
 */
function oweWhatFailed(
  turn: Turn,
  status: MelvinStatus,
  snoozeSeconds: number,
  statusSet: PromiseSettledResult<unknown>,
  snoozed: PromiseSettledResult<unknown>,
): void {
  const record = turn.state.metadata.conversation;
  if (statusSet.status === 'fulfilled') settled(record, 'status');
  else if (!isCancellation(statusSet.reason))
    oweSetting(record, { kind: 'status', status }, describeFailure(statusSet.reason));
  if (snoozed.status === 'fulfilled') settled(record, 'snooze');
  else if (!isCancellation(snoozed.reason))
    oweSetting(record, { kind: 'snooze', seconds: snoozeSeconds }, describeFailure(snoozed.reason));
}

/**
 * Melvin Status alone, for an outcome that leaves the conversation to a teammate who is on it, or that a teammate
 * closed (no snooze); a write that fails for good is owed.
 */
export async function setStatusOnly(turn: Turn, status: MelvinStatus): Promise<void> {
  const { state, input } = turn;
  const record = state.metadata.conversation;
  let error: string | null = null;
  try {
    await intercomReads().setStatus.executeWithOptions({ summary: `set Melvin Status ${status}` }, [
      { conversationId: input.conversationId, status },
    ]);
    settled(record, 'status');
  } catch (err) {
    if (isCancellation(err)) throw err;
    error = describeFailure(err);
    oweSetting(record, { kind: 'status', status }, error);
  }
  if (!turn.legacy && rulesSince(SNOOZE_AFTER_LATE_NOTES_RULES)) record.last_snooze_seconds = null;
  state.finalize = {
    melvin_status: status,
    status_updated: error === null,
    conversation_snoozed: false,
    snooze_duration_seconds: 0,
    error,
  };
  upsertSearchAttributes([{ key: searchAttributes.melvinStatus, value: status }]);
}

/** The stage and the suggested next step as search attributes, when the turn has them: leads filter runs by them. */
function stageAndAction(state: AgentState) {
  const stage = settledStage(state)?.stage;
  const action = suggestedStep(state)?.action;
  return [
    ...(stage ? [{ key: searchAttributes.melvinStage, value: stage }] : []),
    ...(action ? [{ key: searchAttributes.suggestedAction, value: action }] : []),
  ];
}

/** The Melvin Status the turn ends with. Pure, like `recordFinalize`: the bench's LangGraph peer finalizes with them. */
export function finalStatus(state: AgentState): MelvinStatus {
  return melvinStatusFor({
    escalationKind: state.escalate?.escalation_kind ?? null,
    delivered: state.response_delivery?.delivery_successful ?? false,
  });
}

/** Finalize's two writes into the state: whether each took, and why not. */
export function recordFinalize(
  state: AgentState,
  status: MelvinStatus,
  snoozeSeconds: number,
  statusSet: PromiseSettledResult<unknown>,
  snoozed: PromiseSettledResult<unknown>,
): void {
  const errors = [statusSet, snoozed].flatMap((r) => (r.status === 'rejected' ? [describeFailure(r.reason)] : []));
  state.finalize = {
    melvin_status: status,
    status_updated: statusSet.status === 'fulfilled',
    conversation_snoozed: snoozed.status === 'fulfilled',
    snooze_duration_seconds: snoozeSeconds,
    error: errors.length ? errors.join('; ') : null,
  };
  if (state.response_delivery) state.response_delivery.status_updated = statusSet.status === 'fulfilled';
}
