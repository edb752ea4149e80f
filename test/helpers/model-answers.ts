// Builders for the sandbox model's scripted plan, coverage and draft answers in workflow tests.
import type { CoverageOutput, DraftOutput, PlanOutput } from '../../src/contract/schemas';
import { NEUTRAL_TONE } from '../../src/contract/state';

export function plan(
  userQuery: string,
  ...calls: [tool: string, args?: Record<string, unknown>][]
): { output: PlanOutput } {
  return {
    output: {
      user_query: userQuery,
      intents: [],
      entities: [],
      tone: NEUTRAL_TONE,
      stage: 'unknown',
      suggested_action: null,
      person_needed: null,
      reasoning: 'scripted plan',
      tool_calls: calls.map(([tool_name, args]) => ({
        tool_name,
        arguments_json: JSON.stringify(args ?? {}),
        reasoning: `needed: ${tool_name}`,
      })),
    },
  };
}

export function coverage(sufficient: boolean, missing: string[] = []): { output: CoverageOutput } {
  return {
    output: {
      user_query: 'scripted',
      data_sufficient: sufficient,
      coverage_score: sufficient ? 0.9 : 0.3,
      available_data: [],
      missing_data: missing.map((description) => ({ gap_type: 'missing', description })),
      intents: [],
      reasoning: 'scripted coverage',
      confidence: 0.8,
    },
  };
}

/** A scripted draft; a route to the team is a request for a person unless `route` says otherwise. */
export function draft(
  text: string,
  responseType: DraftOutput['response_type'] = 'REPLY',
  route: DraftOutput['route'] = responseType === 'ROUTE_TO_TEAM'
    ? { kind: 'asked_for_person', explanation: 'scripted: the user asks for a person' }
    : null,
): { output: DraftOutput } {
  return { output: { text, response_type: responseType, route, open_intents: [], suggested_action: null } };
}
