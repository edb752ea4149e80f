// The embeddings activity over the official `openai` SDK: vectors for texts, from the configured embeddings endpoint.
import type OpenAI from 'openai';
import { z } from 'zod';
import { LlmInvalidOutputError, withRetryContract } from './errors';
import { withHeartbeats } from './heartbeat';
import { llmFailure } from './llm';

/** Below the activity's start-to-close, so a slow endpoint fails as a retryable timeout rather than being killed. */
const REQUEST_TIMEOUT_MS = 25_000;

export interface EmbeddingEndpoint {
  openai: OpenAI;
  model: string;
}

/** What the endpoint must answer: one vector of numbers per input, each saying which input it is for. */
const EmbeddingsAnswer = z.object({
  model: z.string(),
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number()).min(1) })),
  usage: z.object({ prompt_tokens: z.number().int().min(0) }).optional(),
});

export interface Embeddings {
  /** One vector per text, in the texts' order. */
  vectors: number[][];
  model: string;
  prompt_tokens: number;
  duration_ms: number;
}

export function createEmbeddingActivities(endpoint: EmbeddingEndpoint) {
  return withRetryContract({
    async embedTexts({ texts }: { texts: string[] }): Promise<Embeddings> {
      const started = Date.now();
      return withHeartbeats(async (signal) => {
        let raw: unknown;
        try {
          raw = await endpoint.openai.embeddings.create(
            { model: endpoint.model, input: texts },
            { signal, timeout: REQUEST_TIMEOUT_MS, maxRetries: 0 },
          );
        } catch (err) {
          throw llmFailure(err, 'embeddings');
        }
        const parsed = EmbeddingsAnswer.safeParse(raw);
        if (!parsed.success) {
          throw new LlmInvalidOutputError(
            `embeddings: the answer is not a list of vectors: ${z.prettifyError(parsed.error)}`,
          );
        }
        const vectors: number[][] = [];
        for (const { index, embedding } of parsed.data.data) vectors[index] = embedding;
        const missing = texts.findIndex((_, i) => !vectors[i]);
        if (missing !== -1 || vectors.length !== texts.length) {
          throw new LlmInvalidOutputError(`embeddings: ${texts.length} texts sent, no vector for text ${missing}`);
        }
        return {
          vectors,
          model: parsed.data.model,
          prompt_tokens: parsed.data.usage?.prompt_tokens ?? 0,
          duration_ms: Date.now() - started,
        };
      });
    },
  });
}

export type EmbeddingActivities = ReturnType<typeof createEmbeddingActivities>;
