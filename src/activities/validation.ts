// The validation activity: POSTs the draft and the data it rests on to the validation endpoint and returns the raw answer.
import { Context } from '@temporalio/activity';
import type { NamedRecordContext } from '../contract/llm-contexts';
import type { Message, StoredDocsData, StoredToolData } from '../contract/state';
import { ValidationRejectedError, ValidationUnavailableError, withRetryContract } from './errors';
import { retryAfterMs } from './retry-after';

const REQUEST_TIMEOUT_MS = 15_000;

export interface ValidationRequest {
  conversation_id: string;
  response: string;
  user_email: string | null;
  user_name: string | null;
  messages: Message[];
  internal_notes: string[];
  tool_data: Record<string, StoredToolData>;
  docs_data: Record<string, StoredDocsData>;
  /**
   * The user's questions (their words) the reply answers, and those it leaves for the team: a partial answer is checked
   * against the questions it answers.
   */
  intents: { answered: string[]; open: string[] };
  /** The records the user's words were resolved to ("the coffee shop job" is their Barista job), when they named any. */
  named_records?: NamedRecordContext[];
}

export interface ValidationAnswer {
  status: number;
  /** The body exactly as received: the workflow notes it on the conversation even when it is not valid JSON. */
  raw: string;
}

export function createValidationActivities(options: { endpoint: string; apiKey: string; fetch?: typeof fetch }) {
  const doFetch = options.fetch ?? fetch;
  return withRetryContract({
    async validateDraft(request: ValidationRequest): Promise<ValidationAnswer> {
      const signal = AbortSignal.any([Context.current().cancellationSignal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]);
      let response: Response;
      try {
        response = await doFetch(options.endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${options.apiKey}` },
          body: JSON.stringify(request),
          signal,
        });
      } catch (err) {
        throw new ValidationUnavailableError(`validation endpoint unreachable: ${String(err)}`, { cause: err });
      }
      const raw = await response.text();
      if (response.ok) return { status: response.status, raw };
      const message = `validation endpoint answered ${response.status}: ${raw.slice(0, 300)}`;
      if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
        throw new ValidationRejectedError(message);
      }
      throw new ValidationUnavailableError(message, { retryAfterMs: retryAfterMs(response.headers) });
    },
  });
}

export type ValidationActivities = ReturnType<typeof createValidationActivities>;
