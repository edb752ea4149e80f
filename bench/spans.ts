// What one turn's history says about its time: the turn's span, the activities' busy time within it, the Gather span.
import { temporal } from '@temporalio/proto';
import type { LocalActivityLog, LocalAttempt } from './local-activities';

const EventType = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type History = temporal.api.history.v1.IHistory;

/** The tool activity the Gather node runs once per planned call. */
const TOOL_ACTIVITY = 'callTool';
/** The marker the SDK records a local activity's result in. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

export interface TurnSpans {
  /** Workflow execution started → the run's close (completed, or continued as new). */
  turnMs: number;
  /**
   * The union of every activity's execution interval (ActivityTaskStarted → its Completed, Failed or TimedOut), and of
   * every local activity's (which the worker's log gives: see ./local-activities).
   */
  activityMs: number;
  /** `turnMs` − `activityMs`: the time the turn spent in Temporal and in workflow code rather than in an activity. */
  overheadMs: number;
  /**
   * The time tasks waited in their task queues (scheduled → started, workflow and activity tasks alike), summed: the
   * part of the overhead spent dispatching rather than running workflow code.
   */
  queueMs: number;
  workflowTasks: number;
  events: number;
  /**
   * First tool call scheduled (an activity) or started (a local one) → last tool call closed; undefined when the turn
   * called no tool.
   */
  gatherMs: number | undefined;
  toolCalls: number;
}

function ms(time: HistoryEvent['eventTime']): number {
  if (!time) return NaN;
  return Number(time.seconds ?? 0) * 1000 + (time.nanos ?? 0) / 1e6;
}

/** The total length of a set of intervals, overlaps counted once (parallel tool calls are one stretch of busy time). */
export function unionMs(intervals: [number, number][]): number {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [from, to] of sorted) {
    if (to <= end) continue;
    total += to - Math.max(from, end);
    end = to;
  }
  return total;
}

/** How many local activities the run recorded: the worker logs one interval for each (more if one was retried). */
export function localActivityCount(history: History): number {
  return (history.events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER)
    .length;
}

const CLOSES_RUN = new Set<number>([
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
]);

/**
 * One run's spans. The bench runs each conversation as one turn whose workflow closes after it (the harness's ingress
 * gives no quiet period), so the turn ends at the run's close. A local activity has no events of its own, only a
 * marker whose times are the workflow's: `localActivities` are their execution intervals from the worker's log.
 */
export function turnSpans(history: History, localActivities: LocalAttempt[] = []): TurnSpans {
  const events = history.events ?? [];
  const byId = new Map(events.map((e) => [Number(e.eventId), e]));
  const started = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
  const closed = events.find((e) => CLOSES_RUN.has(e.eventType ?? 0));
  if (!started || !closed) throw new Error('the history holds no complete run');
  let queueMs = 0;
  for (const event of events) {
    const start = event.workflowTaskStartedEventAttributes ?? event.activityTaskStartedEventAttributes;
    const scheduled = start && byId.get(Number(start.scheduledEventId));
    if (scheduled) queueMs += ms(event.eventTime) - ms(scheduled.eventTime);
  }
  const activities: [number, number][] = localActivities.map((a) => [a.from, a.to]);
  const localTools = localActivities.filter((a) => a.type === TOOL_ACTIVITY);
  const toolScheduled = localTools.map((a) => a.from);
  const toolClosed = localTools.map((a) => a.to);
  for (const event of events) {
    const close =
      event.activityTaskCompletedEventAttributes ??
      event.activityTaskFailedEventAttributes ??
      event.activityTaskTimedOutEventAttributes;
    if (!close) continue;
    const startedEvent = byId.get(Number(close.startedEventId));
    const scheduled = byId.get(Number(close.scheduledEventId));
    if (startedEvent) activities.push([ms(startedEvent.eventTime), ms(event.eventTime)]);
    if (scheduled?.activityTaskScheduledEventAttributes?.activityType?.name === TOOL_ACTIVITY) {
      toolScheduled.push(ms(scheduled.eventTime));
      toolClosed.push(ms(event.eventTime));
    }
  }
  const turnMs = ms(closed.eventTime) - ms(started.eventTime);
  const activityMs = unionMs(activities);
  return {
    turnMs,
    activityMs,
    overheadMs: turnMs - activityMs,
    queueMs,
    workflowTasks: events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).length,
    events: events.length,
    gatherMs: toolScheduled.length ? Math.max(...toolClosed) - Math.min(...toolScheduled) : undefined,
    toolCalls: toolScheduled.length,
  };
}

/** A run's spans, with its local activities' attempts from the worker's log. */
export async function melvinSpans(
  history: History,
  workflowId: string,
  localActivities: LocalActivityLog,
): Promise<TurnSpans> {
  return turnSpans(history, await localActivities.attempts(workflowId, localActivityCount(history)));
}
