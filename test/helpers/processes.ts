// Melvin's entry points as child processes for tests: the worker with its environment, and one-shot commands.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePorts, startChild, stopChild, type Child } from '../../harness/stack';
import { sandboxEnvironment } from '../../sandbox/services';
import type { Sandbox } from './sandbox';

export const ROOT = path.join(__dirname, '..', '..');

/** Runs `node --import tsx <script>` to completion. */
export function runNode(script: string, args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], { env, cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The worker's production variables pointing at a test's sandbox, with a metrics port of its own. */
export async function workerEnvironment(
  sandbox: Sandbox,
  options: { temporalAddress: string; taskQueue: string; mcpServers?: string },
): Promise<NodeJS.ProcessEnv> {
  const [metricsPort] = await freePorts(1);
  return {
    ...sandboxEnvironment(sandbox.urls, options.temporalAddress),
    TASK_QUEUE: options.taskQueue,
    ...(options.mcpServers ? { MCP_SERVERS: options.mcpServers } : {}),
    WORKER_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
  };
}

/** A worker process; its own logs are noise in tests, DEBUG_WORKER=1 shows them. */
export function startWorkerProcess(env: NodeJS.ProcessEnv): { child: Child; stop(): Promise<void> } {
  const child = startChild('worker', 'src/worker.ts', env, (line) => {
    if (process.env.DEBUG_WORKER) process.stderr.write(`${line}\n`);
  });
  return { child, stop: () => stopChild(child) };
}

/** A running `npm start`: everything it printed so far, and how to stop it with everything it started. */
export interface NpmStart {
  output(): string;
  stop(): Promise<void>;
}

/**
 * Runs `npm start` in its own process group, as a person would, and waits until it reports Melvin running; stopping
 * sends Ctrl-C to the whole group (npm, the stack and every process it started), and kills it if it lingers.
 */
export async function startNpmStart(env: NodeJS.ProcessEnv, timeoutMs = 240_000): Promise<NpmStart> {
  const child = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const stop = async () => {
    if (!child.pid || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid, 'SIGINT');
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + timeoutMs;
  while (!output.includes('Melvin is running.')) {
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`npm start did not report Melvin running within ${timeoutMs} ms:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { output: () => output, stop };
}
