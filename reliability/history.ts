// History size: one conversation of ten turns, each turn its own run (continue-as-new), measured in events and bytes.
import { temporal } from '@temporalio/proto';
import type { Client } from '@temporalio/client';
import { deliverUserMessage, turnOver } from '../src/operations/conversations';
import { workflowIdFor } from '../src/contract/shared';
import { Harness } from '../harness/harness';
import { check, type Report } from '../harness/report';

/** Follow-ups the sandbox model answers from the payments, so every turn replies and Melvin keeps the conversation. */
const FOLLOW_UP = (turn: number) => `Sorry, when will I get paid? (asking again, ${turn})`;

/** One run's history, read a page at a time, as its event count and encoded size. */
async function runHistory(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<{ events: number; bytes: number }> {
  let events = 0;
  let bytes = 0;
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: 'default',
      execution: { workflowId, runId },
      maximumPageSize: 100,
      nextPageToken,
    });
    const history = page.history ?? {};
    events += history.events?.length ?? 0;
    bytes += temporal.api.history.v1.History.encode(history).finish().length;
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { events, bytes };
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

export async function historySize(options: { turns: number }): Promise<Report> {
  const harness = new Harness();
  await harness.start();
  try {
    const conversation = harness.addConversation('payment');
    const client = harness.client;
    const turnOptions = { taskQueue: 'melvin', maxHops: 2, snoozeSeconds: 300, quietPeriodSeconds: 3600 };
    const deliver = (n: number, partId?: string) =>
      deliverUserMessage(
        client,
        {
          conversationId: conversation.id,
          trigger: {
            topic: 'conversation.user.replied',
            notificationId: `history-${n}`,
            receivedAt: new Date().toISOString(),
          },
          partId,
        },
        { ...turnOptions, handoverMessages: {} },
      );
    await deliver(1);
    await turnOver(client, conversation.id, { turns: 1 });
    for (let turn = 2; turn <= options.turns; turn++) {
      const part = harness.sandbox.intercom.addUserMessage(conversation.id, FOLLOW_UP(turn));
      await deliver(turn, part.id);
      await turnOver(client, conversation.id, { turns: turn });
    }
    const state = await turnOver(client, conversation.id, { turns: options.turns });
    const workflowId = workflowIdFor(conversation.id);
    const runs = await Promise.all(
      state.metadata.conversation.turns.map((t) => runHistory(client, workflowId, t.run_id)),
    );
    await client.workflow.getHandle(workflowId).terminate('history measured');
    const total = runs.reduce((sum, r) => ({ events: sum.events + r.events, bytes: sum.bytes + r.bytes }), {
      events: 0,
      bytes: 0,
    });
    const first = runs[0]!;
    const largest = runs.reduce((a, b) => (b.bytes > a.bytes ? b : a));
    const replies = harness.sandbox.intercom.replies(conversation.id).length;
    return {
      experiment: 'history',
      figures: [
        ['turns (runs, each continued-as-new into the next)', runs.length],
        ['one turn: events / bytes', `${first.events} / ${kib(first.bytes)}`],
        ['largest run: events / bytes', `${largest.events} / ${kib(largest.bytes)}`],
        [`${runs.length}-turn conversation, all runs: events / bytes`, `${total.events} / ${kib(total.bytes)}`],
        ['conversation record carried to the last run', kib(JSON.stringify(state.metadata.conversation).length)],
      ],
      checks: [
        check(
          'every turn was its own run and got its reply',
          runs.length === options.turns && replies === options.turns,
        ),
        check(
          'no run grows with the conversation: the largest is under twice the first',
          largest.bytes < 2 * first.bytes,
        ),
      ],
    };
  } finally {
    await harness.stop();
  }
}
