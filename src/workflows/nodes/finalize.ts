// The Finalize node: sets Melvin Status on the conversation and snoozes it.
import { upsertSearchAttributes } from '@temporalio/workflow';
import { DEFAULT_SNOOZE_SECONDS, searchAttributes } from '../../shared';
import { intercomReads } from '../policies';
import { melvinStatusFor } from '../routing';
import type { AgentState, MelvinStatus } from '../../state';
import type { Step, Turn } from '../turn';
import { afterWrites, describeFailure, enter } from './helpers';

export async function finalize(t: Turn): Promise<Step> {
  const { state, input } = t;
  enter(t, 'finalize');
  const conversationId = input.conversationId;
  const snoozeSeconds = input.snoozeSeconds ?? DEFAULT_SNOOZE_SECONDS;
  const status = finalStatus(state);
  const intercom = intercomReads();
  const [statusSet, snoozed] = await Promise.allSettled([
    intercom.setStatus.executeWithOptions({ summary: `set Melvin Status ${status}` }, [{ conversationId, status }]),
    intercom.snooze.executeWithOptions({ summary: `snooze ${snoozeSeconds}s` }, [
      { conversationId, seconds: snoozeSeconds },
    ]),
  ]);
  recordFinalize(state, status, snoozeSeconds, statusSet, snoozed);
  upsertSearchAttributes([{ key: searchAttributes.melvinStatus, value: status }]);
  return afterWrites(t, 'end');
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
