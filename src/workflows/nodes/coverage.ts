// The Coverage node: the model judges whether the data gathered answers the user, and the route follows.
import type { LlmAnswer } from '../../activities/llm';
import type { CoverageAnalysis } from '../../contract/state';
import { coverageContext } from '../prompt-contexts/contexts';
import { modelCalls } from '../activity-options/retry-policies';
import { routeAfterCoverage } from '../routing/routing';
import type { Step, Turn } from './turn';
import { enter, handOverOnError, recordModel, refetchIfNewMessages } from './helpers';

/** The coverage rule: enough data → Draft; not enough with hops left → Plan again; else escalate. */
export async function coverage(turn: Turn): Promise<Step> {
  await refetchIfNewMessages(turn);
  const { state } = turn;
  const hopNumber = state.hops.length;
  enter(turn, 'coverage');
  let answer: LlmAnswer<CoverageAnalysis>;
  try {
    answer = await modelCalls().coverage.executeWithOptions({ summary: `coverage hop ${hopNumber}` }, [
      { prompt: turn.prompts!.coverage, context: coverageContext(state, hopNumber) },
    ]);
  } catch (err) {
    return coverageFailed(turn, err);
  }
  recordModel(turn, answer);
  return routeCoverage(turn, answer.output);
}

/** The coverage call failed (after its retries): the hop records it, and the turn escalates. */
export function coverageFailed(turn: Pick<Turn, 'state'>, err: unknown): Step {
  const step = handOverOnError(turn, 'coverage_error', err);
  turn.state.hops.at(-1)!.coverage = {
    coverage_analysis: null,
    data_sufficient: false,
    next_node: 'escalate',
    escalation_reason: step.escalation!.reason,
  };
  return step;
}

/** The model's judgement into the hop, and the route the coverage rule gives. */
export function routeCoverage(turn: Pick<Turn, 'state'>, analysis: CoverageAnalysis): Step {
  const { state } = turn;
  const route = routeAfterCoverage({
    dataSufficient: analysis.data_sufficient,
    hop: state.hops.length,
    maxHops: state.max_hops,
    intentsCovered: analysis.intents?.filter((i) => i.covered).length,
  });
  state.hops.at(-1)!.coverage = {
    coverage_analysis: analysis,
    data_sufficient: analysis.data_sufficient,
    next_node: route.next,
    escalation_reason: route.escalation?.reason ?? null,
  };
  return { next: route.next, ...(route.escalation ? { escalation: route.escalation } : {}) };
}
