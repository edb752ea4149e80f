// The docs a newcomer reads first: the README stays short, and every relative link in it and in docs/ (file and
// #anchor, by GitHub's heading-slug rule) leads somewhere that exists.
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CONFIGURATION_VARIABLES } from '../../src/config/environment';

const ROOT = path.join(__dirname, '..', '..');

function markdownFiles(): string[] {
  const docs = path.join(ROOT, 'docs');
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return walk(full);
      return entry.name.endsWith('.md') ? [full] : [];
    });
  return [path.join(ROOT, 'README.md'), ...(existsSync(docs) ? walk(docs) : [])];
}

/** The text outside fenced code blocks and inline code spans, where a link or a heading means what it says. */
function prose(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, '');
  });
}

/** GitHub's anchor for a heading: the rendered text lower-cased, punctuation dropped, spaces made hyphens. */
export function slug(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const match = fenced ? null : /^#{1,6}\s+(.*?)\s*#*$/.exec(line);
    if (!match) continue;
    const base = slug(match[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n ? `${base}-${n}` : base);
  }
  return found;
}

/** Every relative link of a file that leads nowhere, as `file:line → target (why)`. */
function brokenLinks(file: string): string[] {
  const broken: string[] = [];
  prose(readFileSync(file, 'utf8')).forEach((line, index) => {
    for (const match of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const [pathPart, anchor] = target.split('#') as [string, string | undefined];
      const resolved = pathPart ? path.resolve(path.dirname(file), decodeURIComponent(pathPart)) : file;
      const where = `${path.relative(ROOT, file)}:${index + 1} → ${target}`;
      if (!existsSync(resolved)) broken.push(`${where} (no such file)`);
      else if (anchor !== undefined) {
        if (statSync(resolved).isDirectory() || !resolved.endsWith('.md'))
          broken.push(`${where} (an anchor into a non-Markdown file)`);
        else if (!anchors(resolved).has(anchor)) broken.push(`${where} (no heading with that anchor)`);
      }
    }
  });
  return broken;
}

test('the README has fewer than 200 lines', () => {
  const lines = readFileSync(path.join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length;
  expect({ file: 'README.md', lines, under200: lines < 200 }).toEqual({ file: 'README.md', lines, under200: true });
});

test('every relative link in the README and docs/ resolves, anchors included', () => {
  expect(markdownFiles().flatMap(brokenLinks)).toEqual([]);
});

test('the link check catches a missing file and a missing anchor, and slugs headings as GitHub does', () => {
  expect(slug('For support leads: the Temporal UI')).toBe('for-support-leads-the-temporal-ui');
  expect(slug('The `state` query — and `progress`')).toBe('the-state-query--and-progress');
  expect(slug('worker kill -9 (`crash`)')).toBe('worker-kill--9-crash');
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'melvin-docs-')), 'page.md');
  writeFileSync(
    file,
    [
      '# A page',
      '## Twice',
      '## Twice',
      '[fine](#a-page) [second](#twice-1) [web](https://example.com) `[in code](nowhere.md)`',
      '```',
      '[in a fence](nowhere.md)',
      '```',
      `[missing file](nowhere.md) [missing anchor](#nowhere) [readme](${path.relative(path.dirname(file), path.join(ROOT, 'README.md'))}#quickstart)`,
    ].join('\n'),
  );
  expect(brokenLinks(file).map((b) => b.replace(/^.*→ /, ''))).toEqual([
    'nowhere.md (no such file)',
    '#nowhere (no heading with that anchor)',
  ]);
});

test('docs/configuration.md documents every variable Melvin’s processes read', () => {
  const documented = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');
  expect(CONFIGURATION_VARIABLES.filter((name) => !documented.includes(`| \`${name}\``))).toEqual([]);
});

describe("docs/architecture.md's source layout", () => {
  const markdown = readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const block = /## Source layout\n+```\n([\s\S]*?)\n```/.exec(markdown)?.[1] ?? '';
  const src = path.join(ROOT, 'src');
  const folders = readdirSync(src, { withFileTypes: true }).filter((entry) => entry.isDirectory());

  test('has a line for each folder of src/ and of the repository', () => {
    const repository = ['src', 'scripts', 'harness', 'bench', 'eval', 'reliability', 'sandbox', 'test', 'docs'];
    expect(repository.filter((name) => !new RegExp(`^${name}/`, 'm').test(block))).toEqual([]);
    expect(folders.map((f) => f.name).filter((name) => !new RegExp(`^  ${name}/ `, 'm').test(block))).toEqual([]);
  });

  test('names every module of src/', () => {
    const modules = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const named = (file: string) => block.includes(path.basename(file)) || path.basename(file) === 'index.ts';
    expect(modules.filter((file) => !named(file))).toEqual([]);
  });
});
