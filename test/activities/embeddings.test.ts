// The embeddings activity against the sandbox's /v1/embeddings, which answers and refuses as OpenAI's does.
import type { BadRequestError } from 'openai';
import type OpenAI from 'openai';
import { NotFoundError } from 'openai';
import { createEmbeddingActivities } from '../../src/activities/embeddings';
import { createOpenAiClient } from '../../src/activities/llm';
import { embeddingsPolicy } from '../../src/workflows/activity-options/retry-policies';
import { EMBEDDING_DIMENSIONS, SANDBOX_EMBEDDING_MODEL_NAME } from '../../sandbox/model/embeddings';
import { SANDBOX_MODEL_NAME, SandboxModel } from '../../sandbox/model/server';
import { failureOf, runActivity } from '../helpers/activity';

const KEY = 'embeddings-test-key';
let model: SandboxModel;
let openai: OpenAI;

beforeAll(async () => {
  model = new SandboxModel({ apiKey: KEY });
  openai = createOpenAiClient({ apiKey: KEY, baseURL: await model.start() });
});
afterAll(() => model.stop());
beforeEach(() => model.clear());

const activities = (name = SANDBOX_EMBEDDING_MODEL_NAME) => createEmbeddingActivities({ openai, model: name });

test('one unit vector per text, in the texts’ order, through the SDK’s default base64 encoding', async () => {
  const answer = await runActivity(activities().embedTexts, { texts: ['the barrista job', 'Barista, Austin, TX'] });
  expect(answer.vectors).toHaveLength(2);
  for (const vector of answer.vectors) {
    expect(vector).toHaveLength(EMBEDDING_DIMENSIONS);
    expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
  }
  expect(answer).toMatchObject({ model: SANDBOX_EMBEDDING_MODEL_NAME });
  expect(answer.prompt_tokens).toBeGreaterThan(0);
  // The SDK asked for base64 (its default) and decoded it; the same texts as floats give the same vectors.
  expect(model.embeddingRequests[0]).toMatchObject({ encoding_format: 'base64' });
  const floats = await openai.embeddings.create({
    model: SANDBOX_EMBEDDING_MODEL_NAME,
    input: ['the barrista job'],
    encoding_format: 'float',
  });
  floats.data[0]!.embedding.forEach((v, i) => expect(v).toBeCloseTo(answer.vectors[0]![i]!, 5));
});

test('the endpoint refuses what OpenAI refuses, with its status, code and parameter', async () => {
  const refusal = async (body: Record<string, unknown>) => {
    const err = await openai.embeddings.create(body as unknown as OpenAI.EmbeddingCreateParams).then(
      () => undefined,
      (e: unknown) => e,
    );
    return err as BadRequestError | NotFoundError;
  };
  const unknown = await refusal({ model: 'text-embedding-3-small', input: 'x' });
  expect(unknown).toBeInstanceOf(NotFoundError);
  expect(unknown.code).toBe('model_not_found');
  // A chat model is not an embeddings model, nor the other way round.
  expect(await refusal({ model: SANDBOX_MODEL_NAME, input: 'x' })).toBeInstanceOf(NotFoundError);
  const empty = await refusal({ model: SANDBOX_EMBEDDING_MODEL_NAME, input: ['ok', ''] });
  expect({ status: empty.status, param: empty.param }).toEqual({ status: 400, param: 'input' });
  const tooMany = await refusal({ model: SANDBOX_EMBEDDING_MODEL_NAME, input: Array(2049).fill('x') });
  expect(tooMany.status).toBe(400);
  const tooLong = await refusal({ model: SANDBOX_EMBEDDING_MODEL_NAME, input: ['x'.repeat(40_000)] });
  expect({ status: tooLong.status, param: tooLong.param }).toEqual({ status: 400, param: 'input' });
  // Each input within its limit, 300,000 tokens in all over them: refused as a whole.
  const tooMuch = await refusal({ model: SANDBOX_EMBEDDING_MODEL_NAME, input: Array(50).fill('x'.repeat(30_000)) });
  expect(tooMuch.message).toContain('max 300000 tokens per request');
  const noModel = await refusal({ input: 'x' });
  expect(noModel.status).toBe(400);
  const format = await refusal({ model: SANDBOX_EMBEDDING_MODEL_NAME, input: 'x', encoding_format: 'int8' });
  expect({ status: format.status, param: format.param }).toEqual({ status: 400, param: 'encoding_format' });
  const chat = await openai.chat.completions
    .create({ model: SANDBOX_EMBEDDING_MODEL_NAME, messages: [{ role: 'user', content: 'Task: plan.' }] })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(chat).toBeInstanceOf(NotFoundError);
});

test('a refused request fails for good; an unavailable endpoint is retried', async () => {
  const rejected = await failureOf(runActivity(activities('text-embedding-3-small').embedTexts, { texts: ['x'] }));
  expect(rejected.name).toBe('LlmRejectedError');
  expect(embeddingsPolicy.retry?.nonRetryableErrorTypes).toContain('LlmRejectedError');
  model.faults.set({ embeddings: [{ status: 503 }] });
  const unavailable = await failureOf(runActivity(activities().embedTexts, { texts: ['x'] }));
  expect(unavailable.name).toBe('LlmUnavailableError');
  expect(embeddingsPolicy.retry?.nonRetryableErrorTypes).not.toContain('LlmUnavailableError');
});
