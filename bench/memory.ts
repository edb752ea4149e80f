// The memory phase: the worker's resident memory per conversation whose run stays open between turns, held in the
// worker's sticky cache, read from /proc before and after N conversations each had a first turn.
import { workflowIdFor } from '../src/contract/shared';
import { errorMessage } from '../src/observability/error-message';
import { check, type Report } from '../harness/report';
import { waitFor } from '../sandbox/wait';
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

/** How long the worker's threads may take to collect (each up to eight rounds) and print their heaps. */
const GC_TIMEOUT_MS = 30_000;
/** Once the main thread and a workflow thread have answered, how long with no further line ends the wait. */
const GC_QUIET_MS = 1_000;
/** How long the runs of earlier phases may take to end and leave the cache before the first reading. */
const EARLIER_RUNS_TIMEOUT_MS = 60_000;
/** Conversations whose next turn is timed, among the cached runs and among the evicted ones. */
const SAMPLE = 10;
/** Long enough that no run's quiet period ends during the phase; the runs are terminated afterwards. */
const QUIET_PERIOD_SECONDS = 3600;
const MIB = 1024 * 1024;
const mib = (bytes: number) => `${(bytes / MIB).toFixed(0)} MiB`;

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

/** What each thread of the bench's worker prints after a full collection (bench/gc-on-signal.cjs). */
interface HeapReading {
  pid: number;
  /** 0 for the main thread (the SDK's Core bridge, activities); the SDK's workflow thread holds the runs. */
  threadId: number;
  /** V8's heap in use in that thread. */
  heapUsed: number;
  /** The pages of its young generation in memory: they hold nothing after a full collection. */
  youngBytes: number;
  /** The rest of its heap's pages in memory, and its ArrayBuffers' and Buffers' memory. */
  heldBytes: number;
  /** Whether a further collection freed less than a MiB: false when the thread stopped trying first. */
  settled: boolean;
}

/** The worker after a collection: its threads' readings summed, and whether all of them settled. */
export interface CollectedHeap {
  heapUsed: number;
  /** The part of `heapUsed` in the SDK's workflow threads, where the runs' objects live. */
  workflowHeapUsed: number;
  youngBytes: number;
  heldBytes: number;
  settled: boolean;
}

/** Collects the worker's `heap after collection` lines from its output, as the harness echoes it (`[worker] {json}`). */
export class HeapLog {
  private readonly readings: HeapReading[] = [];

  readonly collect = (line: string): void => {
    if (!line.includes('"message":"heap after collection"')) return;
    this.readings.push(JSON.parse(line.slice(line.indexOf('{'))) as HeapReading);
  };

  /**
   * Sends the worker SIGWINCH and waits until its main thread and a workflow thread have printed their heaps and no
   * other thread has for a second; the readings summed. Fails if none of the workflow threads answers in time: without
   * one the runs' objects are not counted.
   */
  async collectIn(pid: number): Promise<CollectedHeap> {
    const seen = this.readings.length;
    const answered = () => this.readings.slice(seen).filter((r) => r.pid === pid);
    process.kill(pid, 'SIGWINCH');
    // Each thread answers when it has settled, so their lines come at different times: once the main thread and a
    // workflow thread have answered, a second without another line ends the wait.
    let count = 0;
    let changed = performance.now();
    await waitFor(
      "the worker's main thread and a workflow thread to print their heap after collection",
      () => {
        const lines = answered();
        if (lines.length !== count) [count, changed] = [lines.length, performance.now()];
        const threads = new Set(lines.map((r) => r.threadId));
        return threads.has(0) && threads.size >= 2 && performance.now() - changed >= GC_QUIET_MS;
      },
      { timeoutMs: GC_TIMEOUT_MS, intervalMs: 100 },
    );
    const readings = answered();
    return {
      heapUsed: readings.reduce((sum, r) => sum + r.heapUsed, 0),
      workflowHeapUsed: readings.reduce((sum, r) => sum + (r.threadId === 0 ? 0 : r.heapUsed), 0),
      youngBytes: readings.reduce((sum, r) => sum + r.youngBytes, 0),
      heldBytes: readings.reduce((sum, r) => sum + r.heldBytes, 0),
      settled: readings.every((r) => r.settled),
    };
  }
}

/** The worker's memory after a collection: its resident set, and its heap as its threads printed it. */
interface CollectedMemory extends CollectedHeap {
  rss: number;
}

/**
 * The worker's resident memory and V8 heap (all threads) after a full garbage collection in each of its threads
 * (asked of the worker by SIGWINCH, bench/gc-on-signal.cjs): without it the figures are mostly garbage of the turns
 * just run, which V8 collects only when its heap limit nears.
 */
async function collectedMemory(heap: HeapLog, pid: number): Promise<CollectedMemory> {
  const collected = await heap.collectIn(pid);
  return { rss: residentBytes(pid), ...collected };
}

/** What the worker holds in memory outside its V8 heaps: Core's state, Node's own, what the allocator keeps. */
const outsideV8 = (m: CollectedMemory) => m.rss - m.youngBytes - m.heldBytes;

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
  // The phases before leave runs finishing (Finalize, then a quiet period of 0) or still in the cache: read with them,
  // the first reading counts objects the second no longer has (a smoke run on a loaded machine read −498 KiB a run).
  const earlierRuns = async () => {
    const [running, cached] = [
      (await harness.client.workflow.count('ExecutionStatus="Running"')).count,
      await cacheSize(),
    ];
    return running + cached === 0 ? 'none' : `${running} running, ${cached} in the cache`;
  };
  const leftBefore = await waitFor(
    'the runs of earlier phases to end and leave the worker’s cache',
    async () => {
      const left = await earlierRuns();
      return left === 'none' && left;
    },
    { timeoutMs: EARLIER_RUNS_TIMEOUT_MS, intervalMs: 250 },
  ).catch(earlierRuns);
  const before = await collectedMemory(b.heap, pid);
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
  const after = await collectedMemory(b.heap, pid);
  // What a next message costs: the last conversations opened are in the cache; the first ones were evicted when it is
  // smaller than N, and their run replays its history before it answers. Cached ones first, so replays evict none.
  const sample = Math.min(SAMPLE, Math.floor(n / 2));
  const cachedTurns = await sequentially(conversations.slice(-sample), (c) => nextTurn(harness, c));
  const evictedTurns = fits < n ? await sequentially(conversations.slice(0, sample), (c) => nextTurn(harness, c)) : [];
  const terminated = await inPool(conversations, 32, (c) =>
    harness.client.workflow.getHandle(workflowIdFor(c.id)).terminate('the bench’s memory phase is over'),
  );
  // The young generations' pages hold nothing after a full collection; V8 commits or gives them back by its own timing
  // (up to 32 MiB a thread), so the growth leaves them out of both readings.
  const grown = after.rss - after.youngBytes - (before.rss - before.youngBytes);
  // The runs' objects live in the workflow threads: the main thread's heap (the SDK's bridge, the activities' clients,
  // code V8 compiled for earlier phases and may drop at any collection) moves by megabytes of its own between readings.
  const heapPerCachedRun = (after.workflowHeapUsed - before.workflowHeapUsed) / Math.max(cached, 1);
  // The plan sizes a worker by its cache: what it grew by, over the runs the cache held (the evicted ones hold nothing).
  // Never less than the runs' V8 objects, which are resident: outside V8 the allocator may give back tens of MiB
  // between two readings, which can outweigh a few runs' growth.
  const perCachedRun = Math.max(grown / Math.max(cached, 1), heapPerCachedRun);
  Object.assign(b.measured, { workerBaseBytes: before.rss, memoryBytesPerCachedRun: perCachedRun });
  const p50 = (turns: number[]) => `${Math.round(percentile(turns, 50))} ms`;
  return {
    experiment: 'memory per open conversation',
    figures: [
      [
        'open conversations (one turn each, then waiting)',
        `${n}, first turns ${options.concurrency} at a time in ${seconds.toFixed(0)} s`,
      ],
      ['worker RSS before / with them open', `${mib(before.rss)} / ${mib(after.rss)}`],
      // The RSS in three parts, so that an operator sees which moved.
      [
        'of it, V8 young generations (empty after a collection)',
        `${mib(before.youngBytes)} / ${mib(after.youngBytes)}`,
      ],
      ['of it, the rest of the V8 heaps and their buffers', `${mib(before.heldBytes)} / ${mib(after.heldBytes)}`],
      ['of it, outside V8 (Core, Node, the allocator)', `${mib(outsideV8(before))} / ${mib(outsideV8(after))}`],
      ['(RSS less young generations, with them − before) ÷ N', `${(grown / n / 1024).toFixed(0)} KiB`],
      ['worker V8 heap used, all threads, before / with them open', `${mib(before.heapUsed)} / ${mib(after.heapUsed)}`],
      [
        'of it, the workflow threads, before / with them open',
        `${mib(before.workflowHeapUsed)} / ${mib(after.workflowHeapUsed)}`,
      ],
      [
        '(workflow threads’ V8 heap with them − before) ÷ runs in the cache',
        `${Math.round(heapPerCachedRun / 1024)} KiB`,
      ],
      ['runs of earlier phases left in the worker at the first reading', leftBefore],
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
        'no run of an earlier phase was left in the worker at the first reading',
        leftBefore === 'none',
        leftBefore,
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
      check(
        "every thread's heap settled after each collection (another collection freed less than a MiB)",
        before.settled && after.settled,
      ),
    ],
  };
}
