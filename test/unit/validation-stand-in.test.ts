// The sandbox validation service judges a reply's subject, not loose numbers: what a question names (a form, a job, the
// talent's own payments or applications) is answered from the data or said to be missing; numbers that describe the
// talent never fail a reply.
import fc from 'fast-check';
import { checkDraft, subjectsOf, type ValidationRequestBody } from '../../sandbox/validation/checks';

const PAYMENTS = {
  get_user_payments: {
    tool_name: 'get_user_payments',
    success: true,
    data: {
      payments: [{ id: 'pay-31', amount: 240, currency: 'USD', status: 'processing', expected_date: '2026-11-27' }],
    },
  },
};
const PAID_REPLY = 'Hi Ana, your payment of $240 is processing and expected on November 27.';

function request(question: string, over: Partial<ValidationRequestBody> = {}): ValidationRequestBody {
  return {
    conversation_id: '215',
    response: PAID_REPLY,
    user_email: 'ana@example.com',
    messages: [{ role: 'user', content: question }],
    internal_notes: [],
    tool_data: PAYMENTS,
    docs_data: {},
    ...over,
  };
}
const verdict = (r: ValidationRequestBody) => checkDraft(r).find((c) => c.name === 'answers_the_question')!;

/** Everyday numbers a talent writes about themselves, each in a payment question. */
const EVERYDAY = [
  'My zip code is 78701, when will I get paid?',
  'You can call me at +1 (512) 555-0142. Has my payment been sent?',
  'Re ticket #48213: where is my money?',
  'I worked 38.5 hours last week, when do I get paid?',
  'My shift was on 11/14/2026 and I still have not been paid. Why?',
  'Conversation 215 again: is my payment processing?',
  'Apartment 4B, 1200 Main St. Did my payout go out yet?',
  'Order 5567-A, when will I be paid?',
];

test.each(EVERYDAY)('a number that describes the talent fails no reply: %s', (question) => {
  expect(verdict(request(question))).toMatchObject({ passed: true });
});

test('any number, in any message of a long thread, fails no reply that answers from the data', () => {
  const number = fc.oneof(
    fc.integer({ min: 0, max: 99_999_999 }).map(String),
    fc.tuple(fc.integer({ min: 100, max: 999 }), fc.integer({ min: 1000, max: 9999 })).map(([a, b]) => `${a}-${b}`),
    fc.float({ min: 0, max: 500, noNaN: true }).map((n) => n.toFixed(1)),
  );
  const message = fc
    .tuple(fc.constantFrom('Noted, thanks', 'My ticket is', 'I worked', 'zip', 'Call me on', 'Ref'), number)
    .map(([words, n]) => `${words} (${n})`);
  fc.assert(
    fc.property(fc.array(message, { maxLength: 12 }), fc.constantFrom(...EVERYDAY), (earlier, question) => {
      const messages = [...earlier, question].map((content) => ({ role: 'user', content }));
      expect(verdict(request(question, { messages }))).toMatchObject({ passed: true });
    }),
  );
});

test('what a question names: forms, jobs by title, the talent’s own payments and applications; not other numbers', () => {
  expect(subjectsOf('Can you send my Form 8821 copy?')).toEqual([{ kind: 'form', name: '8821' }]);
  expect(subjectsOf('Where do I upload the W-9 form?')).toEqual([{ kind: 'form', name: 'w9' }]);
  expect(subjectsOf('Do I need a W8BEN or an I-9?')).toEqual([
    { kind: 'form', name: 'w8ben' },
    { kind: 'form', name: 'i9' },
  ]);
  expect(subjectsOf('Is my application for the barista job still open?')).toEqual([
    { kind: 'job', name: 'barista', ofRecord: true },
  ]);
  // A job named before its application, or a job a question names without asking about a record.
  expect(subjectsOf('is my barista application still open??')).toEqual([
    { kind: 'job', name: 'barista', ofRecord: true },
  ]);
  expect(subjectsOf('Can I cancel the Reno warehouse shift?')).toEqual([{ kind: 'job', name: 'reno warehouse' }]);
  // Occasions, times and the words around a record name no job.
  // An occasion may name a job ("Wedding Server"); where none does, a reply need not name it (below).
  expect(subjectsOf('When do I get paid for the gala shift on Saturday?')).toEqual([
    { kind: 'job', name: 'gala', ofRecord: true },
  ]);
  expect(subjectsOf('What is the status of my application?')).toEqual([{ kind: 'application' }]);
  expect(subjectsOf('Did my last application go through?')).toEqual([]);
  expect(subjectsOf('Why is my payment pending?')).toEqual([{ kind: 'payment' }]);
  expect(subjectsOf('Any news on my application?')).toEqual([{ kind: 'application' }]);
  // How something works in general names none of the talent's records; nor do times, years or everyday numbers.
  expect(subjectsOf('How long does a payout take?')).toEqual([]);
  expect(subjectsOf('Can I change my bank account for payouts?')).toEqual([]);
  expect(subjectsOf('Is the 2025 form out? I worked the next shift, 8 hours, zip 94110.')).toEqual([]);
});

describe('a reply about something else fails', () => {
  const W9_PASSAGE = { q: { query: 'tax form', success: true, data: { results: [{ text: 'Fill in a W-9 form.' }] } } };

  test('a form the data never mentions, answered from another form’s passage', () => {
    const r = request('Where is my Form 8821 copy?', {
      response: 'You fill in a W-9 form in the app.',
      tool_data: {},
      docs_data: W9_PASSAGE,
    });
    expect(verdict(r)).toMatchObject({ passed: false, detail: expect.stringContaining('form 8821') });
    // Saying it is not there is an answer.
    const honest = { ...r, response: 'I could not find a Form 8821 on your account; the team will look into it.' };
    expect(verdict(honest)).toMatchObject({ passed: true });
    // The form the data does hold is answered.
    expect(verdict({ ...r, messages: [{ role: 'user', content: 'Which form, the W9?' }] })).toMatchObject({
      passed: true,
    });
  });

  test('a job the talent does not have, answered with the one they have', () => {
    const applications = {
      a: {
        success: true,
        data: { applications: [{ status: 'hired', job: { title: 'Event Staff', location: 'Austin' } }] },
      },
    };
    const r = request('Is my application for the barista job still open?', {
      response: 'Your application for Event Staff in Austin is hired.',
      tool_data: applications,
    });
    expect(verdict(r)).toMatchObject({ passed: false, detail: expect.stringContaining('barista') });
    const honest = "I don't see an application for a Barista job. Your application for Event Staff was successful.";
    expect(verdict({ ...r, response: honest })).toMatchObject({ passed: true });
    // The job the talent has, asked about by title, is answered.
    const own = request('What about my application for the event staff job?', { tool_data: applications });
    expect(verdict({ ...own, response: r.response })).toMatchObject({ passed: true });
  });

  test('the payment of a job the talent has, answered with another job’s payment', () => {
    // Hired for the warehouse job, paid only for the event: the warehouse job is in the data, its payment is not.
    const tool_data = {
      a: {
        success: true,
        data: {
          applications: [
            { status: 'hired', job: { title: 'Warehouse Associate', location: 'Tacoma, WA' } },
            { status: 'hired', job: { title: 'Event Staff', location: 'Tacoma, WA' } },
          ],
        },
      },
      p: {
        success: true,
        data: { payments: [{ amount: 140, currency: 'USD', status: 'paid', job_title: 'Event Staff' }] },
      },
    };
    const r = request('When will I be paid for the warehouse shift?', {
      response: 'Your payment of $140 for Event Staff was paid on November 13.',
      tool_data,
    });
    expect(verdict(r)).toMatchObject({ passed: false, detail: expect.stringContaining('another job') });
    const honest =
      "I don't see a payment for the Warehouse job on your account yet. Your payment of $140 for Event Staff was paid.";
    expect(verdict({ ...r, response: honest })).toMatchObject({ passed: true });
    // An occasion no record names ("the gala shift") is where the talent worked, not a job to name.
    const gala = request('When will I be paid for the gala shift on Saturday?', {
      response: 'Your payment of $140 for Event Staff was paid on November 13.',
      tool_data,
    });
    expect(verdict(gala)).toMatchObject({ passed: true });
    // A job asked about by its place is answered by the title of the job there.
    const byPlace = request('When will I be paid for the Tacoma event shift?', {
      response: 'Your payment of $140 for Event Staff was paid on November 13.',
      tool_data,
    });
    expect(verdict(byPlace)).toMatchObject({ passed: true });
  });

  test('the talent’s own payment, answered with the help center when they have none', () => {
    const r = request('Why is my payment pending?', {
      response: 'A payment is pending until the business approves the shift.',
      tool_data: { p: { success: true, data: { payments: [] } } },
    });
    expect(verdict(r)).toMatchObject({ passed: false, detail: expect.stringContaining('no payments') });
    const honest = "I don't see a payment on your account yet. A payment is pending until the shift is approved.";
    expect(verdict({ ...r, response: honest })).toMatchObject({ passed: true });
  });

  test('a partial answer is judged on the questions it answers, not on the one left for the team', () => {
    const r = request('Which form do I need? And where is my Form 8821 copy?', {
      response: 'You fill in a W-9 form in the app.',
      tool_data: {},
      docs_data: W9_PASSAGE,
      intents: { answered: ['Which form do I need?'], open: ['And where is my Form 8821 copy?'] },
    });
    expect(verdict(r)).toMatchObject({ passed: true });
  });
});
