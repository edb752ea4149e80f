// The model endpoint a locally started stack runs its worker on: the variables the worker reads, taken from the
// environment of `npm start` or `npm run eval`; without `OPENAI_BASE_URL`, the sandbox model.
import { z } from 'zod';

const unsetWhenBlank = (value: unknown) => (value === '' ? undefined : value);

/** The worker's model-tier settings; the worker checks their values itself and names a bad one. */
const TIER_VARIABLES = [
  ...['PLAN', 'DRAFT'].flatMap((tier) =>
    ['MODEL_NAME', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'LLM_RESPONSE_FORMAT'].map((name) => `${tier}_${name}`),
  ),
  'EMBEDDING_MODEL_NAME',
  'EMBEDDING_OPENAI_BASE_URL',
  'EMBEDDING_OPENAI_API_KEY',
];

/** The model variables as given: `OPENAI_BASE_URL` names an endpoint, which then needs its key. */
export const ModelEnvironment = z.object({
  OPENAI_BASE_URL: z.preprocess(unsetWhenBlank, z.url().optional()),
  OPENAI_API_KEY: z.preprocess(unsetWhenBlank, z.string().optional()),
  MODEL_NAME: z.preprocess(unsetWhenBlank, z.string().default('gpt-4o-mini')),
  LLM_RESPONSE_FORMAT: z.preprocess(unsetWhenBlank, z.enum(['auto', 'json_schema', 'json_object', 'none']).optional()),
  ...Object.fromEntries(TIER_VARIABLES.map((name) => [name, z.preprocess(unsetWhenBlank, z.string().optional())])),
});
export type ModelEnvironment = z.infer<typeof ModelEnvironment>;

/** That an endpoint named has its key: the message a usage error gives for it. */
export const keyWithEndpoint = {
  check: (env: ModelEnvironment) => !env.OPENAI_BASE_URL || env.OPENAI_API_KEY !== undefined,
  path: ['OPENAI_API_KEY'],
  message: 'is required when OPENAI_BASE_URL names a model endpoint',
};

/**
 * The worker's model variables for the endpoint `OPENAI_BASE_URL` names: the shared ones, and each tier setting given
 * (and the embeddings'). A tier without a model of its own runs on `MODEL_NAME`, never on the sandbox stack's tier
 * models.
 */
export function workerModelEnvironment(env: ModelEnvironment): Record<string, string> {
  const given = Object.entries(env).filter(
    (entry): entry is [string, string] => TIER_VARIABLES.includes(entry[0]) && typeof entry[1] === 'string',
  );
  return {
    OPENAI_BASE_URL: env.OPENAI_BASE_URL!,
    OPENAI_API_KEY: env.OPENAI_API_KEY!,
    MODEL_NAME: env.MODEL_NAME,
    ...(env.LLM_RESPONSE_FORMAT && { LLM_RESPONSE_FORMAT: env.LLM_RESPONSE_FORMAT }),
    PLAN_MODEL_NAME: env.MODEL_NAME,
    DRAFT_MODEL_NAME: env.MODEL_NAME,
    // The worker's own default, never the sandbox stack's embeddings model.
    EMBEDDING_MODEL_NAME: 'text-embedding-3-small',
    ...Object.fromEntries(given),
  };
}
