// The modules every workflow run of a worker shares (src/bundling/workflow-bundle.ts): only ones without per-run state, whose
// imports stay among shared modules, so no workflow module is pulled into the shared cache behind them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { SHARED_MODULES, SHARED_SOURCES, workflowBundleOptions } from '../../src/bundling/workflow-bundle';

const SRC = path.join(__dirname, '../../src');
/** Libraries a shared source may load: the SDK's entry loads its common module; zod only through zod-library.ts. */
const LIBRARIES = (name: string) => ['@temporalio/common', ...(name === 'bundling/zod-library' ? ['zod'] : [])];

/** Each import of a file, with whether it is for types only (erased, so it loads nothing). */
function imports(source: string): { from: string; typeOnly: boolean }[] {
  return [...source.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)';/gm)].map((m) => ({
    from: m[2]!,
    typeOnly: Boolean(m[1]),
  }));
}

/** Module-scope declarations whose value one run could change for the next: a `let`, a `var`, a Map or a Set. */
function perRunState(source: string): string[] {
  return source
    .split('\n')
    .filter(
      (line) =>
        /^(export )?(let|var) /.test(line) || /^(export )?const \w+(: [^=]+)? = new (Weak)?(Map|Set)\b/.test(line),
    );
}

describe.each(SHARED_SOURCES)('the shared source %s', (name) => {
  const file = path.join(SRC, `${name}.ts`);
  const source = readFileSync(file, 'utf8');

  test('holds no module-scope state a run could change', () => {
    expect(perRunState(source)).toEqual([]);
  });

  test('loads only other shared modules', () => {
    const loaded = imports(source)
      .filter((i) => !i.typeOnly)
      // A relative import as a path from src/, as SHARED_SOURCES names them; a package by its name.
      .map((i) => (i.from.startsWith('.') ? path.relative(SRC, path.join(path.dirname(file), i.from)) : i.from));
    const shared = [...SHARED_MODULES, ...LIBRARIES(name), ...SHARED_SOURCES];
    expect(loaded.filter((from) => !shared.includes(from))).toEqual([]);
  });
});

describe('the checks above', () => {
  test('find module-scope state and imports of workflow modules', () => {
    const source = [
      "import type { Turn } from './workflows/nodes/turn';",
      "import { since } from './workflows/versions/patches';",
      'let rules = -1;',
      'export const SEEN = new Map<string, number>();',
      'const FIXED = new Set([1, 2]);',
      'function f() {',
      '  let local = 1;',
      '}',
    ].join('\n');
    expect(imports(source)).toEqual([
      { from: './workflows/nodes/turn', typeOnly: true },
      { from: './workflows/versions/patches', typeOnly: false },
    ]);
    expect(perRunState(source)).toEqual([
      'let rules = -1;',
      'export const SEEN = new Map<string, number>();',
      'const FIXED = new Set([1, 2]);',
    ]);
  });
});

test('the bundle preloads the shared modules and none of the workflow modules', async () => {
  const { code } = await bundleWorkflowCode({
    ...workflowBundleOptions(),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} },
  });
  const hook = /exports\.preloadModules = function preloadModules\(\) \{([\s\S]*?)\n\}/.exec(code)?.[1] ?? '';
  const preloaded = [...hook.matchAll(/__webpack_require__\([^)]*"([^"]+)"\)/g)].map((m) => m[1]!);
  expect(preloaded).toEqual([
    ...SHARED_MODULES.map((name) => `./node_modules/${name}/lib/index.js`),
    ...SHARED_SOURCES.map((name) => `./src/${name}.ts`),
  ]);
  expect(preloaded.filter((id) => id.includes('/workflows/'))).toEqual([]);
  // Every run evaluates the modules not preloaded: schemas.ts, a hundred-odd zod schemas that cannot be shared, would
  // nearly double what a waiting conversation holds (the bench's memory phase). Workflows import only its types.
  const modules = [...code.matchAll(/^\/\*\*\*\/ "(\.\/src\/[^"]+)"/gm)].map((m) => m[1]!);
  expect(modules).toContain('./src/contract/answers.ts');
  expect(modules).not.toContain('./src/contract/schemas.ts');
}, 60_000);
