// Fault plans for the sandbox services: per-operation queues consumed one call at a time, or applied to every call.
import type { Response } from 'express';
import type { HttpFault } from './scenario';

export class FaultQueues<F extends { always?: boolean }> {
  private readonly queues = new Map<string, F[]>();

  set(plan: Partial<Record<string, F[]>> | undefined): void {
    this.queues.clear();
    for (const [key, faults] of Object.entries(plan ?? {})) if (faults?.length) this.queues.set(key, [...faults]);
  }

  peek(key: string): F | undefined {
    return this.queues.get(key)?.[0];
  }

  /** The next fault for `key`: an `always` fault stays, any other applies to one call only. */
  take(key: string): F | undefined {
    const queue = this.queues.get(key);
    const next = queue?.[0];
    if (next && !next.always) queue!.shift();
    return next;
  }
}

/** Unref'd: a fault holding a request open must not keep a finished test process alive. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** Answers with a fault's status, with the rate-limit headers a 429 carries; `errorBody` is the service's error JSON. */
export function sendHttpFault(res: Response, fault: HttpFault, errorBody: (status: number) => unknown): void {
  const status = fault.status ?? 500;
  if (fault.retry_after_s !== undefined) {
    res.setHeader('Retry-After', String(fault.retry_after_s));
    res.setHeader('X-RateLimit-Reset', String(Math.ceil(Date.now() / 1000 + fault.retry_after_s)));
  }
  res.status(status).json(errorBody(status));
}
