// Holds one conversation's activity at a chosen point (as it starts, or once its call is done but before the workflow
// hears of it), so the model-based test can place an event inside any activity of a turn; counts the activities in
// flight per conversation, which tells when a conversation has settled; and stops the activities of a worker killed
// mid-call, as its process's death would.
import { Context } from '@temporalio/activity';
import { conversationIdOf } from '../../src/contract/shared';

/** The activities a turn runs, by the names the worker registers. */
export const ACTIVITIES = [
  'fetchConversation',
  'listTools',
  'loadPrompts',
  'plan',
  'callTool',
  'coverage',
  'draft',
  'validateDraft',
  'sendReply',
  'addNote',
  'setStatus',
  'snooze',
] as const;
export type ActivityName = (typeof ACTIVITIES)[number];

/** Where an event goes: the `nth` call of an activity from now on, as it starts or once its call returned. */
export interface GatePoint {
  activity: ActivityName;
  phase: 'start' | 'end';
  nth: number;
}

interface Armed {
  point: GatePoint;
  seen: number;
  held: { activity: string; release: () => void } | null;
}

// The worker's activities are functions of one argument each; the gate passes it on unchanged.
type Activities = Record<string, (input: never) => Promise<unknown>>;

/** The worker whose activities a wrapper runs: once killed, none of them does anything more. */
export interface GatedWorker {
  killed: boolean;
}

export class ActivityGates {
  private readonly armed = new Map<string, Armed>();
  /** The calls running per conversation, each with the worker running it. */
  private readonly inFlight = new Map<string, Set<{ worker: GatedWorker }>>();
  /** The calls of killed workers: they never return, until the world closes. */
  private readonly vanished: ((err: Error) => void)[] = [];
  /** Each local activity's input by run and activity id: its history marker holds only the result. */
  private readonly localInputs = new Map<string, unknown>();

  localInput(runId: string, activityId: string): unknown {
    return this.localInputs.get(`${runId}/${activityId}`) ?? null;
  }

  arm(conversationId: string, point: GatePoint): void {
    this.release(conversationId);
    this.armed.set(conversationId, { point, seen: 0, held: null });
  }

  /** The activity held for the conversation, if any. */
  held(conversationId: string): string | null {
    return this.armed.get(conversationId)?.held?.activity ?? null;
  }

  /** Lets a held activity go on and disarms the conversation's gate. */
  release(conversationId: string): void {
    this.armed.get(conversationId)?.held?.release();
    this.armed.delete(conversationId);
  }

  /** Whether any activity of the conversation is running (held or not) on a worker that lives. */
  busy(conversationId: string): boolean {
    return [...(this.inFlight.get(conversationId) ?? [])].some((call) => !call.worker.killed);
  }

  /** The calls of killed workers end (with an error nobody hears): the world is closing. */
  abandonVanished(): void {
    for (const end of this.vanished.splice(0)) end(new Error('the worker was killed'));
  }

  /**
   * The worker's activities, each passing through the gates of the conversation whose workflow runs it. Once `worker`
   * is killed a call does not start, and one held or running never returns: its process is gone, with what it did.
   */
  wrap<T extends Activities>(activities: T, worker: GatedWorker): T {
    const gone = () => new Promise<never>((_resolve, reject) => this.vanished.push(reject));
    return Object.fromEntries(
      Object.entries(activities).map(([name, run]) => [
        name,
        async (input: never) => {
          if (worker.killed) return gone();
          const { info } = Context.current();
          const conversationId = conversationIdOf(info.workflowExecution?.workflowId ?? '') ?? '';
          if (info.isLocal) this.localInputs.set(`${info.workflowExecution?.runId}/${info.activityId}`, input);
          const call = { worker };
          const calls = this.inFlight.get(conversationId) ?? new Set();
          this.inFlight.set(conversationId, calls.add(call));
          try {
            await this.pass(conversationId, name, 'start');
            if (worker.killed) return await gone();
            const result = await run(input);
            await this.pass(conversationId, name, 'end');
            if (worker.killed) return await gone();
            return result;
          } finally {
            calls.delete(call);
          }
        },
      ]),
    ) as T;
  }

  /** Holds the call when it is the armed point, until released or until the worker cancels it (a restart). */
  private async pass(conversationId: string, activity: string, phase: 'start' | 'end'): Promise<void> {
    const armed = this.armed.get(conversationId);
    if (!armed || armed.held || armed.point.activity !== activity || armed.point.phase !== phase) return;
    armed.seen += 1;
    if (armed.seen !== armed.point.nth) return;
    const released = new Promise<void>((resolve) => {
      armed.held = { activity: `${activity}:${phase}`, release: resolve };
    });
    await Promise.race([released, Context.current().cancelled]);
  }
}
