// On a real Temporal server with the sandbox's own reasoning: several questions in one message (a partial answer), a
// job named in words resolved against the user's records, the team's voice, the run map.
import { DEFAULT_KIND_HANDOVER_MESSAGES } from '../../src/contract/shared';
import type { AgentState } from '../../src/contract/state';
import type { ScenarioConversation } from '../../sandbox/scenario';
import { keepHistory } from '../helpers/histories';
import { quietRuntime } from '../helpers/runtime';
import { withoutRunMaps } from '../helpers/sandbox';
import { runTurnOnWorker, startTestbed } from '../helpers/turns';

quietRuntime();

const LI = { id: 'c-li', email: 'li.wei@example.com', name: 'Li Wei' };
const TALENT = {
  users: [
    {
      email: LI.email,
      name: LI.name,
      applications: [
        { id: 'app-13', job_id: 'job-23', status: 'interview', updated_at: '2026-11-18' },
        { id: 'app-14', job_id: 'job-24', status: 'screening', updated_at: '2026-11-19' },
      ],
      payments: [
        {
          id: 'pay-41',
          job_id: 'job-24',
          amount: 96,
          currency: 'USD',
          status: 'processing',
          expected_date: '2026-11-27',
        },
      ],
    },
  ],
  jobs: [
    { id: 'job-23', title: 'Barista', location: 'Portland, OR', status: 'open', pay_rate: '$18/hour' },
    { id: 'job-24', title: 'Event Staff', location: 'Salem, OR', status: 'filled', pay_rate: '$21/hour' },
  ],
};
/** The team's past answers: their voice is "Hey <name>!" and a sign-off line, and their facts are other people's. */
const RESOLVED = [
  {
    question: 'When will I get paid for my shift last Saturday?',
    answer:
      'Hey Jordan! Your Saturday shift was approved on Monday, so it goes out in the Friday payout run on December 4.\n— Crewline Talent Support',
    resolved_by: 'Priya',
    resolved_at: '2026-11-02',
  },
  {
    question: 'How do I withdraw my application?',
    answer: 'Hey Ren! Open the application in the app and tap Withdraw.\n— Crewline Talent Support',
    resolved_at: '2026-08-30',
  },
];

let testbed: Awaited<ReturnType<typeof startTestbed>>;
let nextConversation = 700;

beforeAll(async () => {
  testbed = await startTestbed({ resolved_conversations: RESOLVED });
}, 180_000);

afterAll(() => testbed?.close());

beforeEach(() => testbed.sandbox.reset());

function conversationAsking(body: string): string {
  const id = String(nextConversation++);
  const parts: ScenarioConversation['parts'] = [{ author: 'user', type: 'comment', body }];
  testbed.sandbox.seed({ conversation: { id, contact: LI, parts }, talent: TALENT });
  return id;
}

async function turn(id: string, options = {}, history?: string) {
  const { state, handle } = await runTurnOnWorker(testbed, id, testbed.sandbox.activities, undefined, options);
  if (history) await keepHistory(handle, history);
  const { intercom } = testbed.sandbox;
  return { state, replies: intercom.replies(id), notes: intercom.notes(id), status: intercom.melvinStatus(id) };
}

const draftContexts = () => testbed.sandbox.model.requests.filter((r) => r.step === 'draft').map((r) => r.context);

test('two questions, one the data answers: the reply answers it, the team gets the other, Melvin Status partial', async () => {
  const id = conversationAsking(
    'Hi! When will I get paid for the Salem event shift? Also, can you send me my Form 8821 authorization copy?',
  );
  const { state, replies, notes, status } = await turn(
    id,
    { handoverMessages: DEFAULT_KIND_HANDOVER_MESSAGES },
    'partial-answer-with-voice',
  );

  expect(status).toBe('partial');
  expect(state.finalize?.melvin_status).toBe('partial');
  expect(state.hops[0]?.plan?.intents?.map((i) => i.intent)).toEqual([
    'payment status',
    'form 8821 authorization copy',
  ]);
  // The form is looked for once more, then left to the team: the reply answers only the payment.
  expect(state.hops).toHaveLength(2);
  expect(state.draft?.open_intents).toEqual(['form 8821 authorization copy']);
  expect(replies).toHaveLength(2);
  expect(replies[0]).toContain('November 27');
  expect(replies[0]).not.toMatch(/8821|W-9/);
  expect(replies[1]).toBe(DEFAULT_KIND_HANDOVER_MESSAGES.partial_answer);
  // Validation judged the reply on the question it answers, not on the one it leaves open.
  expect(testbed.sandbox.validation.requests.at(-1)?.intents).toEqual({
    answered: ['When will I get paid for the Salem event shift?'],
    open: ['Also, can you send me my Form 8821 authorization copy?'],
  });
  expect(withoutRunMaps(notes).at(-1)).toBe(
    [
      '🚨 Escalation: Partly answered: the reply left one question (form 8821 authorization copy) for the team',
      'Open for the team:',
      '- form 8821 authorization copy: “Also, can you send me my Form 8821 authorization copy?”',
      'Answered in the reply:',
      '- payment status: “When will I get paid for the Salem event shift?”',
      'Stage: awaiting payment (from the records: payment processing)',
      `The user was told: "${DEFAULT_KIND_HANDOVER_MESSAGES.partial_answer}"`,
    ].join('\n'),
  );
  expect(state.escalate).toMatchObject({ escalation_kind: 'partial_answer', escalation_source: 'draft' });
  expect(state.metadata.conversation.ownership.owner).toBe('team');
  expect(state.metadata.path.slice(-5)).toEqual(['validate', 'response', 'escalate', 'finalize', 'end']);
});

test('every escalation note ends with the run map: its nodes, hops and the escalation edge', async () => {
  const id = conversationAsking('Do you offer health insurance for talent?');
  const { notes, state } = await turn(id);
  const note = notes.find((n) => n.startsWith('🚨'))!;
  const map = /How Melvin got here:\n```mermaid\n([\s\S]*)\n```$/.exec(note)?.[1];
  // Intercom's plain text keeps no leading spaces; Mermaid needs none.
  expect(map?.split('\n').map((line) => line.trim())).toEqual([
    'flowchart LR',
    'n0["Initialize"]',
    'n1["Plan 1"]',
    'n0 --> n1',
    'n2["Gather 1: search_talent_docs"]',
    'n1 --> n2',
    'n3{"Coverage 1: not enough"}',
    'n2 --> n3',
    'n4["Plan 2"]',
    'n3 --> n4',
    'n5["Gather 2"]',
    'n4 --> n5',
    'n6{"Coverage 2: not enough"}',
    'n5 --> n6',
    'n7["Escalate"]',
    'n6 -- "hops_exhausted" --> n7',
    'style n7 fill:#ffe7b3,stroke:#d9822b',
  ]);
  expect(state.finalize?.melvin_status).toBe('ROUTE_TO_TEAM');
});

test('a job named in words is resolved against the user’s own applications before its details are fetched', async () => {
  const id = conversationAsking('How much does the Barista job pay?');
  const { state, replies, status } = await turn(id);

  expect(status).toBe('success');
  expect(replies[0]).toContain('$18/hour');
  const calls = testbed.sandbox.talent.calls
    .filter((c) => c.tool !== 'search_resolved_conversations')
    .map((c) => [c.tool, c.arguments]);
  // The applications come first: the mention is resolved against them, then the job is asked for by its id.
  expect(calls).toEqual([
    ['get_user_applications_detailed', { email: LI.email }],
    ['get_job_details', { job_id: 'job-23' }],
  ]);
  const details = state.hops[0]?.gather?.tool_results.find((r) => r.tool_name === 'get_job_details');
  expect(details?.resolved).toEqual([
    {
      argument: 'job_id',
      mention: 'Barista',
      id: 'job-23',
      tier: 'fuzzy',
      score: 1,
      label: 'Barista, Portland, OR, open',
    },
  ]);
  // What the user named is known context for the draft: it must never ask for it again.
  expect(draftContexts()[0]?.known_context).toEqual(
    expect.arrayContaining(['the user named a job: “Barista”', "“Barista” is the user's Barista, Portland, OR, open"]),
  );
});

test('a job the user’s records do not hold is never sent to the tool, and the turn hands over', async () => {
  const id = conversationAsking('How much does the Sushi Chef job pay?');
  const { state, replies } = await turn(id);

  expect(testbed.sandbox.talent.calls.map((c) => c.tool)).not.toContain('get_job_details');
  const refused = state.hops[0]?.gather?.tool_results.find((r) => r.tool_name === 'get_job_details');
  expect(refused).toMatchObject({ success: false });
  expect(refused?.error).toContain('"Sushi Chef" (job_id) matches none of the user\'s 2 job record(s)');
  expect(replies).toEqual([]);
  expect(state.escalate?.escalation_kind).toBe('hops_exhausted');
});

test('the team’s voice: Draft is shown the closest past answers and writes like them, taking no fact from them', async () => {
  const id = conversationAsking('When will I get paid?');
  const { state, replies, status } = await turn(id);

  expect(status).toBe('success');
  const [context] = draftContexts();
  expect((context?.style_examples as { question: string }[] | undefined)?.[0]?.question).toBe(
    'When will I get paid for my shift last Saturday?',
  );
  expect(state.metadata.style_examples).toMatchObject({ tool: 'search_resolved_conversations', error: null });
  expect(replies[0]).toMatch(
    /^Hey Li, your payment of \$96 for Event Staff is processing and expected on November 27\./,
  );
  expect(replies[0]).toMatch(/\n— Crewline Talent Support$/);
  expect(replies[0]).not.toContain('December 4');
  // The search is Melvin's own step: Plan is never offered it, so its answers can never count as the user's data.
  const planTools = testbed.sandbox.model.requests
    .filter((r) => r.step === 'plan')
    .flatMap((r) => (r.context.available_tools as { name: string }[]).map((t) => t.name));
  expect(planTools).not.toContain('search_resolved_conversations');
  expect(Object.keys(state.tool_data)).toEqual(['get_user_payments']);
});

test('a failed examples search leaves Draft without examples, and the turn answers as before', async () => {
  testbed.sandbox.talent.faults.set({ search_resolved_conversations: [{ error: 'tool' }] });
  const id = conversationAsking('When will I get paid?');
  const { state, replies } = await turn(id);

  expect(state.metadata.style_examples?.error).toContain('the talent backend returned an error');
  expect(draftContexts()[0]).not.toHaveProperty('style_examples');
  expect(replies[0]).toMatch(/^Hi Li, your payment of \$96/);
  expect((state as AgentState).finalize?.melvin_status).toBe('success');
});
