// The memory phase: the worker's resident memory per conversation whose run stays open between turns, held in the
// worker's sticky cache, read from /proc before and after N conversations each had a first turn.
import { workflowIdFor } from '../src/contract/shared';
import { errorMessage } from '../src/observability/error-message';
import { check, type Report } from '../harness/report';
import { pause, waitFor } from '../sandbox/wait';
import { residentBytes } from '../harness/proc';
import type { Bench } from './bench';
import { percentile } from '../harness/harness';
import { inPool, nextTurn, openTurn } from './turns';

export interface MemoryOptions {
  /** Conversations left open between turns. */
  conversations: number;
  /** First turns in flight at once, so N of them take a couple of minutes rather than N sequential turns. */
  concurrency: number;
  log: (line: string) => void;
}

/** Time for the worker to handle the signal and collect. */
const GC_SETTLE_MS = 2_000;
/** Conversations whose next turn is timed, among the cached runs and among the evicted ones. */
const SAMPLE = 10;
/** Long enough that no run's quiet period ends during the phase; the runs are terminated afterwards. */
const QUIET_PERIOD_SECONDS = 3600;
const MIB = 1024 * 1024;

/**
 * A metric's value in a Prometheus text exposition, summed over its label sets; undefined when it is absent. `name` may
 * carry its labels as the exposition writes them (`name{a="b"}`) to read that one series.
 */
export function gauge(exposition: string, name: string): number | undefined {
  const values = exposition
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .map((line) => Number(line.slice(line.lastIndexOf(' ') + 1)));
  return values.length ? values.reduce((a, b) => a + b, 0) : undefined;
}

/**
 * The worker's resident memory after a full garbage collection (asked of the worker by SIGWINCH, bench/gc-on-signal.cjs):
 * without it the figure is mostly garbage of the turns just run, which V8 collects only when its heap limit nears.
 */
async function collectedResidentBytes(pid: number): Promise<number> {
  process.kill(pid, 'SIGWINCH');
  await pause(GC_SETTLE_MS);
  return residentBytes(pid);
}

/** Runs `task` on each item, one after another, so no timing includes another's load. */
async function sequentially<T>(items: T[], task: (item: T) => Promise<number>): Promise<number[]> {
  const results: number[] = [];
  for (const item of items) results.push(await task(item));
  return results;
}

/**
 * Opens N conversations, each with one payment turn whose run then waits for the next message (a quiet period), reads
 * the worker's RSS before and after, and terminates the runs. Run it after the phases that time turns: the worker keeps
 * the terminated runs in its cache until it evicts them.
 */
export async function memory(b: Bench, options: MemoryOptions): Promise<Report> {
  const harness = b.harness;
  const pid = harness.workerPid;
  if (pid === undefined) throw new Error('the memory phase needs the worker running');
  b.configure({ hops: 1 }, {});
  const cacheSize = async () =>
    gauge(await (await fetch(harness.workerMetricsUrl)).text(), 'temporal_sticky_cache_size') ?? 0;
  const n = options.conversations;
  const before = await collectedResidentBytes(pid);
  const conversations = Array.from({ length: n }, () => harness.addConversation('payment'));
  const quietPeriod = harness.turn.quietPeriodSeconds;
  harness.turn.quietPeriodSeconds = QUIET_PERIOD_SECONDS;
  const started = performance.now();
  let ended = 0;
  const failures = await inPool(conversations, options.concurrency, async (c) => {
    await openTurn(harness, c);
    if (++ended % 100 === 0) options.log(`memory: ${ended} / ${n} conversations open`);
  }).finally(() => (harness.turn.quietPeriodSeconds = quietPeriod));
  const seconds = (performance.now() - started) / 1000;
  const settings = harness.workerSettings;
  const maxCached = Number(settings?.max_cached_workflows);
  const fits = Number.isFinite(maxCached) ? Math.min(n, maxCached) : n;
  // The last runs record their turn and start waiting a workflow task after Finalize: wait until the cache holds them.
  const cached = await waitFor('the worker to cache the open runs', async () => {
    const size = await cacheSize();
    return size >= fits - failures.length && size;
  }).catch(cacheSize);
  const after = await collectedResidentBytes(pid);
  // What a next message costs: the last conversations opened are in the cache; the first ones were evicted when it is
  // smaller than N, and their run replays its history before it answers. Cached ones first, so replays evict none.
  const sample = Math.min(SAMPLE, Math.floor(n / 2));
  const cachedTurns = await sequentially(conversations.slice(-sample), (c) => nextTurn(harness, c));
  const evictedTurns = fits < n ? await sequentially(conversations.slice(0, sample), (c) => nextTurn(harness, c)) : [];
  const terminated = await inPool(conversations, 32, (c) =>
    harness.client.workflow.getHandle(workflowIdFor(c.id)).terminate('the bench’s memory phase is over'),
  );
  const grown = after - before;
  // The plan sizes a worker by its cache: what it grew by, over the runs the cache held (the evicted ones hold nothing).
  Object.assign(b.measured, { workerBaseBytes: before, memoryBytesPerCachedRun: grown / Math.max(cached, 1) });
  const p50 = (turns: number[]) => `${Math.round(percentile(turns, 50))} ms`;
  return {
    experiment: 'memory per open conversation',
    figures: [
      [
        'open conversations (one turn each, then waiting)',
        `${n}, first turns ${options.concurrency} at a time in ${seconds.toFixed(0)} s`,
      ],
      ['worker RSS before / with them open', `${(before / MIB).toFixed(0)} MiB / ${(after / MIB).toFixed(0)} MiB`],
      ['(RSS with them − before) ÷ N', `${(grown / n / 1024).toFixed(0)} KiB`],
      [
        'sticky cache: runs in it with them open / its size',
        `${cached} / ${Number.isFinite(maxCached) ? maxCached : 'not logged'} workflows${
          fits < n ? `: the other ${n - cached} runs were evicted and replay on their next message` : ''
        }`,
      ],
      [
        'next turn p50: of a cached run / of an evicted run (replayed first)',
        `${p50(cachedTurns)} / ${evictedTurns.length ? p50(evictedTurns) : 'none evicted'} (${sample} turns each)`,
      ],
    ],
    checks: [
      check(
        `all ${n} conversations had their turn`,
        failures.length === 0,
        failures.length ? `${failures.length} failed: ${errorMessage(failures[0])}` : undefined,
      ),
      check(
        `the worker's cache held ${fits} open runs (all, or as many as it may)`,
        cached >= fits,
        `${cached} cached`,
      ),
      check(
        'every next message was answered',
        cachedTurns.length + evictedTurns.length === sample * (fits < n ? 2 : 1),
      ),
      check('every open run was terminated afterwards', terminated.length === 0, `${terminated.length} not`),
    ],
  };
}
