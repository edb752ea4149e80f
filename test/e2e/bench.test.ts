// `npm run bench -- --quick` end to end, on a stack of its own and with the LangGraph peer beside it: every figure of
// the table is there and is a number, and the figures derived from others (ratios, the knee, where stepping stopped)
// agree with the rows they come from. No assertion times the machine: how fast is the bench's to measure.
import { bench, benchOptions } from '../../bench/bench';
import { headline } from '../../bench/headline';
import { table, type Report } from '../../harness/report';

let reports: Report[];

// A fresh clone first installs the peer's dependencies, which builds better-sqlite3 (a minute or two on two cores).
// The smoke run itself took 6–7 minutes on a slow 2-core machine beside the other test files, hence 15.
beforeAll(async () => {
  process.env.LOG_LEVEL = 'error';
  reports = await bench(benchOptions(['--quick'], () => undefined));
}, 900_000);

/** The value of one row, found by its experiment and the start of its label. */
function row(experiment: string, label: string): string {
  const report = reports.find((r) => r.experiment === experiment);
  const figure = report?.figures.find(([l]) => l.startsWith(label));
  if (!figure) throw new Error(`no row "${label}" in "${experiment}":\n${table(reports)}`);
  return String(figure[1]);
}

/** The numbers in a value such as "312 ms / 340 ms", with their signs (a figure that fell must not read as grown). */
function numbers(value: string): number[] {
  const found = (value.match(/-?\d+(\.\d+)?/g) ?? []).map(Number);
  expect(found.length).toBeGreaterThan(0);
  for (const n of found) expect(Number.isFinite(n)).toBe(true);
  return found;
}

/**
 * That a `Melvin ÷ peer` row, printed to two decimals, is Melvin's figure divided by the peer's, each printed rounded
 * to `step` (1 for whole milliseconds, 0.01 for two decimals): it fails on a ratio of other figures or turned upside
 * down, whatever the machine's speed.
 */
function expectQuotient(what: string, quotient: number, melvin: number, peer: number, step: number) {
  const low = (melvin - step / 2) / (peer + step / 2) - 0.005;
  const high = peer - step / 2 > 0 ? (melvin + step / 2) / (peer - step / 2) + 0.005 : Infinity;
  expect({ what, quotient, melvin, peer, within: quotient >= low && quotient <= high }).toEqual({
    what,
    quotient,
    melvin,
    peer,
    within: true,
  });
}

test('the overhead of a 1-hop and a 2-hop turn: positive, Melvin ÷ peer is their quotient, a second hop costs more events', () => {
  for (const hops of [1, 2]) {
    const experiment = `overhead, ${hops}-hop turn`;
    // The overhead is the turn time less the time in activities: at or below 0, the spans were read wrong.
    const [melvin] = numbers(row(experiment, 'overhead p50 / p95'));
    const [peer] = numbers(row(experiment, 'LangGraph peer: overhead p50 / p95'));
    expect(melvin).toBeGreaterThan(0);
    expect(peer).toBeGreaterThan(0);
    const [quotient] = numbers(row(experiment, 'Melvin ÷ peer: overhead p50'));
    expectQuotient(`${experiment}: overhead`, quotient!, melvin!, peer!, 1);
  }
  const [tasks1] = numbers(row('overhead, 1-hop turn', 'workflow tasks per turn'));
  const [tasks2] = numbers(row('overhead, 2-hop turn', 'workflow tasks per turn'));
  // A hop's calls are local activities in the workflow task that runs them: a second hop adds events, not tasks.
  expect(tasks2).toBeGreaterThanOrEqual(tasks1!);
  const [events1] = numbers(row('overhead, 1-hop turn', 'history events per turn'));
  const [events2] = numbers(row('overhead, 2-hop turn', 'history events per turn'));
  expect(events2).toBeGreaterThan(events1!);
  const [checkpoints1] = numbers(row('overhead, 1-hop turn', 'LangGraph peer: checkpoints per turn'));
  const [checkpoints2] = numbers(row('overhead, 2-hop turn', 'LangGraph peer: checkpoints per turn'));
  expect(checkpoints2).toBeGreaterThan(checkpoints1!);
});

// A turn time is at least the waits it is made of, so a ratio of 1 or more says nothing: that each turn's critical path
// was found in the sandbox's records is a check of the run (the last test but one), and its logic a unit test's.
test('turn time ÷ the sandbox critical path, for Melvin and the peer, and Melvin ÷ peer is their quotient', () => {
  const [melvin] = numbers(row('latency ÷ critical path', 'turn time ÷ sandbox critical path'));
  const [peer] = numbers(row('latency ÷ critical path', 'LangGraph peer: turn time ÷ sandbox critical path'));
  const [quotient] = numbers(row('latency ÷ critical path', 'Melvin ÷ peer: latency ratio p50'));
  expectQuotient('latency ratio', quotient!, melvin!, peer!, 0.01);
});

test('the floor: a bare workflow of a 1-hop turn’s shape, set beside Melvin’s overhead and the peer’s in the same turns', () => {
  const experiment = 'floor, a 1-hop turn’s shape';
  const [bare] = numbers(row(experiment, 'bare workflow: overhead p50 / p95'));
  const [melvin] = numbers(row(experiment, 'Melvin: overhead p50 / p95'));
  const [peer] = numbers(row(experiment, 'LangGraph peer: overhead p50 / p95'));
  expect(bare).toBeGreaterThan(0);
  // Its workflow tasks and events are read from its history: the shape of Melvin's 1-hop turn, without Melvin's patch
  // marker, search attributes and memo.
  const [tasks, events] = numbers(row(experiment, 'bare workflow: workflow tasks / history events per turn'));
  expect(tasks).toBe(3);
  expect(events).toBe(28);
  // Each worker's CPU over the turns it alone ran, a turn's share.
  expect(row(experiment, 'worker CPU per turn: bare workflow / Melvin')).toMatch(/^\d+ ms \/ \d+ ms$/);
  // "Melvin less the bare workflow" is the difference of the two p50s, each rounded to a millisecond.
  const less = Number(/^(-?\d+) ms$/.exec(row(experiment, 'Melvin less the bare workflow'))?.[1]);
  expect(Math.abs(less - (melvin! - bare!))).toBeLessThanOrEqual(1);
  expectQuotient('floor: bare workflow', numbers(row(experiment, 'bare workflow ÷ peer'))[0]!, bare!, peer!, 1);
  expectQuotient('floor: Melvin', numbers(row(experiment, 'Melvin ÷ peer'))[0]!, melvin!, peer!, 1);
});

test('Gather with k parallel calls of 200 ms takes about one call, not k, in Melvin and in the peer', () => {
  for (const k of [1, 2, 4]) {
    for (const label of [`k=${k}:`, `LangGraph peer, k=${k}:`]) {
      const [p50] = numbers(row('Gather fan-out', label));
      // Only the widest fan-out is bounded above, where a serial Gather would be 3 calls (600 ms) slower: a tighter
      // bound would time the machine's load, not the fan-out. (None is bounded below: each call waits its 200 ms.)
      if (k === 4) expect(p50).toBeLessThan(k);
    }
  }
  const [melvin] = numbers(row('Gather fan-out', 'k=4:'));
  const [peer] = numbers(row('Gather fan-out', 'LangGraph peer, k=4:'));
  const [quotient] = numbers(row('Gather fan-out', 'Melvin ÷ peer: Gather at k=4 p50'));
  expectQuotient('Gather at k=4', quotient!, melvin!, peer!, 0.01);
});

test('the ingress is measured at 50, 100 and 200 deliveries a second, each for its second, with and without the outbox', () => {
  const report = reports.find((r) => r.experiment === 'ingress ack')!;
  const labels = report.checks.map((c) => c.label);
  for (const rate of [50, 100, 200]) {
    expect(row('ingress ack', `${rate}/s for 1 s`)).toMatch(/^\d+ ms \/ \d+ ms; sent in [\d.]+ s$/);
    expect(row('ingress ack', `outbox: ${rate}/s for 1 s`)).toMatch(
      /^\d+ ms \/ \d+ ms; sent in [\d.]+ s; all in Temporal [\d.]+ s after the first$/,
    );
    // A quick run holds each rate for 1 s: its checks count that many deliveries (whether each got its 202, and each
    // reached Temporal through the outbox, are the checks themselves, in the last test but one).
    for (const prefix of ['', 'outbox: ']) {
      const [within, of] = /^(\d+) of (\d+) \([\d.]+ %\)$/
        .exec(row('ingress ack', `${prefix}${rate}/s: answered within 50 ms by the ingress's own clock`))!
        .slice(1)
        .map(Number);
      expect({ of, withinNoMore: within! <= of! }).toEqual({ of: rate, withinNoMore: true });
    }
    expect(labels).toContain(`${rate}/s: all ${rate} deliveries answered 202`);
    expect(labels).toContain(`outbox: ${rate}/s: all ${rate} deliveries answered 202`);
    expect(labels).toContain(`outbox: ${rate}/s: all ${rate} handed to Temporal`);
  }
});

test('saturation: stepping stops after the first step past twice C=1’s p50, and the knee row is the rule applied to the steps', () => {
  const experiment = 'saturation, dev server (SQLite)';
  const report = reports.find((r) => r.experiment === experiment)!;
  expect(row(experiment, 'worker settings')).toMatch(
    /^slots \d+ workflow \/ \d+ activity \/ \d+ local activity tasks, .*sticky cache \d+/,
  );
  const knees: number[] = [];
  for (const prefix of ['', 'LangGraph peer: ']) {
    // The printed rows only: turns/s to one decimal, p50 to the millisecond. The bounds below allow for that
    // rounding, so a step that sits exactly at twice the first step's p50 cannot make the test flake.
    const steps = report.figures.flatMap(([label, value]) => {
      const match = new RegExp(`^${prefix}C=(\\d+)$`).exec(label);
      if (!match) return [];
      // Read by name: "p50" holds a number of its own, so the numbers of the row in order would not do.
      const [, perSecond, p50] = /^([\d.]+) turns\/s, p50 (\d+) ms/.exec(String(value)) ?? [];
      return [{ c: Number(match[1]), perSecond: Number(perSecond), p50: Number(p50), text: String(value) }];
    });
    // The quick run's concurrencies, in order from the first, none skipped.
    expect(steps.map((s) => s.c)).toEqual([1, 2, 4].slice(0, steps.length));
    const base = steps[0]!;
    expect(base.perSecond).toBeGreaterThan(0);
    const limit = 2 * base.p50;
    const within = (s: (typeof steps)[number]) => s.p50 <= limit + 1.5;
    const past = (s: (typeof steps)[number]) => s.p50 > limit - 1.5;
    // Every step before the last was within twice C=1's p50; a run that stopped early stopped at a step past it.
    for (const s of steps.slice(0, -1))
      expect({ prefix, step: s.c, within: within(s) }).toEqual({ prefix, step: s.c, within: true });
    const last = steps.at(-1)!;
    if (steps.length < 3)
      expect({ prefix, stoppedAt: last.c, past: past(last) }).toEqual({ prefix, stoppedAt: last.c, past: true });
    const kneeRow = row(experiment, `${prefix}knee`);
    const [, c, perSecond] = /^C=(\d+): ([\d.]+) turns\/s/.exec(kneeRow) ?? [];
    const knee = steps.find((s) => s.c === Number(c));
    // The knee is a measured step, printed with that step's own turns/s, within twice C=1's p50 …
    expect({
      prefix,
      kneeRow,
      step: knee?.text.startsWith(`${perSecond} turns/s`),
      within: knee && within(knee),
    }).toEqual({
      prefix,
      kneeRow,
      step: true,
      within: true,
    });
    // … and no step clearly within it took clearly more turns a second.
    const better = steps.filter((s) => s.p50 <= limit - 1.5 && s.perSecond > knee!.perSecond + 0.1);
    expect({ prefix, kneeRow, better: better.map((s) => s.text) }).toEqual({ prefix, kneeRow, better: [] });
    // The row says the knee may lie beyond exactly when the largest C was reached without passing twice the p50.
    if (last.p50 > limit + 1.5) expect(kneeRow).not.toContain('may lie beyond');
    if (steps.length === 3 && last.p50 <= limit - 1.5) expect(kneeRow).toContain('may lie beyond');
    knees.push(knee!.perSecond);
  }
  const [quotient] = numbers(row(experiment, 'Melvin ÷ peer: turns/s at the knee'));
  expectQuotient('turns/s at the knee', quotient!, knees[0]!, knees[1]!, 0.1);
});

test('memory: each open run costs the worker some V8 heap, its cache holds them, and a next message is answered', () => {
  // The RSS figure is printed with its sign, not compared: over the smoke run's 20 runs (a few MiB) the allocator can
  // give back more between the two readings than the runs took. The parts it is made of are each printed.
  numbers(row('memory per open conversation', '(RSS less young generations, with them − before) ÷ N'));
  const rss = numbers(row('memory per open conversation', 'worker RSS before / with them open'));
  const parts = ['V8 young generations', 'the rest of the V8 heaps', 'outside V8'].map((part) =>
    numbers(row('memory per open conversation', `of it, ${part}`)),
  );
  // Each reading's parts add up to it, give or take their rounding to whole MiB.
  for (const reading of [0, 1]) {
    const sum = parts.reduce((total, part) => total + part[reading]!, 0);
    expect(Math.abs(sum - rss[reading]!)).toBeLessThanOrEqual(2);
  }
  // The worker printed its V8 heap after each collection, and the open runs' objects are in it.
  expect(row('memory per open conversation', 'worker V8 heap used, all threads, before / with them open')).toMatch(
    /^\d+ MiB \/ \d+ MiB$/,
  );
  const [heapPerRun] = numbers(
    row('memory per open conversation', '(workflow threads’ V8 heap with them − before) ÷ runs in the cache'),
  );
  expect(heapPerRun).toBeGreaterThan(0);
  const [cached, size] = numbers(row('memory per open conversation', 'sticky cache'));
  // The smoke run's 20 fit Melvin's default cache (250), so none is evicted and the next turns are all of cached runs.
  expect(cached).toBeGreaterThanOrEqual(20);
  expect(size).toBeGreaterThanOrEqual(cached!);
  expect(row('memory per open conversation', 'next turn p50')).toMatch(/^\d+ ms \/ none evicted \(10 turns each\)$/);
});

test('growth: more hops, more tool calls and a longer conversation each make a larger history', () => {
  for (const dimension of ['hops 1 / 3', 'tool calls per hop 1 / 4', 'conversation parts 1 / 100']) {
    const [small, large] = numbers(row('growth', `${dimension}: history p50`));
    expect(large).toBeGreaterThan(small!);
    // Turn times are printed, not compared (on a loaded machine one hop can take longer than three): one per point.
    expect(numbers(row('growth', `${dimension}: turn time p50`))).toHaveLength(2);
  }
});

test('every check of the run holds', () => {
  const failed = reports.flatMap((r) => r.checks.filter((c) => !c.passed).map((c) => `${r.experiment}: ${c.label}`));
  expect(failed).toEqual([]);
});

test('the README headline has Melvin’s figure for every line the quick run measures, and the peer’s beside it', () => {
  const lines = headline(reports).split('\n').slice(2);
  const cells = (what: string) => {
    const line = lines.find((l) => l.startsWith(`| ${what}`));
    if (!line) throw new Error(`no headline line "${what}":\n${headline(reports)}`);
    return line.split(' | ').slice(1, 4);
  };
  for (const what of [
    'orchestration overhead, 1-hop',
    'turn time ÷ critical path',
    'saturation throughput at the knee, dev',
  ]) {
    expect(cells(what).every((cell) => /\d/.test(cell))).toBe(true);
  }
  // A quick run stops fan-out at k=4 and leaves PostgreSQL out: those lines say so rather than inventing a figure.
  expect(cells('Gather of 8 calls')[0]).toBe('—');
  expect(cells('saturation throughput at the knee, Temporal')[0]).toBe('—');
  expect(cells('worker memory per open conversation')[0]).toMatch(/\d+ KiB/);
  expect(cells('ingress ack p50 / p99 at 200 deliveries a second, once')[0]).toMatch(/^\d+ ms \/ \d+ ms$/);
  expect(cells('ingress ack p50 / p99 at 200 deliveries a second, with')[0]).toMatch(/^\d+ ms \/ \d+ ms$/);
});
