// The reliability experiments' rig: a restartable Temporal dev server, the sandbox and the ingress in this process,
// and worker processes that can be killed and started again; plus conversations with a known right outcome.
import { mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { TurnOptions } from '../src/operations/conversations';
import { createIngressApp } from '../src/ingress/app';
import type { ConversationOutcome } from '../src/contract/state';
import { generatePayloadKey, payloadKeysEnvironment } from '../src/encryption/payload-codec';
import { workflowIdFor } from '../src/contract/shared';
import type { Responder } from '../sandbox/model/server';
import type { TalentUser } from '../sandbox/scenario';
import { SANDBOX_SECRETS, sandboxEnvironment, startSandboxServices, type SandboxServices } from '../sandbox/services';
import { pause, waitFor } from '../sandbox/wait';
import { freePorts, startChild, startDevServer, stopChild, type Child, type TemporalServer } from './stack';
import { findTemporalCli } from './temporal-cli';
import { findPid } from './proc';

/** What a conversation asks, and so how its run must end. */
export type ConversationKind = 'payment' | 'human';

export interface Conversation {
  id: string;
  kind: ConversationKind;
  email: string;
  deliveredAt?: number;
  ackMs?: number;
}

export interface Outcome {
  id: string;
  kind: ConversationKind;
  closed: boolean;
  /** The latest run skipped a message an earlier run of the conversation had answered: a delivery forwarded again. */
  answeredBefore: boolean;
  status: string | null;
  replies: number;
  escalationNotes: number;
  /** Notes of any kind (validation, escalation, undelivered reply) posted more than once with the same text. */
  repeatedNotes: number;
  /** The first escalation note's opening, which names the reason: what an operator reads first when a run ended wrong. */
  escalation?: string;
  correct: boolean;
  startTime: number | null;
  closeTime: number | null;
}

export interface HarnessOptions {
  /** Simulated latency of the model and of each tool call, in ms. */
  latency?: { llm?: [number, number]; tools?: [number, number] };
  responder?: Responder;
  /** A Temporal server to run against instead of a dev server of the harness's own; the harness leaves it running. */
  temporal?: TemporalServer;
  log?: (line: string) => void;
  /** The worker's LOG_LEVEL; INFO unless set (the bench reads the SDK's DEBUG lines on local activities). */
  workerLogLevel?: string;
  /** Arguments to the worker's Node process (the profile's `--cpu-prof`). */
  workerNodeArgs?: readonly string[];
}

/**
 * Each conversation here is one turn: its workflow ends after it, and the workflow's closing is the turn's end. The
 * bench's LangGraph peer runs its turns with the same settings.
 */
export const TURN_SETTINGS = { maxHops: 2, snoozeSeconds: 300, quietPeriodSeconds: 0, handoverMessages: {} };

/** The settings the worker logs at start (`worker settings`, src/observability/worker-telemetry.ts). */
export type WorkerSettings = Record<string, unknown>;

export class Harness {
  private temporal!: TemporalServer;
  private ingressServer!: Server;
  private ingressPort = 0;
  /** The ingress's own process, while `useIngressProcess` runs it there. */
  private ingressProcess: Child | undefined;
  /** The worker processes, the first one started first; most experiments run one. */
  private workers: Child[] = [];
  private workerEnv!: NodeJS.ProcessEnv;
  private dataDir: string | undefined;
  /** Encrypted as in production; the key outlives a Temporal restart, as the history it reads does. */
  private readonly payloadKeys = [generatePayloadKey('reliability')];
  private temporalPorts!: { port: number; uiPort: number };
  private cli: string | undefined;
  private counter = 0;
  private metricsPort!: number;
  readonly conversations: Conversation[] = [];
  /**
   * What the ingress starts each run with: `TURN_SETTINGS` unless changed. The ingress reads these at every delivery,
   * so an experiment may change them between its turns (more hops, or a quiet period that keeps runs open).
   */
  readonly turn: TurnOptions = { taskQueue: 'melvin', ...TURN_SETTINGS };
  /** What the running worker logged as its settings when it started. */
  workerSettings: WorkerSettings | undefined;
  sandbox!: SandboxServices;
  ingressUrl!: string;

  constructor(private readonly options: HarnessOptions = {}) {}

  get client(): Client {
    return this.temporal.client;
  }

  /** The worker's environment: the sandbox's URLs and secrets, the payload keys, the log level. */
  get workerEnvironment(): NodeJS.ProcessEnv {
    return { ...this.workerEnv };
  }

  /** The Temporal server's process, found by its port when the harness started the dev server itself. */
  get temporalPid(): number | undefined {
    if (this.options.temporal) return this.options.temporal.pid;
    const port = this.temporalPorts.port;
    return findPid(
      (commandLine) => commandLine.includes('start-dev') && new RegExp(`--port[ =]${port}\\b`).test(commandLine),
    );
  }

  /** The first worker's process. */
  get workerPid(): number | undefined {
    return this.workers[0]?.process.pid;
  }

  /** Every running worker's process. */
  get workerPids(): number[] {
    return this.workers.flatMap((worker) => (worker.process.pid === undefined ? [] : [worker.process.pid]));
  }

  /** The first worker's Prometheus metrics (the SDK's: task slots, pollers, sticky cache size). */
  get workerMetricsUrl(): string {
    return `http://127.0.0.1:${this.metricsPort}/metrics`;
  }

  /** Starts the stack; when any part fails to start, stops the parts already running before it throws. */
  async start(): Promise<void> {
    try {
      await this.startParts();
    } catch (err) {
      await this.stop().catch(() => undefined);
      throw err;
    }
  }

  private async startParts(): Promise<void> {
    const [temporalPort, uiPort, ingressPort, metricsPort] = (await freePorts(4)) as [number, number, number, number];
    this.temporalPorts = { port: temporalPort, uiPort };
    this.metricsPort = metricsPort;
    this.temporal = this.options.temporal ?? (await this.startTemporal());
    this.sandbox = await startSandboxServices({
      webhookUrl: `http://127.0.0.1:${ingressPort}/webhooks/intercom`,
      responder: this.options.responder,
    });
    this.sandbox.model.latency.range = this.options.latency?.llm;
    this.sandbox.talent.latency.range = this.options.latency?.tools;
    this.ingressPort = ingressPort;
    await this.listenIngress();
    this.ingressUrl = `http://127.0.0.1:${ingressPort}`;
    this.workerEnv = {
      ...sandboxEnvironment(this.sandbox.urls, this.temporal.address),
      ...payloadKeysEnvironment(this.temporal.payloadKeys),
      WORKER_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
      LOG_LEVEL: this.options.workerLogLevel ?? 'INFO',
    };
    await this.startWorker();
  }

  /** Serves the ingress in this process on its port, as `start` does (no outbox: a 202 once Temporal has it). */
  private async listenIngress(): Promise<void> {
    const app = createIngressApp({
      client: this.temporal.client,
      clientSecret: SANDBOX_SECRETS.webhookSecret,
      melvinAdminId: SANDBOX_SECRETS.adminId,
      turn: this.turn,
    });
    this.ingressServer = await new Promise<Server>((resolve) => {
      const server = app.listen(this.ingressPort, '127.0.0.1', () => resolve(server));
    });
  }

  /**
   * Moves the ingress into a process of its own on the same port (`src/ingress/main.ts`, as deployed), with an outbox
   * in `outboxDir` (INGRESS_OUTBOX_DIR) when given; a second call replaces that process. Answers the URL of its
   * Prometheus metrics. What an earlier outbox did not hand over stays in its directory. It takes the harness's hops,
   * snooze and quiet period, and the default hand-over messages. `env` adds to (or overrides) its environment.
   */
  async useIngressProcess(outboxDir?: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
    await this.stopIngress();
    const metricsAddress = `127.0.0.1:${(await freePorts(1))[0]}`;
    const ingress = startChild(
      'ingress',
      'src/ingress/main.ts',
      {
        ...this.workerEnv,
        INGRESS_PORT: String(this.ingressPort),
        INGRESS_METRICS_ADDRESS: metricsAddress,
        MAX_HOPS: String(this.turn.maxHops),
        SNOOZE_SECONDS: String(this.turn.snoozeSeconds),
        QUIET_PERIOD_SECONDS: String(this.turn.quietPeriodSeconds),
        ...(outboxDir && { INGRESS_OUTBOX_DIR: outboxDir }),
        ...env,
      },
      (line) => this.options.log?.(line),
    );
    this.ingressProcess = ingress;
    await waitFor(
      'the ingress to listen',
      () => {
        if (ingress.process.exitCode !== null) throw new Error(`the ingress exited:\n${ingress.output.join('\n')}`);
        return ingress.output.some((line) => line.includes('"message":"ingress listening"'));
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    return `http://${metricsAddress}/metrics`;
  }

  /** `kill -9` of the ingress's own process: it gets no chance to finish what it holds. */
  async killIngress(): Promise<void> {
    const ingress = this.ingressProcess;
    this.ingressProcess = undefined;
    if (!ingress || ingress.process.exitCode !== null || ingress.process.signalCode !== null) return;
    const exited = new Promise((resolve) => ingress.process.once('exit', resolve));
    ingress.process.kill('SIGKILL');
    await exited;
  }

  /** Whether the ingress's own process is running (false when it exited by itself). */
  get ingressProcessAlive(): boolean {
    const ingress = this.ingressProcess;
    return !!ingress && ingress.process.exitCode === null && ingress.process.signalCode === null;
  }

  /** What the ingress's own process printed, for an experiment that reads its log lines. */
  get ingressOutput(): readonly string[] {
    return this.ingressProcess?.output ?? [];
  }

  /** Brings the ingress back into this process, as `start` runs it. */
  async useIngressInProcess(): Promise<void> {
    await this.stopIngress();
    await this.listenIngress();
  }

  private async stopIngress(): Promise<void> {
    if (this.ingressProcess) await stopChild(this.ingressProcess);
    this.ingressProcess = undefined;
    this.ingressServer?.closeAllConnections();
    await new Promise((resolve) =>
      this.ingressServer?.listening ? this.ingressServer.close(resolve) : resolve(undefined),
    );
  }

  private async startTemporal(): Promise<TemporalServer> {
    this.cli ??= await findTemporalCli();
    this.dataDir ??= mkdtempSync(path.join(tmpdir(), 'melvin-reliability-'));
    return startDevServer({
      ...this.temporalPorts,
      dataDir: this.dataDir,
      cli: this.cli,
      payloadKeys: this.payloadKeys,
    });
  }

  /**
   * Starts a worker process and waits until it polls the task queue. A second one beside it polls the same queue, with
   * a metrics port of its own.
   */
  async startWorker(): Promise<void> {
    const env = this.workers.length
      ? { ...this.workerEnv, WORKER_METRICS_ADDRESS: `127.0.0.1:${(await freePorts(1))[0]}` }
      : this.workerEnv;
    const worker = startChild(
      `worker${this.workers.length ? ` ${this.workers.length + 1}` : ''}`,
      'src/worker.ts',
      env,
      (line) => this.options.log?.(line),
      this.options.workerNodeArgs,
    );
    this.workers.push(worker);
    await waitFor(
      'the worker to start polling',
      () => {
        if (worker.process.exitCode !== null) throw new Error(`the worker exited:\n${worker.output.join('\n')}`);
        return worker.output.some((line) => line.includes('"state":"RUNNING"'));
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    if (this.workers.length > 1) return;
    const settings = worker.output.find((line) => line.includes('"message":"worker settings"'));
    this.workerSettings = settings ? (JSON.parse(settings) as { settings: WorkerSettings }).settings : undefined;
  }

  /** `kill -9` of every worker: none gets a chance to finish anything it holds. */
  async killWorker(): Promise<void> {
    const running = this.workers.filter((worker) => worker.process.exitCode === null);
    this.workers = [];
    await Promise.all(
      running.map((worker) => {
        const exited = new Promise((resolve) => worker.process.once('exit', resolve));
        worker.process.kill('SIGKILL');
        return exited;
      }),
    );
  }

  /** Stops the Temporal server (its SQLite file stays) and starts it again on the same port. */
  async restartTemporal(downMs: number): Promise<void> {
    await this.stopTemporal();
    await pause(downMs);
    await this.startTemporalAgain();
  }

  /** Stops the Temporal server; its SQLite file stays for `startTemporalAgain`. */
  async stopTemporal(): Promise<void> {
    if (this.options.temporal) throw new Error('the harness runs against a Temporal server it did not start');
    await this.temporal.stop();
  }

  async startTemporalAgain(): Promise<void> {
    this.temporal = await this.startTemporal();
  }

  /**
   * Seeds a conversation whose right outcome is known: a payment question answered, or a request for a person. With
   * `earlierParts`, the question comes after that many parts of an earlier exchange between the user and Melvin.
   */
  addConversation(kind: ConversationKind, options: { earlierParts?: number } = {}): Conversation {
    const conversation = seedConversation(this.sandbox, ++this.counter, kind, options.earlierParts);
    this.conversations.push(conversation);
    return conversation;
  }

  /** Delivers the conversation's signed webhook through the ingress, timing the acknowledgement. */
  async deliver(conversation: Conversation): Promise<void> {
    const started = performance.now();
    conversation.deliveredAt = Date.now();
    const delivery = await this.sandbox.intercom.emit('conversation.user.created', conversation.id);
    conversation.ackMs = performance.now() - started;
    if (delivery.status !== 202) throw new Error(`delivery of ${conversation.id} answered ${delivery.status}`);
  }

  /**
   * Waits until every run is closed (polling, so a Temporal restart in between is no problem) or the time is up; the
   * outcomes then say which did not close.
   */
  async waitForAll(timeoutMs: number, conversations = this.conversations): Promise<void> {
    const open = new Set(conversations.map((c) => c.id));
    const closed = (id: string) =>
      this.client.workflow
        .getHandle(workflowIdFor(id))
        .describe()
        .then(
          (d) => d.status.name !== 'RUNNING',
          () => false,
        );
    await waitFor(
      'every run to close',
      async () => {
        for (const id of [...open]) if (await closed(id)) open.delete(id);
        return open.size === 0;
      },
      { timeoutMs, intervalMs: 500 },
    ).catch(() => undefined);
  }

  /** How each conversation ended, judged against its kind; replies and escalation notes are counted in Intercom. */
  async outcomes(conversations = this.conversations): Promise<Outcome[]> {
    return Promise.all(
      conversations.map(async (c) => {
        const workflowId = workflowIdFor(c.id);
        const handle = this.client.workflow.getHandle(workflowId);
        const description = await handle.describe().catch(() => undefined);
        const completed = description !== undefined && description.status.name === 'COMPLETED';
        // A delivery forwarded again after its run ended (the outbox's at-least-once, or a start whose answer was lost
        // while Temporal went down) starts a run that finds the message answered and skips: the turn that answered is
        // in an earlier run of the same workflow id.
        const latestFinalized = completed && (await this.finalizedRun(handle));
        const answeredBefore = completed && !latestFinalized && (await this.earlierRunFinalized(workflowId));
        const replies = this.sandbox.intercom.replies(c.id).length;
        const notes = this.sandbox.intercom.notes(c.id);
        const escalations = notes.filter((n) => n.startsWith('🚨'));
        const escalationNotes = escalations.length;
        const status = (this.sandbox.intercom.melvinStatus(c.id) as string | undefined) ?? null;
        const correct =
          c.kind === 'payment'
            ? status === 'success' && replies === 1 && escalationNotes === 0
            : status === 'ROUTE_TO_TEAM' && replies === 0 && escalationNotes === 1;
        return {
          id: c.id,
          kind: c.kind,
          closed: latestFinalized || answeredBefore,
          answeredBefore,
          status,
          replies,
          escalationNotes,
          repeatedNotes: notes.length - new Set(notes).size,
          ...(escalations[0] && { escalation: escalations[0].replace(/\s+/g, ' ').slice(0, 160) }),
          correct,
          startTime: description?.startTime.getTime() ?? null,
          closeTime: description?.closeTime?.getTime() ?? null,
        };
      }),
    );
  }

  /** Whether the run finalized a turn: its compact result's last turn says so (a skipped turn never finalizes). */
  private async finalizedRun(handle: WorkflowHandle): Promise<boolean> {
    const result = (await handle.result()) as ConversationOutcome;
    return !!result.last_turn && result.last_turn.melvin_status !== 'skipped';
  }

  /** Whether any completed run of the workflow id, not only the latest, finalized a turn. */
  private async earlierRunFinalized(workflowId: string): Promise<boolean> {
    for await (const run of this.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      if (run.status.name !== 'COMPLETED') continue;
      if (await this.finalizedRun(this.client.workflow.getHandle(workflowId, run.runId))) return true;
    }
    return false;
  }

  /**
   * A conversation's calls as the sandbox recorded them, each with the latency it imposed. The model's requests are
   * tied to the conversation by the tag in its first message, the tool calls by the user's email.
   */
  sandboxCalls(conversation: Conversation): SandboxCalls {
    return {
      model: this.sandbox.model.requests
        .filter((r) => JSON.stringify(r.context.messages ?? []).includes(`[${conversation.id}]`))
        .map((r) => r.latency_ms),
      tools: this.sandbox.talent.calls
        .filter((call) => call.arguments.email === conversation.email)
        .map((call) => call.latency_ms),
    };
  }

  /** The latency the sandbox itself imposed on a conversation's critical path (see `criticalPathMs`). */
  criticalPathMs(conversation: Conversation): number {
    return criticalPathMs(this.sandboxCalls(conversation));
  }

  /** Stops whatever of the stack is running (also after a start that failed part way). */
  async stop(): Promise<void> {
    await Promise.all(this.workers.map(stopChild));
    await this.stopIngress();
    await this.sandbox?.stop();
    if (!this.options.temporal) await this.temporal?.stop();
  }
}

/** The simulated latency of each call the sandbox recorded for a conversation; undefined where none was recorded. */
export interface SandboxCalls {
  model: (number | undefined)[];
  tools: (number | undefined)[];
}

/** The critical path of a turn's calls: its model calls one after another, then the slowest of its (parallel) tool calls. */
export function criticalPathMs(calls: SandboxCalls): number {
  const sum = calls.model.reduce<number>((total, ms) => total + (ms ?? 0), 0);
  return sum + Math.max(0, ...calls.tools.map((ms) => ms ?? 0));
}

/**
 * Why a turn's recorded calls cannot be its critical path, so that a turn time divided by it would mislead: no model
 * call or no tool call was tied to the conversation (the tag or the email that ties them no longer matches), or a call
 * has no latency recorded (it was refused before waiting). Empty when the critical path stands.
 */
export function criticalPathGaps(calls: SandboxCalls): string[] {
  const gaps: string[] = [];
  if (!calls.model.length) gaps.push('no model call recorded');
  if (!calls.tools.length) gaps.push('no tool call recorded');
  const unmeasured = [...calls.model, ...calls.tools].filter((ms) => ms === undefined).length;
  if (unmeasured) gaps.push(`${unmeasured} call(s) without a recorded latency`);
  return gaps;
}

/** Seeds conversation number `n` in the sandbox: its user, with one payment on its way, and the user's first message. */
export function seedConversation(
  sandbox: SandboxServices,
  n: number,
  kind: ConversationKind,
  earlierParts = 0,
): Conversation {
  const id = String(600000 + n);
  const email = `talent-${n}@example.com`;
  const user: TalentUser = {
    email,
    name: `Talent ${n}`,
    applications: [],
    payments: [
      {
        id: `pay-${n}`,
        job_id: 'job-r',
        amount: 100 + n,
        currency: 'USD',
        status: 'processing',
        expected_date: '2026-11-27',
      },
    ],
  };
  sandbox.talent.merge({
    talent: {
      users: [user],
      jobs: [{ id: 'job-r', title: 'Event Staff', location: 'Austin, TX', status: 'filled' }],
    },
  });
  // The tag in brackets lets the figures tie each model request to its conversation.
  const body = kind === 'payment' ? `When will I get paid? [${id}]` : `Can I talk to a real person please? [${id}]`;
  // The exchange alternates and ends with Melvin's answer, so the question is the user's one unanswered message.
  const earlier = Array.from({ length: earlierParts }, (_, i) => ({
    author: (earlierParts - i) % 2 === 0 ? ('user' as const) : ('bot' as const),
    type: 'comment' as const,
    // Seeds spaced by a prime above any part count (Intercom returns at most 500), so no two conversations share one.
    body: earlierMessage(n * 100_003 + i),
  }));
  sandbox.intercom.seed({
    id,
    contact: { id: `c-${id}`, email, name: user.name },
    parts: [...earlier, { author: 'user', type: 'comment', body }],
  });
  return { id, kind, email };
}

/** Everyday words of a talent's exchange with support; none is a number or asks for a person. */
const EARLIER_WORDS = (
  'my the a last next this that shift shifts payment paid deposit bank account transfer venue manager timesheet hours ' +
  'invoice schedule weekend evening morning bonus event staff uniform parking break overtime holiday contract rating ' +
  'application interview location client booking pending approved question thanks please when where how about with ' +
  'for still not yet already checked found looks updated here is what I you we'
).split(' ');

/**
 * A message of an earlier exchange: 8 to 19 words drawn by `seed`, so parts differ as real ones do. Repeating one
 * sentence would let the payload codec's DEFLATE fold a long conversation into a few bytes, and the growth phase
 * would measure nothing. The words name no number, which the validation service would take for a code the reply
 * must be about.
 */
export function earlierMessage(seed: number): string {
  let state = seed >>> 0;
  // A linear congruential generator (Numerical Recipes' constants); its high bits pick, its low bits are weak.
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) >>> 16;
  const words = Array.from({ length: 8 + (next() % 12) }, () => EARLIER_WORDS[next() % EARLIER_WORDS.length]!);
  const sentence = words.join(' ');
  return `${sentence[0]!.toUpperCase()}${sentence.slice(1)}.`;
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
