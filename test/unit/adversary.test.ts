// The sandbox model's adversarial mode: each class plants its kind of wrong output where the request allows it, labels
// it, draws from its seed (the same run draws the same, another seed otherwise), and leaves the rest honest.
import { Adversary, PLANT_CLASSES, evenPlan, type PlantClass } from '../../sandbox/model/adversary';

const context = {
  user_name: 'Tyrone Jackson',
  messages: [{ role: 'user', content: 'When will I get paid for the arena shifts?' }],
  intents: [
    { intent: 'payment_status', question: 'When will I get paid?', covered: true },
    { intent: 'tax_form', question: 'Can you send my Form 8821?', covered: false },
  ],
  style_examples: [
    { question: 'When do I get paid?', answer: 'Hey Sam! It goes out Friday.\n— Crewline payouts team' },
  ],
  tool_data: {
    get_user_payments: {
      tool_name: 'get_user_payments',
      parameters: { email: 'tyrone.jackson@example.net' },
      success: true,
      data: {
        payments: [
          { id: 'pay-1', amount: 228, currency: 'USD', expected_date: '2026-11-27', job_title: 'Arena Vendor' },
          { id: 'pay-2', amount: 140, currency: 'USD', expected_date: '2026-12-04', job_title: 'Banquet Server' },
        ],
      },
    },
  },
  docs_data: {},
};
const messages = [
  {
    role: 'system',
    content: 'You are Melvin, the support agent of a talent marketplace, writing the reply the user will read.',
  },
  { role: 'user', content: 'Task: draft. <conversation_data>…</conversation_data>' },
];
const honest = {
  text: 'Hi Tyrone, your payment of $228 for Arena Vendor is processing and expected on November 27.',
  response_type: 'REPLY',
  route: null,
  open_intents: ['tax_form'],
  suggested_action: null,
};
const routed = {
  text: 'The user asked to talk to a person.',
  response_type: 'ROUTE_TO_TEAM',
  route: { kind: 'asked_for_person', explanation: 'They asked for a person.' },
  open_intents: [],
  suggested_action: null,
};

const only = (cls: PlantClass) => new Adversary({ seed: 7, rates: { [cls]: 1 } });
const textOf = (answer: unknown) => (answer as { output: { text: string } }).output.text;

test.each([
  ['other_record', ['$140', 'December 4', 'Banquet Server']],
  ['invented_date', []],
  ['invented_amount', []],
  ['invented_title', []],
  ['other_talent', []],
  ['other_address', ['@']],
  ['internal_id', ['pay-']],
  ['prompt_text', []],
  ['claimed_action', []],
  ['unbacked_promise', []],
  ['uncovered_intent', ['Form 8821']],
] as const)('%s: the reply carries what it planted, and the plant is labelled', (cls, contains) => {
  const adversary = only(cls);
  const answer = adversary.corrupt('draft', context, messages, honest);
  expect(answer).not.toBeNull();
  const [plant] = adversary.plants;
  expect(plant).toMatchObject({ class: cls, step: 'draft', talent: { email: 'tyrone.jackson@example.net' } });
  expect(textOf(answer)).toContain(plant!.planted);
  expect(textOf(answer)).not.toBe(honest.text);
  expect(plant!.planted.length).toBeGreaterThan(0);
  if (contains.length) expect(contains.some((c) => plant!.planted.includes(c))).toBe(true);
});

test('a planted date, amount, title or name is in none of the request’s data', () => {
  const data = JSON.stringify(context.tool_data);
  for (const cls of ['invented_date', 'invented_amount', 'invented_title'] as const) {
    for (let seed = 0; seed < 20; seed++) {
      const adversary = new Adversary({ seed, rates: { [cls]: 1 } });
      adversary.corrupt('draft', context, messages, honest);
      const planted = adversary.plants[0]!.planted;
      expect({ cls, planted, inData: data.includes(planted.replace('$', '')) }).toMatchObject({ inData: false });
    }
  }
});

test('the other talent comes from the team’s examples when they name one', () => {
  const names = new Set<string>();
  for (let seed = 0; seed < 20; seed++) {
    const adversary = new Adversary({ seed, rates: { other_talent: 1 } });
    adversary.corrupt('draft', context, messages, honest);
    names.add(adversary.plants[0]!.planted);
  }
  expect([...names].some((n) => n.startsWith('Sam'))).toBe(true);
});

test('the decision: a route to a person becomes a reply', () => {
  const adversary = only('wrong_decision');
  const answer = adversary.corrupt('draft', context, messages, routed) as { output: typeof routed };
  expect(answer.output.response_type).toBe('REPLY');
  expect(answer.output.text).toBe(adversary.plants[0]!.planted);
  // A reply has no route to a person to get wrong.
  expect(only('wrong_decision').corrupt('draft', context, messages, honest)).toBeNull();
});

test('the formats: broken, cut off, wrapped in prose, refused, empty', () => {
  const parses = (content: string) => {
    try {
      JSON.parse(content);
      return true;
    } catch {
      return false;
    }
  };
  const malformed = only('malformed_json').corrupt('draft', context, messages, honest) as { content: string };
  expect(parses(malformed.content)).toBe(false);
  const truncated = only('truncated').corrupt('draft', context, messages, honest) as {
    content: string;
    finish_reason: string;
  };
  expect(truncated.finish_reason).toBe('length');
  expect(parses(truncated.content)).toBe(false);
  const prose = only('prose_wrapped').corrupt('draft', context, messages, honest) as { content: string };
  expect(prose.content).toContain(JSON.stringify(honest));
  expect(parses(prose.content)).toBe(false);
  expect(only('refusal').corrupt('draft', context, messages, honest)).toEqual({ refusal: expect.any(String) });
  expect(textOf(only('empty_reply').corrupt('draft', context, messages, honest))).toBe('');
});

test('the plan: a tool that takes an address is called with another talent’s', () => {
  const plan = {
    tool_calls: [{ tool_name: 'get_user_payments', arguments_json: '{}', reasoning: 'pay' }],
  };
  const withTools = {
    ...context,
    available_tools: [{ name: 'get_user_payments', input_schema: { properties: { email: { type: 'string' } } } }],
  };
  const adversary = only('other_talent_lookup');
  const answer = adversary.corrupt('plan', withTools, messages, plan) as { output: typeof plan };
  const email = adversary.plants[0]!.planted;
  expect(JSON.parse(answer.output.tool_calls[0]!.arguments_json)).toEqual({ email });
  expect(email).not.toBe('tyrone.jackson@example.net');
});

test('where the request gives a class nothing to be wrong with, the answer stays honest and nothing is labelled', () => {
  const one = {
    ...context,
    tool_data: {
      get_user_payments: {
        ...context.tool_data.get_user_payments,
        data: { payments: [context.tool_data.get_user_payments.data.payments[0]] },
      },
    },
  };
  const adversary = only('other_record');
  expect(adversary.corrupt('draft', one, messages, honest)).toBeNull();
  expect(adversary.plants).toEqual([]);
});

test('draws are the seed’s: the same run draws the same, tries of one request draw afresh, rates hold', () => {
  const run = (seed: number) => {
    const adversary = new Adversary(evenPlan(0.5, seed));
    return Array.from({ length: 400 }, () => adversary.corrupt('draft', context, messages, honest) !== null);
  };
  expect(run(3)).toEqual(run(3));
  expect(run(3)).not.toEqual(run(4));
  const share = run(5).filter(Boolean).length / 400;
  // Half the answers are drawn wrong; the classes this request cannot be wrong with leave some honest.
  expect(share).toBeGreaterThan(0.3);
  expect(share).toBeLessThan(0.6);
});

test('every class is drawn by an even plan', () => {
  const adversary = new Adversary(evenPlan(1, 11));
  const withTools = {
    ...context,
    available_tools: [{ name: 'get_user_payments', input_schema: { properties: { email: { type: 'string' } } } }],
  };
  const plan = { tool_calls: [{ tool_name: 'get_user_payments', arguments_json: '{}', reasoning: 'pay' }] };
  for (let i = 0; i < 600; i++) {
    adversary.corrupt('draft', withTools, messages, i % 5 ? honest : routed);
    adversary.corrupt('plan', withTools, messages, plan);
  }
  expect(new Set(adversary.plants.map((p) => p.class))).toEqual(new Set(PLANT_CLASSES));
});

test('another talent is never one who shares a name with the talent or the data', () => {
  // No examples: the stand-ins are drawn, and one of them shares the talent's first name.
  const { style_examples: _examples, ...plain } = context;
  for (let seed = 0; seed < 30; seed++) {
    const adversary = new Adversary({ seed, rates: { other_talent: 1 } });
    adversary.corrupt('draft', { ...plain, user_name: 'Kwame Asante' }, messages, {
      ...honest,
      text: honest.text.replace('Tyrone', 'Kwame'),
    });
    expect(adversary.plants[0]!.planted).not.toMatch(/Kwame|Asante/);
  }
});
