// Keeps a long activity heartbeating so Temporal can deliver cancellation (a forced escalation) and notice a dead worker.
import { Context } from '@temporalio/activity';

const HEARTBEAT_EVERY_MS = 1000;

/**
 * Runs `work` with the activity's cancellation signal, heartbeating while it is in flight. A local activity does not
 * heartbeat (Core refuses it): its workflow task is what Temporal watches, and its cancellation comes all the same.
 */
export async function withHeartbeats<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const context = Context.current();
  if (context.info.isLocal) return await work(context.cancellationSignal);
  const timer = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work(context.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
