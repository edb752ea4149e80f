// Keeps a long activity heartbeating so Temporal can deliver cancellation (a forced escalation) and notice a dead worker.
import { Context } from '@temporalio/activity';

const HEARTBEAT_EVERY_MS = 1000;

/** Runs `work` with the activity's cancellation signal, heartbeating while it is in flight. */
export async function withHeartbeats<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const context = Context.current();
  const timer = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work(context.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
