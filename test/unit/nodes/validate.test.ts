// Validate on its own: Melvin's own guard, then the service's answer into the state and the route it gives.
import { routeValidation, validationFailed } from '../../../src/workflows/nodes/validate';
import { guardChecks, guardVerdict } from '../../../src/workflows/prompt-contexts/reply-guard';
import { freshState } from './fixtures';

test.each([
  ['passed', { overall_passed: true }, 'response', undefined],
  ['failed', { overall_passed: false, checks: [{ name: 'facts', passed: false }] }, 'escalate', 'validation_failed'],
])('an answer that %s routes to %s', (_name, answer, next, kind) => {
  const state = freshState();
  const step = routeValidation({ state }, JSON.stringify(answer), false);
  expect(step.next).toBe(next);
  expect(step.escalation?.kind).toBe(kind);
  expect(state.validate).toMatchObject({ overall_passed: answer.overall_passed, next_action: next });
});

test.each([
  ['not JSON', 'OK!', 'not JSON'],
  ['JSON outside the contract', '{"passed":true}', 'does not match the contract: overall_passed'],
])('an answer that is %s hands over with the problem, keeping the raw answer', (_name, raw, problem) => {
  const state = freshState();
  const step = routeValidation({ state }, raw, false);
  expect(step).toMatchObject({ next: 'escalate', escalation: { kind: 'validation_error' } });
  expect(step.escalation!.reason).toContain(problem);
  expect(state.validate!.validation_response).toBe(raw);
});

test('the guard blocks a reply that gives away another person’s address, before the service is asked', () => {
  const state = freshState();
  state.user_email = 'talent@example.com';
  state.response = 'Please write to maria.lopez@example.org about it.';
  const verdict = guardVerdict(guardChecks(state, undefined, { idsAsSubstrings: false, grounded: true }));
  expect(verdict).not.toBeNull();
  expect(JSON.parse(verdict!)).toMatchObject({ overall_passed: false, checked_by: 'melvin' });
  state.response = 'Your payout is on its way.';
  expect(guardVerdict(guardChecks(state, undefined, { idsAsSubstrings: false, grounded: true }))).toBeNull();
});

test('a service that cannot be asked hands over, recorded as not passed', () => {
  const state = freshState();
  const step = validationFailed({ state }, new Error('503 from the validation service'));
  expect(step).toMatchObject({ next: 'escalate', escalation: { kind: 'validation_error' } });
  expect(state.validate).toMatchObject({ overall_passed: false, next_action: 'escalate' });
});

/** The guard's failed checks on a state, by name. */
const failed = (state: ReturnType<typeof freshState>) =>
  guardChecks(state, undefined, { idsAsSubstrings: false, grounded: true })
    .filter((c) => !c.passed)
    .map((c) => c.name);

/** A hop whose plan read `person_needed` and whose coverage judged `covered` of its intents. */
function hop(personNeeded: 'asked_for_person' | 'sensitive_request' | null, covered: Record<string, boolean>) {
  const intents = Object.keys(covered).map((intent) => ({ intent, question: `the ${intent} question` }));
  return {
    plan: {
      user_query: 'q',
      intents,
      reasoning: '',
      tool_calls: [],
      person_needed: personNeeded && { kind: personNeeded, why: 'they said so' },
    },
    gather: null,
    coverage: {
      coverage_analysis: {
        user_query: 'q',
        data_sufficient: Object.values(covered).every(Boolean),
        coverage_score: 0.5,
        confidence: 0.5,
        available_data: [],
        missing_data: [],
        intents: Object.entries(covered).map(([intent, isCovered]) => ({ intent, covered: isCovered })),
        reasoning: '',
      },
      data_sufficient: Object.values(covered).every(Boolean),
      next_node: 'draft' as const,
      escalation_reason: null,
    },
  };
}

test.each(['asked_for_person', 'sensitive_request'] as const)(
  'a reply to a message Plan read as a person’s to answer (%s) fails the guard, whatever it says',
  (kind) => {
    const state = freshState();
    state.hops = [hop(kind, { pay: true })];
    state.response = 'Happy to help with that myself.';
    expect(failed(state)).toEqual(['person_needed_routed']);
    state.hops = [hop(null, { pay: true })];
    expect(failed(state)).toEqual([]);
  },
);

test('a reply that drops a question Coverage did not cover from its open intents fails the guard', () => {
  const state = freshState();
  state.hops = [hop(null, { pay: true, tax_form: false })];
  state.response = 'It is on its way.';
  state.draft = { response: state.response, response_type: 'REPLY', generation_time_ms: 1, timestamp: '' };
  expect(failed(state)).toEqual(['answers_only_covered']);
  state.draft.open_intents = ['tax_form'];
  expect(failed(state)).toEqual([]);
});
