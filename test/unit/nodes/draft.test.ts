// Draft on its own: the model's draft into the state, and the route its response type and route kind give.
import { routeDraft } from '../../../src/workflows/nodes/draft';
import type { Escalation } from '../../../src/workflows/routing/routing';
import { freshState } from './fixtures';

const reply = (text: string, open: string[] = []) => ({
  text,
  response_type: 'REPLY' as const,
  open_intents: open,
  route: null,
  suggested_action: null,
});

function withIntents() {
  const state = freshState();
  state.hops.push({
    plan: {
      user_query: 'payout and contract',
      intents: [
        { intent: 'payout date', question: 'When is my payout?' },
        { intent: 'contract', question: 'Where is my contract?' },
      ],
      tool_calls: [],
    } as never,
    gather: null,
    coverage: null,
  });
  return state;
}

test('a reply goes to Validate, and is the turn’s response', () => {
  const t = { state: withIntents(), partial: null as Escalation | null };
  expect(routeDraft(t, reply('Your payout is on Friday.'), Date.now())).toEqual({ next: 'validate' });
  expect(t.state.response).toBe('Your payout is on Friday.');
  expect(t.partial).toBeNull();
});

test('a reply that leaves questions open goes to Validate, and the team gets the open ones after it', () => {
  const t = { state: withIntents(), partial: null as Escalation | null };
  expect(routeDraft(t, reply('Your payout is on Friday.', ['contract']), Date.now())).toEqual({ next: 'validate' });
  expect(t.partial).toMatchObject({ kind: 'partial_answer' });
  expect(t.partial!.details!.join('\n')).toContain('Where is my contract?');
});

test.each([
  ['asked_for_person', 'user_requested_human'],
  ['no_safe_answer', 'no_safe_answer'],
  ['sensitive_request', 'sensitive_request'],
] as const)('a route to the team of kind %s hands over as %s, with the model’s explanation', (kind, escalationKind) => {
  const t = { state: withIntents(), partial: null as Escalation | null };
  const output = {
    ...reply('I will pass this on.'),
    response_type: 'ROUTE_TO_TEAM' as const,
    route: { kind, explanation: 'the user asked for it' },
  };
  const step = routeDraft(t, output, Date.now());
  expect(step).toMatchObject({ next: 'escalate', escalation: { kind: escalationKind, source: 'draft' } });
  expect(step.escalation!.details).toEqual(["The model's explanation: the user asked for it"]);
  expect(t.state.draft?.route).toEqual({ kind, explanation: 'the user asked for it' });
});
