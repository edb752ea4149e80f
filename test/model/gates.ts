// Holds one conversation's activity at a chosen point (as it starts, or once its call is done but before the workflow
// hears of it), so the model-based test can place an event inside any activity of a turn; and counts the activities in
// flight per conversation, which tells when a conversation has settled.
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

export class ActivityGates {
  private readonly armed = new Map<string, Armed>();
  private readonly inFlight = new Map<string, number>();
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

  /** Whether any activity of the conversation is running (held or not). */
  busy(conversationId: string): boolean {
    return (this.inFlight.get(conversationId) ?? 0) > 0;
  }

  /** The worker's activities, each passing through the gates of the conversation whose workflow runs it. */
  wrap<T extends Activities>(activities: T): T {
    return Object.fromEntries(
      Object.entries(activities).map(([name, run]) => [
        name,
        async (input: never) => {
          const { info } = Context.current();
          const conversationId = conversationIdOf(info.workflowExecution?.workflowId ?? '') ?? '';
          if (info.isLocal) this.localInputs.set(`${info.workflowExecution?.runId}/${info.activityId}`, input);
          this.inFlight.set(conversationId, (this.inFlight.get(conversationId) ?? 0) + 1);
          try {
            await this.pass(conversationId, name, 'start');
            const result = await run(input);
            await this.pass(conversationId, name, 'end');
            return result;
          } finally {
            this.inFlight.set(conversationId, (this.inFlight.get(conversationId) ?? 1) - 1);
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
