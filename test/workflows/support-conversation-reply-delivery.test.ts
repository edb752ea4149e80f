// supportConversation on a real Temporal dev server, with real activities against the sandbox: success paths where
// Intercom fails on the way, and the reply still goes out exactly once.
import { coverage, draft, plan } from '../helpers/model-answers';
import { newConversation, runTurn, sandbox, useSupportTestbed, validationNotes } from '../helpers/support-testbed';
import { PAY_REPLY } from '../helpers/turns';

useSupportTestbed(300);

describe('success paths', () => {
  test('a reply whose 500 came after Intercom accepted it is retried and posted exactly once', async () => {
    const id = newConversation();
    sandbox.intercom.faults.set({ reply: [{ status: 500, after_accept: true }] });
    sandbox.model
      .script('plan', plan('Pay', ['get_user_payments']))
      .script('coverage', coverage(true))
      .script('draft', draft(PAY_REPLY));

    const turn = await runTurn(id);

    expect(sandbox.intercom.requests.filter((r) => r.operation === 'reply').map((r) => r.status)).toEqual([500]);
    expect(turn.replies).toEqual([PAY_REPLY]);
    expect(turn.status).toBe('success');
  });

  test.each([
    ['fails once', [{ status: 503 }]],
    ['is accepted but answered 500', [{ status: 500, after_accept: true }]],
    [
      'is rate limited twice',
      [
        { status: 429, retry_after_s: 1 },
        { status: 429, retry_after_s: 1 },
      ],
    ],
  ])(
    'a validation note that %s beside the reply spends none of the reply’s attempts: it is posted again on its own',
    async (_how, noteFaults) => {
      const id = newConversation();
      sandbox.intercom.faults.set({ note: noteFaults });
      sandbox.model
        .script('plan', plan('Pay', ['get_user_payments']))
        .script('coverage', coverage(true))
        .script('draft', draft(PAY_REPLY));

      const turn = await runTurn(id);

      expect(sandbox.intercom.requests.filter((r) => r.operation === 'reply').map((r) => r.status)).toEqual([200]);
      expect(turn.replies).toEqual([PAY_REPLY]);
      expect(validationNotes(turn)).toHaveLength(1);
      expect(turn.status).toBe('success');
      expect(turn.state.validate).toMatchObject({ validation_note_added: true });
      // One sendReply, done at its first attempt: the note's failures were never the reply's.
      const { events } = await turn.handle.fetchHistory();
      const replyActivity = events?.find(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'sendReply',
      );
      const started = events?.find(
        (e) =>
          e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === replyActivity?.eventId?.toString(),
      );
      expect(started?.activityTaskStartedEventAttributes?.attempt).toBe(1);
    },
  );

  test('a reply whose first attempt never reached Intercom is sent even when the previous turn said the same', async () => {
    const id = newConversation();
    const answerPayments = () =>
      sandbox.model
        .script('plan', plan('Pay', ['get_user_payments']))
        .script('coverage', coverage(true))
        .script('draft', draft(PAY_REPLY));
    answerPayments();
    await runTurn(id);
    sandbox.intercom.addUserMessage(id, 'Sorry, when will I get paid?');
    answerPayments();
    sandbox.intercom.faults.set({ reply: [{ status: 502 }] });

    const turn = await runTurn(id);

    expect(sandbox.intercom.requests.filter((r) => r.operation === 'reply').map((r) => r.status)).toEqual([
      200, 502, 200,
    ]);
    expect(turn.replies).toEqual([PAY_REPLY, PAY_REPLY]);
    expect(turn.state.response_delivery).toMatchObject({ delivery_successful: true, part_id: expect.any(String) });
  });

  test('a conversation read and a contact read that fail by turns do not spend each other’s attempts', async () => {
    const id = newConversation();
    // Every other conversation read fails, and the contact read after each one that passed: read together, every one
    // of the policy's 8 attempts failed (one read in 200 gave up so at 30% of calls failing); read apart, each passes
    // by its second and fifth attempt.
    const failsThenPasses = Array.from({ length: 4 }, () => [{ status: 502 }, {}]).flat();
    sandbox.intercom.faults.set({
      fetch: failsThenPasses,
      contact: Array.from({ length: 4 }, () => ({ status: 502 })),
    });
    sandbox.model
      .script('plan', plan('Pay', ['get_user_payments']))
      .script('coverage', coverage(true))
      .script('draft', draft(PAY_REPLY));

    const turn = await runTurn(id);

    expect(turn.status).toBe('success');
    expect(turn.replies).toEqual([PAY_REPLY]);
    expect(sandbox.intercom.requests.filter((r) => r.operation === 'contact').map((r) => r.status)).toEqual([
      502, 502, 502, 502, 200,
    ]);
  }, 150_000);

  test('a 429 delays the next attempt until its X-RateLimit-Reset (Intercom sends no Retry-After)', async () => {
    const id = newConversation();
    sandbox.intercom.faults.set({ reply: [{ status: 429, retry_after_s: 3 }] });
    sandbox.model
      .script('plan', plan('Pay', ['get_user_payments']))
      .script('coverage', coverage(true))
      .script('draft', draft(PAY_REPLY));

    const turn = await runTurn(id);

    const attempts = sandbox.intercom.requests.filter((r) => r.operation === 'reply');
    expect(attempts.map((r) => r.status)).toEqual([429, 200]);
    // The policy's own first backoff is 1 s; the reset is at least 3 s away.
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(2900);
    expect(turn.replies).toEqual([PAY_REPLY]);
  });
});
