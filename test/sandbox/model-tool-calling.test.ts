// The sandbox model's tool calling, through the official SDK, as strict as OpenAI's chat completions: function tools
// with strict schemas, tool_calls answered by `tool` messages, and OpenAI's error shapes for what it refuses.
import OpenAI, { APIError } from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { SANDBOX_MODEL_NAME, SandboxModel } from '../../sandbox/model/server';

const API_KEY = 'sk-tool-calling-test';
let model: SandboxModel;
let openai: OpenAI;

beforeAll(async () => {
  model = new SandboxModel({ apiKey: API_KEY });
  openai = new OpenAI({ baseURL: await model.start(0), apiKey: API_KEY, maxRetries: 0 });
});
afterAll(() => model.stop());

const causes: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'escalation_causes',
    description: 'Causes of escalation',
    strict: true,
    parameters: {
      type: 'object',
      properties: { by: { type: 'string', enum: ['kind', 'intent'] } },
      required: ['by'],
      additionalProperties: false,
    },
  },
};
const system: ChatCompletionMessageParam = { role: 'system', content: 'Task: analyze.\nAnswer from tools only.' };
const ask = (question: string): ChatCompletionMessageParam[] => [system, { role: 'user', content: question }];

async function refusal(body: Partial<Parameters<OpenAI['chat']['completions']['create']>[0]>) {
  const error = await openai.chat.completions
    .create({ model: SANDBOX_MODEL_NAME, messages: ask('What causes escalations?'), tools: [causes], ...body } as never)
    .then(
      () => null,
      (err: unknown) => err,
    );
  expect(error).toBeInstanceOf(APIError);
  const e = error as APIError;
  return { status: e.status, ...(e.error as object) };
}

test('a question the tools answer gets tool_calls with JSON arguments, finish_reason tool_calls and no content', async () => {
  const completion = await openai.chat.completions.create({
    model: SANDBOX_MODEL_NAME,
    messages: ask('What is causing escalations, by intent?'),
    tools: [causes],
  });
  const choice = completion.choices[0]!;
  expect(choice.finish_reason).toBe('tool_calls');
  expect(choice.message.content).toBeNull();
  expect(choice.message.tool_calls).toEqual([
    {
      id: expect.stringMatching(/^call_\w+$/),
      type: 'function',
      function: { name: 'escalation_causes', arguments: '{"by":"intent"}' },
    },
  ]);
  const call = choice.message.tool_calls![0]!;
  const answer = await openai.chat.completions.create({
    model: SANDBOX_MODEL_NAME,
    messages: [
      ...ask('What is causing escalations, by intent?'),
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ causes: [{ cause: 'form 8821', turns: 4 }] }) },
    ],
    tools: [causes],
  });
  expect(answer.choices[0]!.finish_reason).toBe('stop');
  expect(answer.choices[0]!.message.content).toContain('form 8821 (turns: 4)');
});

test('a strict function schema outside OpenAI’s subset is refused as OpenAI refuses it', async () => {
  const loose = {
    ...causes,
    function: {
      ...causes.function,
      parameters: { type: 'object', properties: { by: { type: 'string' } }, required: ['by'] },
    },
  };
  expect(await refusal({ tools: [loose] })).toEqual({
    status: 400,
    message:
      "Invalid schema for function 'escalation_causes': In context=(), 'additionalProperties' is required to be supplied and to be false.",
    type: 'invalid_request_error',
    param: 'tools[0].function.parameters',
    code: 'invalid_function_parameters',
  });
  const bounded = {
    ...causes,
    function: {
      ...causes.function,
      parameters: {
        type: 'object',
        properties: { by: { type: 'string', minLength: 1 } },
        required: ['by'],
        additionalProperties: false,
      },
    },
  };
  expect(await refusal({ tools: [bounded] })).toMatchObject({
    message:
      "Invalid schema for function 'escalation_causes': In context=('properties', 'by'), 'minLength' is not permitted.",
  });
  // Without `strict`, OpenAI takes any schema.
  const lax = { ...loose, function: { ...loose.function, strict: false } };
  await expect(
    openai.chat.completions.create({
      model: SANDBOX_MODEL_NAME,
      messages: ask('What causes escalations?'),
      tools: [lax],
    }),
  ).resolves.toBeDefined();
});

test('tools that are not functions, or badly named, are refused with the parameter that is wrong', async () => {
  expect(await refusal({ tools: [{ type: 'retrieval' }] as never })).toMatchObject({
    status: 400,
    param: 'tools[0].type',
    code: 'invalid_value',
  });
  const named = { ...causes, function: { ...causes.function, name: 'escalation causes' } };
  expect(await refusal({ tools: [named] })).toMatchObject({ param: 'tools[0].function.name', code: 'invalid_value' });
});

test('a tool message must answer a call of the assistant message before it, and every call must be answered', async () => {
  const call = {
    id: 'call_abc',
    type: 'function' as const,
    function: { name: 'escalation_causes', arguments: '{"by":"kind"}' },
  };
  expect(
    await refusal({
      messages: [...ask('What causes escalations?'), { role: 'tool', tool_call_id: 'call_abc', content: '{}' }],
    }),
  ).toEqual({
    status: 400,
    message:
      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    type: 'invalid_request_error',
    param: 'messages.[2].role',
    code: null,
  });
  expect(
    await refusal({
      messages: [
        ...ask('What causes escalations?'),
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'user', content: 'and?' },
      ],
    }),
  ).toEqual({
    status: 400,
    message:
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_abc",
    type: 'invalid_request_error',
    param: 'messages.[2].role',
    code: null,
  });
});

test('tools are answered only for the analysis agent: another request with tools is refused, not guessed at', async () => {
  const error = await openai.chat.completions
    .create({ model: SANDBOX_MODEL_NAME, messages: [{ role: 'user', content: 'Task: plan. hi' }], tools: [causes] })
    .catch((err: unknown) => err);
  expect(error).toMatchObject({ status: 400 });
});
