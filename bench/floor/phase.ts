// The bench's floor phase: a bare workflow of the shape of Melvin's 1-hop turn (./workflow), run on the same server,
// codec and worker options, its turns taken in turn with Melvin's and the LangGraph peer's. Melvin's overhead then
// divides into what any workflow of that shape costs on Temporal and what Melvin's own code adds, and the floor is set
// against the peer's overhead: a target below the floor cannot be met by a change to Melvin's code.
import type { Client } from '@temporalio/client';
import { check, type Report } from '../../harness/report';
import { percentile } from '../../harness/harness';
import { cpuMs } from '../../harness/proc';
import { freePorts, startChild } from '../../harness/stack';
import { waitFor } from '../../sandbox/wait';
import { PEER } from '../peer-process';
import { localActivityCount, turnSpans, type TurnSpans } from '../spans';
import { ms, p50p95, range, ratio, type Bench, type System, type TurnResult } from '../bench';
import { FLOOR_READY, FLOOR_TASK_QUEUE } from './worker';
import { bareTurn, floorMessage } from './workflow';

/** The bare turn's steps: Initialize's three reads, five agent calls and Finalize's two writes; two activities. */
const LOCAL_STEPS = 10;
const ACTIVITY_STEPS = 2;

/** A bare turn's spans, and the local activities and activities it ran. */
type FloorMeasures = TurnSpans & { steps: [number, number] };

/** The bare turn as a system of the bench: started by a signal-with-start as Melvin's ingress starts a turn. */
function floorSystem(client: Client): System<FloorMeasures> {
  let started = 0;
  return {
    name: 'bare workflow',
    async turn() {
      const handle = await client.workflow.signalWithStart(bareTurn, {
        taskQueue: FLOOR_TASK_QUEUE,
        workflowId: `bench-floor-${++started}`,
        signal: floorMessage,
      });
      await handle.result();
      const history = await handle.fetchHistory();
      const activities = (history.events ?? []).filter((e) => e.activityTaskCompletedEventAttributes).length;
      // Its local activities do nothing: their markers count as no time in activities, which leaves the floor a bound.
      return { ...turnSpans(history), steps: [localActivityCount(history), activities] };
    },
  };
}

export async function floor(
  b: Bench,
  { turns, warmUp, log }: { turns: number; warmUp: number; log: (line: string) => void },
): Promise<Report> {
  b.configure({ hops: 1 }, {});
  const env = { ...b.harness.workerEnvironment, WORKER_METRICS_ADDRESS: `127.0.0.1:${(await freePorts(1))[0]}` };
  const child = startChild('floor worker', 'bench/floor/worker.ts', env, () => undefined);
  const exited = new Promise((resolve) => child.process.once('exit', resolve));
  try {
    await waitFor(
      'the floor worker to poll',
      () => {
        if (child.process.exitCode !== null) throw new Error(`the floor worker exited:\n${child.output.join('\n')}`);
        return child.output.includes(FLOOR_READY);
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const bare = floorSystem(b.harness.client);
    // Each system's warm-up, then one turn of each in turn: a slower minute of the machine falls on all three alike.
    const runs = [bare, b.melvin, b.peer].map((system) => ({ system, results: [] as TurnResult[] }));
    for (const { system } of runs) for (let i = 0; i < warmUp; i++) await b.turn(system as System);
    // Each worker runs its own system's turns only, so its CPU over the loop divided by the turns is what one costs it.
    const workers = [child.process.pid, b.harness.workerPid];
    const cpuBefore = workers.map((pid) => (pid === undefined ? undefined : cpuMs(pid)));
    for (let i = 0; i < turns; i++) {
      for (const run of runs) run.results.push(await b.turn(run.system as System));
      if ((i + 1) % 10 === 0 || i + 1 === turns) log(`floor: ${i + 1} / ${turns} turns of each`);
    }
    const [bareCpu, melvinCpu] = workers.map((pid, at) => {
      const [before, after] = [cpuBefore[at], pid === undefined ? undefined : cpuMs(pid)];
      return before === undefined || after === undefined ? '—' : ms((after - before) / turns);
    });
    const [floorTurns, melvinTurns, peerTurns] = runs.map((run) => run.results) as [
      TurnResult<FloorMeasures>[],
      TurnResult<TurnSpans>[],
      TurnResult[],
    ];
    const overhead = (of: TurnResult[]) => of.map((r) => r.measures.overheadMs);
    const [bareOverhead, melvinOverhead, peerOverhead] = [
      overhead(floorTurns),
      overhead(melvinTurns),
      overhead(peerTurns),
    ];
    return {
      experiment: 'floor, a 1-hop turn’s shape',
      figures: [
        ['turns of each (sequential, zero-latency sandbox, taken in turn)', turns],
        ['bare workflow: overhead p50 / p95', p50p95(bareOverhead, ms)],
        [
          'bare workflow: workflow tasks / history events per turn',
          `${range(floorTurns.map((r) => r.measures.workflowTasks))} / ${range(floorTurns.map((r) => r.measures.events))}`,
        ],
        ['Melvin: overhead p50 / p95', p50p95(melvinOverhead, ms)],
        ['worker CPU per turn: bare workflow / Melvin', `${bareCpu} / ${melvinCpu}`],
        [
          'Melvin less the bare workflow: overhead p50',
          ms(percentile(melvinOverhead, 50) - percentile(bareOverhead, 50)),
        ],
        [`${PEER}: overhead p50 / p95`, p50p95(peerOverhead, ms)],
        ['bare workflow ÷ peer: overhead p50', ratio(bareOverhead, peerOverhead)],
        ['Melvin ÷ peer: overhead p50', ratio(melvinOverhead, peerOverhead)],
      ],
      checks: [
        check(
          `bare workflow: every turn ran its ${LOCAL_STEPS} local activities and ${ACTIVITY_STEPS} activities`,
          floorTurns.every((r) => r.measures.steps[0] === LOCAL_STEPS && r.measures.steps[1] === ACTIVITY_STEPS),
        ),
        check(
          'Melvin: every turn took 1 hop(s)',
          melvinTurns.every((r) => r.hops === 1),
        ),
        check(
          `${PEER}: every turn took 1 hop(s)`,
          peerTurns.every((r) => r.hops === 1),
        ),
      ],
    };
  } finally {
    if (child.process.exitCode === null) child.process.kill('SIGTERM');
    await exited;
  }
}
