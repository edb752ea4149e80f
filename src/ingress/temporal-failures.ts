// What a Temporal failure means to whoever called the ingress: worth retrying later (503), or wrong until an operator
// acts (500 with the reason). Intercom delivers a webhook again after a failure, and the workflow ignores a repeat.
import { google, temporal } from '@temporalio/proto';
import {
  NamespaceNotFoundError,
  ValueError,
  WorkflowExecutionAlreadyStartedError,
  isGrpcServiceError,
} from '@temporalio/client';
import { errorMessage } from '../observability/error-message';

export interface TemporalFailure {
  retryable: boolean;
  /**
   * A refusal of the ingress itself, not of this delivery (the namespace, the credentials, the server's version): every
   * delivery would be refused the same way until an operator fixes the configuration, so the outbox keeps them.
   */
  configuration: boolean;
  /** What went wrong, for the log and the answer: the gRPC status's name and Temporal's own words. */
  reason: string;
}

/**
 * Every gRPC status code (fixed by the gRPC protocol) and whether the same request can succeed later without anyone
 * acting. The SDK has already retried the transient ones within the ingress's deadline, so what reaches here is what
 * outlasted those retries. Unsure cases count as retryable: a redelivery costs one more failed call, a permanent answer
 * to a transient failure can lose the message.
 */
const GRPC_STATUS: Record<number, { name: string; retryable: boolean; configuration?: boolean }> = {
  /** The call was cancelled on our side (the connection closing, the ingress stopping): nothing was decided. */
  1: { name: 'CANCELLED', retryable: true },
  /** No status from the server, often a proxy or load balancer in between: nothing says it would fail again. */
  2: { name: 'UNKNOWN', retryable: true },
  /** The request itself is invalid (a payload or summary over a limit, a bad search attribute): it always will be. */
  3: { name: 'INVALID_ARGUMENT', retryable: false },
  /** Temporal did not answer within the ingress's deadline. */
  4: { name: 'DEADLINE_EXCEEDED', retryable: true },
  /** The namespace does not exist (a missing workflow is handled before this): a configuration error. */
  5: { name: 'NOT_FOUND', retryable: false, configuration: true },
  /** Signal-with-start never conflicts with its own workflow id; if Temporal says it did, a repeat would too. */
  6: { name: 'ALREADY_EXISTS', retryable: false },
  /** The credentials are valid but may not do this: authorization is configuration. */
  7: { name: 'PERMISSION_DENIED', retryable: false, configuration: true },
  /** A rate limit or a full queue: it clears. */
  8: { name: 'RESOURCE_EXHAUSTED', retryable: true },
  /**
   * The namespace is not in a state to take it (deprecated, or not active in this cluster): an operator must act. An
   * update the workflow's failed task could not take says so too, and passes (`workflowNotReady` below).
   */
  9: { name: 'FAILED_PRECONDITION', retryable: false, configuration: true },
  /** A concurrent change won a race on the server: the next try sees its result. */
  10: { name: 'ABORTED', retryable: true },
  /** Transient by the SDK's own retry rules. */
  11: { name: 'OUT_OF_RANGE', retryable: true },
  /** The server does not offer this call (older than the SDK needs): it will not until upgraded. */
  12: { name: 'UNIMPLEMENTED', retryable: false, configuration: true },
  /** A server-side fault such as a database error, or a broken HTTP/2 stream: often passing. */
  13: { name: 'INTERNAL', retryable: true },
  /** The server is down, restarting or unreachable: the failure this ingress expects most. */
  14: { name: 'UNAVAILABLE', retryable: true },
  /** Unrecoverable data loss on the server: nothing the caller can fix, and the next request may well succeed. */
  15: { name: 'DATA_LOSS', retryable: true },
  /** No valid credentials (an API key or client certificate refused): configuration. */
  16: { name: 'UNAUTHENTICATED', retryable: false, configuration: true },
};

const FAILED_PRECONDITION = 9;

/**
 * An update Temporal refused because the workflow's task failed (FAILED_PRECONDITION with a WorkflowNotReady detail):
 * the task that carried it failed (its worker crashed, or sdk-core failed it), or the workflow's task is failing and
 * being tried again. Nothing of the update was recorded, and the workflow takes it once a task completes, so it is
 * worth asking again: not the namespace's state, which the same status otherwise means. For an update-with-start the
 * detail is inside each operation's status (the client rewrites the error's code and text from it, not its details).
 */
function workflowNotReady(err: unknown): boolean {
  const typeOf = (url: string | null | undefined) => (url ?? '').replace(/^type\.googleapis\.com\//, '');
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const metadata = isGrpcServiceError(e) ? e.metadata : undefined;
    const encoded = typeof metadata?.get === 'function' ? metadata.get('grpc-status-details-bin')[0] : undefined;
    if (!(encoded instanceof Uint8Array)) continue;
    const types = google.rpc.Status.decode(encoded).details.flatMap((detail) =>
      typeOf(detail.type_url) === 'temporal.api.errordetails.v1.MultiOperationExecutionFailure' && detail.value
        ? temporal.api.errordetails.v1.MultiOperationExecutionFailure.decode(detail.value).statuses.flatMap((s) =>
            (s.details ?? []).map((d) => typeOf(d.type_url)),
          )
        : [typeOf(detail.type_url)],
    );
    if (types.includes('temporal.api.errordetails.v1.WorkflowNotReadyFailure')) return true;
  }
  return false;
}

/** The gRPC status of `err` or of the error it wraps, as the client throws a `ServiceError` around it. */
function grpcStatusOf(err: unknown): { code: number; details: string } | undefined {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (isGrpcServiceError(e)) return { code: e.code, details: e.details };
  }
  return undefined;
}

export function classifyTemporalFailure(err: unknown): TemporalFailure {
  const message = errorMessage(err);
  if (err instanceof NamespaceNotFoundError) {
    return { retryable: false, configuration: true, reason: `NOT_FOUND: ${message}` };
  }
  if (err instanceof WorkflowExecutionAlreadyStartedError) {
    return { retryable: false, configuration: false, reason: `ALREADY_EXISTS: ${message}` };
  }
  // The payload converter (or codec) refused the input: the same input is refused every time.
  if (err instanceof ValueError) return { retryable: false, configuration: false, reason: `payload: ${message}` };
  const grpc = grpcStatusOf(err);
  if (!grpc) return { retryable: true, configuration: false, reason: message };
  if (grpc.code === FAILED_PRECONDITION && workflowNotReady(err)) {
    return {
      retryable: true,
      configuration: false,
      reason: `FAILED_PRECONDITION (workflow not ready): ${grpc.details}`,
    };
  }
  const known = GRPC_STATUS[grpc.code];
  return {
    retryable: known?.retryable ?? true,
    configuration: known?.configuration ?? false,
    reason: `${known?.name ?? `gRPC status ${grpc.code}`}: ${grpc.details}`,
  };
}
