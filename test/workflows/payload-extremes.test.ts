// A turn at the extremes on a real Temporal dev server: 5 hops × 12 calls of 32 KB and a 500-part conversation stay
// within the turn's data budget, and no activity input or result comes near Temporal's 2 MB payload limit.
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { deliverUserMessage } from '../../src/operations/conversations';
import { MAX_TOOL_RESULT_BYTES } from '../../src/activities/mcp';
import { DEFAULT_DATA_BUDGET_BYTES, stateQuery, workflowIdFor } from '../../src/contract/shared';
import type { ScenarioConversation } from '../../sandbox/scenario';
import { coverage, draft, plan } from '../helpers/model-answers';
import { quietRuntime } from '../helpers/runtime';
import { ANA, ANA_TALENT, startTestbed } from '../helpers/turns';

quietRuntime();

const MB = 1024 * 1024;
const HOPS = 5;
const CALLS = 12;

let testbed: Awaited<ReturnType<typeof startTestbed>>;

beforeAll(async () => {
  testbed = await startTestbed();
}, 180_000);

afterAll(() => testbed?.close());

/** The run's history a few events a page: the whole of it is more than one gRPC answer may carry. */
async function historyInPages(id: string): Promise<temporal.api.history.v1.IHistoryEvent[]> {
  const events: temporal.api.history.v1.IHistoryEvent[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await testbed.env.client.workflowService.getWorkflowExecutionHistory({
      namespace: 'default',
      execution: { workflowId: workflowIdFor(id) },
      maximumPageSize: 10,
      nextPageToken,
    });
    events.push(...(page.history?.events ?? []));
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return events;
}

test('5 hops × 12 calls of 32 KB and a 500-part conversation: every payload stays under 1 MB', async () => {
  const { env, sandbox, workflowBundle } = testbed;
  const id = '880001';
  const [ana] = ANA_TALENT.users;
  // Enough payments that each answer is cut at the 32 KB cap.
  const payments = Array.from({ length: 400 }, (_, i) => ({
    id: `pay-${i}`,
    job_id: 'job-21',
    amount: 100 + i,
    currency: 'USD',
    status: 'paid',
    paid_at: '2026-10-02',
  }));
  const parts: ScenarioConversation['parts'] = Array.from({ length: 600 }, (_, i) => ({
    author: i % 2 === 0 ? 'user' : 'bot',
    type: 'comment',
    body: `${i % 2 === 0 ? 'Question' : 'Answer'} ${i}: ${'about my payments and shifts '.repeat(6)}`,
  }));
  parts.push({ author: 'user', type: 'comment', body: 'So which of my payments are still open?' });
  sandbox.seed({
    conversation: { id, contact: ANA, parts },
    talent: { ...ANA_TALENT, users: [{ ...ana!, payments }] },
  });
  const calls = Array.from({ length: CALLS }, () => ['get_user_payments'] as [string]);
  for (let hop = 1; hop <= HOPS; hop++) {
    sandbox.model.script('plan', plan('Open payments', ...calls)).script('coverage', coverage(hop === HOPS));
  }
  sandbox.model.script('draft', draft('I could not find any open payment on your account.'));

  const taskQueue = 'payload-extremes';
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle,
    activities: sandbox.activities,
  });
  const handle = env.client.workflow.getHandle(workflowIdFor(id));
  const state = await worker.runUntil(async () => {
    await deliverUserMessage(
      env.client,
      {
        conversationId: id,
        trigger: {
          topic: 'conversation.user.replied',
          notificationId: `notif-${id}`,
          receivedAt: new Date().toISOString(),
        },
      },
      { taskQueue, maxHops: HOPS, snoozeSeconds: 300, quietPeriodSeconds: 0, handoverMessages: {} },
    );
    await handle.result();
    return handle.query(stateQuery);
  });

  expect(state.hops).toHaveLength(HOPS);
  expect(state.hops.every((h) => h.gather?.tool_results.length === CALLS)).toBe(true);
  expect(state.metadata.omitted_parts).toBeGreaterThan(0);
  const budget = state.metadata.data_budget!;
  expect(budget.used_bytes).toBeLessThanOrEqual(DEFAULT_DATA_BUDGET_BYTES);
  expect(budget.dropped.length).toBeGreaterThan(HOPS * CALLS - DEFAULT_DATA_BUDGET_BYTES / MAX_TOOL_RESULT_BYTES);
  expect(state.tool_data[budget.dropped[0]!.stored_as]).toMatchObject({ success: false, data: null });
  // Data lives once: the hops keep keys and sizes, not the results.
  expect(JSON.stringify(state.hops).length).toBeLessThan(64 * 1024);

  const events = await historyInPages(id);
  const sizeOf = (payloads: { data?: Uint8Array | null }[] | null | undefined) =>
    (payloads ?? []).reduce((sum, p) => sum + (p.data?.length ?? 0), 0);
  // What the history holds of each call: an activity's input, a local activity's marker (its result; its input stays
  // on the worker).
  const recorded = events.flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    const marker = e.markerRecordedEventAttributes;
    if (scheduled) return [sizeOf(scheduled.input?.payloads)];
    if (marker?.markerName !== 'core_local_activity') return [];
    return [Object.values(marker.details ?? {}).reduce((sum, p) => sum + sizeOf(p.payloads), 0)];
  });
  expect(recorded.length).toBeGreaterThan(HOPS * CALLS);
  expect(Math.max(...recorded)).toBeLessThan(MB);
  const completed = events.find((e) => e.workflowExecutionCompletedEventAttributes);
  expect(sizeOf(completed?.workflowExecutionCompletedEventAttributes?.result?.payloads)).toBeLessThan(MB);
}, 180_000);
