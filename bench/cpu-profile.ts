// Reads V8 CPU profiles (`node --cpu-prof`, one file a thread): the time of the samples taken within a window, by kind
// of work and by function, with the workflow bundle's frames traced back to their sources through its source map.
import path from 'node:path';
import { SourceMapConsumer } from 'source-map-js';
import { z } from 'zod';

const CallFrame = z.object({
  functionName: z.string(),
  url: z.string(),
  lineNumber: z.number().int(),
  columnNumber: z.number().int(),
});

/** The `.cpuprofile` format as Node writes it (times in µs of the monotonic clock `process.hrtime` reads). */
export const CpuProfile = z.object({
  nodes: z
    .array(z.object({ id: z.number().int(), callFrame: CallFrame, children: z.array(z.number().int()).optional() }))
    .min(1),
  startTime: z.number(),
  endTime: z.number(),
  samples: z.array(z.number().int()),
  timeDeltas: z.array(z.number()),
});
export type CpuProfile = z.infer<typeof CpuProfile>;
type CallFrame = z.infer<typeof CallFrame>;

/** The kinds of work a sample is counted under, in the order a report lists them. */
export const KINDS = [
  'Melvin workflow code (in the bundle)',
  'workflow runtime (SDK: vm sandbox, activations)',
  'payload conversion and encryption',
  'protobuf',
  'Temporal SDK (worker, Core bridge)',
  'Melvin activities and worker code',
  'other libraries',
  'Node runtime',
  'garbage collection',
  'V8 and native code',
] as const;
export type Kind = (typeof KINDS)[number];
const RUNTIME: Kind = 'workflow runtime (SDK: vm sandbox, activations)';

/** The file name webpack gives the workflow bundle (the SDK's bundler). */
const BUNDLE_FILE = /workflow-bundle-[0-9a-f]+\.js$/;

/** A source file's path, from the root of the repository whose code ran. */
const ROOT = path.resolve(__dirname, '..');

/** Where the workflow bundle's frames came from: its file name (the worker runs it under its cwd), and its source map. */
export interface BundleMap {
  filename: string;
  sourceAt(line: number, column: number): string | undefined;
}

/** A map of the bundle's code to its sources, read from the inline source map webpack writes at its end. */
export function bundleMap(code: string): BundleMap {
  const inline = /\/\/# sourceMappingURL=data:application\/json;(?:charset=utf-8;)?base64,(\S+)\s*$/.exec(code);
  if (!inline) throw new Error('the workflow bundle has no inline source map');
  const sourceMap = JSON.parse(Buffer.from(inline[1]!, 'base64').toString('utf8')) as { file: string };
  const consumer = new SourceMapConsumer(sourceMap as ConstructorParameters<typeof SourceMapConsumer>[0]);
  // V8's lines and columns count from 0, the source map's lines from 1.
  return {
    filename: sourceMap.file,
    sourceAt: (line, column) => consumer.originalPositionFor({ line: line + 1, column }).source ?? undefined,
  };
}

/** A file's kind of work, by where it lives; `inBundle` when it ran inside the workflow sandbox. */
function kindOfFile(file: string, inBundle: boolean): Kind {
  const local = file.replace(/^file:\/\//, '');
  if (
    /payload-codec|payload-converter|payload-codecs|data-converter|failure-convert|[/\\]encoding\.|node:crypto/.test(
      local,
    )
  )
    return 'payload conversion and encryption';
  if (/protobufjs|@temporalio[/\\]proto|node_modules[/\\]long[/\\]/.test(local)) return 'protobuf';
  if (local.startsWith(path.join(ROOT, 'src'))) {
    return inBundle ? 'Melvin workflow code (in the bundle)' : 'Melvin activities and worker code';
  }
  // In the bundle: the SDK's workflow library and webpack's own code are the runtime; zod and the like are libraries.
  if (inBundle) return /node_modules/.test(local) && !/@temporalio/.test(local) ? 'other libraries' : RUNTIME;
  if (/^node:vm$|^evalmachine\.|@temporalio[/\\]worker[/\\]lib[/\\]workflow[/\\]/.test(local)) return RUNTIME;
  if (/@temporalio/.test(local)) return 'Temporal SDK (worker, Core bridge)';
  if (/node_modules/.test(local)) return 'other libraries';
  if (/^node:|^internal[/\\]/.test(local) || local === '') return 'Node runtime';
  return 'other libraries';
}

const isBundle = (frame: CallFrame, bundle?: BundleMap) => !!bundle && frame.url.endsWith(`/${bundle.filename}`);

/**
 * What a sample was doing, from its stack (innermost frame first); undefined when idle (not counted). A native function
 * without a source file (V8's `runInContext`, `postMessage`, a RegExp) counts under the first caller that has one.
 */
export function kindOf(stack: CallFrame[], bundle?: BundleMap): Kind | 'bundle, not mapped' | undefined {
  switch (stack[0]?.functionName) {
    case '(idle)':
      return undefined;
    case '(garbage collector)':
      return 'garbage collection';
    case '(program)':
    case '(root)':
      return 'V8 and native code';
  }
  const frame = stack.find((f) => f.url !== '');
  if (!frame) return 'V8 and native code';
  if (BUNDLE_FILE.test(frame.url)) {
    if (!isBundle(frame, bundle)) return 'bundle, not mapped';
    return kindOfFile(bundle!.sourceAt(frame.lineNumber, frame.columnNumber) ?? '', true);
  }
  return kindOfFile(frame.url, false);
}

/** The time a profile's samples account for: by kind, by function (top frames), and idle; all in µs. */
export interface ProfileTime {
  byKind: Map<string, number>;
  byFunction: Map<string, number>;
  idle: number;
}

/** A frame as a report names it: its function and its file, relative to the repository (or the bundle's source). */
function frameLabel(frame: CallFrame, bundle?: BundleMap): string {
  const file = isBundle(frame, bundle)
    ? (bundle!.sourceAt(frame.lineNumber, frame.columnNumber) ?? frame.url)
    : frame.url;
  const shown = /^node:|^evalmachine/.test(file)
    ? file
    : path.relative(ROOT, file.replace(/^file:\/\//, '')).replace(/^(\.\.\/)*node_modules\//, '');
  return `${frame.functionName || '(anonymous)'} ${shown}`.trim();
}

/** A sample's own function, with the caller it counts under when it has no source file ("runInContext ← …"). */
function functionLabel(stack: CallFrame[], bundle?: BundleMap): string {
  const [own] = stack;
  if (!own || own.url !== '' || own.functionName.startsWith('(')) return own ? frameLabel(own, bundle) : '?';
  const caller = stack.find((f) => f.url !== '');
  return caller ? `${frameLabel(own)} ← ${frameLabel(caller, bundle)}` : frameLabel(own);
}

/**
 * The time of the samples taken within `window` (µs, the profile's clock; all of them without one). A sample stands for
 * the time until the next one (the last one, until the profile's end).
 */
export function timeByKind(profile: CpuProfile, bundle?: BundleMap, window?: [number, number]): ProfileTime {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parents = new Map(profile.nodes.flatMap((n) => (n.children ?? []).map((child) => [child, n.id] as const)));
  // A node stands for one stack, so each is read once.
  const read = new Map<number, { kind: string | undefined; label: string }>();
  const readNode = (id: number, sample: number) => {
    const known = read.get(id);
    if (known) return known;
    if (!byId.has(id)) throw new Error(`the profile's sample ${sample} names node ${id}, which it does not have`);
    const stack: CallFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) stack.push(byId.get(at)!.callFrame);
    const node = { kind: kindOf(stack, bundle), label: functionLabel(stack, bundle) };
    read.set(id, node);
    return node;
  };
  const result: ProfileTime = { byKind: new Map(), byFunction: new Map(), idle: 0 };
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    const next = i + 1 < profile.samples.length ? at + (profile.timeDeltas[i + 1] ?? 0) : profile.endTime;
    const from = Math.max(at, window?.[0] ?? -Infinity);
    const to = Math.min(next, window?.[1] ?? Infinity);
    if (to <= from) return;
    const { kind, label } = readNode(id, i);
    if (kind === undefined) result.idle += to - from;
    else {
      add(result.byKind, kind, to - from);
      add(result.byFunction, label, to - from);
    }
  });
  return result;
}

/** Several profiles' times added up (the threads of one process). */
export function addUp(times: ProfileTime[]): ProfileTime {
  const sum: ProfileTime = { byKind: new Map(), byFunction: new Map(), idle: 0 };
  for (const time of times) {
    sum.idle += time.idle;
    for (const key of ['byKind', 'byFunction'] as const) {
      for (const [name, us] of time[key]) sum[key].set(name, (sum[key].get(name) ?? 0) + us);
    }
  }
  return sum;
}

/** Where the workflow bundle a profile ran was (its path as V8 saw it), if it ran workflow code. */
export function bundleUrl(profile: CpuProfile): string | undefined {
  return profile.nodes.find((n) => BUNDLE_FILE.test(n.callFrame.url))?.callFrame.url;
}
