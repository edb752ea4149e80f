// Fault plans for the sandbox services: per-operation queues consumed one call at a time, or applied to every call.
import type { Response } from 'express';
import type { HttpFault } from './scenario';

export class FaultQueues<F extends { always?: boolean }> {
  private readonly queues = new Map<string, F[]>();
  private random: { rate: number; faults: Partial<Record<string, F[]>>; next: () => number } | undefined;
  /** How many calls the random plan has failed since it was set. */
  randomDrawn = 0;

  /**
   * Replaces the planned faults. The random plan goes too, unless `keepRandom`: an evaluation sets one random plan for
   * its whole run, and each scenario it seeds brings only its own planned faults.
   */
  set(plan: Partial<Record<string, F[]>> | undefined, options: { keepRandom?: boolean } = {}): void {
    this.queues.clear();
    if (!options.keepRandom) this.random = undefined;
    for (const [key, faults] of Object.entries(plan ?? {})) if (faults?.length) this.queues.set(key, [...faults]);
  }

  /**
   * Beyond the planned faults, fails a share `rate` of the calls to each key listed in `faults` with one of its faults,
   * picked by a seeded generator so a run can be repeated.
   */
  setRandom(rate: number, faults: Partial<Record<string, F[]>>, seed = 1): void {
    this.random = { rate, faults, next: seededRandom(seed) };
    this.randomDrawn = 0;
  }

  clearRandom(): void {
    this.random = undefined;
  }

  /** Adds faults to the plan of one key (e.g. one conversation's `reply:1004`), leaving the other keys' plans as they are. */
  add(key: string, faults: F[]): void {
    this.queues.set(key, [...(this.queues.get(key) ?? []), ...faults]);
  }

  /** The next planned fault for `key`, never a random one. */
  takePlanned(key: string): F | undefined {
    const queue = this.queues.get(key);
    const next = queue?.[0];
    if (next && !next.always) queue!.shift();
    return next;
  }

  peek(key: string): F | undefined {
    return this.queues.get(key)?.[0];
  }

  /** The next fault for `key`: an `always` fault stays, any other applies to one call only. */
  take(key: string): F | undefined {
    const next = this.takePlanned(key);
    if (next || !this.random) return next;
    const candidates = this.random.faults[key];
    if (!candidates?.length || this.random.next() >= this.random.rate) return undefined;
    this.randomDrawn += 1;
    return candidates[Math.floor(this.random.next() * candidates.length)];
  }
}

/** Mulberry32: a small, fast, seeded generator of numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Simulated service latency: each call waits a random time in [min, max] ms; the waits are kept for the figures. */
export class Latency {
  range: [number, number] | undefined;
  private next = seededRandom(7);

  /** Waits drawn in [min, max] ms from `seed` from now on; no range, no wait. */
  set(range: [number, number] | undefined, seed = 7): void {
    this.range = range;
    this.next = seededRandom(seed);
  }

  async wait(): Promise<number> {
    if (!this.range) return 0;
    const [min, max] = this.range;
    const ms = Math.round(min + this.next() * (max - min));
    await sleep(ms);
    return ms;
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
