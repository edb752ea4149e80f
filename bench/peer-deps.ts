// Installs the LangGraph peer's own dependencies (bench/peer/package-lock.json) when they are missing or stale, as
// scripts/ensure-deps.mjs does Melvin's: only the bench and its tests pay for them, never `npm start`.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { waitFor } from '../sandbox/wait';

export const PEER_DIR = path.join(__dirname, 'peer');
/** Node's headers as a distribution installs them: node-gyp builds better-sqlite3 against them, with no download. */
const SYSTEM_NODE_DIR = '/usr';

/** The lock file and this Node's module ABI: a changed lock, or another Node (better-sqlite3 is native), installs again. */
function installedFor(): string {
  return createHash('sha256')
    .update(readFileSync(path.join(PEER_DIR, 'package-lock.json')))
    .update(process.versions.modules)
    .digest('hex');
}

/**
 * Runs `npm ci` in bench/peer unless what is installed there matches its lock file, its output (better-sqlite3's build
 * among it) passed line by line to `log`. better-sqlite3's prebuilt binary comes from GitHub, which an offline machine
 * cannot reach; npm then builds it with node-gyp, which would download Node's headers too unless told where they are.
 */
export async function ensurePeerDeps(log: (line: string) => void): Promise<void> {
  const stamp = path.join(PEER_DIR, 'node_modules', '.melvin-lock-hash');
  const wanted = installedFor();
  const installed = () => existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted;
  if (installed()) return;
  // Two test files may start a bench at once: one installs, the other waits for it and finds the install done.
  const lock = path.join(PEER_DIR, '.installing');
  await waitFor("another process's install of the peer's dependencies", () => tryLock(lock), {
    timeoutMs: 10 * 60_000,
    intervalMs: 1000,
  });
  try {
    if (!installed()) await npmCi(log);
    writeFileSync(stamp, wanted);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function tryLock(dir: string): boolean {
  try {
    mkdirSync(dir);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

async function npmCi(log: (line: string) => void): Promise<void> {
  log("Installing the LangGraph peer's dependencies in bench/peer (better-sqlite3 may build from source: a minute)…");
  const env = { ...process.env };
  if (!env.npm_config_nodedir && existsSync(path.join(SYSTEM_NODE_DIR, 'include', 'node', 'node.h'))) {
    env.npm_config_nodedir = SYSTEM_NODE_DIR;
  }
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const child = spawn(npm, ['ci', '--no-audit', '--no-fund', '--foreground-scripts'], {
    cwd: PEER_DIR,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    let buffered = '';
    stream.on('data', (chunk: Buffer) => {
      const lines = (buffered + chunk.toString()).split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) log(`[peer npm ci] ${line}`);
    });
  }
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`npm ci in bench/peer failed with exit code ${code}; see its output above`);
  log("The LangGraph peer's dependencies are installed.");
}
