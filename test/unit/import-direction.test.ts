// Imports that run one way: code outside src/workflows/ importing a workflow module fails `npm run lint` (and the same
// files without that import pass), no module or folder of src/ imports itself through others, src/'s root holds entry
// points only.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.join(__dirname, '..', '..');

/** `file`'s own text with `extra` put after its imports. */
function withImport(file: string, extra: string): string {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const at = text.indexOf('\n', text.lastIndexOf('\nimport ') + 1) + 1;
  return text.slice(0, at) + extra + text.slice(at);
}

/**
 * Lints each text as the file it names, with the project's own ESLint config, in a Node process of its own (the config
 * is an ES module, which Jest's module system does not load): each case's messages from the one-way rule.
 */
function restrictedImports(cases: { file: string; text: string }[]): string[][] {
  const script = `
    const { ESLint } = await import('eslint');
    const eslint = new ESLint({ cwd: process.cwd() });
    let input = '';
    for await (const chunk of process.stdin) input += chunk;
    const cases = JSON.parse(input);
    const answers = [];
    for (const { file, text } of cases) {
      const [result] = await eslint.lintText(text, { filePath: file });
      answers.push(result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message));
    }
    process.stdout.write(JSON.stringify(answers));`;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    input: JSON.stringify(cases),
  });
  return JSON.parse(output) as string[][];
}

const RULE_MESSAGE =
  'Only workflow code imports from src/workflows/: move what both sides need to a module outside it.';

describe('imports run one way: nothing outside src/workflows/ imports from it', () => {
  const refused = [
    ['src/activities/mcp.ts', "import { ESCALATION_TABLE } from '../workflows/routing';\n"],
    ['src/activities/intercom.ts', "import type { Turn } from '../workflows/nodes/turn';\n"],
    ['src/ingress/app.ts', "import { supportConversation } from '../workflows';\n"],
    ['src/config/environment.ts', "import { ESCALATION_TABLE } from '../workflows/routing';\n"],
    ['src/reports/figures.ts', "export { DOCS_TOOL } from '../workflows/tool-calls';\n"],
  ] as const;
  const allowed = [
    ['src/activities/mcp.ts', ''],
    ['src/ingress/app.ts', ''],
    ['src/config/environment.ts', ''],
    // Workflow modules import each other, and the modules outside, freely.
    ['src/workflows/graph.ts', "import { ESCALATION_TABLE as TABLE } from './routing/routing';\n"],
  ] as const;
  let answers: string[][];
  beforeAll(() => {
    answers = restrictedImports(
      [...refused, ...allowed].map(([file, extra]) => ({ file, text: withImport(file, extra) })),
    );
  }, 120_000);

  test.each(refused.map(([file, extra], i) => [file, extra.trim(), i] as const))(
    '%s with `%s` fails the lint',
    (_file, _extra, i) => {
      expect(answers[i]).toEqual([expect.stringContaining(RULE_MESSAGE)]);
    },
  );

  test.each(allowed.map(([file, extra], i) => [file, extra.trim() || 'its own imports', refused.length + i] as const))(
    '%s with %s passes',
    (_file, _extra, i) => {
      expect(answers[i]).toEqual([]);
    },
  );
});

/** Every module of src/ with the modules of src/ it imports (types too: a circle of types is a circle for a reader). */
function importGraph(): Map<string, string[]> {
  const src = path.join(ROOT, 'src');
  const files = readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join('src', f));
  const resolve = (from: string, spec: string): string | undefined => {
    const base = path.join(path.dirname(from), spec);
    return [`${base}.ts`, path.join(base, 'index.ts')].find((candidate) => files.includes(candidate));
  };
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(readFileSync(path.join(ROOT, file), 'utf8'), true, true);
      const targets = importedFiles.filter((i) => i.fileName.startsWith('.')).map((i) => resolve(file, i.fileName));
      return [file, [...new Set(targets.filter((t) => t !== undefined))]];
    }),
  );
}

/** The circles of a graph: its strongly connected components of more than one node (Tarjan), each sorted. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component = stack.splice(stack.indexOf(node));
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** The graph between src/'s folders, each on its own (a subfolder too): an edge wherever a module of one imports one of another. */
function folderGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const folders = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = path.dirname(file);
    const edges = folders.get(from) ?? new Set<string>();
    for (const target of targets) if (path.dirname(target) !== from) edges.add(path.dirname(target));
    folders.set(from, edges);
  }
  return new Map([...folders].map(([folder, edges]) => [folder, [...edges]]));
}

describe('imports run one way: no circles', () => {
  const graph = importGraph();

  test('no module of src/ imports itself through others', () => {
    expect(circles(graph)).toEqual([]);
  });

  test('no folder of src/ imports itself through others, a subfolder and its parent included', () => {
    expect(circles(folderGraph(graph))).toEqual([]);
  });

  test('the check finds a circle of modules and one of folders', () => {
    const circular = new Map([
      ['src/contract/shared.ts', ['src/contract/state.ts']],
      ['src/contract/state.ts', ['src/contract/schemas.ts']],
      ['src/contract/schemas.ts', ['src/contract/shared.ts', 'src/workflows/nodes/plan.ts']],
      ['src/workflows/nodes/plan.ts', ['src/workflows/routing/routing.ts']],
      ['src/workflows/routing/routing.ts', []],
    ]);
    expect(circles(circular)).toEqual([['src/contract/schemas.ts', 'src/contract/shared.ts', 'src/contract/state.ts']]);
    expect(circles(folderGraph(circular))).toEqual([]);
    circular.get('src/workflows/routing/routing.ts')!.push('src/contract/vocabulary.ts');
    expect(circles(folderGraph(circular))).toEqual([['src/contract', 'src/workflows/nodes', 'src/workflows/routing']]);
    // A subfolder and its parent importing each other are a circle too.
    circular.get('src/workflows/routing/routing.ts')!.pop();
    circular.set('src/workflows/graph.ts', ['src/workflows/nodes/plan.ts']);
    circular.get('src/workflows/routing/routing.ts')!.push('src/workflows/graph.ts');
    expect(circles(folderGraph(circular))).toEqual([['src/workflows', 'src/workflows/nodes', 'src/workflows/routing']]);
    // The real graph is read from the files: a module that imports its own importer is seen.
    expect(graph.get('src/contract/schemas.ts')).toEqual(['src/contract/vocabulary.ts']);
  });

  test("src/'s root holds entry points only: each file there is a package.json script's", () => {
    const scripts = Object.values(
      (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
        .scripts,
    ).join('\n');
    const root = readdirSync(path.join(ROOT, 'src')).filter((name) => name.endsWith('.ts'));
    expect(root.filter((name) => !scripts.includes(`src/${name}`))).toEqual([]);
    expect(root.length).toBeGreaterThan(0);
  });
});
