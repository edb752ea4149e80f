// The production image holds the product only: the Dockerfile copies src/, the prompts and the report page's files, and
// the build compiles src/ alone, so nothing of the sandbox, the scripts, the experiments or the tests can ship or break
// the build.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

test('the Dockerfile copies no source folder but src/ into the image', () => {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const copied = [...dockerfile.matchAll(/^COPY (?!--from)(?:--\S+ )*(.+) \S+$/gm)].flatMap((m) => m[1]!.split(' '));
  expect(copied.sort()).toEqual(
    [
      'package-lock.json',
      'package.json',
      'package.json',
      'prompts',
      'src',
      // The report page's HTML, style and script, which the compiled ingress reads from the package.
      'src/ingress/report-page',
      'tsconfig.build.json',
      'tsconfig.json',
    ].sort(),
  );
});

test('the build compiles src/ alone, and what it emits is only src/', () => {
  const build = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
  expect(build.include).toEqual(['src']);
  const out = mkdtempSync(path.join(tmpdir(), 'melvin-build-'));
  try {
    execFileSync(
      process.execPath,
      [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', out],
      {
        cwd: ROOT,
        stdio: 'pipe',
      },
    );
    expect(readdirSync(out)).toEqual(['src']);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 120_000);
