// Finds the `temporal` CLI (dev server and Web UI), building it from the Go module proxy into a cache when missing.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

/** Later CLI versions carry a `replace` directive that `go install` refuses. */
export const TEMPORAL_CLI_VERSION = '1.5.1';
const MODULE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`;

/** Outside the clone, so every clone and CI run on this machine reuses one build. */
export function cacheDir(): string {
  return (
    process.env.MELVIN_CACHE_DIR ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'melvin')
  );
}

export function cachedCliPath(): string {
  return path.join(cacheDir(), `temporal-${TEMPORAL_CLI_VERSION}`);
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, command);
    if (dir && isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export function goAvailable(): boolean {
  return spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
}

/**
 * `go install <module>` into a private GOBIN, then an atomic rename to `target`, so a half-built file is never found;
 * `built` is the name go gives the binary.
 */
export async function goInstall(
  module: string,
  built: string,
  target: string,
  log: (line: string) => void,
): Promise<string> {
  const gobin = path.join(cacheDir(), `build-${process.pid}-${built}`);
  mkdirSync(gobin, { recursive: true });
  log(`Building ${module} with Go into ${target}; the first build takes several minutes.`);
  const started = Date.now();
  let packages = 0;
  await new Promise<void>((resolve, reject) => {
    const child = spawn('go', ['install', '-v', module], {
      env: { ...process.env, GOBIN: gobin },
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    const ticker = setInterval(() => {
      log(`  … still building: ${packages} packages compiled, ${Math.round((Date.now() - started) / 1000)} s`);
    }, 15_000);
    let buffered = '';
    child.stderr.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('go: downloading')) log(`  ${line}`);
        else if (line.trim() && !line.includes(' ')) packages += 1;
        else if (line.trim()) log(`  ${line}`);
      }
    });
    child.on('error', (err) => {
      clearInterval(ticker);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(ticker);
      if (code === 0) resolve();
      else reject(new Error(`go install ${module} exited with ${code}`));
    });
  });
  renameSync(path.join(gobin, built), target);
  rmSync(gobin, { recursive: true, force: true });
  log(`Built ${target} in ${Math.round((Date.now() - started) / 1000)} s.`);
  return target;
}

/**
 * TEMPORAL_CLI_PATH, then `temporal` on PATH, then the cached build, else a fresh build with Go. Undefined means none
 * could be had here: callers then let @temporalio/testing download its own copy (machines with internet and no Go).
 */
export async function findTemporalCli(
  log: (line: string) => void = (line) => console.error(line),
): Promise<string | undefined> {
  const configured = process.env.TEMPORAL_CLI_PATH;
  if (configured) {
    if (!isExecutable(configured)) throw new Error(`TEMPORAL_CLI_PATH=${configured} is not an executable file`);
    return configured;
  }
  const fromPath = onPath('temporal');
  if (fromPath) return fromPath;
  const cached = cachedCliPath();
  if (existsSync(cached) && isExecutable(cached)) return cached;
  if (!goAvailable()) {
    log('No Temporal CLI found and no Go toolchain: falling back to the copy @temporalio/testing downloads.');
    return undefined;
  }
  return goInstall(MODULE, 'temporal', cached, log);
}
