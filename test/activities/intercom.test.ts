// Intercom activities through the official SDK against the Intercom emulator over real HTTP.
import { ApplicationFailure } from '@temporalio/common';
import { IntercomClient } from 'intercom-client';
import { createIntercomActivities } from '../../src/activities/intercom';
import { intercomPolicy } from '../../src/workflows/activity-options/retry-policies';
import { IntercomEmulator } from '../../sandbox/intercom/emulator';
import type { ScenarioPart } from '../../sandbox/scenario';
import { failureOf, runAttempt } from '../helpers/activity';

const ADMIN_ID = '8918000';
const TOKEN = 'intercom-test-token';
let emulator: IntercomEmulator;
let activities: ReturnType<typeof createIntercomActivities>;
let conversationCounter = 0;

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

beforeEach(() => {
  emulator.faults.set({});
  emulator.requests.length = 0;
});

/** A conversation with history (bot, admin, note parts), or only the user's first message. */
function seedConversation(author: 'user' | 'lead' = 'user', withHistory = true): string {
  const id = String(5000 + ++conversationCounter);
  const history: ScenarioPart[] = [
    { author: 'bot', type: 'comment', body: 'Let me check that for you.' },
    { author: 'admin', type: 'note', body: 'internal: VIP talent, pay manually' },
    { author: 'admin', type: 'comment', body: 'A teammate here: it is on its way.' },
    { author, type: 'comment', body: 'Thanks!\n\nAnd the tax form?' },
  ];
  emulator.seed({
    id,
    contact: { id: `c-${id}`, email: `${id}@example.com`, name: 'Ana Ruiz' },
    parts: [
      { author, type: 'comment', body: 'Where is my pay for the <Austin> shift?' },
      ...(withHistory ? history : []),
    ],
  });
  return id;
}

describe('fetchConversation', () => {
  test('maps the source first, users to "user", bot and admins to "assistant", and keeps notes out', async () => {
    const id = seedConversation();
    const fetched = await runAttempt(1, activities.fetchConversation, { conversationId: id });

    expect(fetched.messages).toEqual([
      { role: 'user', content: 'Where is my pay for the <Austin> shift?' },
      { role: 'assistant', content: 'Let me check that for you.' },
      { role: 'assistant', content: 'A teammate here: it is on its way.' },
      { role: 'user', content: 'Thanks!\nAnd the tax form?' },
    ]);
    expect(fetched.internal_notes).toEqual(['internal: VIP talent, pay manually']);
    expect(fetched.contact).toEqual({ id: `c-${id}`, email: `${id}@example.com`, name: 'Ana Ruiz' });
    expect(fetched.admin_id).toBe(ADMIN_ID);
  });

  test('a lead author is the user, and event parts without text are dropped', async () => {
    const id = seedConversation('lead');
    await runAttempt(1, activities.snooze, { conversationId: id, seconds: 300 });
    const fetched = await runAttempt(1, activities.fetchConversation, { conversationId: id });
    expect(fetched.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'assistant', 'user']);
  });

  test('401 and 404 are named non-retryable errors and are not retried', async () => {
    const id = seedConversation();
    emulator.faults.set({ fetch: [{ status: 401 }] });
    const unauthorized = await failureOf(runAttempt(1, activities.fetchConversation, { conversationId: id }));
    const notFound = await failureOf(runAttempt(1, activities.fetchConversation, { conversationId: '404404' }));

    expect(unauthorized.name).toBe('IntercomAuthError');
    expect(unauthorized.message).toContain('401 (unauthorized: Access Token Invalid)');
    expect(notFound.name).toBe('IntercomNotFoundError');
    expect(intercomPolicy.retry?.nonRetryableErrorTypes).toEqual(
      expect.arrayContaining([unauthorized.name, notFound.name]),
    );
    expect(emulator.requests.filter((r) => r.operation === 'fetch')).toHaveLength(2);
  });

  test('a wrong access token is rejected by Intercom as 401', async () => {
    const id = seedConversation();
    const wrongToken = createIntercomActivities(
      new IntercomClient({ token: 'wrong', baseUrl: emulator.url, maxRetries: 0 }),
      {
        adminId: ADMIN_ID,
      },
    );
    const err = await failureOf(runAttempt(1, wrongToken.fetchConversation, { conversationId: id }));
    expect(err.name).toBe('IntercomAuthError');
  });

  test('5xx is a retryable IntercomUnavailableError', async () => {
    const id = seedConversation();
    emulator.faults.set({ fetch: [{ status: 503 }] });
    const err = await failureOf(runAttempt(1, activities.fetchConversation, { conversationId: id }));
    expect(err.name).toBe('IntercomUnavailableError');
    expect(intercomPolicy.retry?.nonRetryableErrorTypes).not.toContain(err.name);
  });
});

describe('sendReply with the note beside it', () => {
  const retryPolicy = {
    maximumAttempts: intercomPolicy.retry!.maximumAttempts!,
    nonRetryableErrorTypes: intercomPolicy.retry!.nonRetryableErrorTypes!,
  };
  const reply = (id: string) => ({
    conversationId: id,
    text: 'Your payment is on its way.',
    note: 'Validation result: {"overall_passed":true}',
    notBefore: Math.floor(Date.now() / 1000),
    retry: retryPolicy,
  });

  test('the reply, then the note: both once, each part in the answer', async () => {
    const id = seedConversation('user', false);

    const posted = await runAttempt(1, activities.sendReply, reply(id));

    expect(emulator.replies(id)).toEqual(['Your payment is on its way.']);
    expect(emulator.notes(id)).toEqual(['Validation result: {"overall_passed":true}']);
    expect(posted).toMatchObject({ part_id: expect.any(String), note: { part_id: expect.any(String) } });
  });

  test('a note that fails while attempts are left fails the attempt; the retry finds the reply and posts the note', async () => {
    const id = seedConversation('user', false);
    emulator.faults.set({ note: [{ status: 503 }] });

    const first = await failureOf(runAttempt(1, activities.sendReply, reply(id)));
    const second = await runAttempt(2, activities.sendReply, reply(id));

    expect(first.name).toBe('IntercomUnavailableError');
    expect(second).toMatchObject({ already_posted: true, note: { already_posted: false } });
    expect(emulator.replies(id)).toHaveLength(1);
    expect(emulator.notes(id)).toHaveLength(1);
  });

  test.each([
    ['on the last attempt', { status: 503 }, retryPolicy.maximumAttempts],
    ['refused by Intercom (never retried)', { status: 422 }, 1],
  ])('a note that fails %s is answered, not thrown: the reply went out', async (_when, fault, attempt) => {
    const id = seedConversation('user', false);
    emulator.faults.set({ note: [fault] });

    const posted = await runAttempt(attempt, activities.sendReply, reply(id));

    expect(posted.part_id).toEqual(expect.any(String));
    expect(posted.note).toEqual({ error: expect.stringContaining(`Intercom answered ${fault.status}`) });
    expect(emulator.replies(id)).toHaveLength(1);
    expect(emulator.notes(id)).toEqual([]);
  });

  test('told no retry policy (runs since the failed-note rules), a failing note is answered on every attempt', async () => {
    const id = seedConversation('user', false);
    emulator.faults.set({ note: [{ status: 503 }, { status: 503 }] });
    const { retry: _given, ...alone } = reply(id);

    const first = await runAttempt(1, activities.sendReply, alone);
    const second = await runAttempt(2, activities.sendReply, alone);

    for (const posted of [first, second]) expect(posted.note).toEqual({ error: expect.stringContaining('503') });
    expect(second.already_posted).toBe(true);
    expect(emulator.replies(id)).toHaveLength(1);
    expect(emulator.notes(id)).toEqual([]);
  });

  test('a note posted again after sendReply answered it failed looks first: one Intercom accepted is found, not doubled', async () => {
    const id = seedConversation('user', false);
    emulator.faults.set({ note: [{ status: 500, after_accept: true }] });
    const { retry: _given, ...alone } = reply(id);
    const posted = await runAttempt(1, activities.sendReply, alone);

    const again = await runAttempt(1, activities.addNote, {
      ...alone,
      text: alone.note,
      knownPartIds: [posted.part_id!],
      mayBePosted: true,
    });

    expect(posted.note).toEqual({ error: expect.stringContaining('500') });
    expect(again).toMatchObject({ already_posted: true });
    expect(emulator.notes(id)).toHaveLength(1);
  });

  test('a note that timed out beside the reply and lands 2 s later is not doubled by the post of it on its own', async () => {
    const id = seedConversation('user', false);
    // Like a slow server, the emulator carries the post out after the client gave up on it (12 s).
    emulator.faults.set({ note: [{ delay_ms: 14_000 }] });
    const { retry: _given, ...alone } = reply(id);
    const posted = await runAttempt(1, activities.sendReply, alone);
    expect(posted.note).toHaveProperty('error');
    // As postReply does: the note again, by an activity of its own, told it may be posted and when to look.
    const again = {
      ...alone,
      text: alone.note,
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

    expect(emulator.notes(id)).toEqual([alone.note]);
  }, 60_000);

  test('a reply that fails fails the activity before the note is tried', async () => {
    const id = seedConversation('user', false);
    emulator.faults.set({ reply: [{ status: 422 }] });

    const failure = await failureOf(runAttempt(1, activities.sendReply, reply(id)));

    expect(failure.name).toBe('IntercomRejectedError');
    expect(emulator.notes(id)).toEqual([]);
  });
});

describe('sendReply', () => {
  test('a 500 that came after Intercom accepted the reply: the retry finds it and does not post again', async () => {
    const id = seedConversation('user', false);
    emulator.faults.set({ reply: [{ status: 500, after_accept: true }] });
    const input = { conversationId: id, text: 'Your payment is on its way.', notBefore: Math.floor(Date.now() / 1000) };

    const first = await failureOf(runAttempt(1, activities.sendReply, input));
    const second = await runAttempt(2, activities.sendReply, input);

    expect(first.name).toBe('IntercomUnavailableError');
    expect(second.already_posted).toBe(true);
    expect(emulator.replies(id)).toEqual(['Your payment is on its way.']);
  });

  test('a reply that timed out and lands 2 s later is found by the retry, not posted again', async () => {
    const id = seedConversation('user', false);
    // Like a slow server, the emulator carries the post out after the client gave up on it (12 s).
    emulator.faults.set({ reply: [{ delay_ms: 14_000 }] });
    const input = { conversationId: id, text: 'Your payment is on its way.', notBefore: Math.floor(Date.now() / 1000) };

    const first = await failureOf(runAttempt(1, activities.sendReply, input));
    await sleep(retryDelayMs(first));
    await runAttempt(2, activities.sendReply, input);
    await sleep(3_000);

    expect(emulator.replies(id)).toEqual(['Your payment is on its way.']);
  }, 60_000);

  test('a retry after a failure before accept posts the reply once', async () => {
    const id = seedConversation('user', false);
    emulator.faults.set({ reply: [{ status: 502 }] });
    const input = {
      conversationId: id,
      text: 'Line one.\nLine two.\n\nNew paragraph.',
      notBefore: Math.floor(Date.now() / 1000),
    };

    await failureOf(runAttempt(1, activities.sendReply, input));
    const posted = await runAttempt(2, activities.sendReply, input);

    expect(posted.already_posted).toBe(false);
    expect(posted.part_id).toEqual(expect.any(String));
    expect(emulator.replies(id)).toEqual(['Line one.\nLine two.\nNew paragraph.']);
  });

  test('without part ids (no fetch succeeded), the retry finds a reply by Intercom’s plain-text rendering of its text', async () => {
    const id = seedConversation('user', false);
    emulator.faults.set({
      reply: [
        { status: 500, after_accept: true },
        { status: 500, after_accept: true },
      ],
    });
    const text = 'Hi Ana,\n\nYour pay of $240 & the <Austin> bonus is "on its way" 🎉\nIt\'s due Friday.';
    const input = { conversationId: id, text, notBefore: Math.floor(Date.now() / 1000) };

    await failureOf(runAttempt(1, activities.sendReply, input));
    const found = await runAttempt(2, activities.sendReply, input);
    // A text that only begins like one already posted is not mistaken for it.
    const other = { ...input, text: 'Hi Ana,\n\nYour pay of $240 is on its way.' };
    await failureOf(runAttempt(1, activities.sendReply, other));
    const nearMiss = await runAttempt(2, activities.sendReply, { ...other, text: `${other.text} Thanks for waiting.` });

    expect(found.already_posted).toBe(true);
    expect(nearMiss.already_posted).toBe(false);
    expect(emulator.replies(id)).toEqual([
      'Hi Ana,\nYour pay of $240 & the <Austin> bonus is "on its way" 🎉\nIt\'s due Friday.',
      'Hi Ana,\nYour pay of $240 is on its way.',
      'Hi Ana,\nYour pay of $240 is on its way. Thanks for waiting.',
    ]);
  });

  test('with the part ids from before the first attempt, the retry finds its accepted attempt whatever the text', async () => {
    const id = seedConversation();
    const { part_ids } = await runAttempt(1, activities.fetchConversation, { conversationId: id });
    emulator.faults.set({ reply: [{ status: 500, after_accept: true }] });
    // A stale `notBefore` would hide the part from the text-and-time check: the part ids alone find it.
    const input = { conversationId: id, text: 'It is on its way.', notBefore: 0, knownPartIds: part_ids };

    await failureOf(runAttempt(1, activities.sendReply, input));
    const second = await runAttempt(2, activities.sendReply, { ...input, notBefore: Number.MAX_SAFE_INTEGER });

    expect(part_ids).toHaveLength(4);
    expect(second).toEqual({ part_id: expect.any(String), already_posted: true });
    expect(emulator.replies(id)).toEqual(['It is on its way.']);
  });

  test('a reply with the same text as the previous turn’s is still sent when its first attempt never reached Intercom', async () => {
    const id = seedConversation('user', false);
    const text = 'Your payment of $240 is processing.';
    const previousTurn = await runAttempt(1, activities.sendReply, { conversationId: id, text, notBefore: 0 });
    emulator.addUserMessage(id, 'When will I get paid?');
    const { part_ids } = await runAttempt(1, activities.fetchConversation, { conversationId: id });
    emulator.faults.set({ reply: [{ status: 502 }] });
    const input = { conversationId: id, text, notBefore: Math.floor(Date.now() / 1000), knownPartIds: part_ids };

    await failureOf(runAttempt(1, activities.sendReply, input));
    const retried = await runAttempt(2, activities.sendReply, input);

    expect(part_ids).toContain(previousTurn.part_id);
    expect(retried.already_posted).toBe(false);
    expect(emulator.replies(id)).toEqual([text, text]);
  });

  test('a 429 carries X-RateLimit-Reset (Intercom sends no Retry-After) to Temporal as the next retry delay', async () => {
    const id = seedConversation('user', false);
    emulator.faults.set({ reply: [{ status: 429, retry_after_s: 7 }] });
    const err = await failureOf(runAttempt(1, activities.sendReply, { conversationId: id, text: 'Hi', notBefore: 0 }));

    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).type).toBe('IntercomRateLimitedError');
    // The reset is a whole second: 7 s ahead, rounded up.
    expect((err as ApplicationFailure).nextRetryDelay).toBeGreaterThan(6_000);
    expect((err as ApplicationFailure).nextRetryDelay).toBeLessThanOrEqual(8_000);
    expect(emulator.replies(id)).toEqual([]);
  });

  test('other 4xx are rejected for good; 408 and 429 are not', async () => {
    const id = seedConversation('user', false);
    emulator.faults.set({ reply: [{ status: 422 }, { status: 408 }] });
    const rejected = await failureOf(
      runAttempt(1, activities.sendReply, { conversationId: id, text: 'Hi', notBefore: 0 }),
    );
    const timedOut = await failureOf(
      runAttempt(1, activities.sendReply, { conversationId: id, text: 'Hi', notBefore: 0 }),
    );
    expect(rejected.name).toBe('IntercomRejectedError');
    expect(timedOut.name).toBe('IntercomUnavailableError');
    expect(intercomPolicy.retry?.nonRetryableErrorTypes).toContain('IntercomRejectedError');
  });
});

describe('notes, status and snooze', () => {
  test('a note is internal, posted once even when retried after an accepted 500', async () => {
    const id = seedConversation('user', false);
    emulator.faults.set({ note: [{ status: 500, after_accept: true }] });
    const input = { conversationId: id, text: '🚨 Escalation: test', notBefore: Math.floor(Date.now() / 1000) };
    await failureOf(runAttempt(1, activities.addNote, input));
    await runAttempt(2, activities.addNote, input);
    expect(emulator.notes(id)).toEqual(['🚨 Escalation: test']);
    expect(emulator.replies(id)).toEqual([]);
    // Melvin's own note is not one of the team's internal notes, which a reply must not repeat.
    const fetched = await runAttempt(1, activities.fetchConversation, { conversationId: id });
    expect(fetched.internal_notes).toEqual([]);
  });

  test('setStatus writes the Melvin Status attribute; snooze sets snoozed_until 300 s ahead', async () => {
    const id = seedConversation('user', false);
    await runAttempt(1, activities.setStatus, { conversationId: id, status: 'ROUTE_TO_TEAM' });
    const before = Math.floor(Date.now() / 1000);
    const { snoozed_until } = await runAttempt(1, activities.snooze, { conversationId: id, seconds: 300 });
    expect(emulator.melvinStatus(id)).toBe('ROUTE_TO_TEAM');
    expect(emulator.snoozedUntil(id)).toBe(snoozed_until);
    expect(snoozed_until - before).toBeGreaterThanOrEqual(299);
    expect(snoozed_until - before).toBeLessThanOrEqual(301);
  });
});
