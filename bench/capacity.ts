// The capacity plan: what a support team's peak needs (worker processes, Temporal server and PostgreSQL cores, history
// shards, database size), derived from this run's measurements and Temporal's published limits; docs/performance.md
// gives the method and the sources.
import type { Report } from '../harness/report';

/** What the plan is derived from, each set by the phase that measures it; absent when the run left that phase out. */
export interface CapacityInputs {
  /** CPU per turn at the knee on Temporal over PostgreSQL, one worker, by process group (saturation-postgres). */
  cpuPerTurnMs?: Record<string, number>;
  /** What the server's databases grew by per turn (saturation-postgres). */
  databaseBytesPerTurn?: number;
  /** Worker RSS before any conversation was open, and what it grew by with them open per run in its cache (memory). */
  workerBaseBytes?: number;
  memoryBytesPerCachedRun?: number;
  /** History events of a 1-hop turn, the most seen (overhead). */
  eventsPerTurn?: number;
  /** A turn's time ÷ the model and tool waits on its critical path, p50 (critical-path). */
  turnTimeOverWaits?: number;
}

/**
 * The team the plan is for. The peak is the input: conversations opened a minute at the busiest time; the rest are
 * assumptions an operator replaces with their own.
 */
export const ASSUMED = {
  peakConversationsPerMinute: [10, 100, 1000],
  /** Turns Melvin takes per conversation: the question, and one follow-up. */
  turnsPerConversation: 2,
  /** A turn's model and tool waits with a production model: three calls of about 6 s, and the tools. */
  waitSecondsPerTurn: 20,
  /** The peak held this many hours a day: an upper bound on a day's conversations. */
  busyHoursPerDay: 8,
  /** How much of a core a process is planned to use at the peak, leaving room for bursts and replays. */
  coreUtilization: 0.6,
  /** Worker processes at the least, so that one can fail or be redeployed while the other serves. */
  minimumWorkers: 2,
  /** The retention of Melvin's namespace in docker-compose.yml (72 h): closed runs are kept this long. */
  retentionDays: 3,
} as const;

/** Temporal's published limits and defaults the plan is bound by (sources in docs/performance.md). */
export const PUBLISHED = {
  /** The Helm chart's `numHistoryShards`; fixed when the cluster is created, so chosen for growth, not for today. */
  historyShards: 512,
  /** Temporal's sizing guidance: one History service process to begin with per 500 shards. */
  shardsPerHistoryProcess: 500,
  /** `history.persistenceMaxQPS`, server 1.29's default per History process. */
  historyPersistenceQps: 9000,
} as const;

/** The worker's own settings, as it logged them: its sticky cache and its local-activity slots. */
export interface WorkerCapacity {
  cachedRuns: number;
  /** `WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES`: Melvin's model calls are local activities, each holding one. */
  localActivitySlots: number;
}

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

export interface TeamPlan {
  conversationsPerMinute: number;
  turnsPerSecond: number;
  workers: number;
  /** The workers the CPU alone needs, and the local-activity slots alone (turns waiting on their model). */
  workersForCpu: number;
  workersForSlots: number;
  serverCores: number;
  postgresCores: number;
  historyProcesses: number;
  databaseBytes: number;
  workerBytes: number;
}

/** The plan for one peak, from measured inputs that are all present. */
export function planFor(
  conversationsPerMinute: number,
  inputs: Required<CapacityInputs>,
  worker: WorkerCapacity,
): TeamPlan {
  const turnsPerSecond = (conversationsPerMinute * ASSUMED.turnsPerConversation) / 60;
  const cores = (msPerTurn: number) => (turnsPerSecond * msPerTurn) / 1000 / ASSUMED.coreUtilization;
  const workersForCpu = Math.ceil(cores(inputs.cpuPerTurnMs.worker ?? NaN));
  // Little's law: turns in flight = rate × time; each holds a local-activity slot while it waits on its model.
  const inFlight = turnsPerSecond * ASSUMED.waitSecondsPerTurn * inputs.turnTimeOverWaits;
  const workersForSlots = Math.ceil(inFlight / (worker.localActivitySlots * ASSUMED.coreUtilization));
  const writesPerSecond = turnsPerSecond * inputs.eventsPerTurn;
  const historyProcesses = Math.max(
    Math.max(1, Math.round(PUBLISHED.historyShards / PUBLISHED.shardsPerHistoryProcess)),
    Math.ceil(writesPerSecond / PUBLISHED.historyPersistenceQps),
  );
  const turnsPerDay = turnsPerSecond * 3600 * ASSUMED.busyHoursPerDay;
  return {
    conversationsPerMinute,
    turnsPerSecond,
    workers: Math.max(ASSUMED.minimumWorkers, workersForCpu, workersForSlots),
    workersForCpu,
    workersForSlots,
    serverCores: cores(inputs.cpuPerTurnMs['Temporal server'] ?? NaN),
    postgresCores: cores(inputs.cpuPerTurnMs.PostgreSQL ?? NaN),
    historyProcesses,
    // A closed run's rows stay until retention has passed, and a day more until the server deletes them.
    databaseBytes: turnsPerDay * (ASSUMED.retentionDays + 1) * inputs.databaseBytesPerTurn,
    // Every worker's cache fills: a conversation stays open for the quiet period, days, far more than a cache holds.
    workerBytes: inputs.workerBaseBytes + worker.cachedRuns * inputs.memoryBytesPerCachedRun,
  };
}

const INPUT_PHASES: Record<keyof CapacityInputs, string> = {
  cpuPerTurnMs: 'saturation-postgres',
  databaseBytesPerTurn: 'saturation-postgres',
  workerBaseBytes: 'memory',
  memoryBytesPerCachedRun: 'memory',
  eventsPerTurn: 'overhead',
  turnTimeOverWaits: 'critical-path',
};

const hasAll = (inputs: CapacityInputs): inputs is Required<CapacityInputs> =>
  (Object.keys(INPUT_PHASES) as (keyof CapacityInputs)[]).every((key) => inputs[key] !== undefined);

/** Two significant digits below 10 (0.04 cores, 3.5 GiB), whole numbers above. */
const one = (value: number) => (value < 10 ? value.toPrecision(2) : value.toFixed(0));

/** The plan as a report: a row a peak, and the rows it was derived from; what the run did not measure, said so. */
export function capacityPlan(inputs: CapacityInputs, worker: WorkerCapacity): Report {
  const experiment = 'capacity plan';
  if (!hasAll(inputs)) {
    const missing = Object.entries(INPUT_PHASES)
      .filter(([key]) => inputs[key as keyof CapacityInputs] === undefined)
      .map(([, phase]) => phase);
    return {
      experiment,
      figures: [['not derived', `the run left out ${[...new Set(missing)].join(', ')}`]],
      checks: [],
    };
  }
  const plans = ASSUMED.peakConversationsPerMinute.map((c) => planFor(c, inputs, worker));
  return {
    experiment,
    figures: [
      [
        'from this run',
        `CPU per turn on PostgreSQL (worker ${one(inputs.cpuPerTurnMs.worker ?? NaN)} ms, Temporal server ` +
          `${one(inputs.cpuPerTurnMs['Temporal server'] ?? NaN)} ms, PostgreSQL ${one(inputs.cpuPerTurnMs.PostgreSQL ?? NaN)} ms), ` +
          `database ${one(inputs.databaseBytesPerTurn / 1024)} KiB and ${inputs.eventsPerTurn} history events a turn, ` +
          `worker ${one(inputs.workerBaseBytes / MIB)} MiB + ${one(inputs.memoryBytesPerCachedRun / 1024)} KiB a cached run, ` +
          `turn time ÷ waits ${inputs.turnTimeOverWaits.toFixed(2)}`,
      ],
      [
        'assumed',
        `${ASSUMED.turnsPerConversation} turns a conversation, ${ASSUMED.waitSecondsPerTurn} s of model and tool waits a turn, ` +
          `the peak held ${ASSUMED.busyHoursPerDay} h a day, ${ASSUMED.coreUtilization * 100} % of a core per process, ` +
          `${ASSUMED.retentionDays} days' retention, ${PUBLISHED.historyShards} history shards, ${worker.cachedRuns} cached runs and ${worker.localActivitySlots} local-activity slots a worker`,
      ],
      ...plans.map((p): [string, string] => [
        `${p.conversationsPerMinute} conversations a minute at the peak (${one(p.turnsPerSecond)} turns/s)`,
        `${p.workers} workers (CPU ${p.workersForCpu}, model waits ${p.workersForSlots}) of ${one(p.workerBytes / MIB)} MiB; ` +
          `Temporal server ${one(p.serverCores)} cores in ${p.historyProcesses} History process(es); ` +
          `PostgreSQL ${one(p.postgresCores)} cores, ${one(p.databaseBytes / GIB)} GiB`,
      ]),
    ],
    checks: [],
  };
}
