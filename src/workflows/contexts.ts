// What each LLM step is shown, built from the state: pure, so the model's view of a run is replayable and testable.
import type { CoverageContext, DraftContext, PlanContext } from '../schemas';
import type { AgentState } from '../state';
import { earlierTurns } from './conversation-record';
import { IDENTITY_ARGUMENTS } from './tool-calls';

/**
 * Intercom returns only a conversation's 500 most recent parts. When it left some out, the model is told how many, so
 * it does not take the first message and the recent ones for the whole conversation.
 */
function omitted(state: AgentState): { earlier_parts_omitted?: number } {
  const count = state.metadata.omitted_parts;
  return count > 0 ? { earlier_parts_omitted: count } : {};
}

/**
 * The conversation's memory: what its earlier turns asked, answered or handed over, so a follow-up ("and the next
 * one?") is read in that light and Melvin can say "as I said". Absent in a conversation's first turn.
 */
function memory(state: AgentState): Pick<PlanContext, 'earlier_turns'> {
  const turns = earlierTurns(state.metadata.conversation);
  return turns.length ? { earlier_turns: turns } : {};
}

/** Hop N's plan sees what every earlier hop asked for and which gaps its coverage found (context-aware re-planning). */
export function planContext(state: AgentState, hop: number): PlanContext {
  return {
    hop,
    max_hops: state.max_hops,
    messages: state.messages,
    ...omitted(state),
    ...memory(state),
    available_tools: state.available_tools.map(({ name, description, input_schema }) => ({
      name,
      description,
      input_schema,
    })),
    identity_arguments: IDENTITY_ARGUMENTS,
    tool_data: state.tool_data,
    docs_data: state.docs_data,
    previous_hops: state.hops.slice(0, hop - 1).map((h, index) => ({
      hop: index + 1,
      user_query: h.plan?.user_query ?? '',
      tool_calls: (h.plan?.tool_calls ?? []).map((c) => `${c.tool_name} ${JSON.stringify(c.parameters)}`),
      missing_data: (h.coverage?.coverage_analysis?.missing_data ?? []).map((m) => `${m.gap_type}: ${m.description}`),
    })),
  };
}

export function coverageContext(state: AgentState, hop: number): CoverageContext {
  return {
    hop,
    max_hops: state.max_hops,
    user_query: state.hops[hop - 1]?.plan?.user_query ?? '',
    messages: state.messages,
    ...omitted(state),
    tool_data: state.tool_data,
    docs_data: state.docs_data,
  };
}

export function draftContext(state: AgentState): DraftContext {
  return {
    messages: state.messages,
    ...omitted(state),
    ...memory(state),
    user_name: state.metadata.user_name,
    tool_data: state.tool_data,
    docs_data: state.docs_data,
  };
}
