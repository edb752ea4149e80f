// The saturation phase: turns a second at the knee, where a closed loop of C turns in flight doubles a turn's latency;
// generic over the system that runs a turn, with Melvin's on the bench's dev server and on Temporal over PostgreSQL.
import { errorMessage } from '../src/observability/error-message';
import { Harness, percentile, type Conversation, type WorkerSettings } from '../harness/harness';
import { check, type Report } from '../harness/report';
import { postgresFromEnvironment, startPostgresTemporal, TEMPORAL_SERVER_VERSION } from '../harness/postgres-temporal';
import type { Bench } from './bench';
import type { CapacityInputs } from './capacity';
import { PEER } from './peer-process';
import { benchResponder, type BenchShape } from './responder';
import { cpuMs, postgresPids } from '../harness/proc';
import { melvinTurn } from './turns';

export interface SaturationOptions {
  /** The concurrencies to step through, smallest first; the first is the baseline the knee is judged against. */
  concurrency: number[];
  /** How long each step keeps its turns in flight. */
  stepSeconds: number;
  /** Whether to measure on Temporal over PostgreSQL too (it builds the server from Go modules on first use). */
  postgres: boolean;
  log: (line: string) => void;
}

/** What the saturation phase drives: anything that runs one turn of a conversation and resolves when it has ended. */
export interface TurnSystem {
  /** A new conversation for the next turn. */
  conversation(): Conversation;
  turn(conversation: Conversation): Promise<unknown>;
  /** The settings that bound its capacity, as a row of the report: label and value. */
  settings: [string, string];
  /**
   * The processes doing its work, by name, each name a group (the worker processes, PostgreSQL's): their CPU time per
   * turn says where the time goes. Asked at every read, so a process started during a step counts from its start.
   */
  processes(): Record<string, (number | undefined)[]>;
}

export interface Step {
  concurrency: number;
  /** Turns that ended within the step's window, divided by the window. */
  turnsPerSecond: number;
  p50Ms: number;
  /** Every turn the step started, also those still in flight when its window closed. */
  turns: number;
  failures: unknown[];
  /** Each process group's CPU time during the window ÷ the turns that ended in it, in ms (NaN: none was found). */
  cpuPerTurnMs: Record<string, number>;
}

/** Each group's processes and the CPU time each has used so far, in ms. */
export type CpuReading = Record<string, Map<number, number>>;

function readCpu(system: TurnSystem): CpuReading {
  return Object.fromEntries(
    Object.entries(system.processes()).map(([name, pids]) => [
      name,
      new Map(pids.flatMap((pid) => (pid === undefined ? [] : [[pid, cpuMs(pid)] as const])).filter(hasCpu)),
    ]),
  );
}

const hasCpu = (entry: readonly [number, number | undefined]): entry is readonly [number, number] =>
  entry[1] !== undefined;

/**
 * Each group's CPU time from one reading to the next: a process new in the second counts from 0 (it started in
 * between); one gone by then is left out (its last part is lost, which is why groups are of long-lived processes).
 */
export function cpuBetween(before: CpuReading, after: CpuReading): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after).map(([name, processes]) => {
      if (!processes.size) return [name, NaN];
      let total = 0;
      for (const [pid, ms] of processes) total += ms - (before[name]?.get(pid) ?? 0);
      return [name, total];
    }),
  );
}

/** The latency a step may reach, as a multiple of the baseline's, and still count as below the knee. */
const KNEE_LATENCY = 2;
/** Turns run before the first step and thrown away: a worker's first turns pay for its caches. */
const WARM_UP = 2;

/** The step of highest throughput whose p50 latency is at most twice the first step's (the knee). */
export function knee(steps: Step[]): Step | undefined {
  const base = steps[0];
  if (!base) return undefined;
  return steps
    .filter((s) => s.p50Ms <= KNEE_LATENCY * base.p50Ms)
    .reduce((best, s) => (s.turnsPerSecond > best.turnsPerSecond ? s : best), base);
}

/** Whether a step is past the knee: its latency has more than doubled, so a higher concurrency cannot be the knee. */
export function pastKnee(steps: Step[]): boolean {
  const [base, last] = [steps[0], steps.at(-1)];
  return !!base && !!last && last.p50Ms > KNEE_LATENCY * base.p50Ms;
}

/** A closed loop: `concurrency` lanes, each starting its next turn when its last one ends, until the window closes. */
async function step(system: TurnSystem, concurrency: number, seconds: number): Promise<Step> {
  const cpuBefore = readCpu(system);
  let cpuAtClose: CpuReading | undefined;
  const started = performance.now();
  const closes = started + seconds * 1000;
  const latencies: number[] = [];
  const failures: unknown[] = [];
  let endedInWindow = 0;
  let turns = 0;
  const lane = async () => {
    while (performance.now() < closes) {
      const conversation = system.conversation();
      const from = performance.now();
      turns += 1;
      try {
        await system.turn(conversation);
        const to = performance.now();
        latencies.push(to - from);
        if (to <= closes) endedInWindow += 1;
      } catch (err) {
        failures.push(err);
      }
    }
  };
  const window = setTimeout(() => (cpuAtClose = readCpu(system)), seconds * 1000);
  await Promise.all(Array.from({ length: concurrency }, lane));
  clearTimeout(window);
  const cpuPerTurnMs = Object.fromEntries(
    Object.entries(cpuBetween(cpuBefore, cpuAtClose ?? readCpu(system))).map(([name, ms]) => [
      name,
      ms / Math.max(endedInWindow, 1),
    ]),
  );
  return {
    concurrency,
    turnsPerSecond: endedInWindow / seconds,
    p50Ms: percentile(latencies, 50),
    turns,
    failures,
    cpuPerTurnMs,
  };
}

/** "Temporal server 12 ms, worker 20 ms, …": each process's CPU time per turn, and their sum. */
export function cpuText(perTurn: Record<string, number>): string {
  const entries = Object.entries(perTurn);
  const total = entries.reduce((sum, [, ms]) => sum + ms, 0);
  const each = entries.map(([name, ms]) => `${name} ${Number.isNaN(ms) ? '?' : Math.round(ms)} ms`);
  return `${each.join(', ')}; ${Number.isNaN(total) ? '?' : Math.round(total)} ms in all`;
}

const stepText = (s: Step) =>
  `${s.turnsPerSecond.toFixed(1)} turns/s, p50 ${Math.round(s.p50Ms)} ms (${s.turns} turns)`;

interface Measured {
  steps: Step[];
  knee: Step;
  failures: unknown[];
}

/**
 * Steps each system through the concurrencies, stopping a system after its first step past the knee. Systems take
 * their steps in turn (C=1 of each, then C=2 of each, …), so a slower minute of the machine falls on all of them alike.
 */
async function measure(
  systems: { name: string; system: TurnSystem }[],
  options: SaturationOptions,
): Promise<Measured[]> {
  for (const { system } of systems) for (let i = 0; i < WARM_UP; i++) await system.turn(system.conversation());
  const steps = systems.map((): Step[] => []);
  for (const concurrency of options.concurrency) {
    for (const [i, { name, system }] of systems.entries()) {
      if (pastKnee(steps[i]!)) continue;
      const result = await step(system, concurrency, options.stepSeconds);
      options.log(`${name}: C=${concurrency}: ${stepText(result)}`);
      steps[i]!.push(result);
    }
    if (steps.every(pastKnee)) break;
  }
  return steps.map((own) => ({ steps: own, knee: knee(own)!, failures: own.flatMap((s) => s.failures) }));
}

/** A system's rows: its settings, each step, the knee; `prefix` names the system (none for Melvin's own rows). */
function rows(prefix: string, system: TurnSystem, measured: Measured, options: SaturationOptions): Report['figures'] {
  const { steps, knee: found } = measured;
  const beyond = pastKnee(steps) ? '' : '; the largest C measured, so the knee may lie beyond';
  return [
    [`${prefix}${system.settings[0]}`, system.settings[1]],
    [`${prefix}closed loop, zero-latency sandbox`, `${options.stepSeconds} s per concurrency C`],
    ...steps.map((s): [string, string] => [`${prefix}C=${s.concurrency}`, stepText(s)]),
    [
      `${prefix}knee: most turns/s with p50 ≤ ${KNEE_LATENCY} × C=${steps[0]!.concurrency}'s`,
      `C=${found.concurrency}: ${found.turnsPerSecond.toFixed(1)} turns/s${beyond}`,
    ],
    [`${prefix}CPU per turn at the knee, by process`, cpuText(found.cpuPerTurnMs)],
  ];
}

const everyTurnEnded = (prefix: string, measured: Measured) =>
  check(
    `${prefix}every turn ended`,
    measured.failures.length === 0,
    measured.failures.length ? errorMessage(measured.failures[0]) : undefined,
  );

/** The settings a Melvin worker logged at start, in a line. */
export function settingsText(s: WorkerSettings | undefined): string {
  if (!s) return 'not logged by the worker';
  return (
    `slots ${s.workflow_task_slots} workflow / ${s.activity_task_slots} activity / ` +
    `${s.local_activity_slots} local activity tasks, ` +
    `pollers ${s.workflow_task_pollers} / ${s.activity_task_pollers}, ` +
    `sticky cache ${s.max_cached_workflows} (heap limit ${s.heap_limit_mib} MiB)`
  );
}

/**
 * Melvin on a harness under load: a payment question through the ingress, ended when its run closes. `more` adds
 * process groups beside Melvin's own (PostgreSQL's, where the server runs on it).
 */
function melvinUnderLoad(harness: Harness, more: TurnSystem['processes'] = () => ({})): TurnSystem {
  return {
    conversation: () => harness.addConversation('payment'),
    turn: (conversation) => melvinTurn(harness, conversation),
    // The bench sets none of them: they are Melvin's defaults (the cache) and the SDK's for this machine (the rest).
    settings: ['worker settings (defaults)', settingsText(harness.workerSettings)],
    processes: () => {
      const workers = harness.workerPids;
      return {
        'Temporal server': [harness.temporalPid],
        [workers.length > 1 ? `${workers.length} workers` : 'worker']: workers,
        'bench (sandbox, ingress)': [process.pid],
        ...more(),
      };
    },
  };
}

/** The LangGraph peer under load: its process runs each turn, several at once, beside the same sandbox. */
function peerUnderLoad(b: Bench): TurnSystem {
  return {
    conversation: () => b.harness.addConversation('payment'),
    turn: (conversation) => b.peer.turn(conversation),
    settings: ['settings', 'one Node process, turns interleaved on its event loop, SQLite checkpointer'],
    processes: () => ({ peer: [b.peerProcess.pid], 'bench (sandbox)': [process.pid] }),
  };
}

/**
 * Saturation on the bench's own stack, the Temporal dev server on SQLite, and the LangGraph peer's on the same sandbox,
 * step by step in turn (the other system idle meanwhile), and Melvin's knee ÷ the peer's.
 */
export async function saturationOnDevServer(b: Bench, options: SaturationOptions): Promise<Report> {
  b.configure({ hops: 1 }, {});
  const melvinSystem = melvinUnderLoad(b.harness);
  const peerSystem = peerUnderLoad(b);
  const [melvin, peer] = (await measure(
    [
      { name: 'saturation, Melvin', system: melvinSystem },
      { name: 'saturation, LangGraph peer', system: peerSystem },
    ],
    options,
  )) as [Measured, Measured];
  return {
    experiment: 'saturation, dev server (SQLite)',
    figures: [
      ...rows('', melvinSystem, melvin, options),
      ...rows(`${PEER}: `, peerSystem, peer, options),
      ['Melvin ÷ peer: turns/s at the knee', (melvin.knee.turnsPerSecond / peer.knee.turnsPerSecond).toFixed(2)],
    ],
    checks: [everyTurnEnded('', melvin), everyTurnEnded(`${PEER}: `, peer)],
  };
}

/**
 * Saturation on the production topology: a Temporal server on PostgreSQL with a stack of its own (sandbox, ingress,
 * worker), while the bench's stack stands idle; then the same loop with a second worker process on the same task
 * queue, which is how Melvin scales out. What the capacity plan needs goes to `measured`: the one worker's CPU per turn
 * and the databases' growth per turn. A machine without PostgreSQL or Go gets a row saying why instead.
 */
export async function saturationOnPostgres(options: SaturationOptions, measured: CapacityInputs): Promise<Report> {
  const experiment = `saturation, Temporal ${TEMPORAL_SERVER_VERSION} on PostgreSQL`;
  if (!options.postgres)
    return { experiment, figures: [['not measured', 'a smoke run uses the dev server only']], checks: [] };
  let temporal: Awaited<ReturnType<typeof startPostgresTemporal>>;
  try {
    temporal = await startPostgresTemporal({ postgres: postgresFromEnvironment(), log: options.log });
  } catch (err) {
    return { experiment, figures: [['not measured', errorMessage(err).split('\n')[0]!]], checks: [] };
  }
  const shape: BenchShape = { hops: 1 };
  const harness = new Harness({ responder: benchResponder(shape), temporal });
  try {
    await harness.start();
    const bytesBefore = await temporal.databaseBytes();
    // PostgreSQL's processes are counted when it runs on this machine, as the bench's own does by default.
    const system = melvinUnderLoad(harness, () => ({ PostgreSQL: postgresPids() }));
    const [one] = (await measure([{ name: experiment, system }], options)) as [Measured];
    await harness.startWorker();
    const [two] = (await measure([{ name: `${experiment}, 2 workers`, system }], options)) as [Measured];
    const bytesPerTurn = ((await temporal.databaseBytes()) - bytesBefore) / harness.conversations.length;
    Object.assign(measured, { cpuPerTurnMs: one.knee.cpuPerTurnMs, databaseBytesPerTurn: bytesPerTurn });
    return {
      experiment,
      figures: [
        ...rows('', system, one, options),
        ...rows('2 workers: ', system, two, options),
        ['2 workers ÷ 1: turns/s at the knee', (two.knee.turnsPerSecond / one.knee.turnsPerSecond).toFixed(2)],
        [
          `database growth per turn (${harness.conversations.length} turns, history, state and visibility)`,
          `${(bytesPerTurn / 1024).toFixed(1)} KiB`,
        ],
      ],
      checks: [everyTurnEnded('', one), everyTurnEnded('2 workers: ', two)],
    };
  } finally {
    await harness.stop();
    await temporal.stop();
  }
}
