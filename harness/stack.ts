// The whole of Melvin on one machine: a Temporal server, the sandbox, the worker and the ingress as processes, wired
// by environment variables exactly as in production, only with base URLs pointing at the sandbox.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { createDataConverter, payloadKeysEnvironment, type PayloadKey } from '../src/encryption/payload-codec';
import { allSearchAttributes } from '../src/contract/shared';
import { sandboxEnvironment } from '../sandbox/services';
import { waitFor } from '../sandbox/wait';
import { devServerDynamicConfigFlags } from './temporal-dynamic-config';

const ROOT = path.resolve(__dirname, '..');

export interface StackPorts {
  temporal: number;
  temporalUi: number;
  ingress: number;
  ingressMetrics: number;
  workerMetrics: number;
  intercom: number;
  mcp: number;
  model: number;
  validation: number;
}

/** The ports of the processes a stack starts itself; the Temporal server brings its own. */
export type ProcessPorts = Omit<StackPorts, 'temporal' | 'temporalUi'>;

export const DEFAULT_PORTS: StackPorts = {
  temporal: 7233,
  temporalUi: 8233,
  ingress: 8780,
  ingressMetrics: 9465,
  workerMetrics: 9464,
  intercom: 8781,
  mcp: 8782,
  model: 8783,
  validation: 8784,
};

const PORT_VARIABLES: Record<keyof StackPorts, string> = {
  temporal: 'TEMPORAL_PORT',
  temporalUi: 'TEMPORAL_UI_PORT',
  ingress: 'INGRESS_PORT',
  ingressMetrics: 'INGRESS_METRICS_PORT',
  workerMetrics: 'WORKER_METRICS_PORT',
  intercom: 'SANDBOX_INTERCOM_PORT',
  mcp: 'SANDBOX_MCP_PORT',
  model: 'SANDBOX_MODEL_PORT',
  validation: 'SANDBOX_VALIDATION_PORT',
};

export function portsFromEnv(env: NodeJS.ProcessEnv = process.env): StackPorts {
  const ports = { ...DEFAULT_PORTS };
  for (const [key, variable] of Object.entries(PORT_VARIABLES) as [keyof StackPorts, string][]) {
    const value = env[variable];
    if (value === undefined || value === '') continue;
    const port = Number(value);
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new Error(`${variable}=${value} is not a port number`);
    ports[key] = port;
  }
  return ports;
}

/** Whether a loopback port is free right now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** The lowest port the kernel hands to outgoing connections (Linux's setting; its default elsewhere). */
function ephemeralPortsLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low)) return low;
  } catch {
    // Not Linux: assume its default.
  }
  return 32768;
}

/** Where handed-out ports come from, and how many slices it has for parallel jest workers. */
const HANDED_OUT_LOW = 10_000;
/** Below 32768 too: some servers store ports as 16-bit signed integers. */
const HANDED_OUT_HIGH = Math.min(32_768, ephemeralPortsLow());
const WORKER_SLICES = 8;
const handedOut = new Set<number>();

/**
 * `count` loopback ports free right now, for another process to listen on a moment later.
 *
 * Why not the kernel's own pick (listen on 0, close, pass the number on): that port is in the ephemeral range, and the
 * kernel may hand it to any outgoing connection before the child binds it; on a busy CI machine a test's `npm start`
 * once failed with "port in use" that way. So the ports come from below the ephemeral range (and 32768), each jest
 * worker draws from its own slice so two parallel test files cannot draw the same one, and one process does not hand
 * out the same port twice until half its slice is used.
 */
export async function freePorts(count: number): Promise<number[]> {
  const sliceSize = Math.floor((HANDED_OUT_HIGH - HANDED_OUT_LOW) / WORKER_SLICES);
  if (sliceSize < 100)
    throw new Error(`too few ports between ${HANDED_OUT_LOW} and the ephemeral range at ${HANDED_OUT_HIGH}`);
  const slice = (Number(process.env.JEST_WORKER_ID ?? 1) - 1) % WORKER_SLICES;
  const sliceLow = HANDED_OUT_LOW + slice * sliceSize;
  const ports: number[] = [];
  for (let tries = 0; ports.length < count; tries++) {
    if (tries > 10 * sliceSize) throw new Error(`no free port between ${sliceLow} and ${sliceLow + sliceSize}`);
    if (handedOut.size >= sliceSize / 2) handedOut.clear();
    const candidate = sliceLow + Math.floor(Math.random() * sliceSize);
    if (handedOut.has(candidate) || !(await portFree(candidate))) continue;
    handedOut.add(candidate);
    ports.push(candidate);
  }
  return ports;
}

/** The variables that set a stack's ports, as `npm start` reads them. */
export function portEnvironment(ports: StackPorts): Record<string, string> {
  return Object.fromEntries(
    (Object.entries(PORT_VARIABLES) as [keyof StackPorts, string][]).map(([key, variable]) => [
      variable,
      String(ports[key]),
    ]),
  );
}

/** A free port for every process of a stack, for one that must not collide with a developer's own `npm start`. */
export async function freeStackPorts(): Promise<StackPorts> {
  const keys = Object.keys(DEFAULT_PORTS) as (keyof StackPorts)[];
  const ports = await freePorts(keys.length);
  return Object.fromEntries(keys.map((key, index) => [key, ports[index]!])) as unknown as StackPorts;
}

/** Fails early, naming the variable to change, when a port is taken (often by another `npm start`). */
async function checkPortsFree(ports: Partial<StackPorts>): Promise<void> {
  for (const [key, port] of Object.entries(ports) as [keyof StackPorts, number][]) {
    if (!(await portFree(port))) {
      throw new Error(
        `port ${port} is in use (is Melvin already running?); choose another with ${PORT_VARIABLES[key]}`,
      );
    }
  }
}

type LocalServerOptions = NonNullable<Parameters<typeof TestWorkflowEnvironment.createLocal>[0]>;
const DEV_SERVER_START_TRIES = 3;

/**
 * `TestWorkflowEnvironment.createLocal`, tried again when the dev server did not answer within the SDK's fixed 5 s
 * (a loaded machine: a CI run starting many servers on two cores). The SDK kills the slow server before it reports
 * that, so a new try starts clean; any other failure is thrown at once.
 */
export async function createLocalTemporal(options: LocalServerOptions): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createLocal(options);
    } catch (error) {
      const slowStart = error instanceof Error && /did not start within/.test(error.message);
      if (!slowStart || attempt === DEV_SERVER_START_TRIES) throw error;
      process.stderr.write(`the Temporal dev server was slow to start (try ${attempt}); starting it again\n`);
    }
  }
}

/** A Temporal server the stack runs against: the CLI's dev server, or a server started elsewhere. */
export interface TemporalServer {
  address: string;
  uiUrl: string | null;
  /** What `client` encrypts with (none: plain text); a stack gives its worker and ingress the same keys. */
  payloadKeys: readonly PayloadKey[];
  client: Client;
  /** The server's process, where this code started it as one of its own (the PostgreSQL topology). */
  pid?: number;
  stop(): Promise<void>;
}

/**
 * `temporal server start-dev` with a SQLite file and the Web UI, Melvin's search attributes registered; its client
 * encrypts with `payloadKeys`, and its UI decodes payloads through `uiCodecEndpoint` (the ingress's codec endpoint).
 */
export async function startDevServer(options: {
  port: number;
  uiPort: number;
  dataDir: string;
  cli: string | undefined;
  payloadKeys: readonly PayloadKey[];
  uiCodecEndpoint?: string;
}): Promise<TemporalServer> {
  await checkPortsFree({ temporal: options.port, temporalUi: options.uiPort });
  mkdirSync(options.dataDir, { recursive: true });
  const env = await createLocalTemporal({
    server: {
      executable: options.cli ? { type: 'existing-path', path: options.cli } : undefined,
      ip: '127.0.0.1',
      port: options.port,
      ui: true,
      uiPort: options.uiPort,
      dbFilename: path.join(options.dataDir, 'temporal.db'),
      namespace: 'default',
      searchAttributes: allSearchAttributes,
      log: { format: 'json', level: 'error' },
      // Write-ahead logging lets readers and the writer work at once; NORMAL sync keeps every commit across a process
      // crash (a power cut may lose the last ones), which is what a dev server needs.
      extraArgs: [
        '--sqlite-pragma',
        'journal_mode=wal',
        '--sqlite-pragma',
        'synchronous=normal',
        ...devServerDynamicConfigFlags(),
        ...(options.uiCodecEndpoint ? ['--ui-codec-endpoint', options.uiCodecEndpoint] : []),
      ],
    },
    client: { dataConverter: createDataConverter(options.payloadKeys) },
  });
  return {
    address: `127.0.0.1:${options.port}`,
    uiUrl: `http://127.0.0.1:${options.uiPort}`,
    payloadKeys: options.payloadKeys,
    client: env.client,
    stop: () => env.teardown(),
  };
}

export interface StackUrls {
  inbox: string;
  temporalUi: string | null;
  temporal: string;
  webhook: string;
  ingress: string;
  sandboxControl: string;
  workerMetrics: string;
  ingressMetrics: string;
}

export interface Stack {
  urls: StackUrls;
  ports: ProcessPorts;
  temporal: TemporalServer;
  stop(): Promise<void>;
}

export interface Child {
  name: string;
  process: ChildProcess;
  output: string[];
}

/**
 * Starts `node --import tsx <script>` with `env` (plus PATH and HOME), echoing its output lines prefixed by name.
 * `nodeArgs` go to Node itself: some (`--cpu-prof`) are refused in NODE_OPTIONS.
 */
export function startChild(
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
  echo: (line: string) => void,
  nodeArgs: readonly string[] = [],
): Child {
  const child: Child = {
    name,
    process: spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(ROOT, script)], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    output: [],
  };
  for (const stream of [child.process.stdout!, child.process.stderr!]) {
    let buffered = '';
    stream.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        child.output.push(line);
        if (child.output.length > 200) child.output.shift();
        echo(`[${name}] ${line}`);
      }
    });
  }
  return child;
}

/** Waits until `ready`, failing at once with its last output lines when a child exits while starting. */
function waitUntil(
  what: string,
  children: Child[],
  ready: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<boolean> {
  return waitFor(
    what,
    () => {
      const exited = children.find((c) => c.process.exitCode !== null);
      if (exited) {
        const lines = exited.output.slice(-20).join('\n');
        throw new Error(`${exited.name} exited with code ${exited.process.exitCode} while starting:\n${lines}`);
      }
      return ready().catch(() => false);
    },
    { timeoutMs, intervalMs: 200 },
  );
}

/** SIGINT, as an orchestrator stops a process: it finishes what it holds, then exits (SIGKILL after 10 s). */
export async function stopChild(child: Child): Promise<void> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return;
  const exited = new Promise((resolve) => child.process.once('exit', resolve));
  child.process.kill('SIGINT');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Starts the sandbox, the worker and the ingress against `temporal`; stopping the stack stops `temporal` too. */
export async function startStack(options: {
  ports: ProcessPorts;
  temporal: TemporalServer;
  echo?: (line: string) => void;
  /** The worker's log level; `npm start` keeps its console to warnings. */
  workerLogLevel?: string;
  /** Variables that replace the sandbox's in the worker's environment, e.g. a real model endpoint for an evaluation. */
  workerEnv?: Record<string, string>;
  /** Variables added to the sandbox's environment, e.g. `SANDBOX_RESOLVED_SEARCH` (sandbox/main.ts). */
  sandboxEnv?: Record<string, string>;
  /** Variables added to the ingress's environment, e.g. `INGRESS_OUTBOX_DIR`. */
  ingressEnv?: Record<string, string>;
}): Promise<Stack> {
  const { ports, temporal } = options;
  const echo = options.echo ?? (() => undefined);
  const children: Child[] = [];
  const stop = async () => {
    for (const child of [...children].reverse()) await stopChild(child);
    await temporal.stop();
  };
  const local = (port: number) => `http://127.0.0.1:${port}`;
  const urls: StackUrls = {
    inbox: `${local(ports.intercom)}/inbox`,
    temporalUi: temporal.uiUrl,
    temporal: temporal.address,
    webhook: `${local(ports.ingress)}/webhooks/intercom`,
    ingress: local(ports.ingress),
    sandboxControl: `${local(ports.intercom)}/_sandbox`,
    workerMetrics: `${local(ports.workerMetrics)}/metrics`,
    ingressMetrics: `${local(ports.ingressMetrics)}/metrics`,
  };
  try {
    const { temporal: _temporal, temporalUi: _ui, ...own } = ports as Partial<StackPorts>;
    await checkPortsFree(own);
    const env = {
      ...sandboxEnvironment(
        {
          intercom: local(ports.intercom),
          mcp: `${local(ports.mcp)}/mcp`,
          model: `${local(ports.model)}/v1`,
          validation: `${local(ports.validation)}/validate`,
        },
        temporal.address,
      ),
      ...payloadKeysEnvironment(temporal.payloadKeys),
      // The UI is opened as 127.0.0.1 or localhost; either may call the codec endpoint.
      ...(temporal.uiUrl && {
        TEMPORAL_UI_ORIGIN: `${temporal.uiUrl},${temporal.uiUrl.replace('127.0.0.1', 'localhost')}`,
      }),
      INGRESS_PORT: String(ports.ingress),
      INGRESS_METRICS_ADDRESS: `127.0.0.1:${ports.ingressMetrics}`,
      WORKER_METRICS_ADDRESS: `127.0.0.1:${ports.workerMetrics}`,
    };
    children.push(
      startChild(
        'sandbox',
        'sandbox/main.ts',
        {
          SANDBOX_INTERCOM_PORT: String(ports.intercom),
          SANDBOX_MCP_PORT: String(ports.mcp),
          SANDBOX_MODEL_PORT: String(ports.model),
          SANDBOX_VALIDATION_PORT: String(ports.validation),
          SANDBOX_WEBHOOK_URL: urls.webhook,
          // `SANDBOX_MODEL_ENDPOINT=json_object npm start` runs the stack against a JSON-mode-only model endpoint.
          ...(process.env.SANDBOX_MODEL_ENDPOINT && { SANDBOX_MODEL_ENDPOINT: process.env.SANDBOX_MODEL_ENDPOINT }),
          // `SANDBOX_RESOLVED_SEARCH=off npm start`: the team's voice from the index alone, as on real Intercom.
          ...(process.env.SANDBOX_RESOLVED_SEARCH && { SANDBOX_RESOLVED_SEARCH: process.env.SANDBOX_RESOLVED_SEARCH }),
          ...options.sandboxEnv,
        },
        echo,
      ),
    );
    await waitUntil('the sandbox', children, async () => (await fetch(`${urls.sandboxControl}/gate`)).ok);
    children.push(
      startChild(
        'worker',
        'src/worker.ts',
        { ...env, LOG_LEVEL: options.workerLogLevel ?? 'INFO', ...options.workerEnv },
        echo,
      ),
    );
    children.push(startChild('ingress', 'src/ingress/main.ts', { ...env, ...options.ingressEnv }, echo));
    await waitUntil('the ingress', children, async () => (await fetch(`${urls.ingress}/healthz`)).ok);
    await waitUntil('the worker to poll its task queue', children, async () => {
      const response = await temporal.client.connection.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: 'melvin' },
      });
      return (response.pollers?.length ?? 0) > 0;
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { urls, ports, temporal, stop };
}
