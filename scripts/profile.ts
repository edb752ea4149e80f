// `npm run profile`: where a 1-hop turn's CPU goes, by process (from /proc) and, inside the worker, by kind of work and
// by function (V8's sampling profiler on each of its threads), over turns run at a steady concurrency on the bench's
// stack. `--turns N` and `--concurrency C` change the size; a run of the default size also writes
// docs/figures/profile.md, any other run only test-output/profile.md.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { addUp, bundleUrl, bundleMap, CpuProfile, KINDS, timeByKind, type BundleMap } from '../bench/cpu-profile';
import { benchResponder } from '../bench/responder';
import { inPool, melvinTurn } from '../bench/turns';
import { Harness } from '../harness/harness';
import { table, type Report } from '../harness/report';
import { commandLine, keepTable, machine } from '../harness/figures';
import { cpuMs } from '../harness/proc';
import { workflowBundleOptions } from '../src/bundling/workflow-bundle';

interface ProfileOptions {
  turns: number;
  concurrency: number;
}

const DEFAULTS: ProfileOptions = { turns: 200, concurrency: 4 };
const WARM_UP_TURNS = 5;
/** Functions listed by their own time in the worker. */
const TOP_FUNCTIONS = 15;

function profileOptions(args: string[]): ProfileOptions {
  const options = { ...DEFAULTS };
  for (let i = 0; i < args.length; i += 2) {
    const key = ({ '--turns': 'turns', '--concurrency': 'concurrency' } as const)[args[i]!];
    if (!key) throw new Error(`unknown option ${args[i]}; the options are --turns N and --concurrency C`);
    const value = Number(args[i + 1]);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${args[i]} takes a whole number, at least 1`);
    options[key] = value;
  }
  return options;
}

/** The monotonic clock V8's profiles count in, in µs. */
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

interface Measured {
  turns: number;
  seconds: number;
  /** CPU ms a turn by process. */
  cpuPerTurn: Record<string, number>;
  /** The worker's profiles, read after it stopped, and the window the turns ran in. */
  profiles: { file: string; profile: CpuProfile }[];
  window: [number, number];
}

/** Runs the turns on a harness whose worker is profiled, and collects what /proc and the profiles say. */
async function measure(options: ProfileOptions, profileDir: string, log: (line: string) => void): Promise<Measured> {
  const harness = new Harness({
    responder: benchResponder({ hops: 1 }),
    workerNodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`],
  });
  await harness.start();
  let stopped = false;
  try {
    log(`warming up with ${WARM_UP_TURNS} turns`);
    for (let i = 0; i < WARM_UP_TURNS; i++) await melvinTurn(harness, harness.addConversation('payment'));
    const temporalPid = harness.temporalPid;
    const workerPid = harness.workerPid;
    const cpu = () => ({
      temporal: temporalPid ? (cpuMs(temporalPid) ?? NaN) : NaN,
      worker: workerPid ? (cpuMs(workerPid) ?? NaN) : NaN,
      own: process.cpuUsage(),
    });
    const conversations = Array.from({ length: options.turns }, () => harness.addConversation('payment'));
    log(`${options.turns} turns, ${options.concurrency} at once`);
    const before = cpu();
    const start = nowUs();
    const failures = await inPool(conversations, options.concurrency, (c) => melvinTurn(harness, c));
    const end = nowUs();
    const after = cpu();
    if (failures.length) throw new Error(`${failures.length} turns failed; the first: ${String(failures[0])}`);
    const own = process.cpuUsage(before.own);
    const cpuPerTurn = {
      'Temporal server': (after.temporal - before.temporal) / options.turns,
      worker: (after.worker - before.worker) / options.turns,
      'bench process (sandbox, ingress)': (own.user + own.system) / 1000 / options.turns,
    };
    // The worker writes its profiles as it exits.
    await harness.stop();
    stopped = true;
    const profiles = readdirSync(profileDir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((file) => ({
        file,
        profile: CpuProfile.parse(JSON.parse(readFileSync(path.join(profileDir, file), 'utf8'))),
      }));
    if (profiles.length === 0) throw new Error(`the worker wrote no CPU profile to ${profileDir}`);
    return { turns: options.turns, seconds: (end - start) / 1e6, cpuPerTurn, profiles, window: [start, end] };
  } finally {
    if (!stopped) await harness.stop();
  }
}

/** The workflow bundle the worker ran, built again the same way, so its frames can be traced to their sources. */
async function workerBundle(ran: string | undefined, log: (line: string) => void): Promise<BundleMap | undefined> {
  if (!ran) return undefined;
  const { code } = await bundleWorkflowCode({
    ...workflowBundleOptions(),
    // The harness encrypts, and an encrypting worker bundles the failure converter (src/encryption/payload-codec.ts).
    failureConverterPath: require.resolve('../src/encryption/failure-converter'),
    logger: new DefaultLogger('WARN'),
  });
  const bundle = bundleMap(code);
  if (!ran.endsWith(`/${bundle.filename}`)) {
    log(`the bundle built here (${bundle.filename}) is not the one the worker ran (${ran}): its frames stay unmapped`);
    return undefined;
  }
  return bundle;
}

/** A thread's name: Node's profile files end `.<pid>.<thread id>.<sequence>.cpuprofile`; thread 0 is the main one. */
function threadName(file: string, profile: CpuProfile): string {
  const thread = /\.(\d+)\.\d+\.cpuprofile$/.exec(file)?.[1];
  if (thread === '0') return 'main thread (activities, Core bridge, payload codec)';
  if (bundleUrl(profile)) return `workflow thread ${thread}`;
  return `thread ${thread} (no workflow code)`;
}

const ms = (us: number) => `${Math.round(us / 1000).toLocaleString('en-US')} ms`;
const share = (part: number, whole: number) => `${((100 * part) / Math.max(whole, 1)).toFixed(1)} %`;

async function report(measured: Measured, log: (line: string) => void): Promise<Report[]> {
  const { profiles, window, turns } = measured;
  const bundle = await workerBundle(profiles.map((p) => bundleUrl(p.profile)).find(Boolean), log);
  const threads = profiles.map(({ file, profile }) => ({
    name: threadName(file, profile),
    time: timeByKind(profile, bundle, window),
  }));
  const worker = addUp(threads.map((t) => t.time));
  const busy = [...worker.byKind.values()].reduce((a, b) => a + b, 0);
  const cpuTotal = Object.values(measured.cpuPerTurn).reduce((a, b) => a + b, 0);
  const kinds = [...KINDS, 'bundle, not mapped'].filter((k) => worker.byKind.has(k));
  const topFunctions = [...worker.byFunction.entries()].sort((a, b) => b[1] - a[1]).slice(0, TOP_FUNCTIONS);
  const perTurn = (us: number) => `${(us / 1000 / turns).toFixed(1)} ms a turn`;
  return [
    {
      experiment: 'CPU a turn, by process (/proc)',
      figures: [
        ['turns', `${turns} 1-hop turns, ${(turns / measured.seconds).toFixed(1)} a second`],
        ...Object.entries(measured.cpuPerTurn).map(([name, cpu]): [string, string] => [name, `${cpu.toFixed(1)} ms`]),
        ['all processes', `${cpuTotal.toFixed(1)} ms`],
      ],
      checks: [],
    },
    {
      experiment: "The worker's busy time, by thread (V8 samples that are not idle)",
      figures: threads.map(({ name, time }): [string, string] => {
        const own = [...time.byKind.values()].reduce((a, b) => a + b, 0);
        return [name, `${perTurn(own)} (${share(own, busy)})`];
      }),
      checks: [],
    },
    {
      experiment: "The worker's busy time, by kind of work (where the running code lives)",
      figures: kinds.map((kind): [string, string] => {
        const us = worker.byKind.get(kind)!;
        return [kind, `${share(us, busy)} (${ms(us)}, ${perTurn(us)})`];
      }),
      checks: [],
    },
    {
      experiment: `The worker's ${TOP_FUNCTIONS} functions of most own time`,
      figures: topFunctions.map(([name, us]): [string, string] => [name, `${share(us, busy)} (${perTurn(us)})`]),
      checks: [],
    },
  ];
}

async function main(): Promise<number> {
  process.env.LOG_LEVEL ??= 'error';
  const args = process.argv.slice(2);
  const options = profileOptions(args);
  const log = (line: string) => console.error(line);
  const profileDir = mkdtempSync(path.join(tmpdir(), 'melvin-profile-'));
  const started = Date.now();
  try {
    const measured = await measure(options, profileDir, log);
    const output = table(await report(measured, log));
    const run = { command: commandLine('profile', args), date: new Date().toISOString(), machine: machine() };
    console.log(`Machine: ${run.machine}\nDate: ${run.date}\n\n${output}\n`);
    const kept = keepTable('profile.md', { ...run, output }, args.length === 0);
    log(`${kept}; the run took ${Math.round((Date.now() - started) / 1000)} s`);
    return 0;
  } finally {
    rmSync(profileDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
