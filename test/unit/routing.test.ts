// Routing and status as pure functions: one case per routing rule and per escalation case (source, reason, status).
import {
  ESCALATION_TABLE,
  awaitsReply,
  escalation,
  escalationNote,
  melvinStatusFor,
  partialAnswer,
  routeAfterCoverage,
  routeAfterDraft,
  routeAfterValidation,
} from '../../src/workflows/routing/routing';

describe('coverage routing: sufficient → draft; insufficient → plan while hops are left, else escalate', () => {
  test.each([
    [true, 1, 2, 'draft'],
    [true, 2, 2, 'draft'],
    [false, 1, 2, 'plan'],
    [false, 2, 2, 'escalate'],
    [false, 3, 2, 'escalate'],
    [false, 1, 1, 'escalate'],
    [false, 2, 3, 'plan'],
  ] as const)('sufficient=%s at hop %i of %i → %s', (dataSufficient, hop, maxHops, next) => {
    expect(routeAfterCoverage({ dataSufficient, hop, maxHops }).next).toBe(next);
  });

  test('at the last hop, data that covers some of several intents drafts a partial answer; none covered escalates', () => {
    expect(routeAfterCoverage({ dataSufficient: false, hop: 2, maxHops: 2, intentsCovered: 1 })).toEqual({
      next: 'draft',
      escalation: null,
    });
    expect(routeAfterCoverage({ dataSufficient: false, hop: 1, maxHops: 2, intentsCovered: 1 }).next).toBe('plan');
    expect(routeAfterCoverage({ dataSufficient: false, hop: 2, maxHops: 2, intentsCovered: 0 }).next).toBe('escalate');
  });

  test('exhausted hops escalate from coverage with a reason naming the configured maximum', () => {
    expect(routeAfterCoverage({ dataSufficient: false, hop: 3, maxHops: 3 }).escalation).toMatchObject({
      source: 'coverage',
      reason: 'Exceeded maximum hops (3). Unable to gather sufficient data.',
    });
  });
});

describe('a ROUTE_TO_TEAM draft bypasses validation and escalates by its kind; a REPLY goes to validation', () => {
  test.each([
    ['asked_for_person', 'user_requested_human', 'ROUTE_TO_TEAM', 'User requested to talk to a human'],
    ['no_safe_answer', 'no_safe_answer', 'NO_SAFE_ANSWER', 'No safe answer'],
    ['sensitive_request', 'sensitive_request', 'SENSITIVE_REQUEST', 'Sensitive request'],
  ] as const)(
    '%s → %s, Melvin Status %s, the model’s explanation for the team',
    (kind, escalationKind, status, reason) => {
      const route = routeAfterDraft('ROUTE_TO_TEAM', { kind, explanation: 'Because of what the user wrote.' });
      expect(route.next).toBe('escalate');
      expect(route.escalation).toMatchObject({ kind: escalationKind, source: 'draft' });
      expect(route.escalation!.reason).toContain(reason);
      expect(ESCALATION_TABLE[route.escalation!.kind].status).toBe(status);
      // The note the team reads carries the model's explanation.
      expect(escalationNote(route.escalation!)).toContain("The model's explanation: Because of what the user wrote.");
    },
  );

  test('a route without a kind (a JSON-mode answer, a draft from before kinds) is told as a route the model gave no reason for', () => {
    const route = routeAfterDraft('ROUTE_TO_TEAM');
    expect(route.escalation).toMatchObject({ kind: 'no_safe_answer' });
    expect(escalationNote(route.escalation!)).toContain('without saying why');
  });

  test('a reply goes to validation, whatever route the model left beside it', () => {
    expect(routeAfterDraft('REPLY')).toEqual({ next: 'validate', escalation: null });
    expect(routeAfterDraft('REPLY', { kind: 'no_safe_answer', explanation: 'x' })).toEqual({
      next: 'validate',
      escalation: null,
    });
  });
});

test('validation: passed → response; failed → escalate with the validation-failed reason', () => {
  expect(routeAfterValidation(true).next).toBe('response');
  expect(routeAfterValidation(false).escalation?.reason).toBe('Validation failed - see validation note for details');
});

describe('the escalation table: each case’s source, reason and Melvin Status', () => {
  test.each([
    [
      'hops_exhausted',
      '2',
      'coverage',
      'Exceeded maximum hops (2). Unable to gather sufficient data.',
      'ROUTE_TO_TEAM',
    ],
    ['user_requested_human', '', 'draft', 'User requested to talk to a human', 'ROUTE_TO_TEAM'],
    [
      'no_safe_answer',
      '',
      'draft',
      'No safe answer: the draft found no reply it could give from the data and the help center',
      'NO_SAFE_ANSWER',
    ],
    ['sensitive_request', '', 'draft', 'Sensitive request: a person from the team must handle it', 'SENSITIVE_REQUEST'],
    ['validation_failed', '', 'validate', 'Validation failed - see validation note for details', 'VALIDATION_FAILED'],
    ['draft_error', 'boom', 'draft', 'Draft generation error: boom', 'RESPONSE_FAILED'],
    ['initialization_error', 'boom', 'initialization', 'Initialization failed: boom', 'error'],
    ['coverage_error', 'boom', 'coverage', 'Coverage analysis failed: boom', 'error'],
    ['validation_error', 'boom', 'validate', 'Validation error: boom', 'error'],
    ['operator', 'VIP', 'operator', 'VIP', 'ROUTE_TO_TEAM'],
    ['plan_error', 'boom', 'plan', 'Planning failed: boom', 'error'],
    [
      'partial_answer',
      'one question (tax form)',
      'draft',
      'Partly answered: the reply left one question (tax form) for the team',
      'partial',
    ],
    [
      'attachment_only',
      '[attachment: payslip.pdf]',
      'initialization',
      'The user sent only files, which Melvin cannot read ([attachment: payslip.pdf])',
      'ROUTE_TO_TEAM',
    ],
    [
      'talent_frustrated',
      'complaint 3 in this conversation: “still waiting”',
      'plan',
      'The talent is frustrated (complaint 3 in this conversation: “still waiting”): a person from the team should answer',
      'FRUSTRATED',
    ],
  ] as const)('%s', (kind, detail, source, reason, status) => {
    expect(escalation(kind, detail)).toEqual({ kind, source, reason, requested_by: null });
    expect(melvinStatusFor({ escalationKind: kind, delivered: false })).toBe(status);
  });

  test('covers every kind', () => {
    expect(Object.keys(ESCALATION_TABLE)).toHaveLength(14);
  });
});

test('a turn has something to answer only when the latest message is the user’s', () => {
  expect(awaitsReply([{ role: 'user' }])).toBe(true);
  expect(awaitsReply([{ role: 'user' }, { role: 'assistant' }])).toBe(false);
  expect(awaitsReply([{ role: 'assistant' }, { role: 'user' }])).toBe(true);
  expect(awaitsReply([])).toBe(false);
});

test('without escalation the status says whether the reply was delivered', () => {
  expect(melvinStatusFor({ escalationKind: null, delivered: true })).toBe('success');
  expect(melvinStatusFor({ escalationKind: null, delivered: false })).toBe('MESSAGE_FAILED');
});

test('the escalation note is “🚨 Escalation: <reason>”, plus who asked when an operator did', () => {
  expect(escalationNote(escalation('draft_error', 'x'))).toBe('🚨 Escalation: Draft generation error: x');
  expect(escalationNote(escalation('operator', 'VIP', 'lead@team'))).toBe(
    '🚨 Escalation: VIP\nRequested by: lead@team',
  );
});

test('the escalation note says whether the user was told a person will follow up', () => {
  const e = escalation('user_requested_human');
  expect(escalationNote(e, { text: 'A person will follow up.', sent: true, error: null, part_id: '7' })).toBe(
    '🚨 Escalation: User requested to talk to a human\nThe user was told: "A person will follow up."',
  );
  expect(escalationNote(e, { text: 'A person will follow up.', sent: false, error: 'HTTP 422', part_id: null })).toBe(
    '🚨 Escalation: User requested to talk to a human\n' +
      'The user could not be told a person will follow up (HTTP 422): please reply to them.',
  );
});

test('a partial answer’s note lists the questions left for the team in the user’s words, and those answered', () => {
  const e = partialAnswer(
    [
      { intent: 'payment status', question: 'When will I get paid?' },
      { intent: 'form 8821', question: 'Can you send my Form 8821 copy?' },
    ],
    ['form 8821'],
  );
  expect(e).toMatchObject({ kind: 'partial_answer', source: 'draft' });
  expect(escalationNote(e)).toBe(
    [
      '🚨 Escalation: Partly answered: the reply left one question (form 8821) for the team',
      'Open for the team:',
      '- form 8821: “Can you send my Form 8821 copy?”',
      'Answered in the reply:',
      '- payment status: “When will I get paid?”',
    ].join('\n'),
  );
  expect(melvinStatusFor({ escalationKind: 'partial_answer', delivered: true })).toBe('partial');
});

test('the escalation note ends with the run’s map as a Mermaid block', () => {
  const note = escalationNote(escalation('validation_failed'), null, 'flowchart LR\n  n0["Initialize"]');
  expect(note.split('\n')).toEqual([
    '🚨 Escalation: Validation failed - see validation note for details',
    'How Melvin got here:',
    '```mermaid',
    'flowchart LR',
    '  n0["Initialize"]',
    '```',
  ]);
});
