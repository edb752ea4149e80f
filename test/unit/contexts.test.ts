// What each model step is shown when Intercom returned only the newest parts of a long conversation.
import {
  coverageContext,
  draftContext,
  openForTheTeam,
  planContext,
  turnIntents,
} from '../../src/workflows/prompt-contexts/contexts';
import { newState } from '../../src/workflows/records/turn-state';

function stateWithOmitted(omitted: number) {
  const state = newState({ conversationId: '4242' }, '2026-11-22T00:00:00.000Z');
  state.messages = [{ role: 'user', content: 'When will I get paid?' }];
  state.metadata.omitted_parts = omitted;
  state.hops.push({ plan: null, gather: null, coverage: null });
  return state;
}

test('every step is told how many earlier parts Intercom left out, so a truncated list is not taken for the whole', () => {
  const state = stateWithOmitted(20);
  for (const context of [planContext(state, 1), coverageContext(state, 1), draftContext(state)]) {
    expect(context.earlier_parts_omitted).toBe(20);
  }
});

test('a conversation Intercom returned whole adds nothing to what the model reads', () => {
  const state = stateWithOmitted(0);
  for (const context of [planContext(state, 1), coverageContext(state, 1), draftContext(state)]) {
    expect(context).not.toHaveProperty('earlier_parts_omitted');
  }
});

test('Draft is told which intents the data covers, what the user already said, and what is still missing', () => {
  const state = stateWithOmitted(0);
  state.metadata.user_name = 'Li Wei';
  state.user_email = 'li.wei@example.com';
  state.hops[0] = {
    plan: {
      user_query: 'pay and form',
      intents: [
        { intent: 'job details', question: 'How much does the Barista job pay?' },
        { intent: 'form 8821', question: 'Where is my Form 8821?' },
      ],
      entities: [{ kind: 'job', mention: 'Barista' }],
      reasoning: '',
      tool_calls: [],
    },
    gather: {
      tool_results: [
        {
          tool_name: 'get_job_details',
          resolved: [
            { argument: 'job_id', mention: 'Barista', id: 'job-23', tier: 'fuzzy', score: 1, label: 'Barista' },
          ],
        } as never,
      ],
      total_execution_time_ms: 1,
      success_rate: 1,
      execution_status: 'completed',
    },
    coverage: {
      coverage_analysis: {
        user_query: '',
        data_sufficient: false,
        coverage_score: 0.5,
        available_data: [],
        missing_data: [{ gap_type: 'docs', description: 'nothing about Form 8821' }],
        intents: [
          { intent: 'job details', covered: true },
          { intent: 'form 8821', covered: false },
        ],
        reasoning: '',
        confidence: 1,
      },
      data_sufficient: false,
      next_node: 'draft',
      escalation_reason: null,
    },
  };
  const context = draftContext(state);
  expect(context.intents.map((i) => [i.intent, i.covered])).toEqual([
    ['job details', true],
    ['form 8821', false],
  ]);
  expect(context.open_intents).toEqual(['form 8821']);
  expect(context.known_context).toEqual([
    "the user's name: Li Wei",
    "the user's email address (the conversation's contact): never ask for it",
    'the user named a job: “Barista”',
    "“Barista” is the user's Barista",
  ]);
  expect(context.missing_context).toEqual(['docs: nothing about Form 8821']);
  expect(context).not.toHaveProperty('style_examples');
  expect(coverageContext(state, 1).intents).toHaveLength(2);
});

test('a plan from before intents reads as one intent, its question', () => {
  const state = stateWithOmitted(0);
  state.hops[0]!.plan = { user_query: 'When will I get paid?', reasoning: '', tool_calls: [] };
  expect(turnIntents(state)).toEqual([{ intent: 'question', question: 'When will I get paid?' }]);
});

test('what a hand-over leaves open: the plan’s questions in the talent’s words, or before a plan the unanswered messages', () => {
  const state = newState({ conversationId: '4242' }, '2026-11-22T00:00:00.000Z');
  state.messages = [
    { role: 'user', content: 'Hi there' },
    { role: 'assistant', content: 'Hi! How can I help?' },
    { role: 'user', content: `When will I get paid? ${'Also '.repeat(80)}` },
  ];
  state.metadata.message_part_ids = ['p1', 'p2', 'p3'];
  state.metadata.conversation.handled_part_ids = ['p1'];
  expect(openForTheTeam(state)).toEqual(['Open for the team:', `- “${state.messages[2]!.content.slice(0, 299)}…”`]);
  state.hops.push({
    plan: {
      user_query: 'pay and tax form',
      intents: [
        { intent: 'payment status', question: 'When will I get paid?' },
        { intent: 'tax form', question: 'send me my Form 8821' },
      ],
      reasoning: '',
      tool_calls: [],
    },
    gather: null,
    coverage: null,
  });
  expect(openForTheTeam(state)).toEqual([
    'Open for the team:',
    '- payment status: “When will I get paid?”',
    '- tax form: “send me my Form 8821”',
  ]);
});
