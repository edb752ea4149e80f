// Finds Debian's Chromium for the browser tests, installing it with apt-get when missing (browser downloads fail here).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The flags that keep a headless Chromium off this machine's closed network. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** apt-get with `args`, its output on this process's stderr; resolves to its exit code. */
function aptGet(args: string[]): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const child = spawn('apt-get', args, { env, stdio: ['ignore', process.stderr, process.stderr] });
    child.on('error', reject);
    child.on('exit', resolve);
  });
}

export async function ensureChromium(log: (line: string) => void = (line) => console.error(line)): Promise<string> {
  if (existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  if (process.getuid?.() !== 0) {
    throw new Error(`Chromium is not at ${CHROMIUM_PATH}: install Debian's chromium package or set CHROMIUM_PATH`);
  }
  log('Installing Chromium from Debian (apt-get install chromium)…');
  let code = await aptGet(['install', '-y', 'chromium']);
  if (code !== 0) {
    await aptGet(['update']);
    code = await aptGet(['install', '-y', 'chromium']);
  }
  if (code !== 0 || !existsSync(CHROMIUM_PATH)) throw new Error('apt-get could not install chromium');
  return CHROMIUM_PATH;
}
