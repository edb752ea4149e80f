// The events that can happen to one conversation, where each is placed in a turn, and their fast-check generators: what
// the model-based test draws cases from, and how a case prints when it fails.
import fc from 'fast-check';
import { ACTIVITIES, type GatePoint } from './gates';
import type { ReplyMode } from './invariants';
import type { WorldSettings } from './world';

/** What the user writes: a question the data answers, one it does not, a request for a person, files only, or a wall of text. */
export const MESSAGE_KINDS = {
  payment: 'When will I get paid for the Austin shift?',
  application: 'What is the status of my application?',
  policy: 'How does the weekly payout run work?',
  person: 'Can I talk to a real person please?',
  unknown: 'Can you send me my Form 8821 copy?',
  greeting: 'Hi there!',
  files: '',
  long: 'Here is my whole contract, can you check the payment terms?',
} as const;
export type MessageKind = keyof typeof MESSAGE_KINDS;

/** What a fault fails: one of Intercom's calls for the conversation, or a call to the model, the MCP server or validation. */
export const FAULT_TARGETS = [
  'reply',
  'note',
  'fetch',
  'contact',
  'update',
  'snooze',
  'model',
  'mcp',
  'validation',
] as const;
export type FaultTarget = (typeof FAULT_TARGETS)[number];
/** A server error, a rate limit, credentials refused (not retried), the conversation not found (not retried). */
export type FaultStatus = 500 | 429 | 401 | 404;

export type ModelEvent =
  /** `late`: Intercom's webhook for the message arrives after the next event (or once the case is over). */
  | { kind: 'user'; message: MessageKind; late?: boolean }
  | { kind: 'escalate' }
  | { kind: 'handBack' }
  | { kind: 'teammateReplies' }
  /** `late`: Intercom's webhook for it arrives after the next event. */
  | { kind: 'assign'; to: 'melvin' | 'teammate' | 'nobody'; late: boolean }
  | { kind: 'close' }
  | { kind: 'decide'; decision: 'approve' | 'edit' | 'reject' }
  | { kind: 'cancel' }
  | { kind: 'restartWorker' }
  /** A worker dies at once (no shutdown): what it started and did stays unreported, and a new one starts in its place. */
  | { kind: 'killWorker' }
  /** No worker runs until an event placed other than `now`: the events racing on meanwhile wait in Temporal together. */
  | { kind: 'workerDown' }
  | { kind: 'quietPeriodEnds' }
  /**
   * The next call to `on` fails (with a 500 unless `status` says otherwise), before Intercom took it or after; a
   * `persistent` fault fails every call until the faults heal (at a `heal`, or once the case's events are over).
   */
  | { kind: 'fault'; on: FaultTarget; afterAccept: boolean; status?: FaultStatus; persistent?: boolean }
  /** Every fault planned so far is lifted: the outage is over. */
  | { kind: 'heal' }
  /** The ingress stops and starts again: what it remembered of the webhooks it took is gone. */
  | { kind: 'restartIngress' }
  /**
   * Intercom delivers the last user message's webhook once more, or (`team`) a teammate action's: the last, or the one
   * `back` actions before it.
   */
  | { kind: 'redeliver'; which?: 'user' | 'team'; back?: number };

/**
 * Where the event happens: once the conversation has settled; at once, racing whatever runs; inside an activity of the
 * turn (as it starts, or once its call returned); or while a draft waits for a lead's approval.
 */
export type Placement =
  { point: 'settled' } | { point: 'now' } | ({ point: 'inside' } & GatePoint) | { point: 'approval wait' };

export interface Step {
  event: ModelEvent;
  at: Placement;
}

export interface ModelCase {
  mode: ReplyMode;
  /** The workflow's quiet period: 0 ends it after each turn; absent, the world's short default. */
  quietPeriodSeconds?: number;
  first: MessageKind;
  steps: Step[];
  /** How the world runs the case: its workers, the ingress's outbox; absent, one worker, no outbox. */
  world?: Partial<WorldSettings>;
}

/** Walls of text cost the sandbox the most time to serve, so they come less often than ordinary questions. */
const messageKind: fc.Arbitrary<MessageKind> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.constantFrom<MessageKind>('payment', 'application', 'policy', 'person', 'unknown', 'greeting'),
  },
  { weight: 2, arbitrary: fc.constant<MessageKind>('files') },
  { weight: 1, arbitrary: fc.constant<MessageKind>('long') },
);

/**
 * A fault as production has them: one call failing (a server error, a rate limit, credentials refused) or every call
 * until the outage ends. A persistent one is a refusal or a rate limit: a server error on every call would spend a post's
 * retries for a minute and a half a case. A 404 is left to the regression cases: Intercom's conversation does not vanish
 * for one call.
 */
const faultArbitrary: fc.Arbitrary<Extract<ModelEvent, { kind: 'fault' }>> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('fault' as const),
      on: fc.constantFrom(...FAULT_TARGETS),
      afterAccept: fc.boolean(),
      status: fc.constantFrom<FaultStatus>(500, 500, 429, 401),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('fault' as const),
      on: fc.constantFrom(...FAULT_TARGETS),
      afterAccept: fc.constant(false),
      status: fc.constantFrom<FaultStatus>(401, 429),
      persistent: fc.constant(true),
    }),
  },
);

export const eventArbitrary: fc.Arbitrary<ModelEvent> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('user' as const),
      message: messageKind,
      late: fc.constantFrom(false, false, false, true),
    }),
  },
  { weight: 3, arbitrary: fc.constant({ kind: 'escalate' as const }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'handBack' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'teammateReplies' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('assign' as const),
      to: fc.constantFrom('melvin' as const, 'teammate' as const, 'nobody' as const),
      late: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'close' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('decide' as const),
      decision: fc.constantFrom('approve' as const, 'edit' as const, 'reject' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'cancel' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restartWorker' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'killWorker' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'workerDown' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'quietPeriodEnds' as const }) },
  { weight: 3, arbitrary: faultArbitrary },
  { weight: 1, arbitrary: fc.constant({ kind: 'heal' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('redeliver' as const),
      which: fc.constantFrom('user' as const, 'team' as const),
      back: fc.constantFrom(0, 0, 1),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'restartIngress' as const }) },
);

export const placementArbitrary: fc.Arbitrary<Placement> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ point: 'settled' as const }) },
  { weight: 2, arbitrary: fc.constant({ point: 'now' as const }) },
  {
    weight: 6,
    arbitrary: fc.record({
      point: fc.constant('inside' as const),
      activity: fc.constantFrom(...ACTIVITIES),
      phase: fc.constantFrom('start' as const, 'end' as const),
      nth: fc.constantFrom(1, 1, 2),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ point: 'approval wait' as const }) },
);

/**
 * Mostly as production runs: the ingress's outbox on (the production compose file's way), one worker; now and then two
 * sharing the queue, where a run the one worker had cached is evicted and replayed by the other when it is down or
 * killed.
 */
const worldArbitrary: fc.Arbitrary<Partial<WorldSettings>> = fc.record({
  workers: fc.constantFrom<1 | 2>(1, 1, 2),
  outbox: fc.constantFrom(true, true, false),
});

export const caseArbitrary: fc.Arbitrary<ModelCase> = fc.record({
  mode: fc.constantFrom<ReplyMode>('auto', 'auto', 'approve', 'shadow'),
  // The world's short quiet period most often; none (a workflow per turn), or ten minutes (it outlives the case).
  quietPeriodSeconds: fc.constantFrom(2, 2, 2, 0, 600),
  // A conversation starts with words: files come with later messages.
  first: messageKind.filter((kind) => kind !== 'files'),
  steps: fc.array(fc.record({ event: eventArbitrary, at: placementArbitrary }), { maxLength: 6 }),
  world: worldArbitrary,
});

/** One line per step, for a failure report and for a regression test to be written from. */
export function describeCase(c: ModelCase): string {
  const place = (at: Placement) =>
    at.point === 'inside' ? `inside ${at.activity} (${at.phase}, call ${at.nth})` : at.point;
  const lines = c.steps.map(({ event, at }) => `  ${JSON.stringify(event)} @ ${place(at)}`);
  const quiet = c.quietPeriodSeconds === undefined ? '' : `, quiet period ${c.quietPeriodSeconds} s`;
  const world = c.world && Object.keys(c.world).length ? `, world ${JSON.stringify(c.world)}` : '';
  return [`mode ${c.mode}${quiet}${world}, first message: ${c.first}`, ...lines].join('\n');
}
