// The sandbox's own logic: the stand-in model's reasoning, gates, the knowledge base and scenario checking.
import { Gates } from '../../sandbox/gates';
import { codesMissingFrom, keyCodes } from '../../sandbox/model/codes';
import { checkDraft } from '../../sandbox/validation/checks';
import { ID_TOKEN_CASES } from '../helpers/id-token-cases';
import { currentQuestion, intentsOf, sandboxReasoning, spokenAmount, spokenDate } from '../../sandbox/model/reasoning';
import { evaluate, loadScenario } from '../../sandbox/scenario-runner';
import { loadKnowledgeBase, parseMarkdownDocs } from '../../sandbox/talent-mcp/knowledge-base';
import { TalentStore } from '../../sandbox/talent-mcp/server';
import type { AgentState } from '../../src/contract/state';
import path from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const TOOLS = [
  {
    name: 'get_user_profile',
    description: "The talent's profile: name, email, and how many applications and payments they have",
    input_schema: { required: ['email'] },
  },
  {
    name: 'get_user_applications_detailed',
    description: "The talent's job applications with status, last update, next step and the job applied for",
    input_schema: { required: ['email'] },
  },
  {
    name: 'get_job_details',
    description: 'A job posting: title, location, status, pay rate and start date',
    input_schema: { required: ['job_id'] },
  },
  {
    name: 'get_user_payments',
    description: "The talent's payments for worked shifts: amount, currency, status, expected or paid date",
    input_schema: { required: ['email'] },
  },
  { name: 'search_talent_docs', description: 'Search the talent help center', input_schema: { required: ['query'] } },
];
const ask = (content: string, extra: Record<string, unknown> = {}) => ({
  messages: [{ role: 'user', content }],
  available_tools: TOOLS,
  identity_arguments: ['email'],
  tool_data: {},
  docs_data: {},
  previous_hops: [],
  ...extra,
});
const toolsPlanned = (content: string) =>
  (sandboxReasoning('plan', ask(content)) as { tool_calls: { tool_name: string }[] }).tool_calls.map(
    (c) => c.tool_name,
  );

describe('the sandbox model', () => {
  test('names one intent per question or request; what a message only tells, and greetings, ask nothing', () => {
    const names = (text: string) => intentsOf(text).map((i) => [i.intent, i.question]);
    expect(names('Hi, I worked the Austin event shift last week. When will I get paid?')).toEqual([
      ['payment status', 'Hi, I worked the Austin event shift last week. When will I get paid?'],
    ]);
    expect(names('Hi! When will I get paid? Also, can you send me my Form 8821 copy? Thanks!')).toEqual([
      ['payment status', 'When will I get paid?'],
      ['form 8821 copy', 'Also, can you send me my Form 8821 copy?'],
    ]);
    expect(names('Hello!')).toEqual([]);
    expect(names('How much does the Barista job pay?')).toEqual([
      ['job details', 'How much does the Barista job pay?'],
    ]);
  });

  test('coverage judges each intent; a draft answers the covered ones and leaves the rest open', () => {
    const question = 'When will I get paid? Also, can you send me my Form 8821 copy?';
    const paid = ask(question, {
      user_name: 'Ana Ruiz',
      tool_data: {
        get_user_payments: {
          tool_name: 'get_user_payments',
          success: true,
          data: { payments: [{ amount: 240, currency: 'USD', status: 'processing', expected_date: '2026-11-27' }] },
        },
      },
    });
    expect(sandboxReasoning('coverage', paid)).toMatchObject({
      data_sufficient: false,
      intents: [
        { intent: 'payment status', covered: true },
        { intent: 'form 8821 copy', covered: false },
      ],
    });
    const intents = [
      { intent: 'payment status', question: 'When will I get paid?', covered: true },
      { intent: 'form 8821 copy', question: 'Also, can you send me my Form 8821 copy?', covered: false },
    ];
    expect(sandboxReasoning('draft', { ...paid, intents })).toEqual({
      text: 'Hi Ana, your payment of $240 is processing and expected on November 27.',
      response_type: 'REPLY',
      route: null,
      open_intents: ['form 8821 copy'],
      suggested_action: null,
    });
  });

  test('a job asked about by name is planned with the user’s words, beside the applications to resolve them in', () => {
    const planned = sandboxReasoning('plan', ask('What does the Barista job pay per hour?')) as {
      tool_calls: { tool_name: string; arguments_json: string }[];
      entities: unknown[];
    };
    expect(planned.tool_calls.map((c) => [c.tool_name, c.arguments_json])).toEqual([
      ['get_user_applications_detailed', '{}'],
      ['get_job_details', '{"job_id":"Barista"}'],
    ]);
    expect(planned.entities).toEqual([{ kind: 'job', mention: 'Barista' }]);
  });

  test('the team’s voice: greeting and sign-off of the closest past answer, none of its facts', () => {
    const withExamples = ask('Hi', {
      user_name: 'Ana Ruiz',
      style_examples: [{ question: 'q', answer: 'Hey Jo! Paid on December 4.\n— Crewline Talent Support' }],
    });
    expect(sandboxReasoning('draft', withExamples)).toMatchObject({
      text: 'Hey Ana! How can I help you today?\n\n— Crewline Talent Support',
    });
  });

  test('picks tools by matching the question to tool names and descriptions', () => {
    expect(toolsPlanned('When will I get paid?')).toEqual(['get_user_payments']);
    // A payment asked about by its job is told apart by the job's title and place, which the applications hold.
    expect(toolsPlanned('When will I get paid for the Boulder shift?')).toEqual([
      'get_user_payments',
      'get_user_applications_detailed',
    ]);
    expect(toolsPlanned('Any news on my application?')).toEqual(['get_user_applications_detailed']);
    expect(toolsPlanned('How do I withdraw my application?')).toEqual([
      'get_user_applications_detailed',
      'search_talent_docs',
    ]);
    expect(toolsPlanned('Which tax form do I need?')).toEqual(['search_talent_docs']);
    expect(toolsPlanned('Hi')).toEqual([]);
    expect(toolsPlanned('Can I speak to a human?')).toEqual([]);
  });

  test('a tool whose input comes from earlier results waits for them (a second hop)', () => {
    const withApplications = ask('Tell me about the job of my application', {
      tool_data: {
        get_user_applications_detailed: {
          tool_name: 'get_user_applications_detailed',
          success: true,
          data: { applications: [{ job_id: 'job-7' }] },
        },
      },
    });
    const calls = (
      sandboxReasoning('plan', withApplications) as { tool_calls: { tool_name: string; arguments_json: string }[] }
    ).tool_calls;
    expect(calls).toContainEqual(
      expect.objectContaining({ tool_name: 'get_job_details', arguments_json: '{"job_id":"job-7"}' }),
    );
  });

  test('coverage is insufficient when nothing relevant came back, sufficient when the data answers', () => {
    expect(sandboxReasoning('coverage', ask('Do you offer health insurance?'))).toMatchObject({
      data_sufficient: false,
    });
    const paid = ask('When will I get paid?', {
      tool_data: {
        get_user_payments: {
          tool_name: 'get_user_payments',
          success: true,
          data: { payments: [{ amount: 240, currency: 'USD', status: 'processing', expected_date: '2026-11-27' }] },
        },
      },
    });
    expect(sandboxReasoning('coverage', paid)).toMatchObject({ data_sufficient: true });
    expect(sandboxReasoning('draft', { ...paid, user_name: 'Ana Ruiz' })).toEqual({
      text: 'Hi Ana, your payment of $240 is processing and expected on November 27.',
      response_type: 'REPLY',
      route: null,
      open_intents: [],
      suggested_action: null,
    });
  });

  test('a passage that shares words but not the code the question names does not answer it (Form 8821 vs W-9)', () => {
    const docs = (question: string) =>
      ask(question, {
        docs_data: {
          [question]: {
            query: question,
            success: true,
            data: {
              results: [
                {
                  title: 'Which tax form to fill in',
                  text: 'US talent fill in a W-9 form before their first payout; a 1099 form is sent each January.',
                  score: 3,
                },
              ],
            },
          },
        },
      });
    const form8821 = 'Can you send me a copy of my Form 8821 authorization from last spring?';
    expect(sandboxReasoning('coverage', docs(form8821))).toMatchObject({ data_sufficient: false });
    expect(sandboxReasoning('coverage', docs('Which tax form do I fill in, the W9?'))).toMatchObject({
      data_sufficient: true,
    });
  });

  test('routes an explicit request for a person to the team', () => {
    expect(sandboxReasoning('draft', ask('I want to talk to a real person'))).toMatchObject({
      response_type: 'ROUTE_TO_TEAM',
    });
  });

  test('reads the user’s latest messages, writes dates and amounts for people', () => {
    expect(
      currentQuestion([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: 'c' },
        { role: 'user', content: 'd' },
      ]),
    ).toBe('c\nd');
    expect(spokenDate('2026-03-04')).toBe('March 4');
    expect(spokenAmount(240, 'USD')).toBe('$240');
    expect(spokenAmount(12.5, 'CAD')).toBe('12.50 CAD');
  });
});

test('the sandbox model reads the codes a question names: form numbers and ids, not years, amounts or dates', () => {
  expect([...keyCodes('My Form 8821, W-9, W-8BEN and app-11 for 2025: $240 on March 3')]).toEqual([
    '8821',
    'w9',
    'w8ben',
    'app11',
  ]);
  expect(codesMissingFrom('my W9 and Form 8821?', 'fill in a W-9 form')).toEqual(['8821']);
});

test('the validation service shows an internal id only as a whole token: "pay-31" is one, the 31 of "$31" is not', () => {
  const base = {
    conversation_id: '1',
    user_email: 'ana@example.com',
    messages: [{ role: 'user', content: 'When will I get paid?' }],
    internal_notes: [],
    tool_data: { p: { data: { payments: [{ id: 'pay-31', job_id: '250', amount: 31 }] } } },
    docs_data: {},
  };
  const ids = (response: string) => checkDraft({ ...base, response }).find((c) => c.name === 'no_internal_ids');
  expect(ids('Your payment of $250 is on its way.')).toMatchObject({ passed: true });
  expect(ids('Your payment pay-31 is on its way.')).toMatchObject({
    passed: false,
    detail: 'shows internal ids: pay-31',
  });
});

test.each(ID_TOKEN_CASES)('the validation service: id %s in "%s" is shown: %s', (id, response, shown) => {
  const request = {
    conversation_id: '1',
    user_email: null,
    messages: [],
    internal_notes: [],
    tool_data: { t: { data: { id } } },
    docs_data: {},
    response,
  };
  expect(checkDraft(request).find((c) => c.name === 'no_internal_ids')?.passed).toBe(!shown);
});

test('gates hold one request at a node and let it go on release', async () => {
  const gates = new Gates();
  gates.arm({ after: 'llm:plan' });
  await gates.enter('llm:plan');
  gates.exit('llm:plan');
  let released = false;
  const held = gates.enter('mcp:get_user_payments').then(() => (released = true));
  await gates.enter('mcp:search_talent_docs');
  expect(gates.status()).toEqual({ armed: { after: 'llm:plan', at: undefined }, held: 'mcp:get_user_payments' });
  expect(released).toBe(false);
  gates.release();
  await held;
  expect(gates.status()).toEqual({ armed: null, held: null });
  expect(() => gates.arm({})).toThrow('exactly one');
});

test('the knowledge base has a passage per section, and search ranks the right one first', () => {
  expect(parseMarkdownDocs('# Pay\n\n## Schedule\n\nEvery Friday.\n\n## Status\n\nPending, then paid.\n')).toEqual([
    { title: 'Pay: Schedule', body: 'Every Friday.' },
    { title: 'Pay: Status', body: 'Pending, then paid.' },
  ]);
  const store = new TalentStore({ knowledgeBase: loadKnowledgeBase() });
  for (const [query, title] of [
    ['payout run friday', 'Getting paid: Payment schedule and payout runs'],
    ['withdraw application', 'Applications: Withdrawing an application'],
    ['verify identity passport', 'Identity and documents: Identity verification'],
    ['W-9 tax form', 'Tax forms: Which tax form to fill in'],
    ['cancel a shift late', 'Shift cancellation: Cancelling a shift'],
    ['contract terms dispute', 'Contracts: Contract disputes'],
  ]) {
    expect({ query, best: store.searchDocs(query!, 1)[0]?.title }).toEqual({ query, best: title });
  }
});

describe('scenario files', () => {
  const write = (content: unknown) => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'scenario-')), 's.json');
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };

  test('an unknown field or a wrong type is an error naming its path', () => {
    const base = {
      id: 'x',
      description: 'd',
      conversation: {
        id: '1',
        contact: { id: 'c', email: 'a@b.co', name: 'A' },
        parts: [{ author: 'user', body: 'hi' }],
      },
      expect: {},
    };
    expect(() => loadScenario(write({ ...base, extra: 1 }))).toThrow(/extra.*Unrecognized key/);
    expect(() =>
      loadScenario(
        write({ ...base, conversation: { ...base.conversation, parts: [{ author: 'robot', body: 'hi' }] } }),
      ),
    ).toThrow(/conversation\.parts\.0\.author/);
    expect(() => loadScenario(write({ ...base, faults: { llm: { plan: [{ status: 'slow' }] } } }))).toThrow(
      /faults\.llm\.plan\.0\.status/,
    );
    expect(() => loadScenario(write('{ not json'))).toThrow(/not valid JSON/);
    expect(loadScenario(write(base)).talent).toEqual({ users: [], jobs: [] });
    // Later turns of the conversation: a user message each, a teammate's reply before it if any, and expectations.
    expect(loadScenario(write({ ...base, turns: [{ user: 'And then?', expect: { replied: true } }] })).turns).toEqual([
      { user: 'And then?', steps: [], expect: { replied: true } },
    ]);
    expect(() => loadScenario(write({ ...base, turns: [{ user: 'Hi', expect: { replyed: true } }] }))).toThrow(
      /turns\.0\.expect.*Unrecognized key/,
    );
    // A lead's steps: each request checked by its action's fields, the answer it must get, a turn of steps only.
    const leads = {
      ...base,
      turns: [
        { steps: [{ action: 'escalate', reason: 'VIP', answer: 'accepted' }, { assign: 'teammate' }], expect: {} },
      ],
    };
    expect(loadScenario(write(leads)).turns[0]!.steps).toEqual([
      { action: 'escalate', reason: 'VIP', by: 'lead@scenario', answer: 'accepted' },
      { assign: 'teammate' },
    ]);
    expect(() => loadScenario(write({ ...base, turns: [{ steps: [{ action: 'edit' }], expect: {} }] }))).toThrow(
      /turns\.0\.steps\.0/,
    );
    expect(() => loadScenario(write({ ...base, turns: [{ expect: {} }] }))).toThrow(/a turn needs a user message/);
    const placed = (during: string) => ({ during, user: 'More', expect: {} });
    expect(() => loadScenario(write({ ...base, turns: [placed('draft'), placed('plan')] }))).toThrow(
      /cannot itself be the turn another is placed during/,
    );
    expect(() => loadScenario(write({ ...base, turns: [placed('lunch')] }))).toThrow(/turns\.0\.during/);
  });

  test('expectations compare the run’s state and the conversation; absent ones are not checked', () => {
    const state = {
      hops: [{ gather: { tool_results: [{ tool_name: 'get_user_payments' }] } }],
      escalate: null,
    } as unknown as AgentState;
    const conversation = {
      replies: ['Paid on November 27'],
      notes: [],
      melvin_status: 'success',
      snoozed_until: Math.floor(Date.now() / 1000) + 300,
    };
    const results = evaluate(
      {
        melvin_status: 'success',
        replied: true,
        reply_includes: ['november 27'],
        reply_excludes: ['pay-1'],
        tools_called: ['get_user_payments', 'search_talent_docs'],
        escalation_source: null,
        max_hops: 1,
        snoozed: true,
      },
      state,
      conversation,
    );
    expect(results.filter((r) => !r.passed).map((r) => r.expectation)).toEqual(['tools_called search_talent_docs']);
    expect(evaluate({}, state, conversation)).toEqual([]);
  });

  test('approval and shadow expectations read the approval outcome and the teammate’s answer kept beside a draft', () => {
    const state = {
      hops: [],
      escalate: null,
      metadata: {
        approval: { outcome: 'noted' },
        conversation: { turns: [{ shadow_draft: 'Paid on Nov 27', team_answer: { text: 'Sam: it arrives Friday' } }] },
      },
    } as unknown as AgentState;
    const conversation = { replies: [], notes: [], melvin_status: null, snoozed_until: null };
    const results = evaluate(
      { approval_outcome: 'noted', team_answer_includes: ['friday', 'Monday'] },
      state,
      conversation,
    );
    expect(results.map((r) => [r.expectation, r.passed])).toEqual([
      ['approval_outcome', true],
      ['team_answer_includes "friday"', true],
      ['team_answer_includes "Monday"', false],
    ]);
    expect(evaluate({ approval_outcome: 'approved' }, state, conversation)[0]).toMatchObject({
      passed: false,
      actual: 'noted',
    });
  });

  describe('a turn that hands over is checked for its note: the kind, and the question it leaves open', () => {
    const asked = 'Can you send me a copy of my Form 8821 please?';
    const state = {
      hops: [],
      messages: [{ role: 'user', content: asked }],
      escalate: { escalation_source: 'draft' },
    } as unknown as AgentState;
    const good =
      '🚨 Escalation: No safe answer: the draft found no reply it could give from the data and the help center\n' +
      'Open for the team:\n- tax form: “send me a copy of my Form 8821”\nHow Melvin got here:';
    const noteCheck = (
      notes: string[],
      status = 'NO_SAFE_ANSWER',
      message: string | null = asked,
      turn: { state?: AgentState; teamOwned?: boolean } = {},
    ) =>
      evaluate(
        { melvin_status: status as never },
        turn.state ?? state,
        { replies: [], notes, melvin_status: status, snoozed_until: null },
        { userMessage: message, teamOwned: turn.teamOwned ?? false },
      ).find((r) => r.expectation === 'hand_over_note');
    test('the note names the kind and quotes the question', () => {
      expect(noteCheck([good])).toMatchObject({ passed: true });
      expect(noteCheck(['Validation result: {}', good])).toMatchObject({ passed: true });
    });
    test.each([
      ['no hand-over note', ['Validation result: {}']],
      ['no open question', [good.replace(/Open for the team:\n.*\n/, '')]],
      ['another question than the talent’s', [good.replace('send me a copy of my Form 8821', 'when do I get paid')]],
      ['another kind than the status', [good.replace('No safe answer', 'Sensitive request')]],
    ])('it fails with %s', (_why, notes) => {
      expect(noteCheck(notes)).toMatchObject({ passed: false });
    });
    test('an operator’s escalation names its kind by who asked, and may come with nothing new from the talent', () => {
      const operator = '🚨 Escalation: VIP, I will take it\nRequested by: lead@team';
      expect(noteCheck([`${operator}\nOpen for the team:\n- “${asked}”`], 'ROUTE_TO_TEAM')).toMatchObject({
        passed: true,
      });
      expect(noteCheck([operator], 'ROUTE_TO_TEAM')).toMatchObject({ passed: true });
    });
    test('a conversation Melvin could not read is listed as such, not quoted', () => {
      const unread = { ...state, messages: [] } as unknown as AgentState;
      const note = '🚨 Escalation: Initialization failed: 404\nOpen for the team:\n- the talent’s messages: unread';
      const check = (notes: string[]) => noteCheck(notes, 'error', asked, { state: unread });
      expect(check([note])).toMatchObject({ passed: true });
      expect(check(['🚨 Escalation: Initialization failed: 404'])).toMatchObject({ passed: false });
    });
    test('a turn while the team already owns the conversation needs no note of its own, but one it posts is checked', () => {
      const owned = (notes: string[]) => noteCheck(notes, 'ROUTE_TO_TEAM', asked, { teamOwned: true });
      expect(owned(['💬 The user wrote again.'])).toBeUndefined();
      expect(owned(['🚨 Escalation: User requested to talk to a human'])).toMatchObject({ passed: false });
    });
    test('a turn that replied, or whose status is no hand-over, is not checked for one', () => {
      expect(noteCheck([], 'success')).toBeUndefined();
      const replied = { hops: [], messages: [], escalate: null } as unknown as AgentState;
      const results = evaluate(
        { melvin_status: 'ROUTE_TO_TEAM' },
        replied,
        { replies: [], notes: [], melvin_status: 'ROUTE_TO_TEAM', snoozed_until: null },
        { userMessage: asked, teamOwned: false },
      );
      expect(results.map((r) => r.expectation)).toEqual(['melvin_status']);
    });
  });

  test('the hand-over message is not an answer: `replied: false` holds when it is all the user got', () => {
    const text = 'A person will follow up here.';
    const state = {
      hops: [],
      escalate: { escalation_source: 'draft', user_told: { text, sent: true, error: null, part_id: '9' } },
    } as unknown as AgentState;
    const conversation = { replies: [text], notes: [], melvin_status: 'ROUTE_TO_TEAM', snoozed_until: null };
    expect(evaluate({ replied: false, reply_excludes: ['follow up'] }, state, conversation)).toEqual([
      { expectation: 'replied', passed: true, expected: 'no reply', actual: '0 replies' },
      { expectation: 'reply_excludes "follow up"', passed: true, expected: 'follow up', actual: '' },
    ]);
  });
});
