// `npm run bench`: Melvin's orchestration overhead, latency against the critical path, Gather's fan-out, cost growth,
// saturation, memory per open conversation and the ingress's acknowledgement, measured on a stack of its own and
// printed as one table (`--quick`: a smoke-sized run; `--turns N`: turns per hop count). The table goes to
// test-output/bench.md, and a run of the default sizes also to docs/figures/bench.md, with its headline in the README:
// a smoke run must not replace the figures the docs report.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as prettier from 'prettier';
import { bench, benchOptions } from '../bench/bench';
import { headline } from '../bench/headline';
import { table } from '../harness/report';
import { commandLine, keepTable, machine } from '../harness/figures';

const README = path.join(__dirname, '..', 'README.md');
const HEADLINE = /(<!-- bench:start -->\n)[\s\S]*?(<!-- bench:end -->)/;

/** Replaces the README's headline block (between its bench markers) with `text`, formatted as the linter wants it. */
async function writeReadmeHeadline(text: string): Promise<void> {
  const readme = readFileSync(README, 'utf8');
  if (!HEADLINE.test(readme)) throw new Error('README.md has no <!-- bench:start --> … <!-- bench:end --> block');
  const replaced = readme.replace(HEADLINE, (_, start: string, end: string) => `${start}\n${text}\n\n${end}`);
  const options = await prettier.resolveConfig(README);
  writeFileSync(README, await prettier.format(replaced, { ...options, filepath: README }));
}

async function main(): Promise<number> {
  // The harness's services log every request; only errors are worth printing beside the progress lines.
  process.env.LOG_LEVEL ??= 'error';
  const args = process.argv.slice(2);
  const started = Date.now();
  const reports = await bench(benchOptions(args, (line) => console.error(line)));
  const run = { command: commandLine('bench', args), date: new Date().toISOString(), machine: machine() };
  const output = table(reports);
  console.log(`Machine: ${run.machine}\nDate: ${run.date}\n\n${output}\n\n${headline(reports)}\n`);
  const kept = keepTable('bench.md', { ...run, output }, args.length === 0);
  const seconds = Math.round((Date.now() - started) / 1000);
  if (args.length === 0) {
    await writeReadmeHeadline(
      `${headline(reports)}\n\nMeasured by \`${run.command}\` in ${seconds} s on ${run.date}, on ${run.machine}.`,
    );
  }
  console.error(`${kept}; the run took ${seconds} s`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
