// The bench: Melvin's own costs measured on one stack: orchestration overhead, latency against the sandbox's critical
// path, Gather's fan-out, cost growth, saturation, memory per open conversation, and the ingress's acknowledgement.
import { workflowIdFor } from '../src/shared';
import { Harness, percentile, type Conversation } from '../reliability/harness';
import { check, type Report } from '../reliability/report';
import { growth, type GrowthOptions } from './growth';
import { memory, type MemoryOptions } from './memory';
import { benchResponder, type BenchShape } from './responder';
import { saturationOnDevServer, saturationOnPostgres, type SaturationOptions } from './saturation';
import { turnSpans, type TurnSpans } from './spans';

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
  log: (line: string) => void;
}

const REALISTIC = { llm: [300, 800] as [number, number], tools: [50, 200] as [number, number] };
const TOOL_MS = 200;
/** Turns run before each measured phase and thrown away: the first turns of a worker pay for its caches. */
const WARM_UP = 2;
const TURN_TIMEOUT_MS = 60_000;

const ms = (value: number) => `${Math.round(value)} ms`;
const p50p95 = (values: number[], unit: (v: number) => string) =>
  `${unit(percentile(values, 50))} / ${unit(percentile(values, 95))}`;
const range = (values: number[]) => {
  const [low, high] = [Math.min(...values), Math.max(...values)];
  return low === high ? String(low) : `${low}–${high}`;
};

export class Bench {
  private readonly shape: BenchShape = { hops: 1 };
  readonly harness = new Harness({ responder: benchResponder(this.shape) });

  constructor(private readonly options: BenchOptions) {}

  /** Sets the sandbox for a phase: model and tool latency (undefined: none) and the shape of each turn. */
  configure(shape: BenchShape, latency: { llm?: [number, number]; tools?: [number, number] }): void {
    Object.assign(this.shape, { toolCalls: undefined }, shape);
    this.harness.sandbox.model.latency.range = latency.llm;
    this.harness.sandbox.talent.latency.range = latency.tools;
  }

  /** One turn through the ingress to its run's close, then its history's spans and the model's plans for it. */
  async turn(): Promise<{ conversation: Conversation; spans: TurnSpans; hops: number }> {
    const conversation = this.harness.addConversation('payment');
    await this.harness.deliver(conversation);
    const handle = this.harness.client.workflow.getHandle(workflowIdFor(conversation.id));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      handle.result(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`turn ${conversation.id} did not close`)), TURN_TIMEOUT_MS);
      }),
    ]).finally(() => clearTimeout(timer));
    const spans = turnSpans(await handle.fetchHistory());
    const hops = this.harness.sandbox.model.requests.filter(
      (r) => r.step === 'plan' && JSON.stringify(r.context.messages ?? []).includes(`[${conversation.id}]`),
    ).length;
    return { conversation, spans, hops };
  }

  async turns(label: string, count: number) {
    for (let i = 0; i < WARM_UP; i++) await this.turn();
    const results = [];
    for (let i = 0; i < count; i++) {
      results.push(await this.turn());
      if ((i + 1) % 10 === 0 || i + 1 === count) this.options.log(`${label}: ${i + 1} / ${count} turns`);
    }
    return results;
  }

  async overhead(hops: 1 | 2): Promise<Report> {
    this.configure({ hops }, {});
    const results = await this.turns(`overhead, ${hops} hop(s)`, this.options.turns);
    const each = (key: 'overheadMs' | 'queueMs' | 'turnMs' | 'activityMs' | 'workflowTasks' | 'events') =>
      results.map((r) => r.spans[key]);
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
      ],
      checks: [
        check(
          `every turn took ${hops} hop(s)`,
          results.every((r) => r.hops === hops),
        ),
      ],
    };
  }

  async criticalPath(): Promise<Report> {
    this.configure({ hops: 1 }, REALISTIC);
    const results = await this.turns('critical path', this.options.latencyTurns);
    const ratios = results.map((r) => r.spans.turnMs / this.harness.criticalPathMs(r.conversation));
    return {
      experiment: 'latency ÷ critical path',
      figures: [
        [
          'turns (sequential)',
          `${results.length}, LLM ${REALISTIC.llm.join('–')} ms a call, tools ${REALISTIC.tools.join('–')} ms`,
        ],
        [
          'turn time p50 / p95',
          p50p95(
            results.map((r) => r.spans.turnMs),
            ms,
          ),
        ],
        ['turn time ÷ sandbox critical path p50 / p95', p50p95(ratios, (v) => v.toFixed(2))],
      ],
      checks: [
        check(
          'every ratio is finite and at least 1',
          ratios.every((r) => Number.isFinite(r) && r >= 1),
        ),
      ],
    };
  }

  async fanOut(): Promise<Report> {
    const figures: Report['figures'] = [];
    const checks = [];
    for (const k of this.options.fanOut) {
      this.configure({ hops: 1, toolCalls: k }, { tools: [TOOL_MS, TOOL_MS] });
      const results = await this.turns(`fan-out k=${k}`, this.options.fanOutTurns);
      const gathers = results.map((r) => r.spans.gatherMs ?? NaN);
      figures.push([
        `k=${k}: Gather ÷ ${TOOL_MS} ms p50 / max (${results.length} turns)`,
        `${(percentile(gathers, 50) / TOOL_MS).toFixed(2)} / ${(Math.max(...gathers) / TOOL_MS).toFixed(2)}`,
      ]);
      checks.push(
        check(
          `k=${k}: every turn made ${k} tool calls`,
          results.every((r) => r.spans.toolCalls === k),
        ),
      );
    }
    return { experiment: 'Gather fan-out', figures, checks };
  }

  /**
   * Deliveries at a steady rate, each timed to its 202. The worker is stopped first: the ingress's work (verify the
   * signature, start or signal the run in Temporal) is what is measured, not a machine busy running the turns.
   */
  async ingress(): Promise<Report> {
    await this.harness.killWorker();
    const figures: Report['figures'] = [];
    const checks = [];
    for (const rate of this.options.ingressRates) {
      const count = Math.round(rate * this.options.ingressSeconds);
      const conversations = Array.from({ length: count }, () => this.harness.addConversation('payment'));
      const gap = 1000 / rate;
      const started = performance.now();
      const failures: unknown[] = [];
      await Promise.all(
        conversations.map(
          (c, i) =>
            new Promise<void>((resolve) =>
              setTimeout(
                () =>
                  this.harness.deliver(c).then(resolve, (err: unknown) => {
                    failures.push(err);
                    resolve();
                  }),
                i * gap,
              ),
            ),
        ),
      );
      const elapsed = (performance.now() - started) / 1000;
      const acks = conversations.filter((c) => c.ackMs !== undefined).map((c) => c.ackMs!);
      this.options.log(`ingress ${rate}/s: ${count} deliveries in ${elapsed.toFixed(1)} s`);
      figures.push([
        `${rate}/s for ${this.options.ingressSeconds} s: ack p50 / p99`,
        `${ms(percentile(acks, 50))} / ${ms(percentile(acks, 99))}; sent in ${elapsed.toFixed(1)} s`,
      ]);
      checks.push(
        check(`${rate}/s: all ${count} deliveries answered 202`, failures.length === 0, `${failures.length} failed`),
      );
    }
    return { experiment: 'ingress ack', figures, checks };
  }
}

/** The sizes of a run from its command line: the defaults, `--quick` for a smoke run, `--turns N` per hop count. */
export function benchOptions(args: string[], log: (line: string) => void): BenchOptions {
  const quick = args.includes('--quick');
  const at = args.indexOf('--turns');
  const turns = at === -1 ? (quick ? 5 : 50) : Number(args[at + 1]);
  if (!Number.isInteger(turns) || turns < 1) throw new Error('--turns takes a whole number of turns, at least 1');
  return {
    turns,
    latencyTurns: quick ? 5 : 20,
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
  await b.harness.start();
  try {
    const reports: Report[] = [];
    for (const phase of [
      () => b.overhead(1),
      () => b.overhead(2),
      () => b.criticalPath(),
      () => b.fanOut(),
      () => growth(b, options.growth),
      () => saturationOnDevServer(b, options.saturation),
      () => saturationOnPostgres(options.saturation),
      // Last before the ingress phase, which stops the worker: the worker keeps the runs it opened in its cache.
      () => memory(b, options.memory),
      () => b.ingress(),
    ]) {
      const report = await phase();
      options.log(`${report.experiment} done`);
      reports.push(report);
    }
    return reports;
  } finally {
    await b.harness.stop();
  }
}
