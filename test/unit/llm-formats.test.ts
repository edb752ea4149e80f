// Melvin's response formats against the sandbox's copy of OpenAI's strict-mode checks; reading JSON out of answers;
// telling an endpoint's refusal of a format from its refusal of Melvin's schema.
import { BadRequestError, InternalServerError, UnprocessableEntityError } from 'openai';
import { z } from 'zod';
import {
  ResponseFormatLadder,
  STEP_SCHEMAS,
  extractJson,
  formatRefusal,
  formatRequest,
  jsonSchemaFormats,
  type StepSchemas,
} from '../../src/activities/llm-formats';
import { DraftOutput } from '../../src/contract/schemas';
import { checkJsonSchemaFormat } from '../../sandbox/model/strict-schema';

describe('the response formats Melvin sends', () => {
  const formats = jsonSchemaFormats();

  test.each(['plan', 'coverage', 'draft'] as const)('%s is a strict json_schema format OpenAI accepts', (step) => {
    const format = formats[step];
    expect(format).toMatchObject({ type: 'json_schema', json_schema: { name: step, strict: true } });
    // As it goes over the wire: JSON, without the SDK's non-enumerable helpers.
    const sent = JSON.parse(JSON.stringify(format)) as typeof format;
    expect(checkJsonSchemaFormat(sent.json_schema)).toBeNull();
  });

  test('they carry no bounds either: fine-tuned models refuse even those the guide allows other models', () => {
    const keywords = new Set<string>();
    const collect = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(collect);
      else if (typeof value === 'object' && value !== null)
        for (const [key, child] of Object.entries(value)) {
          keywords.add(key);
          if (key !== 'properties') collect(child);
          else Object.values(child as object).forEach(collect);
        }
    };
    collect(Object.values(formats).map((f) => f.json_schema.schema));
    const bounds = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems'];
    const present = [...bounds, 'pattern', 'format', 'minLength', 'maxLength', 'default'].filter((k) =>
      keywords.has(k),
    );
    expect(present).toEqual([]);
    expect(keywords.has('description')).toBe(true);
  });

  test('the check does catch a refused keyword coming back into a step schema', () => {
    const withDefault = DraftOutput.extend({ response_type: z.enum(['REPLY', 'ROUTE_TO_TEAM']).default('REPLY') });
    const withMinLength = DraftOutput.extend({ text: z.string().min(1) });
    const refusalOf = (draft: StepSchemas['draft']) =>
      checkJsonSchemaFormat(jsonSchemaFormats({ ...STEP_SCHEMAS, draft }).draft.json_schema)?.body.error.message;
    expect(refusalOf(withDefault)).toBe(
      "Invalid schema for response_format 'draft': In context=('properties', 'response_type'), 'default' is not permitted.",
    );
    expect(refusalOf(withMinLength)).toBe(
      "Invalid schema for response_format 'draft': In context=('properties', 'text'), 'minLength' is not permitted.",
    );
  });
  test('the bounds the schemas no longer carry are still checked by zod', () => {
    const call = { tool_name: 'x', arguments_json: '{}', reasoning: 'r' };
    const plan = { user_query: 'q', reasoning: 'r', tool_calls: Array.from({ length: 13 }, () => call) };
    expect(z.prettifyError(STEP_SCHEMAS.plan.safeParse(plan).error!)).toContain('at most 12 tool calls');
    expect(STEP_SCHEMAS.plan.safeParse({ ...plan, tool_calls: [{ ...call, tool_name: ' ' }] }).success).toBe(false);
    expect(STEP_SCHEMAS.draft.safeParse({ text: '', response_type: 'REPLY' }).success).toBe(false);
    const coverage = {
      user_query: 'q',
      data_sufficient: true,
      coverage_score: 1.5,
      available_data: [],
      missing_data: [],
      reasoning: 'r',
      confidence: -0.1,
    };
    const problems = z.prettifyError(STEP_SCHEMAS.coverage.safeParse(coverage).error!);
    expect(problems).toMatch(/between 0 and 1[\s\S]*coverage_score/);
    expect(problems).toMatch(/between 0 and 1[\s\S]*confidence/);
  });

  test('without structured outputs the schema travels in the system message', () => {
    const jsonMode = formatRequest('json_object', formats.draft, 'DRAFT PROMPT');
    expect(jsonMode.response_format).toEqual({ type: 'json_object' });
    expect(jsonMode.system.startsWith('DRAFT PROMPT\n')).toBe(true);
    expect(jsonMode.system).toContain(JSON.stringify(formats.draft.json_schema.schema));
    const none = formatRequest('none', formats.draft, 'DRAFT PROMPT');
    expect(none).toEqual({ system: jsonMode.system });
    expect(formatRequest('json_schema', formats.draft, 'DRAFT PROMPT')).toEqual({
      response_format: formats.draft,
      system: 'DRAFT PROMPT',
    });
  });
});

describe('reading the JSON out of an answer', () => {
  const answer = { text: 'Hi {there}', response_type: 'REPLY' };

  test.each([
    ['bare JSON', JSON.stringify(answer)],
    ['a ```json fence', `Here you go:\n\n\`\`\`json\n${JSON.stringify(answer, null, 2)}\n\`\`\`\nAnything else?`],
    ['a bare ``` fence', `\`\`\`\n${JSON.stringify(answer)}\n\`\`\``],
    ['prose around it', `I read the {data} and the answer is ${JSON.stringify(answer)}. Hope that helps!`],
    ['prose with a stray brace first', `Careful with { this one.\n${JSON.stringify(answer)}`],
  ])('%s', (_kind, content) => {
    expect(extractJson(content)).toEqual({ ok: true, value: answer });
  });

  test('no object at all is a problem the repair request can name', () => {
    expect(extractJson('I think the data is fine')).toEqual({
      ok: false,
      problem: expect.stringContaining('the answer is not JSON'),
    });
  });
});

describe('a refusal of the format, not of the schema', () => {
  const headers = new Headers();
  const badRequest = (error: object) => new BadRequestError(400, error, undefined, headers);

  test.each([
    [
      'OpenAI, a model without structured outputs',
      badRequest({
        message: "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
        type: 'invalid_request_error',
        param: 'response_format',
        code: null,
      }),
    ],
    [
      'DeepSeek',
      badRequest({
        message: 'This response_format type is unavailable now',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_request_error',
      }),
    ],
    [
      'DeepSeek, earlier',
      new UnprocessableEntityError(
        422,
        {
          message:
            'Failed to deserialize the JSON body into the target type: response_format: response_format.type `json_schema` is unavailable now at line 1 column 12440',
        },
        undefined,
        headers,
      ),
    ],
    [
      'an older llama.cpp server',
      new InternalServerError(
        500,
        { code: 500, message: 'response_format type must be one of "text" or "json_object", but got: json_schema' },
        undefined,
        headers,
      ),
    ],
  ])('%s', (_endpoint, err) => {
    expect(formatRefusal(err, 'json_schema')).toBe(err.message);
  });

  test.each([
    [
      "OpenAI's refusal of the schema",
      badRequest({
        message: "Invalid schema for response_format 'draft': In context=(), 'default' is not permitted.",
        type: 'invalid_request_error',
        param: 'response_format',
        code: 'invalid_json_schema',
      }),
    ],
    [
      "JSON mode's rule about the word json",
      badRequest({
        message:
          "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
        type: 'invalid_request_error',
        param: 'messages',
        code: null,
      }),
    ],
    [
      'a bad schema name',
      badRequest({
        message: "Invalid 'response_format.json_schema.name': string does not match pattern.",
        param: 'response_format.json_schema.name',
        code: 'invalid_value',
      }),
    ],
    ['any other 400', badRequest({ message: "Invalid 'messages': empty array.", param: 'messages' })],
    ['a 500 that names no format', new InternalServerError(500, { message: 'overloaded' }, undefined, headers)],
  ])('not %s', (_what, err) => {
    expect(formatRefusal(err, 'json_schema')).toBeNull();
  });
});

describe('the response-format ladder a client shares across its requests', () => {
  const refusal = new BadRequestError(
    400,
    {
      message: "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
      param: 'response_format',
    },
    undefined,
    new Headers(),
  );

  test('requests refused together step down once, and each asks again in the weaker mode', () => {
    const ladder = new ResponseFormatLadder('auto');
    expect(ladder.afterFailure(refusal, 'json_schema')).toEqual({ retry: true, steppedDown: refusal.message });
    // A second request sent in strict mode before the first was refused: it asks again, the ladder stays.
    expect(ladder.afterFailure(refusal, 'json_schema')).toEqual({ retry: true, steppedDown: null });
    expect(ladder.mode).toBe('json_object');
    expect(ladder.fallback).toBe(`json_schema refused (${refusal.message})`);
  });

  test('a fixed mode never steps down, and a failure that is not a refusal is the request’s own', () => {
    expect(new ResponseFormatLadder('json_schema').afterFailure(refusal, 'json_schema').retry).toBe(false);
    const overloaded = new InternalServerError(500, { message: 'overloaded' }, undefined, new Headers());
    expect(new ResponseFormatLadder('auto').afterFailure(overloaded, 'json_schema').retry).toBe(false);
  });
});
