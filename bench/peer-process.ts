// The bench's handle on the LangGraph peer's process (bench/peer/main.ts): starts it with the worker's environment, asks
// it over IPC for turns, as many at once as the caller likes, and stops it. It imports nothing of LangGraph, so Melvin's
// own type-check and tests need none of the peer's dependencies.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SupportConversationInput } from '../src/contract/shared';

/** One peer turn's measures, in ms of the peer's own clock (`performance.now()`) unless said otherwise. */
export interface PeerTurnMeasures {
  /** The graph's invocation → its end. */
  turnMs: number;
  /** The union of the activity calls' intervals, parallel calls counted once. */
  activityMs: number;
  /** `turnMs` − `activityMs`: LangGraph's steps, its checkpoints and the nodes' own code. */
  overheadMs: number;
  /** Summed over the turn's activity calls: a node asking for one → the activity starting (LangGraph's task dispatch). */
  dispatchMs: number;
  /** A node asking for the first tool call → the last tool call's end; undefined when the turn called no tool. */
  gatherMs: number | undefined;
  toolCalls: number;
  /** Plan calls, one a hop. */
  hops: number;
  /** Finalize's status, or `skipped`. */
  melvinStatus: string;
  /** The conversation's thread in the checkpoint database: its checkpoints, and their bytes with their tasks' writes. */
  checkpoints: number;
  threadBytes: number;
  /** The whole checkpoint database on disk (every conversation so far), its write-ahead log included. */
  databaseBytes: number;
}

/** The bench asks for a turn of a conversation that the sandbox holds. */
export interface PeerRequest {
  id: number;
  input: SupportConversationInput;
}

/** The peer's answers: ready once, then one per request. */
export type PeerMessage = { ready: true } | { id: number; measures: PeerTurnMeasures } | { id: number; error: string };

const ROOT = path.join(__dirname, '..');
/** How the peer's rows are labelled: apart from Melvin's, which keep the labels they had before the peer. */
export const PEER = 'LangGraph peer';
const STARTUP_TIMEOUT_MS = 60_000;

export class PeerProcess {
  private child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(path.join(tmpdir(), 'melvin-peer-'));
  private readonly waiting = new Map<number, { resolve: (m: PeerTurnMeasures) => void; reject: (e: Error) => void }>();
  private nextId = 0;
  /** The process's last output lines, for the error when it fails. */
  readonly output: string[] = [];

  /** `turnSettings`: what every turn runs with (hops, snooze, hand-over messages), as the ingress gives Melvin's. */
  constructor(private readonly turnSettings: Omit<SupportConversationInput, 'conversationId'>) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The checkpoint database the peer writes, in a directory of its own that `stop` removes. */
  get databasePath(): string {
    return path.join(this.dir, 'checkpoints.sqlite');
  }

  /**
   * Starts the process with `env` (the worker's: the sandbox's URLs and secrets) and waits until it is ready. Its IPC
   * channel closes when this process exits, however it exits, and the peer then exits too.
   */
  async start(env: NodeJS.ProcessEnv): Promise<void> {
    const child = fork(path.join(__dirname, 'peer', 'main.ts'), [], {
      cwd: ROOT,
      execArgv: ['--import', 'tsx'],
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env, PEER_CHECKPOINT_DB: this.databasePath },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child = child;
    for (const stream of [child.stdout!, child.stderr!]) {
      let buffered = '';
      stream.on('data', (chunk: Buffer) => {
        const lines = (buffered + chunk.toString()).split('\n');
        buffered = lines.pop() ?? '';
        this.output.push(...lines);
        this.output.splice(0, Math.max(0, this.output.length - 200));
      });
    }
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code, signal) => {
        const error = new Error(`the peer exited (${signal ?? code}):\n${this.output.slice(-20).join('\n')}`);
        for (const { reject: fail } of this.waiting.values()) fail(error);
        this.waiting.clear();
        reject(error);
      }),
    );
    exited.catch(() => undefined);
    const ready = new Promise<void>((resolve) => {
      child.on('message', (message: PeerMessage) => {
        if ('ready' in message) return resolve();
        const waiter = this.waiting.get(message.id);
        this.waiting.delete(message.id);
        if ('error' in message) waiter?.reject(new Error(`peer turn ${message.id}: ${message.error}`));
        else waiter?.resolve(message.measures);
      });
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the peer did not start within 60 s')), STARTUP_TIMEOUT_MS);
    });
    await Promise.race([ready, exited, late]).finally(() => clearTimeout(timer));
  }

  /** Runs a turn of the conversation in the peer; turns of different conversations may run at once. */
  turn(conversationId: string): Promise<PeerTurnMeasures> {
    const child = this.child;
    if (!child?.connected) return Promise.reject(new Error('the peer is not running'));
    const request: PeerRequest = { id: ++this.nextId, input: { ...this.turnSettings, conversationId } };
    return new Promise((resolve, reject) => {
      this.waiting.set(request.id, { resolve, reject });
      child.send(request, (err) => {
        if (!err) return;
        this.waiting.delete(request.id);
        reject(err);
      });
    });
  }

  /** Closes the IPC channel, on which the peer finishes (its MCP sessions, its database) and exits. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      if (child.connected) child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
