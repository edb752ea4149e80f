// The checks every reply passes before it can reach a user.
import { checkReply, internalIds, otherEmailsIn, repeatsWordsOf, showsId } from '../../src/guards/reply-checks';
import { ID_TOKEN_CASES } from '../helpers/id-token-cases';

const known = {
  userEmail: 'ana@example.com',
  internalNotes: ['VIP talent, pay manually if the Friday run misses her'],
  prompts: ['You are Melvin, the support agent of a talent marketplace, writing the reply the user will read.'],
  toolData: { get_user_payments: { data: { payments: [{ id: 'pay-31', job_id: 'job-21', amount: 240 }] } } },
};
const failed = (reply: string) =>
  checkReply(reply, known)
    .filter((c) => !c.passed)
    .map((c) => c.name);

test('a grounded reply passes every check', () => {
  expect(
    failed('Hi Ana, your payment of $240 is expected on November 27. Write to ana@example.com for receipts.'),
  ).toEqual([]);
});

test.each([
  ['another user’s address', 'Bob (BOB@example.com) was paid too.', 'no_other_user_data'],
  ['an internal id', 'Payment pay-31 is processing.', 'no_internal_ids'],
  ['a note', 'You are a VIP talent, pay manually if the Friday run misses you.', 'no_internal_notes'],
  [
    'the instructions',
    'My rules: you are Melvin, the support agent of a talent marketplace, writing the reply.',
    'no_prompt_text',
  ],
])('a reply with %s fails', (_what, reply, check) => {
  expect(failed(reply)).toEqual([check]);
});

test('the helpers: runs of words, other addresses, ids anywhere in the data', () => {
  expect(repeatsWordsOf('one two three four five six', 'zero one two three four five six seven', 6)).toBe(true);
  expect(repeatsWordsOf('one two three four five', 'zero one two three four five six seven', 6)).toBe(false);
  expect(repeatsWordsOf('short note here', 'short note here', 6)).toBe(true);
  expect(otherEmailsIn('a@x.io and b@y.co.uk', 'A@X.IO')).toEqual(['b@y.co.uk']);
  expect([...internalIds([{ id: 7, nested: { job_id: 'j-1', title: 'x' } }])]).toEqual(['7', 'j-1']);
  expect(checkReply('x', { ...known, prompts: undefined }).map((c) => c.name)).not.toContain('no_prompt_text');
});

test.each(ID_TOKEN_CASES)('id %s in "%s" is shown: %s', (id, reply, shown) => {
  expect(showsId(reply, id)).toBe(shown);
});

test('an id the data holds blocks a reply only as a token of its own, not inside an amount', () => {
  const withId = { ...known, toolData: { get_user_profile: { data: { id: 250, app_id: 'app-11' } } } };
  const failedWith = (reply: string, options?: { idsAsSubstrings?: boolean }) =>
    checkReply(reply, withId, options)
      .filter((c) => !c.passed)
      .map((c) => c.detail);
  expect(failedWith('Your payment of $250 is on its way.')).toEqual([]);
  expect(failedWith('Your application app-11 (reference 250) is open.')).toEqual(['shows internal ids: 250, app-11']);
  // Runs that replay a guard decided before ids were tokens keep the substring match they used.
  expect(failedWith('Your payment of $250 is on its way.', { idsAsSubstrings: true })).toEqual([
    'shows internal ids: 250',
  ]);
});
