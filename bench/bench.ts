// The bench: Melvin's own costs measured on one stack: orchestration overhead, latency against the sandbox's critical
// path, Gather's fan-out, cost growth, saturation, memory per open conversation, and the ingress's acknowledgement; the
// overhead, latency, fan-out and saturation beside the same turns of a LangGraph peer (bench/peer/), on the same sandbox.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Harness, TURN_SETTINGS, criticalPathGaps, percentile, type Conversation } from '../harness/harness';
import { check, type Check, type Report } from '../harness/report';
import { capacityPlan, type CapacityInputs } from './capacity';
import { floor } from './floor/phase';
import { growth, type GrowthOptions } from './growth';
import { LocalActivityLog } from './local-activities';
import { gauge, HeapLog, memory, type MemoryOptions } from './memory';
import { ensurePeerDeps } from './peer-deps';
import { PEER, PeerProcess, type PeerTurnMeasures } from './peer-process';
import { benchResponder, type BenchShape } from './responder';
import { saturationOnDevServer, saturationOnPostgres, type SaturationOptions } from './saturation';
import { melvinSpans, type TurnSpans } from './spans';
import { melvinTurn, plannedHops } from './turns';

export interface BenchOptions {
  /** Turns per hop count for the overhead figures. */
  turns: number;
  /** Turns with realistic latency for the critical-path ratio. */
  latencyTurns: number;
  /** Turns per fan-out width. */
  fanOutTurns: number;
  fanOut: number[];
  /** Deliveries per second, each rate held for `ingressSeconds`. */
  ingressRates: number[];
  ingressSeconds: number;
  saturation: SaturationOptions;
  memory: MemoryOptions;
  growth: GrowthOptions;
  /** The phases to run, by name (`--only`); all of them when absent. */
  only?: PhaseName[];
  log: (line: string) => void;
}

/** The bench's phases in the order they run; `--only` picks some of them by these names. */
export const PHASES = [
  'overhead',
  'floor',
  'critical-path',
  'fan-out',
  'growth',
  'saturation',
  'saturation-postgres',
  'memory',
  'ingress',
] as const;
export type PhaseName = (typeof PHASES)[number];

const REALISTIC = { llm: [300, 800] as [number, number], tools: [50, 200] as [number, number] };
const TOOL_MS = 200;
/** Turns run before each measured phase and thrown away: the first turns of a worker pay for its caches. */
const WARM_UP = 2;

export const ms = (value: number) => `${Math.round(value)} ms`;
/** Melvin's p50 ÷ the peer's: above 1, Melvin takes longer. */
export const ratio = (melvin: number[], peer: number[]) => (percentile(melvin, 50) / percentile(peer, 50)).toFixed(2);
export const p50p95 = (values: number[], unit: (v: number) => string) =>
  `${unit(percentile(values, 50))} / ${unit(percentile(values, 95))}`;
export const range = (values: number[]) => {
  const [low, high] = [Math.min(...values), Math.max(...values)];
  return low === high ? String(low) : `${low}–${high}`;
};

/** What the bench reads of any system's turn. */
export type TurnMeasures = Pick<TurnSpans, 'turnMs' | 'activityMs' | 'overheadMs' | 'gatherMs' | 'toolCalls'>;

/**
 * A system under the bench: it runs one turn of a conversation the sandbox holds, and measures it. Turns of different
 * conversations may run at once.
 */
export interface System<M extends TurnMeasures = TurnMeasures> {
  name: string;
  turn(conversation: Conversation): Promise<M>;
}

/** One turn a system ran: its conversation, what it measured, and the hops the sandbox model planned for it. */
export interface TurnResult<M extends TurnMeasures = TurnMeasures> {
  conversation: Conversation;
  measures: M;
  hops: number;
}

/**
 * Melvin: the conversation's signed webhook through the ingress, its run to its close, the spans of its history (its
 * local activities' times from the worker's log, which the harness must pass to `localActivities`).
 */
export function melvinSystem(harness: Harness, localActivities: LocalActivityLog): System<TurnSpans> {
  return {
    name: 'Melvin',
    async turn(conversation) {
      const handle = await melvinTurn(harness, conversation);
      return melvinSpans(await handle.fetchHistory(), handle.workflowId, localActivities);
    },
  };
}

/** The LangGraph peer: the turn asked of its process, which measures it (see bench/peer-process.ts). */
export function peerSystem(peer: PeerProcess): System<PeerTurnMeasures> {
  return { name: PEER, turn: (conversation) => peer.turn(conversation.id) };
}

export class Bench {
  private readonly shape: BenchShape = { hops: 1 };
  readonly localActivities = new LocalActivityLog();
  readonly heap = new HeapLog();
  readonly harness = new Harness({
    responder: benchResponder(this.shape),
    workerLogLevel: 'DEBUG',
    // The memory phase collects the worker's garbage before it reads its memory (bench/gc-on-signal.cjs).
    workerNodeArgs: ['--expose-gc', '--require', require.resolve('./gc-on-signal.cjs')],
    log: (line) => {
      this.localActivities.collect(line);
      this.heap.collect(line);
    },
  });
  readonly peerProcess = new PeerProcess(TURN_SETTINGS);
  readonly melvin = melvinSystem(this.harness, this.localActivities);
  readonly peer = peerSystem(this.peerProcess);
  /** What the phases measured that the capacity plan is derived from. */
  readonly measured: CapacityInputs = {};

  constructor(private readonly options: BenchOptions) {}

  /** The stack, then the peer beside it with the worker's environment (its dependencies installed first if need be). */
  async start(): Promise<void> {
    await ensurePeerDeps(this.options.log);
    await this.harness.start();
    try {
      await this.peerProcess.start(this.harness.workerEnvironment);
    } catch (err) {
      await this.stop().catch(() => undefined);
      throw err;
    }
  }

  async stop(): Promise<void> {
    await this.peerProcess.stop();
    await this.harness.stop();
  }

  /** Sets the sandbox for a phase: model and tool latency (undefined: none) and the shape of each turn. */
  configure(shape: BenchShape, latency: { llm?: [number, number]; tools?: [number, number] }): void {
    Object.assign(this.shape, { toolCalls: undefined }, shape);
    this.harness.sandbox.model.latency.range = latency.llm;
    this.harness.sandbox.talent.latency.range = latency.tools;
  }

  /** One turn of a new conversation by `system`, and the plans the sandbox model made for it (one a hop). */
  async turn<M extends TurnMeasures>(system: System<M>): Promise<TurnResult<M>> {
    const conversation = this.harness.addConversation('payment');
    const measures = await system.turn(conversation);
    return { conversation, measures, hops: plannedHops(this.harness, conversation) };
  }

  /**
   * `count` turns of each system, taken in turn (Melvin's, then the peer's, and again), after each system's warm-up:
   * whatever the machine does meanwhile (another tenant, a slower minute) falls on both alike, not on whichever ran
   * second.
   */
  async pairedTurns<M extends TurnMeasures, P extends TurnMeasures>(
    melvin: System<M>,
    peer: System<P>,
    label: string,
    count: number,
  ) {
    for (let i = 0; i < WARM_UP; i++) await this.turn(melvin);
    for (let i = 0; i < WARM_UP; i++) await this.turn(peer);
    const results = { melvin: [] as TurnResult<M>[], peer: [] as TurnResult<P>[] };
    for (let i = 0; i < count; i++) {
      results.melvin.push(await this.turn(melvin));
      results.peer.push(await this.turn(peer));
      if ((i + 1) % 10 === 0 || i + 1 === count) this.options.log(`${label}: ${i + 1} / ${count} turns of each`);
    }
    return results;
  }

  async overhead(hops: 1 | 2): Promise<Report> {
    this.configure({ hops }, {});
    const label = `overhead, ${hops} hop(s)`;
    const { melvin: results, peer } = await this.pairedTurns(this.melvin, this.peer, label, this.options.turns);
    const each = (key: 'overheadMs' | 'queueMs' | 'turnMs' | 'activityMs' | 'workflowTasks' | 'events') =>
      results.map((r) => r.measures[key]);
    const peerEach = (key: 'overheadMs' | 'dispatchMs' | 'turnMs' | 'checkpoints' | 'threadBytes') =>
      peer.map((r) => r.measures[key]);
    if (hops === 1) this.measured.eventsPerTurn = Math.max(...each('events'));
    return {
      experiment: `overhead, ${hops}-hop turn`,
      figures: [
        ['turns (sequential, zero-latency sandbox)', results.length],
        ['overhead p50 / p95', p50p95(each('overheadMs'), ms)],
        ['of the overhead, tasks waiting in task queues p50', ms(percentile(each('queueMs'), 50))],
        ['turn time p50 / p95', p50p95(each('turnMs'), ms)],
        ['time in activities p50', ms(percentile(each('activityMs'), 50))],
        ['workflow tasks per turn', range(each('workflowTasks'))],
        ['history events per turn', range(each('events'))],
        [`${PEER}: overhead p50 / p95`, p50p95(peerEach('overheadMs'), ms)],
        [`${PEER}: of the overhead, tasks waiting to start p50`, ms(percentile(peerEach('dispatchMs'), 50))],
        [`${PEER}: turn time p50 / p95`, p50p95(peerEach('turnMs'), ms)],
        [`${PEER}: checkpoints per turn`, range(peerEach('checkpoints'))],
        [`${PEER}: checkpoint bytes per turn p50`, Math.round(percentile(peerEach('threadBytes'), 50))],
        ['Melvin ÷ peer: overhead p50', ratio(each('overheadMs'), peerEach('overheadMs'))],
      ],
      checks: [this.tookHops(results, hops), this.tookHops(peer, hops, `${PEER}: `)],
    };
  }

  private tookHops(results: { hops: number }[], hops: number, prefix = ''): Check {
    return check(
      `${prefix}every turn took ${hops} hop(s)`,
      results.every((r) => r.hops === hops),
    );
  }

  async criticalPath(): Promise<Report> {
    this.configure({ hops: 1 }, REALISTIC);
    const turns = this.options.latencyTurns;
    const { melvin: results, peer } = await this.pairedTurns(this.melvin, this.peer, 'critical path', turns);
    const ratios = (of: typeof results | typeof peer) =>
      of.map((r) => r.measures.turnMs / this.harness.criticalPathMs(r.conversation));
    const [melvinRatios, peerRatios] = [ratios(results), ratios(peer)];
    this.measured.turnTimeOverWaits = percentile(melvinRatios, 50);
    const turnTimes = (of: typeof results | typeof peer) => of.map((r) => r.measures.turnMs);
    return {
      experiment: 'latency ÷ critical path',
      figures: [
        [
          'turns (sequential)',
          `${results.length}, LLM ${REALISTIC.llm.join('–')} ms a call, tools ${REALISTIC.tools.join('–')} ms`,
        ],
        ['turn time p50 / p95', p50p95(turnTimes(results), ms)],
        ['turn time ÷ sandbox critical path p50 / p95', p50p95(melvinRatios, (v) => v.toFixed(2))],
        [`${PEER}: turn time p50 / p95`, p50p95(turnTimes(peer), ms)],
        [`${PEER}: turn time ÷ sandbox critical path p50 / p95`, p50p95(peerRatios, (v) => v.toFixed(2))],
        ['Melvin ÷ peer: latency ratio p50', ratio(melvinRatios, peerRatios)],
      ],
      checks: [this.ownCriticalPaths(results), this.ownCriticalPaths(peer, `${PEER}: `)],
    };
  }

  /**
   * That each turn's ratio has a denominator: its critical path is made of the model and tool calls the sandbox
   * recorded for its conversation, each with the latency it imposed. A turn time is at least the waits it made, so a
   * ratio under 1 cannot happen; what can is a critical path missing calls (tied to no conversation), which would
   * inflate the ratio without anything else looking wrong.
   */
  private ownCriticalPaths(results: { conversation: Conversation }[], prefix = ''): Check {
    const gaps = results.flatMap(({ conversation }) =>
      criticalPathGaps(this.harness.sandboxCalls(conversation)).map((gap) => `conversation ${conversation.id}: ${gap}`),
    );
    return check(
      `${prefix}every turn's critical path is its own model and tool calls, each with its latency`,
      gaps.length === 0,
      gaps[0],
    );
  }

  async fanOut(): Promise<Report> {
    const figures: Report['figures'] = [];
    const checks = [];
    let compared: Report['figures'][number] | undefined;
    for (const k of this.options.fanOut) {
      this.configure({ hops: 1, toolCalls: k }, { tools: [TOOL_MS, TOOL_MS] });
      const turns = await this.pairedTurns(this.melvin, this.peer, `fan-out k=${k}`, this.options.fanOutTurns);
      const melvin = this.gathers(turns.melvin, k, '');
      const peer = this.gathers(turns.peer, k, `${PEER}, `);
      figures.push(melvin.figure, peer.figure);
      checks.push(melvin.check, peer.check);
      // The widest fan-out is the one compared.
      compared = [`Melvin ÷ peer: Gather at k=${k} p50`, ratio(melvin.relative, peer.relative)];
    }
    if (compared) figures.push(compared);
    return { experiment: 'Gather fan-out', figures, checks };
  }

  /** Turns whose first hop planned k calls: each Gather's time ÷ one call's, its figure and its check. */
  private gathers(results: TurnResult[], k: number, prefix: string) {
    const relative = results.map((r) => (r.measures.gatherMs ?? NaN) / TOOL_MS);
    const figure: Report['figures'][number] = [
      `${prefix}k=${k}: Gather ÷ ${TOOL_MS} ms p50 / max (${results.length} turns)`,
      `${percentile(relative, 50).toFixed(2)} / ${Math.max(...relative).toFixed(2)}`,
    ];
    const made = check(
      `${prefix}k=${k}: every turn made ${k} tool calls`,
      results.every((r) => r.measures.toolCalls === k),
    );
    return { relative, figure, check: made };
  }

  /**
   * Deliveries at a steady rate, each timed to its 202, to the ingress in a process of its own as it is deployed (the
   * sandbox's Intercom, which sends them, stays in this one). The worker is stopped first: the ingress's work (verify
   * the signature, start or signal the run in Temporal) is what is measured, not a machine busy running the turns.
   * Each rate runs twice: acknowledged once Temporal has the delivery, then with the outbox (INGRESS_OUTBOX_DIR),
   * acknowledged once it is synced to disk and handed to Temporal afterwards, where the time until the ingress's
   * metrics show every delivery handed over counts too.
   */
  async ingress(): Promise<Report> {
    await this.harness.killWorker();
    const figures: Report['figures'] = [];
    const checks = [];
    const outboxDir = await mkdtemp(path.join(tmpdir(), 'melvin-bench-outbox-'));
    try {
      for (const outbox of [false, true]) {
        const prefix = outbox ? 'outbox: ' : '';
        for (const rate of this.options.ingressRates) {
          // A fresh ingress process for each rate, so its counters hold this rate's deliveries only.
          const metricsUrl = await this.harness.useIngressProcess(outbox ? outboxDir : undefined);
          // A deployed ingress runs for days: one second at the rate first, not counted, warms its code and connection.
          await this.deliverAtRate(rate, rate);
          if (outbox) await outboxHandedOver(metricsUrl, rate, performance.now());
          const count = Math.round(rate * this.options.ingressSeconds);
          const outcome = outbox ? 'queued' : 'signalled';
          const clockBefore = await ingressClock(metricsUrl, outcome);
          const { acks, failures, elapsed, started } = await this.deliverAtRate(rate, count);
          const clockAfter = await ingressClock(metricsUrl, outcome);
          const handedOver = outbox ? await outboxHandedOver(metricsUrl, rate + count, started) : undefined;
          this.options.log(`ingress ${prefix}${rate}/s: ${count} deliveries in ${elapsed.toFixed(1)} s`);
          figures.push([
            `${prefix}${rate}/s for ${this.options.ingressSeconds} s: ack p50 / p99`,
            `${ms(percentile(acks, 50))} / ${ms(percentile(acks, 99))}; sent in ${elapsed.toFixed(1)} s` +
              (handedOver ? `; all in Temporal ${handedOver.seconds.toFixed(1)} s after the first` : ''),
          ]);
          // The ingress's own histogram times a delivery from its handler to its answer: what it leaves out of the p99
          // above (waiting for a core, the sender's own delays) is the difference.
          const within = clockAfter.within50ms - clockBefore.within50ms;
          const answered = clockAfter.count - clockBefore.count;
          figures.push([
            `${prefix}${rate}/s: answered within 50 ms by the ingress's own clock`,
            `${within} of ${answered} (${((100 * within) / Math.max(answered, 1)).toFixed(1)} %)`,
          ]);
          checks.push(
            check(`${prefix}${rate}/s: all ${count} deliveries answered 202`, failures === 0, `${failures} failed`),
          );
          if (handedOver) {
            checks.push(
              check(
                `${prefix}${rate}/s: all ${count} handed to Temporal`,
                handedOver.signalled === rate + count,
                `${handedOver.signalled - rate} signalled`,
              ),
            );
          }
        }
      }
    } finally {
      await this.harness.useIngressInProcess();
      await rm(outboxDir, { recursive: true, force: true });
    }
    return { experiment: 'ingress ack', figures, checks };
  }

  /** `count` new conversations' first deliveries, `1000 / rate` ms apart: their acknowledgement times and failures. */
  private async deliverAtRate(rate: number, count: number) {
    const conversations = Array.from({ length: count }, () => this.harness.addConversation('payment'));
    const started = performance.now();
    let failures = 0;
    await Promise.all(
      conversations.map(
        (c, i) =>
          new Promise<void>((resolve) =>
            setTimeout(
              () =>
                this.harness.deliver(c).then(resolve, () => {
                  failures++;
                  resolve();
                }),
              (i * 1000) / rate,
            ),
          ),
      ),
    );
    const elapsed = (performance.now() - started) / 1000;
    const acks = conversations.filter((c) => c.ackMs !== undefined).map((c) => c.ackMs!);
    return { acks, failures, elapsed, started };
  }
}

/** The ingress's `melvin_ingress_ack_seconds` for `outcome`: deliveries answered, and those within 50 ms. */
async function ingressClock(metricsUrl: string, outcome: string): Promise<{ count: number; within50ms: number }> {
  const metrics = await (await fetch(metricsUrl)).text();
  return {
    count: gauge(metrics, `melvin_ingress_ack_seconds_count{outcome="${outcome}"}`) ?? 0,
    within50ms: gauge(metrics, `melvin_ingress_ack_seconds_bucket{le="0.05",outcome="${outcome}"}`) ?? 0,
  };
}

/**
 * Polls the ingress's metrics until its outbox has handed over `count` deliveries since it started (or 120 s pass):
 * seconds since `started`, and how many Temporal took.
 */
async function outboxHandedOver(metricsUrl: string, count: number, started: number) {
  const signalledSeries = 'melvin_ingress_outbox_forwarded_total{kind="message",outcome="signalled"}';
  let signalled = 0;
  const deadline = performance.now() + 120_000;
  while (performance.now() < deadline) {
    const metrics = await (await fetch(metricsUrl)).text();
    signalled = gauge(metrics, signalledSeries) ?? 0;
    if (signalled >= count && gauge(metrics, 'melvin_ingress_outbox_pending') === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { seconds: (performance.now() - started) / 1000, signalled };
}

/** The sizes of a run from its command line: the defaults, `--quick` for a smoke run, `--turns N` per hop count. */
export function benchOptions(args: string[], log: (line: string) => void): BenchOptions {
  const quick = args.includes('--quick');
  const at = args.indexOf('--turns');
  const turns = at === -1 ? (quick ? 5 : 50) : Number(args[at + 1]);
  if (!Number.isInteger(turns) || turns < 1) throw new Error('--turns takes a whole number of turns, at least 1');
  const only = args.indexOf('--only');
  const phases = only === -1 ? undefined : (args[only + 1] ?? '').split(',');
  const unknown = phases?.filter((name) => !(PHASES as readonly string[]).includes(name));
  if (unknown?.length) throw new Error(`--only takes phases from ${PHASES.join(', ')}; not: ${unknown.join(', ')}`);
  return {
    ...(phases && { only: phases as PhaseName[] }),
    turns,
    latencyTurns: quick ? 5 : 30,
    fanOutTurns: quick ? 2 : 5,
    fanOut: quick ? [1, 2, 4] : [1, 2, 4, 8],
    ingressRates: [50, 100, 200],
    ingressSeconds: quick ? 1 : 3,
    saturation: {
      concurrency: quick ? [1, 2, 4] : [1, 2, 4, 8, 16, 32, 64],
      stepSeconds: quick ? 3 : 8,
      postgres: !quick,
      log,
    },
    memory: { conversations: quick ? 20 : 1000, concurrency: quick ? 4 : 16, log },
    growth: {
      turns: quick ? 1 : 3,
      hops: quick ? [1, 3] : [1, 2, 3, 4, 5],
      toolCalls: quick ? [1, 4] : [1, 2, 4, 8, 12],
      parts: quick ? [1, 100] : [1, 10, 100, 500],
      log,
    },
    log,
  };
}

/** Every figure, measured in one run on one stack; the phases run one after another so none loads another's. */
export async function bench(options: BenchOptions): Promise<Report[]> {
  const b = new Bench(options);
  await b.start();
  try {
    const reports: Report[] = [];
    const phases: [PhaseName, () => Promise<Report | Report[]>][] = [
      ['overhead', async () => [await b.overhead(1), await b.overhead(2)]],
      ['floor', () => floor(b, { turns: options.turns, warmUp: WARM_UP, log: options.log })],
      ['critical-path', () => b.criticalPath()],
      ['fan-out', () => b.fanOut()],
      ['growth', () => growth(b, options.growth)],
      ['saturation', () => saturationOnDevServer(b, options.saturation)],
      ['saturation-postgres', () => saturationOnPostgres(options.saturation, b.measured)],
      // Last before the ingress phase, which stops the worker: the worker keeps the runs it opened in its cache.
      ['memory', () => memory(b, options.memory)],
      ['ingress', () => b.ingress()],
    ];
    for (const [, phase] of phases.filter(([name]) => !options.only || options.only.includes(name))) {
      for (const report of [await phase()].flat()) {
        options.log(`${report.experiment} done`);
        reports.push(report);
      }
    }
    const settings = b.harness.workerSettings;
    reports.push(
      capacityPlan(b.measured, {
        cachedRuns: Number(settings?.max_cached_workflows),
        localActivitySlots: Number(settings?.local_activity_slots),
      }),
    );
    return reports;
  } finally {
    await b.stop();
  }
}
