// The sandbox model refuses every schema OpenAI's strict Structured Outputs refuses, with OpenAI's error body, over HTTP.
import OpenAI, { BadRequestError } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { SANDBOX_MODEL_NAME, SandboxModel } from '../../sandbox/model/server';
import { pythonTuple, strictSchemaProblem } from '../../sandbox/model/strict-schema';

const KEY = 'strict-schema-test-key';
let model: SandboxModel;
let openai: OpenAI;

beforeAll(async () => {
  model = new SandboxModel({
    apiKey: KEY,
    responder: () => ({ text: 'Hello', response_type: 'REPLY' }),
  });
  openai = new OpenAI({ apiKey: KEY, baseURL: await model.start(), maxRetries: 0 });
});

afterAll(() => model.stop());

const MESSAGES: ChatCompletionCreateParamsNonStreaming['messages'] = [
  { role: 'system', content: 'Write the reply.' },
  { role: 'user', content: 'Task: draft. The data follows.' },
];

/** A strict object schema of the given properties, each required. */
function object(properties: Record<string, object>, extra: object = {}): Record<string, unknown> {
  return { type: 'object', properties, required: Object.keys(properties), additionalProperties: false, ...extra };
}

function send(responseFormat: ChatCompletionCreateParamsNonStreaming['response_format'], messages = MESSAGES) {
  return openai.chat.completions.create({ model: SANDBOX_MODEL_NAME, messages, response_format: responseFormat });
}

async function refusalOf(schema: unknown, name = 'draft'): Promise<BadRequestError> {
  try {
    await send({ type: 'json_schema', json_schema: { name, strict: true, schema: schema as Record<string, unknown> } });
  } catch (err) {
    if (err instanceof BadRequestError) return err;
    throw err;
  }
  throw new Error('expected the sandbox model to refuse the schema');
}

const schemaError = (name: string, detail: string) => ({
  message: `Invalid schema for response_format '${name}': ${detail}`,
  type: 'invalid_request_error',
  param: 'response_format',
  code: 'invalid_json_schema',
});

test('a default is refused as OpenAI refuses it: 400 invalid_json_schema, the keyword named at its path', async () => {
  const err = await refusalOf(
    object({ text: { type: 'string' }, response_type: { type: 'string', enum: ['REPLY'], default: 'REPLY' } }),
  );
  expect(err.status).toBe(400);
  expect(err.code).toBe('invalid_json_schema');
  expect(err.error).toEqual(
    schemaError('draft', "In context=('properties', 'response_type'), 'default' is not permitted."),
  );
});

test('minLength is refused the same way', async () => {
  const err = await refusalOf(object({ text: { type: 'string', minLength: 1 } }));
  expect(err.code).toBe('invalid_json_schema');
  expect(err.error).toEqual(schemaError('draft', "In context=('properties', 'text'), 'minLength' is not permitted."));
});

const refusedKeywords: [keyword: string, value: unknown][] = [
  ['maxLength', 10],
  ['uniqueItems', true],
  ['minProperties', 1],
  ['maxProperties', 3],
  ['patternProperties', { '^x': { type: 'string' } }],
  ['propertyNames', { pattern: '^x' }],
  ['allOf', [{ type: 'string' }]],
  ['oneOf', [{ type: 'string' }]],
  ['not', { type: 'number' }],
  ['if', { type: 'string' }],
  ['then', { type: 'string' }],
  ['else', { type: 'string' }],
  ['dependentRequired', { a: ['b'] }],
  ['unevaluatedProperties', false],
  ['contains', { type: 'string' }],
  ['prefixItems', [{ type: 'string' }]],
];

test.each(refusedKeywords)('%s is not permitted', async (keyword, value) => {
  const item = object({ name: { type: 'string' } }, { [keyword]: value });
  const err = await refusalOf(object({ calls: { type: 'array', items: item } }));
  expect(err.error).toEqual(
    schemaError('draft', `In context=('properties', 'calls', 'items'), '${keyword}' is not permitted.`),
  );
});

test('the supported constraints pass: pattern, format, numeric bounds, item counts, anyOf with null, $defs', async () => {
  const schema = object(
    {
      handle: { type: 'string', pattern: '^@', description: 'a handle' },
      when: { type: 'string', format: 'date-time' },
      score: { type: 'number', minimum: 0, maximum: 1, multipleOf: 0.5 },
      count: { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 9 },
      tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 },
      note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      kind: { type: ['string', 'null'], enum: ['a', 'b', null] },
      step: { $ref: '#/$defs/step' },
    },
    { $defs: { step: object({ name: { type: 'string' } }) }, $schema: 'http://json-schema.org/draft-07/schema#' },
  );
  const completion = await send({ type: 'json_schema', json_schema: { name: 'draft', strict: true, schema } });
  expect(JSON.parse(completion.choices[0]!.message.content!)).toEqual({ text: 'Hello', response_type: 'REPLY' });
});

test('every object needs additionalProperties: false', async () => {
  const err = await refusalOf(
    object({ calls: { type: 'array', items: { ...object({ a: { type: 'string' } }), additionalProperties: true } } }),
  );
  expect(err.error).toEqual(
    schemaError(
      'draft',
      "In context=('properties', 'calls', 'items'), 'additionalProperties' is required to be supplied and to be false.",
    ),
  );
  const root = await refusalOf({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] });
  expect(root.error).toEqual(
    schemaError('draft', "In context=(), 'additionalProperties' is required to be supplied and to be false."),
  );
});

test('required lists every property, and nothing else', async () => {
  const missing = await refusalOf({ ...object({ a: { type: 'string' }, x: { type: 'string' } }), required: ['a'] });
  expect(missing.error).toEqual(
    schemaError(
      'draft',
      "In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'x'.",
    ),
  );
  const extra = await refusalOf({ ...object({ a: { type: 'string' } }), required: ['a', 'b'] });
  expect(extra.error).toEqual(
    schemaError(
      'draft',
      "In context=(), 'required' is required to be supplied and to be an array including every key in properties. Extra required key 'b' supplied.",
    ),
  );
});

test('every schema has a type, arrays have items, and the root is an object', async () => {
  expect((await refusalOf(object({ a: { description: 'untyped' } }))).error).toEqual(
    schemaError('draft', "In context=('properties', 'a'), schema must have a 'type' key."),
  );
  expect((await refusalOf(object({ a: { type: 'array' } }))).error).toEqual(
    schemaError('draft', "In context=('properties', 'a'), array schema missing items."),
  );
  expect((await refusalOf({ type: 'array', items: { type: 'string' } })).error).toEqual(
    schemaError('draft', `schema must be a JSON Schema of 'type: "object"', got 'type: "array"'.`),
  );
  expect((await refusalOf({ anyOf: [object({})] })).error).toEqual(
    schemaError('draft', `schema must be a JSON Schema of 'type: "object"', got 'type: "None"'.`),
  );
});

test('at most 10 levels of nesting and 5000 properties in all', async () => {
  let deep: Record<string, unknown> = object({ leaf: { type: 'string' } });
  for (let level = 0; level < 11; level += 1) deep = object({ inner: deep });
  expect((await refusalOf(deep)).error).toEqual(schemaError('draft', '11 levels of nesting exceeds limit of 10.'));
  const wide = object(Object.fromEntries(Array.from({ length: 5001 }, (_, i) => [`p${i}`, { type: 'string' }])));
  expect((await refusalOf(wide)).error).toEqual(schemaError('draft', '5001 parameters exceeds limit of 5000.'));
  let tenLevels: Record<string, unknown> = object({ leaf: { type: 'string' } });
  for (let level = 0; level < 10; level += 1) tenLevels = object({ inner: tenLevels });
  expect(strictSchemaProblem(tenLevels)).toBeNull();
});

test('the schema name must match ^[a-zA-Z0-9_-]+$ and be at most 64 characters', async () => {
  expect((await refusalOf(object({}), 'my draft')).error).toEqual({
    message:
      "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
    type: 'invalid_request_error',
    param: 'response_format.json_schema.name',
    code: 'invalid_value',
  });
  expect((await refusalOf(object({}), 'd'.repeat(65))).error).toEqual({
    message:
      "Invalid 'response_format.json_schema.name': string too long. Expected a string with maximum length 64, but got a string with length 65 instead.",
    type: 'invalid_request_error',
    param: 'response_format.json_schema.name',
    code: 'string_above_max_length',
  });
});

test('without strict: true any schema is taken, as OpenAI takes it', async () => {
  const schema = { type: 'object', properties: { text: { type: 'string', minLength: 1, default: 'x' } } };
  const completion = await send({ type: 'json_schema', json_schema: { name: 'draft', schema } });
  expect(completion.choices[0]!.message.content).toContain('Hello');
});

test("JSON mode needs the word 'json' in the messages", async () => {
  const err = await send({ type: 'json_object' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(BadRequestError);
  expect((err as BadRequestError).error).toEqual({
    message: "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
    type: 'invalid_request_error',
    param: 'messages',
    code: null,
  });
  const asked = await send({ type: 'json_object' }, [...MESSAGES, { role: 'user', content: 'Answer in JSON.' }]);
  expect(JSON.parse(asked.choices[0]!.message.content!)).toMatchObject({ text: 'Hello' });
});

test('paths print as Python tuples', () => {
  expect(pythonTuple([])).toBe('()');
  expect(pythonTuple(['items'])).toBe("('items',)");
  expect(pythonTuple(['properties', 'a', 'anyOf', '0'])).toBe("('properties', 'a', 'anyOf', '0')");
});
