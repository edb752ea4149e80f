// The Plan node: a new hop, and the model's choice of tool calls and documentation searches for it.
import { upsertSearchAttributes } from '@temporalio/workflow';
import { DEFAULT_TONE_HANDOVER, searchAttributes } from '../../contract/shared';
import type { Hop } from '../../contract/state';
import { planContext } from '../prompt-contexts/contexts';
import { modelCalls } from '../activity-options/retry-policies';
import type { Step, Turn } from './turn';
import { escalation } from '../routing/routing';
import { toneHandoverReason } from '../routing/tone';
import { enter, handOverOnError, recordModel } from './helpers';

/** Starts a hop: the model chooses the tool calls and documentation searches. */
export async function plan(turn: Turn): Promise<Step> {
  const { state } = turn;
  const hop: Hop = { plan: null, gather: null, coverage: null };
  state.hops.push(hop);
  const hopNumber = state.hops.length;
  upsertSearchAttributes([{ key: searchAttributes.hopCount, value: hopNumber }]);
  enter(turn, 'plan');
  try {
    const answer = await modelCalls().plan.executeWithOptions({ summary: `plan hop ${hopNumber}` }, [
      { prompt: turn.prompts!.plan, context: planContext(state, hopNumber) },
    ]);
    recordModel(turn, answer);
    hop.plan = answer.output;
  } catch (err) {
    return handOverOnError(turn, 'plan_error', err);
  }
  // The talent's third complaining turn (or strong frustration, when configured): a person answers, not Melvin again.
  const upset = toneHandoverReason(state, turn.input.toneHandover ?? DEFAULT_TONE_HANDOVER);
  if (upset) return { next: 'escalate', escalation: escalation('talent_frustrated', upset) };
  return { next: 'gather' };
}
