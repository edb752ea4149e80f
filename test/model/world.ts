// The world the model-based test drives a conversation through: the sandbox (Intercom with its webhooks, the talent MCP
// server, the model, validation), the real ingress over HTTP, and a worker running the real workflow and activities on a
// Temporal dev server, its activities passing through gates that place each event. A lane is one such world: lanes run
// side by side, each on its own task queue, ports and conversations.
import { mkdtempSync } from 'node:fs';
import { request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { handoverMessages, loadTurnConfig } from '../../src/config/environment';
import type { TurnOptions } from '../../src/operations/conversations';
import { createIngressApp } from '../../src/ingress/app';
import { createIngressMetrics } from '../../src/ingress/metrics';
import type { Outbox } from '../../src/ingress/outbox';
import { openIngressOutbox } from '../../src/ingress/webhook';
import { progressQuery, stateQuery, workflowIdFor } from '../../src/contract/shared';
import type { Notification } from '../../sandbox/intercom/emulator';
import { renderPlaintext } from '../../sandbox/intercom/plaintext';
import { SANDBOX_SECRETS } from '../../sandbox/services';
import { ADMIN_ID, startSandbox, type Sandbox } from '../helpers/sandbox';
import { ANA, ANA_TALENT } from '../helpers/turns';
import { ANY_TOOL_CALL } from '../../sandbox/talent-mcp/http';
import {
  MESSAGE_KINDS,
  type FaultStatus,
  type FaultTarget,
  type MessageKind,
  type ModelCase,
  type ModelEvent,
  type Placement,
} from './events';
import { ActivityGates, type GatedWorker } from './gates';
import { TcpProxy } from './tcp-proxy';
import { readFacts, type RunFacts } from './history';
import type { Observation, ObservedPart, OperatorCall } from './invariants';

/** Short waits, so a case that waits out a quiet period or an approval stays quick. */
export const QUIET_PERIOD_SECONDS = 2;
export const APPROVAL_TIMEOUT_SECONDS = 1;
/** A write Intercom refused for good is tried again a quarter of a second later, doubling to 8 s: an outage's end is seen soon. */
export const WRITE_RETRY_SECONDS = 0.25;
/** How long a conversation may take to settle after its last event before the case fails as stuck. */
const SETTLE_TIMEOUT_MS = 45_000;
/** A late webhook arrives at least this long after what it tells of happened (Intercom's times are in seconds). */
const LATE_BY_MS = 1_100;
/** How often the driver asks Temporal whether a conversation has settled: each asking costs a query of the workflow. */
const POLL_MS = 100;
/** Past the SDK's sticky queue timeout (10 s) after the worker went away, and then some: a request may wait that out. */
const WORKER_DISRUPTION_MS = 25_000;
/**
 * After a kill, what the dead worker had started is retried only once Temporal times it out: a minute for a reply with
 * its note, the longest call without heartbeats. The case may take that much longer to settle, and a lead's request
 * that long to be answered.
 */
const AFTER_KILL_MS = 75_000;
/** How long a held call stays held once its event was sent, before the event's answer is awaited. */
const HOLD_AFTER_EVENT_MS = 150;
/** A wall of text: enough for a few of them to pass 2 MB together. */
const LONG_MESSAGE_CHARS = 600_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function listen(app: ReturnType<typeof createIngressApp>, port = 0): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const server = app.listen(port, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({ server, url: `http://127.0.0.1:${port}` });
    });
  });
}

/** A JSON POST on a connection of its own (no keep-alive), answering its status. */
function postOnce(
  url: string,
  request: { authorization: string; body: unknown },
): Promise<{ status: number; text: string }> {
  const payload = JSON.stringify(request.body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent: false,
        headers: {
          authorization: request.authorization,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * A lead's client tries again while nothing listens on the ingress's port (it restarts, an event that may run beside
 * the request while the worker is down): a refused connection never reached the ingress, so nothing was asked yet.
 */
async function postToIngress(url: string, request: { authorization: string; body: unknown }) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await postOnce(url, request);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ECONNREFUSED' || attempt >= 100) throw err;
      await sleep(100);
    }
  }
}

/** The real ingress of a lane, as its process builds it. */
function ingressApp(env: TestWorkflowEnvironment, turn: TurnOptions, outbox?: Outbox) {
  return createIngressApp({
    outbox,
    client: env.client,
    clientSecret: SANDBOX_SECRETS.webhookSecret,
    adminApiToken: SANDBOX_SECRETS.adminApiToken,
    melvinAdminId: ADMIN_ID,
    turn,
  });
}

/** What one case left: what the model checks, and each run's history for the replay check. */
export interface CaseResult {
  conversationId: string;
  observation: Observation;
}

/**
 * How a case's world runs: how many workers, whether the ingress has an outbox. Workers keep their runs cached, as
 * Melvin's must (WORKER_MAX_CACHED_WORKFLOWS is at least 1): a run evicted from one is replayed from its history by the
 * next worker that gets its task, as after a kill, a restart, or with two workers when one is down.
 */
export interface WorldSettings {
  workers: 1 | 2;
  outbox: boolean;
}

export const DEFAULT_SETTINGS: WorldSettings = { workers: 1, outbox: false };

/** One worker of a lane, reaching Temporal through a relay of its own that a kill cuts. */
interface LaneWorker extends GatedWorker {
  worker: Worker;
  running: Promise<void>;
  connection: NativeConnection;
  proxy: TcpProxy;
}

export class Lane {
  readonly gates = new ActivityGates();
  private workers: LaneWorker[] = [];
  /** Workers killed in the case running: they never come back, and are cleared away once the case is observed. */
  private readonly killed: LaneWorker[] = [];
  /** Killed workers of earlier cases still being cleared away, behind the next case. */
  private clearing: Promise<void> = Promise.resolve();
  private settings: WorldSettings = DEFAULT_SETTINGS;
  private outbox: Outbox | undefined;
  private readonly outboxDir = mkdtempSync(path.join(tmpdir(), 'melvin-model-outbox-'));
  private nextConversation: number;
  private tags = 0;

  private constructor(
    private readonly env: TestWorkflowEnvironment,
    private readonly bundle: WorkflowBundleWithSourceMap,
    private readonly sandbox: Sandbox,
    private ingress: { server: Server; url: string },
    private readonly turn: TurnOptions,
    lane: number,
  ) {
    this.nextConversation = 9_000_000 + lane * 100_000;
  }

  static async start(env: TestWorkflowEnvironment, bundle: WorkflowBundleWithSourceMap, lane: number): Promise<Lane> {
    const turn: TurnOptions = {
      taskQueue: `model-lane-${lane}`,
      maxHops: 2,
      snoozeSeconds: 300,
      quietPeriodSeconds: QUIET_PERIOD_SECONDS,
      handoverMessages: handoverMessages(loadTurnConfig({})),
      replyMode: 'auto',
      approvalTimeoutSeconds: APPROVAL_TIMEOUT_SECONDS,
      writeRetrySeconds: WRITE_RETRY_SECONDS,
    };
    const ingress = await listen(ingressApp(env, turn));
    const sandbox = await startSandbox({ talent: ANA_TALENT }, { webhookUrl: `${ingress.url}/webhooks/intercom` });
    const world = new Lane(env, bundle, sandbox, ingress, turn, lane);
    await world.startWorker();
    return world;
  }

  private get client(): Client {
    return this.env.client;
  }

  /** When the worker last went away: its workflows' tasks wait out the sticky queue's timeout after. */
  workerChangedAt: number | null = null;
  /** When a worker was last killed: what it had started waits out its timeouts in Temporal. */
  killedAt: number | null = null;

  /** Starts the case's workers on the lane's task queue. */
  async startWorker(): Promise<void> {
    this.workers = await Promise.all(Array.from({ length: this.settings.workers }, () => this.newWorker()));
  }

  private async newWorker(): Promise<LaneWorker> {
    const proxy = await TcpProxy.start(this.env.connection.options.address);
    const connection = await NativeConnection.connect({ address: proxy.address });
    const handle = { killed: false } as LaneWorker;
    handle.worker = await Worker.create({
      connection,
      taskQueue: this.turn.taskQueue,
      workflowBundle: this.bundle,
      activities: this.gates.wrap(this.sandbox.activities, handle),
    });
    Object.assign(handle, { connection, proxy, running: handle.worker.run() });
    return handle;
  }

  /** The worker goes away mid-work (its activities in flight are cancelled) and a new one takes over its runs. */
  async restartWorker(): Promise<void> {
    await this.stopWorker();
    await this.startWorker();
  }

  /** No worker runs until `startWorker`: what happens meanwhile waits in Temporal for the next one. */
  async stopWorker(): Promise<void> {
    this.workerChangedAt = Date.now();
    const stopping = this.workers.splice(0);
    for (const { worker } of stopping) worker.shutdown();
    await Promise.all(
      stopping.map(async ({ running, connection, proxy }) => {
        await running;
        await connection.close();
        proxy.close();
      }),
    );
  }

  /**
   * A worker is killed (the first, when two run): from then on it does nothing, says nothing to Temporal and finishes
   * nothing it started, whatever its calls had done already; a new one starts in its place, as a supervisor starts one.
   */
  async killWorker(): Promise<void> {
    const victim = this.workers.shift();
    if (!victim) return;
    victim.killed = true;
    victim.proxy.cut();
    this.killed.push(victim);
    this.killedAt = this.workerChangedAt = Date.now();
    this.workers.push(await this.newWorker());
  }

  /** Runs the case's world: workers and the ingress are made again where the case's settings differ from the last. */
  async prepare(settings: WorldSettings): Promise<void> {
    const before = this.settings;
    this.settings = settings;
    if (settings.workers !== before.workers) await this.restartWorker();
    if (settings.outbox !== before.outbox) await this.restartIngress();
  }

  async close(): Promise<void> {
    try {
      await this.stopWorker();
    } finally {
      this.ingress.server.closeAllConnections();
      this.ingress.server.close();
      await this.outbox?.close();
      await this.sandbox.close();
      this.clearKilled();
      await this.clearing;
    }
  }

  /**
   * The killed workers' remains: their calls end, and each worker shuts down as far as it can without its server. A
   * killed worker left in place keeps retrying its polls through its cut relay, so a lane that kept them for every case
   * grew by gigabytes over a long run (3 to 4 GB in all with them cleared, 7 to 8.7 GB without).
   */
  private clearKilled(): void {
    this.gates.abandonVanished();
    const remains = this.killed.splice(0);
    const cleared = this.clearWorkers(remains);
    this.clearing = Promise.all([this.clearing, cleared]).then(() => undefined);
  }

  private async clearWorkers(remains: LaneWorker[]): Promise<void> {
    await Promise.all(
      remains.map(async ({ worker, running }) => {
        try {
          worker.shutdown();
        } catch {
          // It may have failed already, on its own, for want of the server.
        }
        await Promise.race([running.catch(() => undefined), sleep(10_000)]);
      }),
    );
    for (const { proxy } of remains) proxy.close();
  }

  /** Entries the ingress's outbox took and has not handed to Temporal yet. */
  get outboxPending(): number {
    return this.outbox?.backlog.pending ?? 0;
  }

  /** Drives one case from the conversation's first message to the end, and reads what came of it. */
  async run(c: ModelCase): Promise<CaseResult> {
    // The ingress starts each workflow with the case's quiet period.
    this.turn.quietPeriodSeconds = c.quietPeriodSeconds ?? QUIET_PERIOD_SECONDS;
    await this.prepare({ ...DEFAULT_SETTINGS, ...c.world });
    const conversation = new ConversationDriver(this, String(this.nextConversation++), c);
    const t0 = Date.now();
    await conversation.play();
    const t1 = Date.now();
    const observation = await conversation.observe();
    this.clearKilled();
    if (process.env.MODEL_TRACE) console.error(`TRACE play ${t1 - t0} observe ${Date.now() - t1}`);
    return { conversationId: conversation.id, observation };
  }

  tag(): string {
    let n = this.tags++;
    let letters = '';
    do {
      letters = String.fromCharCode(97 + (n % 26)) + letters;
      n = Math.floor(n / 26);
    } while (n > 0);
    return `ref${letters}`;
  }

  /**
   * The ingress process stops and starts again on its port: what it remembered of the deliveries it took is gone; with
   * an outbox, what its journal holds is forwarded by the new process (a forward in flight may be sent twice).
   */
  async restartIngress(): Promise<void> {
    const { server, url } = this.ingress;
    // It stops taking connections at once; a request it is answering (a lead's, waiting for the workflow) is answered.
    server.close();
    server.closeIdleConnections();
    await this.outbox?.close(0);
    this.outbox = this.settings.outbox
      ? await openIngressOutbox(this.outboxDir, this.client, this.turn, createIngressMetrics())
      : undefined;
    this.ingress = await listen(ingressApp(this.env, this.turn, this.outbox), Number(new URL(url).port));
  }

  /** What a driver reaches of the world. */
  get parts() {
    return { env: this.env, client: this.client, sandbox: this.sandbox, ingressUrl: this.ingress.url, turn: this.turn };
  }
}

/** One conversation: its events played at their places, and what it came to. */
class ConversationDriver {
  readonly userMessages: Observation['userMessages'] = [];
  readonly calls: OperatorCall[] = [];
  private lastUserNotification: Notification | null = null;
  /** Every teammate action's webhook, oldest first. */
  private readonly teamNotifications: Notification[] = [];
  private late: { notification: Notification; createdAt: number; step: number }[] = [];
  private stepIndex = 0;
  private unsettled: string | null = null;
  /** The worker was stopped: it starts again before the next event that does not race at once. */
  private workerDown = false;
  private readonly whileDown: Promise<void>[] = [];
  /** A worker was killed in this case: what it had started waits out its timeouts before anything settles. */
  private killed = false;

  private get settleTimeoutMs(): number {
    return SETTLE_TIMEOUT_MS + (this.killed ? AFTER_KILL_MS : 0);
  }

  constructor(
    private readonly lane: Lane,
    readonly id: string,
    private readonly c: ModelCase,
  ) {}

  private get world() {
    return this.lane.parts;
  }

  private get handle() {
    return this.world.client.workflow.getHandle(workflowIdFor(this.id));
  }

  private message(kind: MessageKind): { text: string; files: { name: string }[]; tag: string } {
    const tag = this.lane.tag();
    if (kind === 'files') return { text: '', files: [{ name: `payslip-${tag}.pdf` }], tag };
    const text = `(${tag}) ${MESSAGE_KINDS[kind]}`;
    return {
      text: kind === 'long' ? `${text} ${'Clause: payment within 30 days. '.repeat(LONG_MESSAGE_CHARS / 32)}` : text,
      files: [],
      tag,
    };
  }

  async play(): Promise<void> {
    const { sandbox } = this.world;
    const first = this.message(this.c.first);
    const seeded = sandbox.intercom.seed({
      id: this.id,
      contact: ANA,
      parts: [{ author: 'user', type: 'comment', body: first.text || `[${first.files[0]!.name}]` }],
      attributes: { 'Melvin Reply Mode': this.c.mode },
    });
    this.userMessages.push({ partId: seeded.source.id, tag: first.tag });
    this.lastUserNotification = sandbox.intercom.notification('conversation.user.created', this.id);
    await sandbox.intercom.deliver(this.lastUserNotification);
    for (const step of this.c.steps) {
      await this.place(step.at, () => this.perform(step.event));
      this.stepIndex += 1;
      await this.deliverLate();
    }
    // The outage ends once the case's events are over and the conversation has settled, or waits only to write again
    // what Intercom refused: what is owed can be written now.
    await this.workerBack();
    await this.settle(true);
    this.heal();
    await this.deliverLate(true);
    this.unsettled = await this.settle();
  }

  /** Runs `event` at its place: waits for the point (or for the conversation to settle, when the turn never gets there). */
  private async place(at: Placement, event: () => Promise<void>): Promise<void> {
    const { gates } = this.lane;
    // With no worker running nothing moves: events that race on happen while it is down (one that waits for the
    // workflow's answer is awaited once it is back); any other event starts it again first.
    if (this.workerDown && at.point === 'now') {
      this.whileDown.push(event());
      await sleep(HOLD_AFTER_EVENT_MS);
      return;
    }
    await this.workerBack();
    // A run that only waits to write again what Intercom refused has settled too: nothing moves until the outage ends.
    if (at.point === 'settled') await this.settle(true);
    if (at.point === 'inside') {
      gates.arm(this.id, at);
      await this.until(
        async () => (await this.quiescent()) !== false,
        () => gates.held(this.id) !== null,
      );
    }
    if (at.point === 'approval wait') {
      await this.until(async () => (await this.approvalWaits()) || (await this.quiescent()) !== false);
    }
    // An event that waits on the workflow (an operator's update) cannot finish while its workflow task waits on a held
    // local activity, or while no worker runs: it is sent, given a moment, then the held call goes on (and a stopped
    // worker starts again) before its answer is awaited.
    const happening = event();
    try {
      await Promise.race([happening, sleep(HOLD_AFTER_EVENT_MS)]);
    } finally {
      gates.release(this.id);
    }
    await happening;
  }

  /** Starts the worker again if it was down, then awaits what was sent meanwhile. */
  private async workerBack(): Promise<void> {
    if (!this.workerDown) return;
    this.workerDown = false;
    await this.lane.startWorker();
    await Promise.all(this.whileDown.splice(0));
  }

  private async perform(event: ModelEvent): Promise<void> {
    const { sandbox } = this.world;
    const intercom = sandbox.intercom;
    switch (event.kind) {
      case 'user': {
        const { text, files, tag } = this.message(event.message);
        const part = intercom.addUserMessage(this.id, text, files);
        this.userMessages.push({ partId: part.id, tag });
        const notification = intercom.notification('conversation.user.replied', this.id);
        this.lastUserNotification = notification;
        if (event.late) this.late.push({ notification, createdAt: Date.now(), step: this.stepIndex });
        else await intercom.deliver(notification);
        return;
      }
      case 'redeliver': {
        const again =
          event.which === 'team' ? this.teamNotifications.at(-1 - (event.back ?? 0)) : this.lastUserNotification;
        if (again) await intercom.deliver(again);
        return;
      }
      case 'escalate':
        return this.operator('escalate', 'escalate', { reason: `escalation ${this.lane.tag()}` });
      case 'handBack':
        return this.operator('hand_back', 'hand-back', { reason: `hand back ${this.lane.tag()}` });
      case 'decide': {
        const words = `${event.decision} ${this.lane.tag()}`;
        const body =
          event.decision === 'approve'
            ? { decision: 'approve' }
            : event.decision === 'edit'
              ? { decision: 'edit', text: `Edited by a lead: ${words}` }
              : { decision: 'reject', reason: words };
        return this.operator(event.decision, 'decision', body, event.decision === 'edit' ? body.text : words);
      }
      case 'teammateReplies': {
        const { notification } = await intercom.teammateReplies(this.id, `A teammate answers (${this.lane.tag()}).`);
        this.teamNotifications.push(notification);
        return;
      }
      case 'assign':
        if (event.late) {
          const { notification } = await intercom.assign(this.id, event.to, { deliver: false });
          this.teamNotifications.push(notification);
          this.late.push({ notification, createdAt: Date.now(), step: this.stepIndex });
        } else {
          this.teamNotifications.push((await intercom.assign(this.id, event.to)).notification);
        }
        return;
      case 'close':
        this.teamNotifications.push((await intercom.close(this.id)).notification);
        return;
      case 'cancel':
        await this.handle.cancel().catch((err: unknown) => {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        });
        return;
      case 'restartWorker':
        // While the worker is down a restart is what its coming back does: there is no running worker to stop.
        if (this.workerDown) return;
        return this.lane.restartWorker();
      case 'killWorker':
        if (this.workerDown) return;
        this.killed = true;
        return this.lane.killWorker();
      case 'workerDown':
        if (!this.workerDown) await this.lane.stopWorker();
        this.workerDown = true;
        return;
      case 'quietPeriodEnds': {
        // A quiet period of minutes does not end within a case: the event is then only a wait for the turn to settle.
        const quiet = this.world.turn.quietPeriodSeconds;
        if (quiet > SETTLE_TIMEOUT_MS / 1000) return void (await this.settle());
        await this.until(async () => (await this.quiescent()) === 'closed', undefined, (quiet + 10) * 1000);
        return;
      }
      case 'fault':
        return this.fault(event.on, event.status ?? 500, event.afterAccept, event.persistent ?? false);
      case 'heal':
        return this.heal();
      case 'restartIngress':
        return this.lane.restartIngress();
    }
  }

  /** Plans a fault of the sandbox service `on` names, for this conversation's calls where the service tells them apart. */
  private fault(on: FaultTarget, status: FaultStatus, afterAccept: boolean, always: boolean): void {
    const { intercom, talent, model, validation } = this.world.sandbox;
    const http = {
      status,
      after_accept: afterAccept && status >= 500,
      always,
      ...(status === 429 && { retry_after_s: 1 }),
    };
    if (on === 'model') for (const step of ['plan', 'coverage', 'draft']) model.faults.add(step, [http]);
    else if (on === 'mcp') talent.faults.add(ANY_TOOL_CALL, [{ error: 'server', always }]);
    else if (on === 'validation') validation.faults.add('validate', [http]);
    else intercom.faults.add(`${on}:${this.id}`, [http]);
  }

  /** Every fault planned is lifted. */
  private heal(): void {
    const { intercom, talent, model, validation } = this.world.sandbox;
    for (const faults of [intercom.faults, talent.faults, model.faults, validation.faults]) faults.set({});
  }

  /** A lead's request through the operator API, as the inbox or a script sends it; its answer is kept for the model. */
  private async operator(
    action: OperatorCall['action'],
    route: string,
    body: Record<string, unknown>,
    words = String(body.reason),
  ): Promise<void> {
    const partsBefore = this.partCount();
    const draftSeen = action === 'approve' ? await this.draftWaiting() : undefined;
    // With no worker the request waits out the API's whole deadline: disrupted, however long that takes.
    const downWhenSent = this.workerDown;
    const disruptedAt = this.lane.workerChangedAt;
    // A connection of its own per request, as a lead's one-off client opens: a kept-alive one could be a connection the
    // ingress closed when it restarted.
    const response = await postToIngress(`${this.world.ingressUrl}/conversations/${this.id}/${route}`, {
      authorization: `Bearer ${SANDBOX_SECRETS.adminApiToken}`,
      body: { ...body, requestedBy: 'lead@model' },
    });
    const { killedAt } = this.lane;
    const workerDisrupted =
      downWhenSent ||
      (disruptedAt !== null && Date.now() - disruptedAt < WORKER_DISRUPTION_MS) ||
      (killedAt !== null && Date.now() - killedAt < AFTER_KILL_MS);
    const notReady = response.status === 503 && response.text.includes('workflow not ready');
    this.calls.push({ action, words, status: response.status, partsBefore, draftSeen, workerDisrupted, notReady });
  }

  /**
   * Delivers the webhooks held back once the event after theirs has happened (or at the end), and once what they tell
   * of is old enough to be told apart from it.
   */
  private async deliverLate(all = false): Promise<void> {
    const due = this.late.filter((late) => all || late.step < this.stepIndex - 1);
    this.late = this.late.filter((late) => !due.includes(late));
    for (const { notification, createdAt } of due) {
      await sleep(Math.max(0, createdAt + LATE_BY_MS - Date.now()));
      await this.world.sandbox.intercom.deliver(notification);
    }
  }

  private partCount(): number {
    return 1 + this.world.sandbox.intercom.mustGet(this.id).conversation_parts.conversation_parts.length;
  }

  /**
   * Waits until `done` (asked of Temporal, so every 100 ms) or `reached` (in this process, so every 5 ms) holds; false
   * when neither did within the timeout.
   */
  private async until(
    done: () => Promise<boolean>,
    reached: () => boolean = () => false,
    timeoutMs = this.settleTimeoutMs,
  ): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    let asked = 0;
    while (Date.now() < deadline) {
      if (reached()) return true;
      if (Date.now() - asked >= POLL_MS) {
        asked = Date.now();
        if (await done()) return true;
      }
      await sleep(5);
    }
    return false;
  }

  private async approvalWaits(): Promise<boolean> {
    return (await this.draftWaiting()) !== undefined;
  }

  /** The draft waiting for a lead's decision, as the report page shows it; undefined when none waits or none answers. */
  private async draftWaiting(): Promise<string | undefined> {
    const state = await this.world.client
      .withDeadline(Date.now() + 2_000, () => this.handle.query(stateQuery))
      .catch(() => undefined);
    const approval = state?.metadata.approval;
    return approval?.outcome === 'waiting' ? approval.draft : undefined;
  }

  /**
   * Whether nothing happens in the conversation now: its workflow has ended (`closed`), or waits for a message with no
   * task, activity or gated call pending (`waiting`); false while anything runs. Returns the history length too.
   */
  private async quiescent(): Promise<'closed' | 'waiting' | 'owing' | false> {
    // A webhook the outbox took and has yet to hand to Temporal is still on its way.
    if (this.lane.gates.busy(this.id) || this.lane.outboxPending > 0) return false;
    const { client } = this.world;
    const description = await client
      .withDeadline(Date.now() + 2_000, () => this.handle.describe())
      .catch((err: unknown) => (err instanceof WorkflowNotFoundError ? null : undefined));
    if (description === null) return 'closed';
    if (!description) return false;
    if (description.status.name !== 'RUNNING') return 'closed';
    if (description.raw.pendingActivities?.length || description.raw.pendingWorkflowTask) return false;
    const progress = await client
      .withDeadline(Date.now() + 2_000, () => this.handle.query(progressQuery))
      .catch(() => undefined);
    // The run waits for Intercom to take what it refused (a timer, with nothing in flight).
    if ((progress as { waiting_for_intercom?: boolean } | undefined)?.waiting_for_intercom) return 'owing';
    return progress?.idle ? 'waiting' : false;
  }

  /**
   * Waits until the conversation has settled (twice in a row, its history unchanged), or with `owing` until it waits
   * only to write again what Intercom refused; returns why not, if it never did.
   */
  private async settle(owing = false): Promise<string | null> {
    let last = '';
    const settled = await this.until(async () => {
      const now = await this.quiescent();
      if (!now || (now === 'owing' && !owing)) {
        last = '';
        return false;
      }
      const length = now === 'closed' ? 'closed' : String((await this.handle.describe()).historyLength);
      const stable = last === length;
      last = length;
      return stable;
    });
    if (settled) return null;
    const description = await this.handle.describe().catch(() => undefined);
    return `still busy after ${this.settleTimeoutMs / 1000} s (${description?.status.name ?? 'unknown'}, pending activities: ${description?.raw.pendingActivities?.map((a) => a.activityType?.name).join(', ') || 'none'})`;
  }

  /** What the conversation came to: Intercom's parts and Melvin Status, the operator API's answers, every run. */
  async observe(): Promise<Observation> {
    const { sandbox } = this.world;
    const conversation = sandbox.intercom.mustGet(this.id);
    const author = (a: { type: string; id: string }): ObservedPart['author'] =>
      a.id === ADMIN_ID ? 'melvin' : a.type === 'admin' ? 'teammate' : 'user';
    const parts: ObservedPart[] = [
      { id: conversation.source.id, type: 'comment', author: 'user', text: renderPlaintext(conversation.source.body) },
      ...conversation.conversation_parts.conversation_parts.map((p) => ({
        id: p.id,
        type: p.part_type,
        author: author(p.author),
        text: renderPlaintext(p.body ?? ''),
        ...(p.assigned_to
          ? {
              assignedTo:
                p.assigned_to.id === ADMIN_ID
                  ? ('melvin' as const)
                  : p.assigned_to.id
                    ? ('teammate' as const)
                    : ('nobody' as const),
            }
          : {}),
      })),
    ];
    const status = conversation.custom_attributes['Melvin Status'];
    return {
      mode: this.c.mode,
      handoverTexts: Object.values(this.world.turn.handoverMessages).filter((t): t is string => !!t),
      userMessages: this.userMessages,
      parts,
      melvinStatus: typeof status === 'string' ? status : null,
      calls: this.calls,
      runs: await this.runs(),
      unsettled: this.unsettled,
    };
  }

  /** Every run of the conversation's workflows, oldest first, with its history's facts. */
  private async runs(): Promise<RunFacts[]> {
    const { client } = this.world;
    const workflowId = workflowIdFor(this.id);
    const latest = await this.handle.describe().catch(() => undefined);
    for (let attempt = 0; ; attempt++) {
      const listed: { runId: string; startTime: Date }[] = [];
      for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
        listed.push({ runId: run.runId, startTime: run.startTime });
      }
      // Visibility may lag a moment behind the newest run.
      if (latest && !listed.some((r) => r.runId === latest.runId) && attempt < 50) {
        await sleep(100);
        continue;
      }
      listed.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
      return Promise.all(
        listed.map(async ({ runId, startTime }) => {
          const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
          const json = JSON.parse(historyToJSON(history)) as { events?: [] };
          const facts = readFacts(json).map((fact) =>
            fact.kind === 'local' ? { ...fact, input: this.lane.gates.localInput(runId, fact.activityId) } : fact,
          );
          return { runId, startTime: startTime.toISOString(), facts, json };
        }),
      );
    }
  }
}
