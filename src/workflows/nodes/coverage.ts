// The Coverage node: the model judges whether the data gathered answers the user, and the route follows.
import type { LlmAnswer } from '../../activities/llm';
import type { CoverageAnalysis } from '../../state';
import { coverageContext } from '../contexts';
import { llm } from '../policies';
import { routeAfterCoverage } from '../routing';
import type { Step, Turn } from '../turn';
import { enter, failed, recordModel, refetchIfNewMessages } from './helpers';

/** The coverage rule: enough data → Draft; not enough with hops left → Plan again; else escalate. */
export async function coverage(t: Turn): Promise<Step> {
  await refetchIfNewMessages(t);
  const { state } = t;
  const hop = state.hops.at(-1)!;
  const hopNumber = state.hops.length;
  enter(t, 'coverage');
  let answer: LlmAnswer<CoverageAnalysis>;
  try {
    answer = await llm.coverage.executeWithOptions({ summary: `coverage hop ${hopNumber}` }, [
      { prompt: t.prompts!.coverage, context: coverageContext(state, hopNumber) },
    ]);
  } catch (err) {
    const step = failed(t, 'coverage_error', err);
    hop.coverage = {
      coverage_analysis: null,
      data_sufficient: false,
      next_node: 'escalate',
      escalation_reason: step.escalation!.reason,
    };
    return step;
  }
  recordModel(t, answer);
  const analysis = answer.output;
  const route = routeAfterCoverage({
    dataSufficient: analysis.data_sufficient,
    hop: hopNumber,
    maxHops: state.max_hops,
    intentsCovered: analysis.intents?.filter((i) => i.covered).length,
  });
  hop.coverage = {
    coverage_analysis: analysis,
    data_sufficient: analysis.data_sufficient,
    next_node: route.next,
    escalation_reason: route.escalation?.reason ?? null,
  };
  return { next: route.next, ...(route.escalation ? { escalation: route.escalation } : {}) };
}
