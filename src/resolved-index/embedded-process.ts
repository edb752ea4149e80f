// Starts the index's embedded PostgreSQL (embedded-database.ts) as a child process and hands back its connection string.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

export interface EmbeddedIndexDatabase {
  url: string;
  stop(): Promise<void>;
}

/** PGlite's first start in an empty directory runs initdb in WebAssembly: tens of seconds on a busy machine. */
const START_TIMEOUT_MS = 180_000;

export function startEmbeddedIndexDatabase(
  options: { dataDir?: string; port?: number } = {},
): Promise<EmbeddedIndexDatabase> {
  // From source under tsx (npm start, tests), or compiled.
  const compiled = path.extname(__filename) === '.js';
  const script = path.join(__dirname, `embedded-database${compiled ? '.js' : '.ts'}`);
  const args = [
    ...(options.dataDir ? ['--data-dir', options.dataDir] : []),
    ...(options.port ? ['--port', String(options.port)] : []),
  ];
  const child = spawn(process.execPath, [...(compiled ? [] : ['--import', 'tsx']), script, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`the index database did not start within ${START_TIMEOUT_MS / 1000} s`));
    }, START_TIMEOUT_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the index database exited with ${code} before it was ready`));
    });
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      try {
        const { url } = JSON.parse(line) as { url: string };
        resolve({ url, stop });
      } catch {
        void stop();
        reject(new Error(`the index database said ${line}`));
      }
    });
  });
}
