// The pure parts of the bench's critical-path, saturation, memory and growth phases: a turn's critical path and when
// its records cannot stand for it, the knee, when to stop stepping, reading a gauge and a process's RSS, running tasks
// a few at a time, the worker settings the worker logs, and the earlier messages the growth phase lengthens a
// conversation with.
import { readFileSync } from 'node:fs';
import { deflateRawSync } from 'node:zlib';
import type { Worker } from '@temporalio/worker';
import fc from 'fast-check';
import { gauge } from '../../bench/memory';
import { cpuMs, findPid, findPids, isPostgres, residentBytes } from '../../harness/proc';
import { cpuBetween, cpuText, knee, pastKnee, settingsText, type Step } from '../../bench/saturation';
import { inPool } from '../../bench/turns';
import { criticalPathGaps, criticalPathMs, earlierMessage } from '../../harness/harness';
import { workerSettings } from '../../src/observability/worker-telemetry';

const step = (concurrency: number, turnsPerSecond: number, p50Ms: number): Step => ({
  concurrency,
  turnsPerSecond,
  p50Ms,
  turns: 10,
  cpuPerTurnMs: {},
  failures: [],
});

test('a turn’s critical path is its model calls in a row plus its slowest tool call, when the sandbox recorded both', () => {
  const turn = { model: [400, 600, 300], tools: [120, 80] };
  expect(criticalPathMs(turn)).toBe(1420);
  expect(criticalPathGaps(turn)).toEqual([]);
  // Calls tied to no conversation leave a shorter path, and a larger ratio that looks like any other: a gap, not a figure.
  expect(criticalPathMs({ model: [], tools: [120] })).toBe(120);
  expect(criticalPathGaps({ model: [], tools: [120] })).toEqual(['no model call recorded']);
  expect(criticalPathGaps({ model: [400], tools: [] })).toEqual(['no tool call recorded']);
  // A call refused before it waited imposed nothing: the path is short of what the turn was asked to wait.
  expect(criticalPathMs({ model: [400, undefined], tools: [undefined] })).toBe(400);
  expect(criticalPathGaps({ model: [400, undefined], tools: [undefined] })).toEqual([
    '2 call(s) without a recorded latency',
  ]);
});

test('an earlier message names no number, and a conversation of them grows after compression as it grows in parts', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), (seed) => {
      const message = earlierMessage(seed);
      expect(message).toMatch(/^[A-Z][a-zA-Z ]+\.$/);
      expect(message.split(' ').length).toBeGreaterThanOrEqual(8);
    }),
  );
  // What the growth phase relies on: the payload codec deflates a fetched conversation, and one sentence said over and
  // over would fold to a few bytes however many parts it had. Each part must add to the compressed size.
  const deflated = (parts: number, base: number) =>
    deflateRawSync(JSON.stringify(Array.from({ length: parts }, (_, i) => earlierMessage(base + i)))).length;
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 31 }), (base) => {
      expect(deflated(100, base)).toBeGreaterThan(deflated(10, base) + 90 * 10);
      expect(deflated(500, base)).toBeGreaterThan(deflated(100, base) + 400 * 10);
    }),
    { numRuns: 20 },
  );
});

test('the knee is the step of most turns a second whose p50 is at most twice the first step’s', () => {
  const steps = [step(1, 1, 900), step(2, 2, 950), step(4, 3.6, 1100), step(8, 5, 1700), step(16, 6, 2600)];
  // C=16 has more throughput but its latency more than doubled: it is past the knee.
  expect(knee(steps)?.concurrency).toBe(8);
  // Exactly twice still counts; a step of less throughput after the best does not move the knee.
  expect(knee([step(1, 1, 900), step(2, 1.9, 1800), step(4, 1.5, 1700)])?.concurrency).toBe(2);
  expect(knee([step(1, 1, 900)])?.concurrency).toBe(1);
  expect(knee([])).toBeUndefined();
});

test('stepping stops after the first step whose latency more than doubled', () => {
  expect(pastKnee([step(1, 1, 900), step(2, 2, 1800)])).toBe(false);
  expect(pastKnee([step(1, 1, 900), step(2, 2, 1801)])).toBe(true);
  expect(pastKnee([])).toBe(false);
});

test('a gauge is read from a Prometheus exposition, summed over its label sets', () => {
  const exposition = [
    '# HELP temporal_sticky_cache_size Current number of cached workflows',
    '# TYPE temporal_sticky_cache_size gauge',
    'temporal_sticky_cache_size{namespace="default",task_queue="melvin"} 998',
    'temporal_sticky_cache_size{namespace="other",task_queue="melvin"} 2',
    'temporal_sticky_cache_size_total 5',
  ].join('\n');
  expect(gauge(exposition, 'temporal_sticky_cache_size')).toBe(1000);
  expect(gauge('temporal_num_pollers 4\n', 'temporal_num_pollers')).toBe(4);
  expect(gauge(exposition, 'temporal_missing')).toBeUndefined();
});

test('a process’s RSS is read from /proc', () => {
  const rss = residentBytes(process.pid);
  // This test process's own: more than its heap in use, less than the machine.
  expect(rss).toBeGreaterThan(process.memoryUsage().heapUsed / 2);
  expect(rss).toBeLessThan(64 * 1024 ** 3);
});

test('a pool runs every task, never more than its size at once, and collects failures', async () => {
  let running = 0;
  let most = 0;
  const done: number[] = [];
  const failures = await inPool([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
    running += 1;
    most = Math.max(most, running);
    await new Promise((resolve) => setTimeout(resolve, 5));
    running -= 1;
    if (n === 4) throw new Error('four');
    done.push(n);
  });
  expect(most).toBe(3);
  expect(done.sort()).toEqual([1, 2, 3, 5, 6, 7]);
  expect(failures).toEqual([new Error('four')]);
});

test('the worker’s settings name its slots, pollers and sticky cache, as the SDK compiled them', () => {
  const options = {
    tuner: {
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: 40 },
      activityTaskSlotSupplier: { type: 'resource-based', minimumSlots: 1, maximumSlots: 500, rampThrottle: 0 },
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 300 },
    },
    workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: 10 },
    activityTaskPollerBehavior: { type: 'autoscaling', minimum: 1, initial: 5, maximum: 100 },
    maxCachedWorkflows: 2310,
  } as unknown as Worker['options'];
  const settings = workerSettings(options);
  expect(settings).toMatchObject({
    workflow_task_slots: 40,
    activity_task_slots: '1–500',
    local_activity_slots: 300,
    workflow_task_pollers: 10,
    activity_task_pollers: '1–100',
    max_cached_workflows: 2310,
  });
  expect(settingsText(settings)).toBe(
    `slots 40 workflow / 1–500 activity / 300 local activity tasks, pollers 10 / 1–100, sticky cache 2310 (heap limit ${String(settings.heap_limit_mib)} MiB)`,
  );
  expect(settingsText(undefined)).toBe('not logged by the worker');
});

test('CPU time per process: this process is found by its command line and has used some; one that is gone has none', () => {
  const ours = readFileSync('/proc/self/cmdline', 'utf8').split('\0').join(' ');
  const found = findPid((commandLine) => commandLine === ours);
  expect(found).toBeDefined();
  expect(readFileSync(`/proc/${found}/cmdline`, 'utf8').split('\0').join(' ')).toBe(ours);
  expect(findPid(() => false)).toBeUndefined();
  expect(cpuMs(process.pid)).toBeGreaterThan(0);
  expect(cpuMs(2 ** 22 + 1)).toBeUndefined();
  expect(cpuText({ 'Temporal server': 12.4, worker: 20.6 })).toBe('Temporal server 12 ms, worker 21 ms; 33 ms in all');
  expect(cpuText({ worker: NaN })).toBe('worker ? ms; ? ms in all');
});

test('CPU time of a group of processes: a process new in the group counts from its start, one gone is left out', () => {
  const before = {
    workers: new Map([
      [10, 500],
      [11, 800],
    ]),
    PostgreSQL: new Map([[20, 50]]),
    peer: new Map(),
  };
  const after = {
    // Worker 11 has gone; worker 12 started during the step.
    workers: new Map([
      [10, 700],
      [12, 40],
    ]),
    // A backend opened during the step.
    PostgreSQL: new Map([
      [20, 80],
      [21, 15],
    ]),
    peer: new Map<number, number>(),
  };
  expect(cpuBetween(before, after)).toEqual({ workers: 240, PostgreSQL: 45, peer: NaN });
});

test('processes are found by their command lines: every match, and PostgreSQL’s by its program name', () => {
  const ours = readFileSync('/proc/self/cmdline', 'utf8').split('\0').join(' ');
  expect(findPids((commandLine) => commandLine === ours)).toContain(process.pid);
  expect(findPids(() => false)).toEqual([]);
  const server = [
    '/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main',
    'postgres: 15/main: checkpointer ',
    'postgres: 16/main: postgres temporal 127.0.0.1(51234) idle',
    'postgres',
  ];
  const others = [
    'grep postgres',
    'node harness/postgres-temporal.ts',
    '/usr/bin/postgresql-check',
    'psql -U postgres',
  ];
  expect(server.filter(isPostgres)).toEqual(server);
  expect(others.filter(isPostgres)).toEqual([]);
});
