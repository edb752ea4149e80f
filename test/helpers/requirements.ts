// What an end-to-end test needs from the machine beyond Node (PostgreSQL, Go, Chromium): probed once before the tests,
// so a test without it is skipped with the reason on a laptop, and fails with the reason under CI=true.
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CHROMIUM_PATH } from '../../harness/chromium';
import { goAvailable } from '../../harness/temporal-cli';

export type Requirement = 'PostgreSQL' | 'Go' | 'Chromium';

/** Set by the global setup: JSON of each missing requirement and why, and the file the skipped tests are listed in. */
const MISSING_ENV = 'MELVIN_TEST_MISSING';
const SKIPS_ENV = 'MELVIN_TEST_SKIPS_FILE';

function postgresAddress(): { host: string; port: number } {
  return { host: process.env.PGHOST ?? '127.0.0.1', port: Number(process.env.PGPORT ?? 5432) };
}

/** Whether something answers on PostgreSQL's address; the test itself then finds out whether it is PostgreSQL. */
function probePostgres(): Promise<string | null> {
  const { host, port } = postgresAddress();
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2_000 });
    const done = (reason: string | null) => {
      socket.destroy();
      resolve(reason);
    };
    socket.once('connect', () => done(null));
    socket.once('timeout', () => done(`nothing answers at ${host}:${port} within 2 s (set PGHOST/PGPORT)`));
    socket.once('error', (err) => done(`cannot reach ${host}:${port}: ${err.message} (set PGHOST/PGPORT)`));
  });
}

function probeGo(): string | null {
  return goAvailable() ? null : 'the `go` command is not on PATH (the Temporal server is built from Go modules)';
}

/** Chromium is there, or can be installed from Debian because the tests run as root with apt-get. */
function probeChromium(): string | null {
  if (existsSync(CHROMIUM_PATH)) return null;
  const root = process.getuid?.() === 0;
  const aptGet = spawnSync('apt-get', ['--version']).status === 0;
  if (root && aptGet) return null;
  return `no Chromium at ${CHROMIUM_PATH} and ${root ? 'no apt-get' : 'not root'} to install it (set CHROMIUM_PATH)`;
}

/** Run by the global setup: probes every requirement and hands the answers to the test workers. */
export async function probeRequirements(): Promise<Partial<Record<Requirement, string>>> {
  const found: Record<Requirement, string | null> = {
    PostgreSQL: await probePostgres(),
    Go: probeGo(),
    Chromium: probeChromium(),
  };
  const missing = Object.fromEntries(Object.entries(found).filter(([, reason]) => reason !== null));
  process.env[MISSING_ENV] = JSON.stringify(missing);
  process.env[SKIPS_ENV] = path.join(mkdtempSync(path.join(tmpdir(), 'melvin-skips-')), 'skipped.txt');
  return missing;
}

function missingNow(): Partial<Record<Requirement, string>> {
  return JSON.parse(process.env[MISSING_ENV] ?? '{}') as Partial<Record<Requirement, string>>;
}

/**
 * `describe` for tests that need `needs`. When one is missing they are skipped and listed with the reason for the
 * summary after the run; under CI=true they must run, so they fail at once saying what is missing.
 */
export function describeNeeding(needs: Requirement[]): jest.Describe {
  const missing = needs.flatMap((need) => {
    const reason = missingNow()[need];
    return reason ? [`${need}: ${reason}`] : [];
  });
  if (missing.length === 0) return describe;
  const file = path.relative(process.cwd(), expect.getState().testPath ?? 'unknown test file');
  if (process.env.CI === 'true') {
    return ((name: string, fn: () => void) =>
      describe(name, () => {
        beforeAll(() => {
          throw new Error(`CI=true runs every test, and this machine lacks ${missing.join('; ')}`);
        });
        fn();
      })) as jest.Describe;
  }
  return ((name: string, fn: () => void) => {
    const skips = process.env[SKIPS_ENV];
    if (skips) appendFileSync(skips, `${file} › ${name}\n    needs ${missing.join('; ')}\n`);
    describe.skip(name, fn);
  }) as jest.Describe;
}

/** Run by the global teardown: the skipped tests and why, as the last thing the run prints. */
export function skippedSummary(): string | null {
  const skips = process.env[SKIPS_ENV];
  if (!skips || !existsSync(skips)) return null;
  const text = readFileSync(skips, 'utf8').trim();
  return text ? `Skipped on this machine (they run under CI=true):\n  ${text.replace(/\n/g, '\n  ')}\n` : null;
}
