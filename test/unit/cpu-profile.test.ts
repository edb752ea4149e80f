// The profile reader: a sample's time is counted once, within the window, under the kind of its own function, with
// the workflow bundle's frames traced to their sources.
import path from 'node:path';
import fc from 'fast-check';
import { SourceMapGenerator } from 'source-map-js';
import { addUp, bundleMap, bundleUrl, CpuProfile, kindOf, timeByKind } from '../../bench/cpu-profile';

const ROOT = path.resolve(__dirname, '../..');
const BUNDLE = '/work/worker-cwd/workflow-bundle-0123abcd.js';

const frame = (functionName: string, url = '', lineNumber = 0, columnNumber = 0) => ({
  functionName,
  url,
  lineNumber,
  columnNumber,
  scriptId: '1',
});

/** A bundle of three lines: from Melvin's turn, from the SDK's workflow runtime, and from zod. */
function bundle() {
  const map = new SourceMapGenerator({ file: 'workflow-bundle-0123abcd.js' });
  map.addMapping({
    generated: { line: 1, column: 0 },
    original: { line: 10, column: 0 },
    source: `${ROOT}/src/workflows/graph.ts`,
  });
  map.addMapping({
    generated: { line: 2, column: 0 },
    original: { line: 5, column: 0 },
    source: `${ROOT}/node_modules/@temporalio/workflow/lib/internals.js`,
  });
  map.addMapping({
    generated: { line: 3, column: 0 },
    original: { line: 1, column: 0 },
    source: `${ROOT}/node_modules/zod/v4/core/schemas.js`,
  });
  const encoded = Buffer.from(map.toString()).toString('base64');
  return bundleMap(`a();\nb();\nc();\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,${encoded}`);
}

/** Nodes 1–8, each a kind of work; node 9 is idle. */
const NODES = [
  frame('(root)'),
  frame('runTurn', BUNDLE, 0, 0),
  frame('activate', BUNDLE, 1, 0),
  frame('encode', `file://${ROOT}/src/encryption/payload-codec.ts`),
  frame('decode', `file://${ROOT}/node_modules/protobufjs/src/reader.js`),
  frame('draft', `file://${ROOT}/src/activities/llm.ts`),
  frame('(garbage collector)'),
  frame('processTicksAndRejections', 'node:internal/process/task_queues'),
  frame('(idle)'),
].map((callFrame, i) => ({ id: i + 1, callFrame }));

function profile(samples: number[], timeDeltas: number[], startTime = 1_000): CpuProfile {
  const end = startTime + timeDeltas.reduce((a, b) => a + b, 0) + 10;
  return CpuProfile.parse({ nodes: NODES, startTime, endTime: end, samples, timeDeltas });
}

describe('kindOf', () => {
  const map = bundle();
  it.each([
    [1, 'V8 and native code'],
    [2, 'Melvin workflow code (in the bundle)'],
    [3, 'workflow runtime (SDK: vm sandbox, activations)'],
    [4, 'payload conversion and encryption'],
    [5, 'protobuf'],
    [6, 'Melvin activities and worker code'],
    [7, 'garbage collection'],
    [8, 'Node runtime'],
    [9, undefined],
  ])('node %i is %s', (id, kind) => {
    expect(kindOf([NODES[id - 1]!.callFrame], map)).toBe(kind);
  });

  it('counts a library in the bundle as a library, not as the runtime', () => {
    expect(kindOf([frame('parse', BUNDLE, 2, 0)], map)).toBe('other libraries');
  });

  it('leaves the bundle unmapped without its map, or with another bundle’s', () => {
    expect(kindOf([NODES[1]!.callFrame])).toBe('bundle, not mapped');
    const other = { ...NODES[1]!.callFrame, url: '/x/workflow-bundle-ffff.js' };
    expect(kindOf([other], map)).toBe('bundle, not mapped');
  });

  it.each([
    [`file://${ROOT}/node_modules/@temporalio/worker/lib/worker.js`, 'Temporal SDK (worker, Core bridge)'],
    [
      `file://${ROOT}/node_modules/@temporalio/common/lib/converter/payload-converter.js`,
      'payload conversion and encryption',
    ],
    [`file://${ROOT}/node_modules/@temporalio/proto/protos/root.js`, 'protobuf'],
    [`file://${ROOT}/node_modules/zod/v4/core/schemas.js`, 'other libraries'],
    ['node:vm', 'workflow runtime (SDK: vm sandbox, activations)'],
    ['node:crypto', 'payload conversion and encryption'],
    ['node:events', 'Node runtime'],
  ])('%s is %s', (url, kind) => {
    expect(kindOf([frame('f', url)])).toBe(kind);
  });

  it.each([
    [
      [frame('runInContext'), frame('activate', `${ROOT}/node_modules/@temporalio/worker/lib/workflow/vm-shared.js`)],
      'workflow runtime (SDK: vm sandbox, activations)',
    ],
    [
      [frame('RegExp: ^a+$'), frame(''), frame('checkReply', `file://${ROOT}/src/activities/reply-checks.ts`)],
      'Melvin activities and worker code',
    ],
    [
      [frame('postMessage'), frame('send', `file://${ROOT}/node_modules/@temporalio/worker/lib/worker.js`)],
      'Temporal SDK (worker, Core bridge)',
    ],
    [[frame('writev'), frame('(root)')], 'V8 and native code'],
  ])('counts a native function under its first caller with a file: %j', (stack, kind) => {
    expect(kindOf(stack, bundle())).toBe(kind);
  });
});

describe('timeByKind', () => {
  it('gives each sample the time until the next one, the last one until the end', () => {
    // Samples at 1010, 1030, 1060; the profile ends at 1070.
    const time = timeByKind(profile([2, 4, 9], [10, 20, 30]), bundle());
    expect(time.byKind.get('Melvin workflow code (in the bundle)')).toBe(20);
    expect(time.byKind.get('payload conversion and encryption')).toBe(30);
    expect(time.idle).toBe(10);
    expect(time.byFunction.get('runTurn src/workflows/graph.ts')).toBe(20);
    expect(time.byFunction.get(`encode src/encryption/payload-codec.ts`)).toBe(30);
  });

  it('counts only what falls within the window, cutting the samples at its edges', () => {
    const time = timeByKind(profile([2, 4, 9], [10, 20, 30]), bundle(), [1020, 1065]);
    expect(time.byKind.get('Melvin workflow code (in the bundle)')).toBe(10);
    expect(time.byKind.get('payload conversion and encryption')).toBe(30);
    expect(time.idle).toBe(5);
  });

  it('names a native function with the caller it counts under', () => {
    const nodes = [
      { id: 1, callFrame: frame('(root)'), children: [2] },
      { id: 2, callFrame: frame('runTurn', BUNDLE, 0, 0), children: [3] },
      { id: 3, callFrame: frame('runInContext') },
    ];
    const time = timeByKind(
      CpuProfile.parse({ nodes, startTime: 0, endTime: 20, samples: [3, 2], timeDeltas: [0, 10] }),
      bundle(),
    );
    expect(time.byKind.get('Melvin workflow code (in the bundle)')).toBe(20);
    expect([...time.byFunction.keys()]).toEqual([
      'runInContext ← runTurn src/workflows/graph.ts',
      'runTurn src/workflows/graph.ts',
    ]);
  });

  it('refuses a sample naming a node the profile lacks', () => {
    expect(() => timeByKind(profile([42], [1]))).toThrow('node 42');
  });

  it('counts, for any samples and window, exactly the window’s overlap with the profile', () => {
    const sample = fc.record({
      node: fc.integer({ min: 1, max: NODES.length }),
      delta: fc.integer({ min: 0, max: 50 }),
    });
    fc.assert(
      fc.property(fc.array(sample, { minLength: 1, maxLength: 40 }), fc.nat(2_000), fc.nat(2_000), (s, a, b) => {
        const p = profile(
          s.map((x) => x.node),
          s.map((x) => x.delta),
        );
        const window: [number, number] = [Math.min(a, b) + 500, Math.max(a, b) + 500];
        const time = timeByKind(p, undefined, window);
        const counted = time.idle + [...time.byKind.values()].reduce((x, y) => x + y, 0);
        const firstSample = p.startTime + s[0]!.delta;
        const overlap = Math.max(0, Math.min(window[1], p.endTime) - Math.max(window[0], firstSample));
        expect(counted).toBeCloseTo(overlap, 6);
        expect([...time.byFunction.values()].reduce((x, y) => x + y, 0)).toBeCloseTo(counted - time.idle, 6);
      }),
    );
  });
});

describe('addUp and bundleUrl', () => {
  it('adds the threads of a process', () => {
    const one = timeByKind(profile([4], [10]));
    const sum = addUp([one, one, timeByKind(profile([9], [10]))]);
    expect(sum.byKind.get('payload conversion and encryption')).toBe(20);
    expect(sum.idle).toBe(10);
  });

  it('finds the bundle a thread ran, and none in a thread without workflow code', () => {
    expect(bundleUrl(profile([1], [1]))).toBe(BUNDLE);
    const noWorkflows = CpuProfile.parse({
      nodes: [NODES[0]],
      startTime: 0,
      endTime: 1,
      samples: [1],
      timeDeltas: [0],
    });
    expect(bundleUrl(noWorkflows)).toBeUndefined();
  });

  it('refuses a bundle without its inline source map', () => {
    expect(() => bundleMap('a();')).toThrow('no inline source map');
  });
});
