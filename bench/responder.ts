// The sandbox model as the bench drives it: its own reasoning, made to take N hops or to plan k tool calls a hop.
import type { Responder } from '../sandbox/model/server';
import { sandboxReasoning } from '../sandbox/model/reasoning';
import type { CoverageOutput, PlanOutput } from '../src/contract/schemas';

export interface BenchShape {
  /**
   * The hops a turn takes: coverage finds the data short at every hop before this one, so the turn plans and gathers
   * again until then (the turn's max hops must allow it).
   */
  hops: number;
  /**
   * When set, every hop plans exactly this many tool calls: the sandbox's own (the user's payments), then help-center
   * searches with distinct queries.
   */
  toolCalls?: number;
}

const DOCS_TOOL = 'search_talent_docs';

/**
 * A responder whose shape the bench changes between its phases (the turns run one after another, so one shape holds
 * for every request of a turn). Left alone, a payment question takes one hop with one tool call (the user's payments).
 */
export function benchResponder(shape: BenchShape): Responder {
  return (step, context) => {
    const answer = sandboxReasoning(step, context);
    const hop = Number(context.hop ?? 1);
    if (step === 'plan' && shape.toolCalls !== undefined) {
      const tools = (context.available_tools ?? []) as { name: string }[];
      const docs = tools.find((t) => t.name === DOCS_TOOL || t.name.endsWith(`__${DOCS_TOOL}`));
      if (!docs) throw new Error(`the bench needs the ${DOCS_TOOL} tool among ${tools.length} offered`);
      // The sandbox's own calls come first (the user's payments), so Coverage finds the data enough when the shape lets it.
      const own = (answer as PlanOutput).tool_calls.slice(0, shape.toolCalls);
      const searches = Array.from({ length: shape.toolCalls - own.length }, (_, i) => ({
        tool_name: docs.name,
        arguments_json: JSON.stringify({ query: `payout schedule part ${i + 1} (hop ${hop})` }),
        reasoning: 'The bench asks for this many calls.',
      }));
      const calls = [...own, ...searches];
      return { ...(answer as PlanOutput), tool_calls: calls };
    }
    if (step === 'coverage' && hop < shape.hops) {
      const coverage = answer as CoverageOutput;
      return {
        ...coverage,
        data_sufficient: false,
        coverage_score: 0.2,
        missing_data: [{ gap_type: 'docs', description: 'the help-center passage on the payout schedule' }],
        intents: coverage.intents.map((i) => ({ ...i, covered: false })),
      } satisfies CoverageOutput;
    }
    return answer;
  };
}
