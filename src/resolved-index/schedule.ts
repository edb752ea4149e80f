// The Temporal Schedule that runs the indexing workflow: created, or brought up to date, each time a worker starts.
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';

export const INDEX_SCHEDULE_ID = 'melvin-resolved-conversation-index';
export const INDEX_WORKFLOW_TYPE = 'indexResolvedConversations';

export interface IndexScheduleSettings {
  taskQueue: string;
  /** Seconds between runs (`INDEX_INTERVAL`). */
  intervalSeconds: number;
  /** How far back the first run looks (`INDEX_LOOKBACK_DAYS`). */
  lookbackDays: number;
}

function options(settings: IndexScheduleSettings): ScheduleOptions {
  return {
    scheduleId: INDEX_SCHEDULE_ID,
    spec: { intervals: [{ every: `${settings.intervalSeconds}s` }] },
    action: {
      type: 'startWorkflow',
      workflowType: INDEX_WORKFLOW_TYPE,
      workflowId: 'melvin-resolved-conversation-index-run',
      taskQueue: settings.taskQueue,
      args: [{ lookbackDays: settings.lookbackDays }],
    },
    policies: {
      // Never two runs at once: a run still paging when the next is due makes that one skip; the next after it
      // starts from the watermark, so nothing is lost.
      overlap: ScheduleOverlapPolicy.SKIP,
      // A run that fails leaves the watermark where it was; the schedule must go on to the next run, which redoes it.
      pauseOnFailure: false,
      catchupWindow: `${settings.intervalSeconds}s`,
    },
    memo: { role: 'indexes the conversations the team closed, for the team-voice examples of Draft' },
  };
}

/**
 * Creates the schedule, or updates its interval, task queue and lookback when it exists: every worker replica calls
 * this as it starts, and the last one's settings hold. Returns whether it was created.
 */
export async function ensureIndexSchedule(
  client: Client,
  settings: IndexScheduleSettings,
): Promise<'created' | 'updated'> {
  const wanted = options(settings);
  try {
    await client.schedule.create(wanted);
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule.getHandle(INDEX_SCHEDULE_ID).update((previous) => ({
    ...previous,
    spec: wanted.spec,
    action: wanted.action,
    policies: { ...previous.policies, ...wanted.policies },
  }));
  return 'updated';
}
