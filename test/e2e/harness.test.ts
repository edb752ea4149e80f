// The rig the bench, the reliability suite and these tests share: a start that fails part way leaves nothing running.
import { Harness } from '../../harness/harness';
import { benchResponder } from '../../bench/responder';
import { workflowIdFor } from '../../src/contract/shared';
import { waitFor } from '../../sandbox/wait';

test('a harness whose worker cannot start stops the Temporal server and the sandbox it had started', async () => {
  let temporalPid: number | undefined;
  const log = (line: string) => {
    // The server is up once the worker is being started: note its process then, to look for it afterwards.
    if (line.startsWith('[worker]')) temporalPid ??= harness.temporalPid;
  };
  const harness = new Harness({ responder: benchResponder({ hops: 1 }), workerNodeArgs: ['--no-such-flag'], log });
  await expect(harness.start()).rejects.toThrow(/worker exited/);
  expect(temporalPid).toBeDefined();
  expect(harness.temporalPid).toBeUndefined();
  expect(() => process.kill(temporalPid!, 0)).toThrow();
  await expect(fetch(harness.sandbox.urls.intercom)).rejects.toThrow();
}, 120_000);

test('a delivery forwarded again after its run ended starts a run that skips; the conversation is still judged by the run that answered', async () => {
  const harness = new Harness({ latency: { llm: [0, 0], tools: [0, 0] } });
  await harness.start();
  try {
    const answered = harness.addConversation('payment');
    const never = harness.addConversation('payment');
    await harness.deliver(answered);
    await harness.waitForAll(60_000, [answered]);
    // The same message's webhook again, as the outbox forwards an entry whose checkpoint a kill lost.
    await harness.deliver(answered);
    const runs = async () => {
      const found = [];
      for await (const run of harness.client.workflow.list({ query: `WorkflowId = '${workflowIdFor(answered.id)}'` }))
        found.push(run.status.name);
      return found;
    };
    await waitFor('the second run to end', async () => {
      const statuses = await runs();
      return statuses.length === 2 && statuses.every((s) => s === 'COMPLETED');
    });
    const [outcome] = await harness.outcomes([answered]);
    expect(outcome).toMatchObject({ closed: true, answeredBefore: true, correct: true, replies: 1, status: 'success' });
    // Must not: a conversation whose webhook never came has no closed run.
    const [unanswered] = await harness.outcomes([never]);
    expect(unanswered).toMatchObject({ closed: false, correct: false, replies: 0 });
  } finally {
    await harness.stop();
  }
}, 180_000);
