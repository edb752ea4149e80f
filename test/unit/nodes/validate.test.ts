// Validate on its own: Melvin's own guard, then the service's answer into the state and the route it gives.
import { guardChecks, guardVerdict, routeValidation, validationFailed } from '../../../src/workflows/nodes/validate';
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
  const verdict = guardVerdict(guardChecks({ state }, { idsAsSubstrings: false, grounded: true }));
  expect(verdict).not.toBeNull();
  expect(JSON.parse(verdict!)).toMatchObject({ overall_passed: false, checked_by: 'melvin' });
  state.response = 'Your payout is on its way.';
  expect(guardVerdict(guardChecks({ state }, { idsAsSubstrings: false, grounded: true }))).toBeNull();
});

test('a service that cannot be asked hands over, recorded as not passed', () => {
  const state = freshState();
  const step = validationFailed({ state }, new Error('503 from the validation service'));
  expect(step).toMatchObject({ next: 'escalate', escalation: { kind: 'validation_error' } });
  expect(state.validate).toMatchObject({ overall_passed: false, next_action: 'escalate' });
});
