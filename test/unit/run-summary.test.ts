// What a support lead reads first in the Temporal UI: the list's one-line summary and a finished run's details.
import { runSummary } from '../../src/operations/conversations';
import { MAX_MEMO_INTENTS, MAX_MEMO_INTENT_CHARS, intentLabel, intentLabels } from '../../src/contract/shared';
import type { Hop } from '../../src/contract/state';
import { runMap, turnOutcomeDetails, turnSummary } from '../../src/workflows/records/run-summary';
import { newState } from '../../src/workflows/records/turn-state';

const trigger = { topic: 'conversation.user.created', notificationId: 'n-1', receivedAt: '2026-11-23T00:00:00Z' };

/** A hop that called `tool` and found the data not enough; `gap` is what Coverage said was missing. */
const insufficientHop = (tool: string, gap = ''): Hop => ({
  plan: { user_query: 'When is my Form 8821 copy coming?', reasoning: '', tool_calls: [] },
  gather: {
    tool_results: [{ tool_name: tool, success: true } as never],
    total_execution_time_ms: 1,
    success_rate: 1,
    execution_status: 'completed',
  },
  coverage: {
    coverage_analysis: {
      user_query: '',
      data_sufficient: false,
      coverage_score: 0,
      available_data: [],
      missing_data: gap ? [{ gap_type: 'docs', description: gap }] : [],
      reasoning: 'r',
      confidence: 1,
    },
    data_sufficient: false,
    next_node: 'plan',
    escalation_reason: null,
  },
});

test('the summary says who wrote what, within the UI’s 200 bytes, cut on a whole character', () => {
  expect(runSummary('5002', trigger, { author: 'Ana Ruiz', text: 'When will I\npaid?' })).toBe(
    'Ana Ruiz: “When will I paid?” · conversation 5002',
  );
  const long = runSummary('5002', trigger, { author: null, text: 'Où est mon paiement ? '.repeat(30) });
  expect(Buffer.byteLength(long)).toBeLessThanOrEqual(200);
  expect(long).toMatch(/^The user: “Où est mon paiement \? .*…” · conversation 5002$/);
  expect(long).not.toContain('\uFFFD');
  expect(runSummary('5002', trigger)).toBe('Conversation 5002 · conversation.user.created');
  // A webhook may carry a message of a megabyte (cutting it character by character would never end).
  expect(Buffer.byteLength(runSummary('5002', trigger, { author: 'A', text: 'é'.repeat(1_000_000) }))).toBeLessThan(
    201,
  );
});

test('a finished run’s details lead with who asked what, the outcome and its reason, then each hop’s verdict', () => {
  const state = newState({ conversationId: '5002' }, '2026-11-23T00:00:00.000Z');
  state.metadata.user_name = 'Ana Ruiz';
  state.hops.push(
    insufficientHop('search_talent_docs', 'no document about Form 8821'),
    insufficientHop('get_user_payments'),
  );
  state.finalize = {
    melvin_status: 'ROUTE_TO_TEAM',
    status_updated: true,
    conversation_snoozed: true,
    snooze_duration_seconds: 300,
    error: null,
  };
  state.escalate = {
    escalation_source: 'coverage',
    escalation_kind: 'hops_exhausted',
    escalation_reason: 'Exceeded maximum hops (2). Unable to gather sufficient data.',
    note_added: true,
    note_error: null,
    requested_by: null,
    timestamp: '',
    user_told: { text: 'A person will follow up.', sent: true, error: null, part_id: '9' },
  };
  expect(turnOutcomeDetails(state)).toEqual([
    '**Ana Ruiz** asked: “When is my Form 8821 copy coming?”',
    '**Outcome: ROUTE_TO_TEAM** — Exceeded maximum hops (2). Unable to gather sufficient data.',
    'The user was told: “A person will follow up.”',
    'Hop 1: search_talent_docs → not enough: no document about Form 8821',
    'Hop 2: get_user_payments → not enough: r',
  ]);
});

test('the run map draws the path: one box per node, hops numbered, the escalation edge named by its kind', () => {
  const state = newState({ conversationId: '5004' }, '2026-11-23T00:00:00.000Z');
  state.metadata.path = [
    'initialize',
    'plan',
    'gather',
    'coverage',
    'plan',
    'gather',
    'coverage',
    'escalate',
    'finalize',
    'end',
  ];
  state.hops.push(insufficientHop('search_talent_docs'), insufficientHop('get_user_payments'));
  state.escalate = { escalation_kind: 'hops_exhausted' } as never;
  state.finalize = { melvin_status: 'ROUTE_TO_TEAM' } as never;
  expect(runMap(state).split('\n')).toEqual([
    'flowchart LR',
    '  n0["Initialize"]',
    '  n1["Plan 1"]',
    '  n0 --> n1',
    '  n2["Gather 1: search_talent_docs"]',
    '  n1 --> n2',
    '  n3{"Coverage 1: not enough"}',
    '  n2 --> n3',
    '  n4["Plan 2"]',
    '  n3 --> n4',
    '  n5["Gather 2: get_user_payments"]',
    '  n4 --> n5',
    '  n6{"Coverage 2: not enough"}',
    '  n5 --> n6',
    '  n7["Escalate"]',
    '  n6 -- "hops_exhausted" --> n7',
    '  style n7 fill:#ffe7b3,stroke:#d9822b',
    '  n8["Finalize: ROUTE_TO_TEAM"]',
    '  n7 --> n8',
  ]);
});

test('a turn that sent nothing says why', () => {
  const state = newState({ conversationId: '5003' }, '2026-11-23T00:00:00.000Z');
  state.messages = [{ role: 'user', content: 'Thanks!' }];
  state.metadata.skipped_reason = 'shadow mode: the draft was noted for the team, not sent';
  expect(turnOutcomeDetails(state)).toEqual([
    '**The user** asked: “Thanks!”',
    '**Outcome: nothing sent** — shadow mode: the draft was noted for the team, not sent',
  ]);
});

test('a partial turn says which questions the reply answered and which went to the team, and its memo counts them', () => {
  const state = newState({ conversationId: '7' }, '2026-11-23T00:00:00Z');
  state.hops.push({
    ...insufficientHop('get_user_payments'),
    plan: {
      user_query: 'q',
      intents: [
        { intent: 'payment status', question: 'When will I get paid?' },
        { intent: 'form 8821', question: 'Where is my Form 8821?' },
      ],
      reasoning: '',
      tool_calls: [],
    },
  });
  state.draft = {
    response: 'r',
    response_type: 'REPLY',
    open_intents: ['form 8821'],
    generation_time_ms: 1,
    timestamp: '2026-11-23T00:00:00Z',
  };
  state.finalize = {
    melvin_status: 'partial',
    status_updated: true,
    conversation_snoozed: true,
    snooze_duration_seconds: 300,
    error: null,
  };
  state.metadata.usage = { calls: 3, prompt_tokens: 900, completion_tokens: 100, total_tokens: 1000 };
  expect(turnOutcomeDetails(state)).toContain('Questions: ✓ payment status · → team: form 8821');
  const turn = { startedAt: Date.parse('2026-11-23T10:00:00Z'), endedAt: Date.parse('2026-11-23T10:00:01.234Z') };
  expect(turnSummary(state, turn, 'a teammate replied in Intercom')).toMatchObject({
    status: 'partial',
    hops: 1,
    turn_ms: 1234,
    ended_at: '2026-11-23T10:00:01.234Z',
    tools: [{ name: 'get_user_payments', ok: true }],
    tokens: 1000,
    intents: 2,
    open_intents: 1,
    intent_names: ['payment status', 'form 8821'],
    open_intent_names: ['form 8821'],
    stage: null,
    reopened_by_team: 'a teammate replied in Intercom',
  });
});

test('intent names become short labels in the memo: one line, lower case, ids and addresses masked, capped', () => {
  expect(intentLabel('  Payment   STATUS?  ')).toBe('payment status');
  expect(intentLabel('refund of payment 4821377 to ana@example.com')).toBe('refund of payment # to [email]');
  expect(intentLabel('Form 8821 copy')).toBe('form 8821 copy');
  expect(intentLabel('x'.repeat(200))).toHaveLength(MAX_MEMO_INTENT_CHARS);
  const many = Array.from({ length: 20 }, (_, i) => `intent ${i}`);
  expect(intentLabels([...many, 'Intent 0'])).toHaveLength(MAX_MEMO_INTENTS);
  expect(intentLabels(['Payment status', 'payment status.', ''])).toEqual(['payment status']);
});
