// The sandbox's embeddings: OpenAI's /v1/embeddings request rules, and deterministic vectors in place of a model's.
import { createHash } from 'node:crypto';
import { z } from 'zod';

export const SANDBOX_EMBEDDING_MODEL_NAME = 'melvin-sandbox-embedding';
export const EMBEDDING_DIMENSIONS = 256;
/** OpenAI's limits: at most 2048 inputs in one request, each at most 8192 tokens, 300,000 tokens in all. */
const MAX_INPUTS = 2048;
const MAX_INPUT_TOKENS = 8192;
const MAX_REQUEST_TOKENS = 300_000;

/**
 * Words that mean the same thing to a person, as a real embedding model knows them: "the coffee shop job" is near
 * "Barista", "payout" near "paid". A stand-in's small world knowledge, not Melvin's: Melvin's code never reads it.
 */
const CONCEPTS: string[][] = [
  ['barista', 'coffee', 'cafe', 'espresso', 'latte'],
  ['cook', 'chef', 'kitchen', 'prep', 'grill'],
  ['warehouse', 'picker', 'packer', 'forklift', 'fulfillment', 'stocking'],
  ['event', 'events', 'staff', 'catering', 'banquet', 'wedding', 'concert'],
  ['driver', 'delivery', 'courier', 'driving'],
  ['server', 'waiter', 'waitress', 'restaurant', 'dining'],
  ['bartender', 'bar', 'bartending', 'cocktail', 'mixologist'],
  ['cleaner', 'cleaning', 'housekeeping', 'janitor', 'custodian'],
  ['host', 'hostess', 'greeter', 'front'],
  ['cashier', 'checkout', 'till', 'register', 'retail'],
  // Not a kind of work: what a question about money is about, whatever the job ("my catering payout" is near "paid").
  ['pay', 'paid', 'payment', 'payments', 'payout', 'payouts', 'paycheck', 'money', 'wage', 'wages', 'earnings'],
];

/** Words that carry little meaning, which a real model weighs lightly. */
const LIGHT = new Set('a an the in at on of for to my me i is it job jobs gig shift one and or with'.split(' '));

const EmbeddingsRequest = z.strictObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.string()).min(1).max(MAX_INPUTS)]),
  encoding_format: z.enum(['float', 'base64']).optional(),
  dimensions: z.number().int().min(1).optional(),
  user: z.string().optional(),
});

export type EmbeddingsOutcome = { status: 200; body: unknown } | { status: 400; message: string; param: string | null };

const tokens = (text: string) => Math.ceil(text.length / 4);

/** Hashes a feature into a dimension and a sign, so unrelated features rarely add up. */
function bucket(feature: string): [number, number] {
  const digest = createHash('sha256').update(feature).digest();
  return [digest.readUInt16BE(0) % EMBEDDING_DIMENSIONS, digest[2]! & 1 ? 1 : -1];
}

/** A unit vector of the text's words, their letter trigrams (so typos stay close) and the kinds of work they name. */
export function sandboxEmbedding(text: string): number[] {
  const vector = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  const add = (feature: string, weight: number) => {
    const [index, sign] = bucket(feature);
    vector[index]! += sign * weight;
  };
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const weight = LIGHT.has(word) ? 0.2 : 1;
    add(`w:${word}`, weight);
    const padded = `#${word}#`;
    for (let i = 0; i + 3 <= padded.length; i++) add(`t:${padded.slice(i, i + 3)}`, 0.5 * weight);
    CONCEPTS.forEach((concept, i) => concept.includes(word) && add(`c:${i}`, 2));
  }
  return unit(vector);
}

function unit(vector: number[]): number[] {
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));
  return norm ? vector.map((v) => v / norm) : vector;
}

function base64Of(vector: number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString('base64');
}

/** Answers one /v1/embeddings request body as OpenAI would: the list of embeddings, or the 400 it refuses it with. */
export function answerEmbeddings(body: unknown): EmbeddingsOutcome {
  const parsed = EmbeddingsRequest.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.length ? issue.path.join('.') : null;
    return { status: 400, message: `'$.${param ?? ''}' is invalid. ${issue.message}`, param };
  }
  const { model, input, encoding_format = 'float', dimensions } = parsed.data;
  const inputs = typeof input === 'string' ? [input] : input;
  const empty = inputs.findIndex((text) => text === '');
  if (empty !== -1)
    return { status: 400, message: "'$.input' is invalid. Please check the API reference.", param: 'input' };
  const long = inputs.findIndex((text) => tokens(text) > MAX_INPUT_TOKENS);
  if (long !== -1) {
    const message = `This model's maximum context length is ${MAX_INPUT_TOKENS} tokens, however you requested ${tokens(inputs[long]!)} tokens in input ${long}.`;
    return { status: 400, message, param: 'input' };
  }
  if (dimensions !== undefined && dimensions > EMBEDDING_DIMENSIONS) {
    return {
      status: 400,
      message: `This model supports at most ${EMBEDDING_DIMENSIONS} dimensions.`,
      param: 'dimensions',
    };
  }
  const prompt_tokens = inputs.reduce((sum, text) => sum + tokens(text), 0);
  if (prompt_tokens > MAX_REQUEST_TOKENS) {
    const message = `Requested ${prompt_tokens} tokens, max ${MAX_REQUEST_TOKENS} tokens per request`;
    return { status: 400, message, param: 'input' };
  }
  return {
    status: 200,
    body: {
      object: 'list',
      data: inputs.map((text, index) => {
        // A shortened embedding is normalized again, as OpenAI's are.
        const vector = dimensions ? unit(sandboxEmbedding(text).slice(0, dimensions)) : sandboxEmbedding(text);
        return { object: 'embedding', index, embedding: encoding_format === 'base64' ? base64Of(vector) : vector };
      }),
      model,
      usage: { prompt_tokens, total_tokens: prompt_tokens },
    },
  };
}
