// The lint rule that keeps imports one way: code outside src/workflows/ importing a workflow module fails `npm run lint`,
// and the same files without that import pass.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

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
    ['src/activities/intercom.ts', "import type { Turn } from '../workflows/turn';\n"],
    ['src/ingress/app.ts', "import { supportConversation } from '../workflows';\n"],
    ['src/config/environment.ts', "import { ESCALATION_TABLE } from '../workflows/routing';\n"],
    ['src/reports/figures.ts', "export { DOCS_TOOL } from '../workflows/tool-calls';\n"],
  ] as const;
  const allowed = [
    ['src/activities/mcp.ts', ''],
    ['src/ingress/app.ts', ''],
    ['src/config/environment.ts', ''],
    // Workflow modules import each other, and the modules outside, freely.
    ['src/workflows/turn.ts', "import { ESCALATION_TABLE as TABLE } from './routing';\n"],
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
