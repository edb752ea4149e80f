// `npm run model-cases`: the conversation model beyond CI's 500 cases: MODEL_CASES of them (5,000) in processes of 500,
// one after another, since one process slows as its cases pile up (5 s a case at first, 24 s after 900: the CPU is the
// test process's own). MODEL_SEED (random) is the first process's seed; each process's lanes take the next ones, so no
// two processes draw the same cases. Prints each process's seeds, result and time; exits 1 when any process failed.
import { spawnSync } from 'node:child_process';
import { z } from 'zod';

const PER_PROCESS = 500;

const Settings = z.object({
  MODEL_CASES: z.coerce.number().int().positive().default(5000),
  MODEL_LANES: z.coerce.number().int().positive().default(8),
  MODEL_SEED: z.union([z.literal('random'), z.coerce.number().int().nonnegative()]).default('random'),
});

const parsed = Settings.safeParse(process.env);
if (!parsed.success) {
  for (const issue of parsed.error.issues) console.error(`${issue.path.join('.')}: ${issue.message}`);
  process.exit(2);
}
const { MODEL_CASES: total, MODEL_LANES: lanes, MODEL_SEED } = parsed.data;
const firstSeed = MODEL_SEED === 'random' ? Math.floor(Math.random() * 2 ** 30) : MODEL_SEED;
const processes = Math.ceil(total / PER_PROCESS);
// The test gives each lane the same number of cases, rounded up.
const casesPerProcess = Math.ceil(PER_PROCESS / lanes) * lanes;

const rows: string[] = [];
let failed = 0;
const started = Date.now();
for (let k = 0; k < processes; k++) {
  const seed = firstSeed + k * lanes;
  const seeds = `${seed}–${seed + lanes - 1}`;
  console.log(`\nmodel cases: process ${k + 1} of ${processes}, seeds ${seeds}`);
  const t0 = Date.now();
  const run = spawnSync('npx', ['jest', 'test/model/conversation-model.test.ts'], {
    stdio: 'inherit',
    env: { ...process.env, MODEL_CASES: String(PER_PROCESS), MODEL_SEED: String(seed), MODEL_LANES: String(lanes) },
  });
  const minutes = ((Date.now() - t0) / 60_000).toFixed(1);
  const result = run.status === 0 ? 'passed' : `failed (exit ${run.status ?? run.signal})`;
  if (run.status !== 0) failed += 1;
  rows.push(`| ${seeds} | ${casesPerProcess} | ${result} | ${minutes} |`);
}

console.log(`\n| seeds | cases | result | minutes |\n|---|---|---|---|\n${rows.join('\n')}`);
const minutes = ((Date.now() - started) / 60_000).toFixed(0);
console.log(`\n${processes * casesPerProcess} cases in ${processes} processes, ${minutes} minutes; ${failed} failed`);
process.exit(failed ? 1 : 0);
