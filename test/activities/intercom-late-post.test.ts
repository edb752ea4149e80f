// A post Melvin gave up on (its request timed out) that Intercom still carries out afterwards: the retry must not
// post a second copy. The emulator's delay fault, like a slow server, completes the write after the client left.
import { ApplicationFailure } from '@temporalio/common';
import { IntercomClient } from 'intercom-client';
import { createIntercomActivities } from '../../src/activities/intercom';
import { intercomPolicy } from '../../src/workflows/rules/retry-policies';
import { IntercomEmulator } from '../../sandbox/intercom/emulator';
import { failureOf, runAttempt } from '../helpers/activity';

const ADMIN_ID = '8918000';
const TOKEN = 'intercom-test-token';
let emulator: IntercomEmulator;
let activities: ReturnType<typeof createIntercomActivities>;

beforeAll(async () => {
  emulator = new IntercomEmulator({ token: TOKEN, adminId: ADMIN_ID });
  const url = await emulator.start();
  activities = createIntercomActivities(new IntercomClient({ token: TOKEN, baseUrl: url, maxRetries: 0 }), {
    adminId: ADMIN_ID,
  });
});
afterAll(() => emulator.stop());

/** How long Temporal waits before the next attempt: the failure's own delay, else the policy's first interval. */
function retryDelayMs(err: Error): number {
  const next = err instanceof ApplicationFailure ? err.nextRetryDelay : undefined;
  return next === undefined ? 1_000 : typeof next === 'number' ? next : Number.parseInt(String(next), 10);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('a reply that timed out and lands 2 s later is found by the retry, not posted again', async () => {
  emulator.seed({
    id: '7001',
    contact: { id: 'c-7001', email: 'a@example.com', name: 'A' },
    parts: [{ author: 'user', type: 'comment', body: 'Where is my pay?' }],
  });
  emulator.faults.set({ reply: [{ delay_ms: 14_000 }] });
  const input = {
    conversationId: '7001',
    text: 'Your payment is on its way.',
    notBefore: Math.floor(Date.now() / 1000),
  };

  const first = await failureOf(runAttempt(1, activities.sendReply, input));
  await sleep(retryDelayMs(first));
  await runAttempt(2, activities.sendReply, input);
  await sleep(3_000);

  expect(emulator.replies('7001')).toEqual(['Your payment is on its way.']);
}, 60_000);

test('a validation note that timed out beside the reply is not doubled by the post of it on its own', async () => {
  emulator.seed({
    id: '7002',
    contact: { id: 'c-7002', email: 'b@example.com', name: 'B' },
    parts: [{ author: 'user', type: 'comment', body: 'Where is my pay?' }],
  });
  emulator.faults.set({ note: [{ delay_ms: 14_000 }] });
  const input = {
    conversationId: '7002',
    text: 'Your payment is on its way.',
    notBefore: Math.floor(Date.now() / 1000),
  };

  const posted = await runAttempt(1, activities.sendReply, { ...input, note: 'Validation result: passed' });
  expect(posted.note).toHaveProperty('error');
  // As postReply does: the note again, by an activity of its own, told it may be posted (and, with the fix, when to look).
  const again = {
    ...input,
    text: 'Validation result: passed',
    mayBePosted: true,
    ...(posted.note && 'checkNotBefore' in posted.note && { checkNotBefore: posted.note.checkNotBefore }),
  };
  for (let attempt = 1; attempt <= intercomPolicy.retry!.maximumAttempts!; attempt++) {
    const err = await runAttempt(attempt, activities.addNote, again).then(
      () => null,
      (e: Error) => e,
    );
    if (!err) break;
    await sleep(retryDelayMs(err));
  }
  await sleep(3_000);

  expect(emulator.notes('7002')).toEqual(['Validation result: passed']);
}, 60_000);
