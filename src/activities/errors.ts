// Named activity errors: each class name is the retry contract the workflow's policies list as non-retryable or not.
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';

export class MelvinActivityError extends Error {
  /** When the remote system said how long to wait (429 Retry-After), Temporal waits exactly that before retrying. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options: { cause?: unknown; retryAfterMs?: number } = {}) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.retryAfterMs = options.retryAfterMs;
  }
}

// Intercom
export class IntercomAuthError extends MelvinActivityError {}
export class IntercomNotFoundError extends MelvinActivityError {}
/** Any other 4xx but 408/429: the request itself is wrong, so a retry would fail the same way. */
export class IntercomRejectedError extends MelvinActivityError {}
export class IntercomRateLimitedError extends MelvinActivityError {}
export class IntercomUnavailableError extends MelvinActivityError {}
/** Intercom answered with a body that is not the shape its API documents. */
export class IntercomResponseInvalidError extends MelvinActivityError {}

// MCP
export class McpTransportError extends MelvinActivityError {}
export class McpInvalidArgumentsError extends MelvinActivityError {}
export class McpUnknownToolError extends MelvinActivityError {}
/** The MCP tool policy withholds the tool: refused before it reaches its server, and never retried. */
export class McpToolRefusedError extends MelvinActivityError {}

// LLM
export class LlmRejectedError extends MelvinActivityError {}
export class LlmUnavailableError extends MelvinActivityError {}
export class LlmInvalidOutputError extends MelvinActivityError {}

// Validation endpoint
export class ValidationRejectedError extends MelvinActivityError {}
export class ValidationUnavailableError extends MelvinActivityError {}

// Prompts
export class PromptUnavailableError extends MelvinActivityError {}

/**
 * Wraps every function of an activity module so an error that carries a server-given delay reaches Temporal as an
 * ApplicationFailure with `nextRetryDelay`, a cancelled activity reports its cancellation, and every other error keeps
 * its class name as the failure type.
 */
export function withRetryContract<T extends Record<string, (...args: never[]) => Promise<unknown>>>(activities: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      try {
        return await fn(...args);
      } catch (err) {
        // Cancelled (a forced escalation, a cancelled run): whatever the aborted call threw, report the cancellation,
        // so Temporal records the activity as cancelled rather than failed and the workflow sees a cancellation.
        const cancellation = cancellationOf();
        if (cancellation) throw cancellation;
        if (err instanceof MelvinActivityError && err.retryAfterMs !== undefined) {
          throw ApplicationFailure.create({
            type: err.name,
            message: err.message,
            nextRetryDelay: err.retryAfterMs,
            cause: err,
          });
        }
        throw err;
      }
    };
  }
  return wrapped as T;
}

/** The activity's cancellation, when Temporal has cancelled it; outside an activity there is none. */
function cancellationOf(): unknown {
  try {
    const signal = Context.current().cancellationSignal;
    return signal.aborted ? (signal.reason ?? new CancelledFailure('cancelled')) : undefined;
  } catch {
    return undefined;
  }
}
