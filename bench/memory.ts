// The memory phase: the worker's resident memory per conversation whose run stays open between turns, held in the
// worker's sticky cache, read from /proc before and after N conversations each had a first turn.
import { workflowIdFor } from '../src/shared';
import { errorMessage } from '../src/error-message';
import { check, type Report } from '../reliability/report';
import { waitFor } from '../sandbox/wait';
import { residentBytes } from '../scripts/proc';
import type { Bench } from './bench';
import { inPool, openTurn } from './turns';

export interface MemoryOptions {
  /** Conversations left open between turns. */
  conversations: number;
  /** First turns in flight at once, so N of them take a couple of minutes rather than N sequential turns. */
  concurrency: number;
  log: (line: string) => void;
}

/** Long enough that no run's quiet period ends during the phase; the runs are terminated afterwards. */
const QUIET_PERIOD_SECONDS = 3600;
const MIB = 1024 * 1024;

/** A gauge's value in a Prometheus text exposition, summed over its label sets; undefined when it is absent. */
export function gauge(exposition: string, name: string): number | undefined {
  const values = exposition
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .map((line) => Number(line.slice(line.lastIndexOf(' ') + 1)));
  return values.length ? values.reduce((a, b) => a + b, 0) : undefined;
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
  const before = residentBytes(pid);
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
  // The last runs record their turn and start waiting a workflow task after Finalize: wait until the cache holds them.
  const cached = await waitFor('the worker to cache the open runs', async () => {
    const size = await cacheSize();
    return size >= n - failures.length && size;
  }).catch(cacheSize);
  const after = residentBytes(pid);
  const settings = harness.workerSettings;
  const maxCached = Number(settings?.max_cached_workflows);
  const terminated = await inPool(conversations, 32, (c) =>
    harness.client.workflow.getHandle(workflowIdFor(c.id)).terminate('the bench’s memory phase is over'),
  );
  return {
    experiment: 'memory per open conversation',
    figures: [
      [
        'open conversations (one turn each, then waiting)',
        `${n}, first turns ${options.concurrency} at a time in ${seconds.toFixed(0)} s`,
      ],
      ['worker RSS before / with them open', `${(before / MIB).toFixed(0)} MiB / ${(after / MIB).toFixed(0)} MiB`],
      ['(RSS with them − before) ÷ N', `${((after - before) / n / 1024).toFixed(0)} KiB`],
      [
        'sticky cache: runs in it with them open / its size (SDK default)',
        `${cached} / ${Number.isFinite(maxCached) ? maxCached : 'not logged'} workflows${
          maxCached < n ? `: too small for ${n}, so runs were evicted and replay on their next turn` : ''
        }`,
      ],
    ],
    checks: [
      check(
        `all ${n} conversations had their turn`,
        failures.length === 0,
        failures.length ? `${failures.length} failed: ${errorMessage(failures[0])}` : undefined,
      ),
      check(`the worker's cache held all ${n} open runs`, cached >= n, `${cached} cached`),
      check('every open run was terminated afterwards', terminated.length === 0, `${terminated.length} not`),
    ],
  };
}
