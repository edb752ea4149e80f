// `npm run reliability`: every reliability experiment at full size, printed as one table with the machine it ran on;
// `npm run reliability -- load faults` runs only the named ones. Exits 1 when any check fails. The table goes to
// test-output/reliability.md, and each experiment's rows replace its section of docs/figures/reliability.md.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { badInput } from '../reliability/bad-input';
import { determinism } from '../reliability/determinism';
import { historySize } from '../reliability/history';
import { dependencyFaults, serverRestart, workerCrash } from '../reliability/faults';
import { promptInjection } from '../reliability/injection';
import { frontDoor } from '../reliability/front-door';
import { load } from '../reliability/load';
import { privacy } from '../reliability/privacy';
import { table, type Report } from '../harness/report';
import { PREAMBLES, commandLine, figuresBlock, machine, mergeSections, writeFigures } from '../harness/figures';

const EXPERIMENTS: Record<string, () => Promise<Report>> = {
  crash: () => workerCrash({ conversations: 30, kills: 5 }),
  restart: () => serverRestart({ conversations: 20, downMs: 3_000 }),
  faults: () => dependencyFaults({ conversations: 20, llmDownMs: 30_000, boundMs: 120_000 }),
  'bad-input': () => badInput({ ingressCases: 1000, modelCases: 200 }),
  'front-door': () =>
    frontDoor({
      deliveries: 1000,
      rate: 10,
      temporalDownMs: 120_000,
      wrongNamespaceMs: 300_000,
      conversations: 10,
      bigJournalMiB: 560,
    }),
  injection: () => promptInjection(),
  privacy: () => privacy(),
  load: () => load({ conversations: 200, windowMs: 10_000, llm: [300, 800], tools: [50, 200] }),
  determinism: () => determinism(),
  history: () => historySize({ turns: 10 }),
};

async function main(): Promise<number> {
  // The experiments provoke rejected webhooks and failed calls by the thousand: only errors are worth printing.
  process.env.LOG_LEVEL ??= 'error';
  const names = process.argv.slice(2);
  const unknown = names.filter((n) => !(n in EXPERIMENTS));
  if (unknown.length) {
    console.error(`Unknown experiment(s): ${unknown.join(', ')}. Known: ${Object.keys(EXPERIMENTS).join(', ')}`);
    return 2;
  }
  const reports: { name: string; report: Report }[] = [];
  for (const name of names.length ? names : Object.keys(EXPERIMENTS)) {
    const started = Date.now();
    console.error(`Running ${name}…`);
    reports.push({ name, report: await EXPERIMENTS[name]!() });
    console.error(`${name} done in ${Math.round((Date.now() - started) / 1000)} s`);
  }
  const run = { command: commandLine('reliability', names), date: new Date().toISOString(), machine: machine() };
  const output = `Machine: ${run.machine}\nDate: ${run.date}\n\n${table(reports.map((r) => r.report))}\n`;
  console.log(output);
  const dir = path.join(__dirname, '..', 'test-output');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'reliability.md'), output);
  const figures = writeFigures('reliability.md', (existing) =>
    mergeSections({
      existing,
      preamble: PREAMBLES['reliability.md'],
      order: Object.keys(EXPERIMENTS),
      sections: reports.map(({ name, report }) => ({
        key: name,
        title: report.experiment,
        block: figuresBlock({ ...run, output: table([report]) }),
      })),
    }),
  );
  console.error(`Figures: ${path.relative(process.cwd(), figures)}`);
  return reports.every(({ report }) => report.checks.every((c) => c.passed)) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
