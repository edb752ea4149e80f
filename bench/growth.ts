// The growth phase: how a turn's time and its run's history grow with the hops it takes, the tool calls of each hop
// and the length of the conversation, one dimension at a time, with the sandbox at zero latency.
import { temporal } from '@temporalio/proto';
import { percentile } from '../harness/harness';
import { check, type Report } from '../harness/report';
import type { Bench } from './bench';
import type { BenchShape } from './responder';
import { melvinSpans } from './spans';
import { melvinTurn, plannedHops } from './turns';

export interface GrowthOptions {
  /** Turns per point. */
  turns: number;
  /** Hops per turn (each one plan, gather and coverage). */
  hops: number[];
  /** Tool calls each hop plans, in a 1-hop turn. */
  toolCalls: number[];
  /** Parts of the conversation, the question last, in a 1-hop turn. */
  parts: number[];
  log: (line: string) => void;
}

interface Measured {
  turnMs: number;
  historyBytes: number;
  hops: number;
  toolCalls: number;
  /** Melvin Status on the conversation after the turn: `success` when the reply went out. */
  status: string;
}

interface Dimension {
  name: string;
  points: number[];
  /** The turn's shape and the conversation's earlier parts at a point. */
  at(point: number): { shape: BenchShape; earlierParts?: number };
  /** What each turn at a point must show, for the dimension's check. */
  holds(turn: Measured, point: number): boolean;
  claim: string;
}

/** Turns run before the first point and thrown away, as in the other phases. */
const WARM_UP = 2;

const kib = (bytes: number) => (bytes / 1024).toFixed(1);

/** Every dimension's points, a few turns each: per dimension, a row of turn times and a row of history sizes. */
export async function growth(b: Bench, options: GrowthOptions): Promise<Report> {
  const harness = b.harness;
  /** One turn at a point: its time from the history, and the history's size as the server stores it (encoded). */
  const turn = async (earlierParts: number | undefined): Promise<Measured> => {
    const conversation = harness.addConversation('payment', { earlierParts });
    const handle = await melvinTurn(harness, conversation);
    const history = await handle.fetchHistory();
    const spans = await melvinSpans(history, handle.workflowId, b.localActivities);
    return {
      turnMs: spans.turnMs,
      historyBytes: temporal.api.history.v1.History.encode(history).finish().length,
      hops: plannedHops(harness, conversation),
      toolCalls: spans.toolCalls,
      status: String(harness.sandbox.intercom.melvinStatus(conversation.id)),
    };
  };
  const dimensions: Dimension[] = [
    {
      name: 'hops',
      points: options.hops,
      at: (hops) => ({ shape: { hops } }),
      holds: (m, hops) => m.hops === hops,
      claim: 'every turn took the hops asked',
    },
    {
      name: 'tool calls per hop',
      points: options.toolCalls,
      at: (toolCalls) => ({ shape: { hops: 1, toolCalls } }),
      holds: (m, toolCalls) => m.toolCalls === toolCalls,
      claim: 'every turn made the tool calls asked',
    },
    {
      name: 'conversation parts',
      points: options.parts,
      at: (parts) => ({ shape: { hops: 1 }, earlierParts: parts - 1 }),
      holds: (m) => m.hops === 1,
      claim: 'every turn took one hop',
    },
  ];
  const maxHops = harness.turn.maxHops;
  harness.turn.maxHops = Math.max(maxHops, ...options.hops);
  const figures: Report['figures'] = [['turns per point (sequential, zero-latency sandbox)', options.turns]];
  const checks = [];
  /** Each point where a turn did not end with its reply sent, with the Melvin Status it ended with. */
  const unanswered: string[] = [];
  try {
    b.configure({ hops: 1 }, {});
    for (let i = 0; i < WARM_UP; i++) await turn(undefined);
    for (const d of dimensions) {
      const measured: Measured[][] = [];
      for (const point of d.points) {
        const { shape, earlierParts } = d.at(point);
        b.configure(shape, {});
        const turns: Measured[] = [];
        for (let i = 0; i < options.turns; i++) turns.push(await turn(earlierParts));
        measured.push(turns);
        for (const m of turns) if (m.status !== 'success') unanswered.push(`${d.name} ${point}: ${m.status}`);
      }
      options.log(`growth: ${d.name} done`);
      const p50 = (key: 'turnMs' | 'historyBytes') =>
        measured.map((turns) =>
          percentile(
            turns.map((m) => m[key]),
            50,
          ),
        );
      const label = `${d.name} ${d.points.join(' / ')}`;
      figures.push([`${label}: turn time p50`, `${p50('turnMs').map(Math.round).join(' / ')} ms`]);
      figures.push([`${label}: history p50`, `${p50('historyBytes').map(kib).join(' / ')} KiB`]);
      checks.push(
        check(
          `${d.name}: ${d.claim}`,
          measured.every((turns, i) => turns.every((m) => d.holds(m, d.points[i]!))),
        ),
      );
    }
  } finally {
    harness.turn.maxHops = maxHops;
  }
  checks.push(
    check('every turn sent its reply (Melvin Status success)', unanswered.length === 0, unanswered.join(', ')),
  );
  return { experiment: 'growth', figures, checks };
}
