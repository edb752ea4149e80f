// The capacity plan's arithmetic: each resource follows the peak it is planned for, the workers are the most any one
// bound asks for, and a run that left out a phase the plan needs says which instead of planning from nothing.
import fc from 'fast-check';
import { ASSUMED, capacityPlan, planFor, type CapacityInputs } from '../../bench/capacity';

const WORKER = { cachedRuns: 250, localActivitySlots: 100 };

const measured: Required<CapacityInputs> = {
  cpuPerTurnMs: { 'Temporal server': 40, worker: 90, PostgreSQL: 25, 'bench (sandbox, ingress)': 25 },
  databaseBytesPerTurn: 96 * 1024,
  workerBaseBytes: 150 * 1024 * 1024,
  memoryBytesPerCachedRun: 300 * 1024,
  eventsPerTurn: 33,
  turnTimeOverWaits: 1.1,
};

test('cores and the database grow in proportion to the peak; a worker’s memory does not', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 2, max: 5 }), (peak, times) => {
      const [small, large] = [planFor(peak, measured, WORKER), planFor(peak * times, measured, WORKER)];
      expect(large.turnsPerSecond).toBeCloseTo(small.turnsPerSecond * times, 9);
      expect(large.serverCores).toBeCloseTo(small.serverCores * times, 9);
      expect(large.postgresCores).toBeCloseTo(small.postgresCores * times, 9);
      expect(large.databaseBytes).toBeCloseTo(small.databaseBytes * times, 0);
      expect(large.workerBytes).toBe(small.workerBytes);
      expect(large.workers).toBeGreaterThanOrEqual(small.workers);
    }),
  );
});

test('the workers are the most of the minimum, what the CPU needs and what the model waits need', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20_000 }),
      fc.double({ min: 1, max: 500, noNaN: true }),
      fc.double({ min: 1, max: 3, noNaN: true }),
      (peak, workerMs, overWaits) => {
        const inputs = {
          ...measured,
          cpuPerTurnMs: { ...measured.cpuPerTurnMs, worker: workerMs },
          turnTimeOverWaits: overWaits,
        };
        const plan = planFor(peak, inputs, WORKER);
        expect(plan.workers).toBe(Math.max(ASSUMED.minimumWorkers, plan.workersForCpu, plan.workersForSlots));
        // Enough cores for the worker's CPU, each at the planned utilization …
        expect(plan.workersForCpu * ASSUMED.coreUtilization).toBeGreaterThanOrEqual(
          (plan.turnsPerSecond * workerMs) / 1000,
        );
        // … and enough local-activity slots for every turn waiting on its model (Little's law).
        const inFlight = plan.turnsPerSecond * ASSUMED.waitSecondsPerTurn * overWaits;
        expect(plan.workersForSlots * WORKER.localActivitySlots * ASSUMED.coreUtilization).toBeGreaterThanOrEqual(
          inFlight - 1e-9,
        );
        expect((plan.workersForSlots - 1) * WORKER.localActivitySlots * ASSUMED.coreUtilization).toBeLessThan(inFlight);
      },
    ),
  );
});

test('more local-activity slots a worker (WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES) need fewer workers for the waits', () => {
  const [defaults, raised] = [
    planFor(1000, measured, WORKER),
    planFor(1000, measured, { ...WORKER, localActivitySlots: 4 * WORKER.localActivitySlots }),
  ];
  expect(raised.workersForSlots).toBe(Math.ceil(defaults.workersForSlots / 4));
  // The CPU's bound does not move: past it, only more cores help.
  expect(raised.workersForCpu).toBe(defaults.workersForCpu);
  expect(raised.workers).toBe(Math.max(ASSUMED.minimumWorkers, raised.workersForCpu, raised.workersForSlots));
});

test('a worked peak: 100 conversations a minute', () => {
  const plan = planFor(100, measured, WORKER);
  // 100 × 2 turns ÷ 60 s.
  expect(plan.turnsPerSecond).toBeCloseTo(3.33, 2);
  // 3.33 turns/s × 40 ms ÷ 0.6.
  expect(plan.serverCores).toBeCloseTo(0.222, 3);
  // 3.33 × 20 s × 1.1 = 73 turns in flight, over 60 usable slots a worker.
  expect(plan.workersForSlots).toBe(2);
  // 3.33 turns/s × 8 h × 3600 s × (3 + 1) days × 96 KiB.
  expect(plan.databaseBytes / 1024 ** 3).toBeCloseTo(35.2, 1);
  expect(plan.workerBytes / 1024 ** 2).toBeCloseTo(150 + (250 * 300) / 1024, 6);
  expect(plan.historyProcesses).toBe(1);
});

test('the plan names the phases a run left out instead of planning without them', () => {
  const { cpuPerTurnMs: _, databaseBytesPerTurn: __, ...withoutPostgres } = measured;
  expect(capacityPlan(withoutPostgres, WORKER).figures).toEqual([
    ['not derived', 'the run left out saturation-postgres'],
  ]);
  expect(capacityPlan({}, WORKER).figures[0]![1]).toBe(
    'the run left out saturation-postgres, memory, overhead, critical-path',
  );
  const plan = capacityPlan(measured, WORKER);
  expect(plan.figures.map(([label]) => label)).toEqual([
    'from this run',
    'assumed',
    ...ASSUMED.peakConversationsPerMinute.map((c) => expect.stringMatching(new RegExp(`^${c} conversations a minute`))),
  ]);
});
