// The validation activity over real HTTP against the sandbox validation service.
import type { ApplicationFailure } from '@temporalio/common';
import { createValidationActivities, type ValidationRequest } from '../../src/activities/validation';
import { validationPolicy } from '../../src/workflows/activity-options/retry-policies';
import { ValidationService } from '../../sandbox/validation/server';
import { failureOf, runActivity } from '../helpers/activity';

const KEY = 'validation-test-key';
let service: ValidationService;
let activities: ReturnType<typeof createValidationActivities>;
const run = (request: ValidationRequest, acts = activities) => runActivity(acts.validateDraft, request);

const REQUEST: ValidationRequest = {
  conversation_id: '1',
  response: 'Your payment of $240 is expected on November 27.',
  user_email: 'ana@example.com',
  user_name: 'Ana',
  messages: [{ role: 'user', content: 'When will I get paid?' }],
  internal_notes: ['VIP talent, handle with care and pay manually if late'],
  intents: { answered: ['When will I get paid?'], open: [] },
  tool_data: {
    get_user_payments: {
      tool_name: 'get_user_payments',
      parameters: { email: 'ana@example.com' },
      hop: 1,
      success: true,
      data: { payments: [{ id: 'pay-31', amount: 240, currency: 'USD', expected_date: '2026-11-27' }] },
      error: null,
      truncated: false,
    },
  },
  docs_data: {},
};

beforeAll(async () => {
  service = new ValidationService({ apiKey: KEY });
  activities = createValidationActivities({ endpoint: await service.start(), apiKey: KEY });
});
afterAll(() => service.stop());
beforeEach(() => service.faults.set({}));

test('returns the raw answer; a grounded reply passes every check', async () => {
  const answer = await run(REQUEST);
  expect(answer.status).toBe(200);
  const parsed = JSON.parse(answer.raw) as { overall_passed: boolean; checks: { name: string; passed: boolean }[] };
  expect(parsed.overall_passed).toBe(true);
  expect(parsed.checks.map((c) => c.name)).toEqual([
    'no_other_user_data',
    'no_internal_ids',
    'no_internal_notes',
    'dates_backed_by_data',
    'amounts_backed_by_data',
    'answers_the_question',
  ]);
  expect(service.requests.at(-1)).toEqual(REQUEST);
});

test.each([
  ['another user', 'Bob (bob@example.com) was paid $240 on November 27.', 'no_other_user_data'],
  ['an internal id', 'Payment pay-31 of $240 is expected on November 27.', 'no_internal_ids'],
  ['note text', 'You are a VIP talent, handle with care and pay manually.', 'no_internal_notes'],
  ['an unbacked date', 'Your payment of $240 is expected on December 4.', 'dates_backed_by_data'],
  ['an unbacked amount', 'Your payment of $250 is expected on November 27.', 'amounts_backed_by_data'],
])('a reply with %s fails its check', async (_what, response, check) => {
  const parsed = JSON.parse((await run({ ...REQUEST, response })).raw) as {
    overall_passed: boolean;
    checks: { name: string; passed: boolean }[];
  };
  expect(parsed.overall_passed).toBe(false);
  expect(parsed.checks.filter((c) => !c.passed).map((c) => c.name)).toEqual([check]);
});

test('4xx is rejected for good; 5xx and 429 (with its delay) are retried', async () => {
  service.faults.set({ validate: [{ status: 400 }, { status: 503 }, { status: 429, retry_after_s: 2 }] });
  const rejected = await failureOf(run(REQUEST));
  const unavailable = await failureOf(run(REQUEST));
  const limited = await failureOf(run(REQUEST));
  expect(rejected.name).toBe('ValidationRejectedError');
  expect(validationPolicy.retry?.nonRetryableErrorTypes).toEqual(['ValidationRejectedError']);
  expect(unavailable.name).toBe('ValidationUnavailableError');
  expect((limited as ApplicationFailure).nextRetryDelay).toBe(2000);
});

test('the API key is sent; a wrong one is a non-retryable rejection', async () => {
  const wrong = createValidationActivities({ endpoint: service.url, apiKey: 'wrong' });
  expect((await failureOf(run(REQUEST, wrong))).name).toBe('ValidationRejectedError');
});

test('an unreachable endpoint is retryable', async () => {
  const nowhere = createValidationActivities({ endpoint: 'http://127.0.0.1:9/validate', apiKey: KEY });
  expect((await failureOf(run(REQUEST, nowhere))).name).toBe('ValidationUnavailableError');
});

test('a request that is not the contract’s shape is refused with what is wrong, and never retried', async () => {
  const { tool_data: _dropped, ...withoutData } = REQUEST;
  const refused = await failureOf(run({ ...withoutData, intents: { answered: 'x' } } as never));
  expect(refused.name).toBe('ValidationRejectedError');
  expect(refused.message).toContain('validation endpoint answered 400');
  expect(refused.message).toMatch(/tool_data/);
  expect(refused.message).toMatch(/intents\.answered/);
});
