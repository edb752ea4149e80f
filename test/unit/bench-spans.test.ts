// The bench's reading of a turn's history: the turn's span, activities' busy time counted once, queue waits, Gather;
// and of the worker's log, for the local activities' times.
import { temporal } from '@temporalio/proto';
import { LocalActivityLog } from '../../bench/local-activities';
import { turnSpans, unionMs } from '../../bench/spans';

const T = temporal.api.enums.v1.EventType;
type History = temporal.api.history.v1.IHistory;

const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });

/**
 * A history from events given as [event type, time in ms, attributes]; event ids count from 1. The protobuf types
 * want event ids as Longs, which the reader turns into numbers as it does plain numbers: the cast only spares the test
 * a dependency on `long`.
 */
function history(events: [number, number, Record<string, unknown>?][]): History {
  return {
    events: events.map(([eventType, ms, rest], i) => ({ eventId: i + 1, eventType, eventTime: at(ms), ...rest })),
  } as unknown as History;
}

test('overlapping intervals count once, disjoint ones add up', () => {
  expect(unionMs([])).toBe(0);
  expect(
    unionMs([
      [0, 100],
      [50, 150],
      [300, 400],
      [310, 320],
    ]),
  ).toBe(250);
});

test('a turn of two parallel tool calls: overhead is the turn minus the stretch the calls ran', () => {
  const tool = { activityTaskScheduledEventAttributes: { activityType: { name: 'callTool' } } };
  const spans = turnSpans(
    history([
      [T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 1000],
      [T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 1000],
      [T.EVENT_TYPE_WORKFLOW_TASK_STARTED, 1010, { workflowTaskStartedEventAttributes: { scheduledEventId: 2 } }],
      [T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 1020],
      [T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, 1020, tool],
      [T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, 1020, tool],
      [T.EVENT_TYPE_ACTIVITY_TASK_STARTED, 1030, { activityTaskStartedEventAttributes: { scheduledEventId: 5 } }],
      [
        T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        1230,
        { activityTaskCompletedEventAttributes: { scheduledEventId: 5, startedEventId: 7 } },
      ],
      [T.EVENT_TYPE_ACTIVITY_TASK_STARTED, 1040, { activityTaskStartedEventAttributes: { scheduledEventId: 6 } }],
      [
        T.EVENT_TYPE_ACTIVITY_TASK_FAILED,
        1250,
        { activityTaskFailedEventAttributes: { scheduledEventId: 6, startedEventId: 9 } },
      ],
      [T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 1250],
      [T.EVENT_TYPE_WORKFLOW_TASK_STARTED, 1255, { workflowTaskStartedEventAttributes: { scheduledEventId: 11 } }],
      [T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 1260],
      [T.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, 1260],
    ]),
  );
  expect(spans).toEqual({
    turnMs: 260,
    activityMs: 220,
    overheadMs: 40,
    queueMs: 10 + 10 + 20 + 5,
    workflowTasks: 2,
    events: 14,
    gatherMs: 230,
    toolCalls: 2,
  });
});

test('local activities from the worker log: busy time counted once with the rest, local tool calls make the Gather', () => {
  const spans = turnSpans(
    history([
      [T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 1000],
      [T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 1000],
      [T.EVENT_TYPE_WORKFLOW_TASK_STARTED, 1010, { workflowTaskStartedEventAttributes: { scheduledEventId: 2 } }],
      [T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 1400],
      [T.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, 1400],
    ]),
    [
      { type: 'plan', from: 1020, to: 1100 },
      { type: 'callTool', from: 1100, to: 1300 },
      { type: 'callTool', from: 1105, to: 1250 },
      { type: 'draft', from: 1300, to: 1390 },
    ],
  );
  expect(spans).toMatchObject({ turnMs: 400, activityMs: 370, overheadMs: 30, gatherMs: 200, toolCalls: 2 });
});

test('a run that has not closed is refused rather than measured', () => {
  expect(() => turnSpans(history([[T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0]]))).toThrow('no complete run');
});

describe('the local activities read off the worker log', () => {
  const line = (workflowId: string, end: string, durationMs: number) =>
    `[worker] ${JSON.stringify({ time: end, message: 'Activity completed', isLocal: true, activityType: 'plan', workflowId, durationMs })}`;

  test("an attempt's interval ends at its line's time and lasts its duration; other lines are ignored", async () => {
    const log = new LocalActivityLog();
    log.collect(line('wf', '2026-11-28T00:00:01.000Z', 250));
    log.collect('[worker] {"message":"Activity completed","isLocal":false,"durationMs":5,"workflowId":"wf"}');
    const end = Date.parse('2026-11-28T00:00:01.000Z');
    expect(await log.attempts('wf', 1)).toEqual([{ type: 'plan', from: end - 250, to: end }]);
    expect(await log.attempts('wf', 0)).toEqual([]);
  });

  test('a long run of turns nobody asks about keeps only the latest runs', async () => {
    const log = new LocalActivityLog();
    for (let i = 0; i <= 1_000; i++) log.collect(line(`wf-${i}`, '2026-11-28T00:00:01.000Z', 1));
    expect(await log.attempts('wf-0', 0)).toEqual([]);
    expect(await log.attempts('wf-1', 1)).toHaveLength(1);
    expect(await log.attempts('wf-1000', 1)).toHaveLength(1);
  });
});
