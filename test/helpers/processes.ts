// Melvin's entry points as child processes for tests: the worker with its environment, and one-shot commands.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePorts, startChild, stopChild, type Child } from '../../scripts/stack';
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
