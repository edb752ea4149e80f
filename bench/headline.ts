// The bench's headline: one short table of the figures the issue sets targets for, read off the phases' reports, for
// the README (the whole table goes to docs/figures/bench.md).
import type { Report } from '../harness/report';
import { PEER } from './peer-process';

/** A figure of one report: the value of the first row whose label starts with `label`; undefined when absent. */
function figure(reports: Report[], experiment: string, label: string): string | undefined {
  const report = reports.find((r) => r.experiment.startsWith(experiment));
  const row = report?.figures.find(([l]) => l.startsWith(label));
  return row === undefined ? undefined : String(row[1]);
}

/** The first of a "p50 / p95" (or "p50 / max") value; a knee's "C=2: 8.7 turns/s…" as its turns a second. */
const first = (value: string | undefined) => value?.split(' / ')[0];
const knee = (value: string | undefined) => /: ([\d.]+ turns\/s)/.exec(value ?? '')?.[1];

interface Line {
  what: string;
  target?: string;
  experiment: string;
  /** Melvin's row (or how to read Melvin's figure off the reports), the peer's (none: it has no such figure), the ratio's. */
  melvin: string | ((reports: Report[]) => string | undefined);
  peer?: string;
  ratio?: string;
  read?: (value: string | undefined) => string | undefined;
}

/** The ingress's ack p50 / p99 at 200 deliveries a second (`prefix` picks the mode: '' or 'outbox: '). */
function ingressAckAt200(prefix: string): (reports: Report[]) => string | undefined {
  return (reports) => {
    const report = reports.find((r) => r.experiment === 'ingress ack');
    const figure = report?.figures.find(([label]) => label.startsWith(`${prefix}200/s for `));
    return figure ? String(figure[1]).split(';')[0] : undefined;
  };
}

const LINES: Line[] = [
  {
    what: 'orchestration overhead, 1-hop turn, p50',
    target: '≤ 100 ms',
    experiment: 'overhead, 1-hop',
    melvin: 'overhead p50',
    peer: `${PEER}: overhead p50`,
    ratio: 'Melvin ÷ peer: overhead',
    read: first,
  },
  {
    what: 'the same for a bare workflow of that turn’s shape (Temporal alone), p50',
    experiment: 'floor',
    melvin: 'bare workflow: overhead p50',
    peer: `${PEER}: overhead p50`,
    ratio: 'bare workflow ÷ peer',
    read: first,
  },
  {
    what: 'orchestration overhead, 2-hop turn, p50',
    experiment: 'overhead, 2-hop',
    melvin: 'overhead p50',
    peer: `${PEER}: overhead p50`,
    ratio: 'Melvin ÷ peer: overhead',
    read: first,
  },
  {
    what: 'turn time ÷ critical path, realistic latency, p50',
    target: '≤ 1.10',
    experiment: 'latency ÷ critical path',
    melvin: 'turn time ÷ sandbox critical path',
    peer: `${PEER}: turn time ÷ sandbox critical path`,
    ratio: 'Melvin ÷ peer: latency ratio',
    read: first,
  },
  {
    what: 'Gather of 8 calls of 200 ms ÷ 200 ms, p50',
    target: '≤ 1.2',
    experiment: 'Gather fan-out',
    melvin: 'k=8: Gather',
    peer: `${PEER}, k=8: Gather`,
    ratio: 'Melvin ÷ peer: Gather at k=8',
    read: first,
  },
  {
    what: 'saturation throughput at the knee, dev server (SQLite)',
    target: '≥ the peer’s',
    experiment: 'saturation, dev server',
    melvin: 'knee',
    peer: `${PEER}: knee`,
    ratio: 'Melvin ÷ peer: turns/s at the knee',
    read: knee,
  },
  {
    what: 'CPU per turn at the knee, dev server (SQLite), by process',
    experiment: 'saturation, dev server',
    melvin: 'CPU per turn at the knee',
    peer: `${PEER}: CPU per turn at the knee`,
  },
  {
    what: 'saturation throughput at the knee, Temporal on PostgreSQL',
    experiment: 'saturation, Temporal',
    melvin: 'knee',
    read: knee,
  },
  {
    what: 'worker memory per open conversation',
    experiment: 'memory per open conversation',
    melvin: '(RSS less young generations, with them − before) ÷ N',
  },
  {
    what: 'ingress ack p50 / p99 at 200 deliveries a second, once Temporal has each',
    experiment: 'ingress ack',
    melvin: ingressAckAt200(''),
  },
  {
    what: 'ingress ack p50 / p99 at 200 deliveries a second, with the outbox',
    target: 'p99 ≤ 50 ms',
    experiment: 'ingress ack',
    melvin: ingressAckAt200('outbox: '),
  },
];

/** The headline table in Markdown: a cell the run did not measure shows "—". */
export function headline(reports: Report[]): string {
  const rows = LINES.map((line) => {
    const read = line.read ?? ((v: string | undefined) => v);
    const cell = (label: string | undefined) =>
      (label === undefined ? undefined : read(figure(reports, line.experiment, label))) ?? '—';
    const melvin = typeof line.melvin === 'string' ? cell(line.melvin) : (line.melvin(reports) ?? '—');
    const ratio = line.ratio === undefined ? '—' : (figure(reports, line.experiment, line.ratio) ?? '—');
    return [line.what, melvin, cell(line.peer), ratio, line.target ?? '—'];
  });
  return [
    `| figure | Melvin | ${PEER} | Melvin ÷ peer | target |`,
    '| --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}
