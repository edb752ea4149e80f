// A run's history (as `historyToJSON` writes it) read as the facts the conversation model checks: what the workflow
// was told (signals, accepted updates, a cancel request), what it did (activities scheduled, with what it knew when it
// decided them; local activities), and how its tasks and the run ended.

/** A history event in JSON form: only what the model reads. */
interface JsonEvent {
  eventId: string;
  eventTime: string;
  eventType: string;
  [attributes: string]: unknown;
}

interface JsonPayloads {
  payloads?: { data?: string }[];
}

export type Fact =
  | { kind: 'signal'; id: number; time: string; name: string; args: unknown }
  | {
      kind: 'update';
      id: number;
      time: string;
      name: string;
      args: unknown;
      /** The event after which the update reached the workflow: from that task on, the workflow knew of it. */
      seenAt: number;
      /** The workflow answered it with a failure (the API's 409): it asked for something that was not done. */
      refused?: boolean;
    }
  | {
      kind: 'scheduled';
      id: number;
      time: string;
      activity: string;
      input: unknown;
      /** The last event the workflow had seen when it decided this: the started event of the task that scheduled it. */
      seenUpTo: number;
    }
  | { kind: 'completed'; id: number; scheduledId: number; result: unknown }
  | { kind: 'failed'; id: number; scheduledId: number; message: string }
  /** A local activity's marker; its input is not in the history, but the worker's gates saw it (`ActivityGates`). */
  | {
      kind: 'local';
      id: number;
      activity: string;
      activityId: string;
      input: unknown;
      result: unknown;
      failed: boolean;
    }
  | { kind: 'cancelRequested'; id: number; time: string }
  | { kind: 'taskFailed'; id: number; cause: string; message: string }
  | { kind: 'closed'; id: number; how: string };

export interface RunFacts {
  runId: string;
  startTime: string;
  facts: Fact[];
  /** The history as recorded, for the replay check. */
  json: unknown;
}

function decode(payloads: JsonPayloads | undefined): unknown {
  const data = payloads?.payloads?.[0]?.data;
  if (!data) return null;
  const text = Buffer.from(data, 'base64').toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function attributes(event: JsonEvent, name: string): Record<string, unknown> {
  return (event[name] as Record<string, unknown> | undefined) ?? {};
}

const CLOSED: Record<string, string> = {
  EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: 'completed',
  EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: 'continuedAsNew',
  EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: 'cancelled',
  EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: 'failed',
  EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: 'terminated',
  EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: 'timedOut',
};

/** The facts of one run's history, in the order of its events. */
export function readFacts(json: { events?: JsonEvent[] }): Fact[] {
  const events = json.events ?? [];
  /** Each completed workflow task's started event: what the commands of that task were decided on. */
  const startedOf = new Map<number, number>();
  const facts: Fact[] = [];
  for (const event of events) {
    const id = Number(event.eventId);
    const time = event.eventTime;
    switch (event.eventType) {
      case 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED':
        startedOf.set(id, Number(attributes(event, 'workflowTaskCompletedEventAttributes').startedEventId));
        break;
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED': {
        const a = attributes(event, 'workflowExecutionSignaledEventAttributes');
        facts.push({ kind: 'signal', id, time, name: String(a.signalName), args: decode(a.input as JsonPayloads) });
        break;
      }
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED': {
        const a = attributes(event, 'workflowExecutionUpdateAcceptedEventAttributes');
        const request = a.acceptedRequest as { input?: { name?: string; args?: JsonPayloads } } | undefined;
        facts.push({
          kind: 'update',
          id,
          time,
          name: String(request?.input?.name),
          args: decode(request?.input?.args),
          seenAt: Number(a.acceptedRequestSequencingEventId ?? id),
        });
        break;
      }
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED': {
        const a = attributes(event, 'workflowExecutionUpdateCompletedEventAttributes');
        const accepted = facts.find((f) => f.kind === 'update' && f.id === Number(a.acceptedEventId));
        if (accepted?.kind === 'update' && (a.outcome as { failure?: unknown } | undefined)?.failure) {
          accepted.refused = true;
        }
        break;
      }
      case 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED': {
        const a = attributes(event, 'activityTaskScheduledEventAttributes');
        facts.push({
          kind: 'scheduled',
          id,
          time,
          activity: String((a.activityType as { name?: string }).name),
          input: decode(a.input as JsonPayloads),
          seenUpTo: startedOf.get(Number(a.workflowTaskCompletedEventId)) ?? id,
        });
        break;
      }
      case 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED': {
        const a = attributes(event, 'activityTaskCompletedEventAttributes');
        facts.push({
          kind: 'completed',
          id,
          scheduledId: Number(a.scheduledEventId),
          result: decode(a.result as JsonPayloads),
        });
        break;
      }
      case 'EVENT_TYPE_ACTIVITY_TASK_FAILED':
      case 'EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT':
      case 'EVENT_TYPE_ACTIVITY_TASK_CANCELED': {
        const a = Object.values(event).find((v) => v && typeof v === 'object' && 'scheduledEventId' in v) as
          { scheduledEventId: string; failure?: { message?: string } } | undefined;
        facts.push({
          kind: 'failed',
          id,
          scheduledId: Number(a?.scheduledEventId),
          message: a?.failure?.message ?? event.eventType,
        });
        break;
      }
      case 'EVENT_TYPE_MARKER_RECORDED': {
        const a = attributes(event, 'markerRecordedEventAttributes');
        if (a.markerName !== 'core_local_activity') break;
        const details = a.details as { data?: JsonPayloads; result?: JsonPayloads };
        const data = decode(details.data) as { activity_type?: string; activity_id?: string } | null;
        facts.push({
          kind: 'local',
          id,
          activity: String(data?.activity_type),
          activityId: String(data?.activity_id),
          input: null,
          result: decode(details.result),
          failed: 'failure' in a,
        });
        break;
      }
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED':
        facts.push({ kind: 'cancelRequested', id, time });
        break;
      case 'EVENT_TYPE_WORKFLOW_TASK_FAILED': {
        const a = attributes(event, 'workflowTaskFailedEventAttributes');
        const failure = a.failure as { message?: string } | undefined;
        facts.push({ kind: 'taskFailed', id, cause: String(a.cause), message: failure?.message ?? '' });
        break;
      }
      default:
        if (CLOSED[event.eventType]) facts.push({ kind: 'closed', id, how: CLOSED[event.eventType]! });
    }
  }
  return facts;
}
