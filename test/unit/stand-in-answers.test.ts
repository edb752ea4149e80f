// How the sandbox stand-ins answer a talent, turn by turn on the demo data: the talent's own records before the help
// center, things the talent does not have said to be missing, ordinary numbers never a reason to hand over, and replies
// that read as a person writes. Each group holds cases unlike each other that must behave the same, and some that must not.
import demo from '../../sandbox/demo-data.json';
import { TalentData } from '../../sandbox/scenario';
import { standInTurns, type StandInTurn } from '../helpers/sandbox-model-turn';

const ANA = 'ana.ruiz@example.com'; // Event Staff (hired), a payment processing and one paid
const TOM = 'tom.becker@example.com'; // Warehouse Associate (screening), no payments
const LI = 'li.wei@example.com'; // Barista (interview), no payments

let turns: Awaited<ReturnType<typeof standInTurns>>;
beforeAll(async () => {
  turns = await standInTurns(TalentData.parse(demo.talent));
});
afterAll(() => turns?.close());

/** A reply that reached the talent: REPLY, and the validation stand-in passed it. */
function replied(turn: StandInTurn): string {
  expect(turn.failedChecks).toEqual([]);
  expect(turn.draft.response_type).toBe('REPLY');
  return turn.draft.text;
}

/** What a reader notices first: a sentence twice, a capital after "Hi Ana,", a status word used as a place. */
function hygieneProblems(text: string): string[] {
  const problems: string[] = [];
  const sentences = text.split(/(?<=[.!?])\s+/).map((s) => s.trim().toLowerCase());
  if (new Set(sentences).size !== sentences.length) problems.push('a sentence twice');
  if (/^(hi|hey|hello) \p{L}+, \p{Lu}/u.test(text) && !/^(hi|hey|hello) \p{L}+, I\b/u.test(text))
    problems.push('a capital after the greeting');
  if (/\bis in (screening|interview|hired|offer|submitted|closed|processing)\b/.test(text))
    problems.push('a status as a place');
  return problems;
}

test.each([
  'My zip code is 78701, when will I get paid?',
  'You can reach me at +1 (512) 555-0142. Has my payment been sent?',
  'Re ticket #48213: where is my money?',
  'I worked 38.5 hours last week, when do I get paid?',
  'My shift was on 11/14/2026 and I still have not been paid. Why?',
  'I worked the Austin shift (8 hours), when do I get paid?',
  'Noted, thanks (258). One more thing: when will I get paid?',
])('a payment question with an everyday number is answered from the payment: %s', async (question) => {
  const text = replied(await turns.ask(ANA, question));
  expect(text).toContain('$240');
  expect(hygieneProblems(text)).toEqual([]);
});

describe('something the talent does not have is said to be missing, with what they do have', () => {
  test.each([
    [ANA, 'Is my application for the barista job still open?', 'Barista', 'Event Staff'],
    [ANA, 'Any update on my application for the warehouse position?', 'Warehouse', 'Event Staff'],
    [TOM, 'did my aplication for the barista role go thru?', 'Barista', 'Warehouse Associate'],
    [ANA, 'Has my payment for the barista job arrived?', 'Barista', '$240'],
  ])('%s asks "%s"', async (email, question, missing, have) => {
    const text = replied(await turns.ask(email, question));
    expect(text).toMatch(new RegExp(`don't see an? \\w+ for the ${missing} job`));
    expect(text).toContain(have);
    expect(hygieneProblems(text)).toEqual([]);
  });

  test('a job the talent has, named by its title or its place, is answered without "don’t see"', async () => {
    for (const [email, question, have] of [
      [LI, 'Is my application for the barista job still open?', 'Barista'],
      [ANA, 'Is my application for the Austin job done?', 'Event Staff'],
      [ANA, 'When will I get paid for the event staff shift?', '$240'],
    ] as const) {
      const text = replied(await turns.ask(email, question));
      expect(text).toContain(have);
      expect(text).not.toMatch(/don't see/);
    }
  });
});

describe('the talent’s own records come before the help center', () => {
  test.each([
    [TOM, 'Why is my payment pending?'],
    [LI, 'When will I get paid?'],
    [TOM, 'has my money been sent yet??'],
  ])('%s, who has no payment, asks "%s": told there is none', async (email, question) => {
    const text = replied(await turns.ask(email, question));
    expect(text).toMatch(/don't see a payment on your account/);
    expect(hygieneProblems(text)).toEqual([]);
  });

  test('a talent with a payment is told about it, not told there is none', async () => {
    for (const question of ['Why is my payment pending?', 'Thanks! And when will the payment arrive exactly?']) {
      const text = replied(await turns.ask(ANA, question));
      expect(text).toContain('$240');
      expect(text).not.toMatch(/don't see/);
    }
  });

  test.each([
    'How long does a payout take?',
    'How long do payouts usually take to reach the bank?',
    'what is the payout schedule',
  ])('how things work is answered from the help center, not from the talent’s records: %s', async (question) => {
    const text = replied(await turns.ask(ANA, question));
    expect(text).toMatch(/payout run/);
    expect(text).not.toContain('$240');
  });

  test('an application-status answer carries no help-center passage, and no passage comes twice', async () => {
    const status = replied(await turns.ask(TOM, 'What is the status of my application?'));
    expect(status).toContain('is at the screening stage');
    expect(status).not.toMatch(/help center|contractor/i);
    const both = replied(
      await turns.ask(ANA, 'When will I get paid? What is the payout schedule? How do payouts work?'),
    );
    expect(hygieneProblems(both)).toEqual([]);
  });
});

test('statuses and greetings read as a person writes them', async () => {
  const bank = replied(await turns.ask(ANA, 'How can I change my bank account?'));
  expect(bank).toMatch(/^Hi Ana, you can change your bank account/);
  expect(replied(await turns.ask(ANA, 'Is my application done?'))).toContain('was successful: you were hired');
  expect(replied(await turns.ask(LI, 'When is my interview?'))).toContain('is at the interview stage');
  expect(replied(await turns.ask(TOM, 'Thanks!'))).toBe(
    "Hi Tom, you're welcome! Let me know if there is anything else.",
  );
});

test('a question neither the data nor the help center covers is handed over', async () => {
  for (const question of [
    'Do you offer health insurance?',
    'Can you send me my Form 8821 authorization copy?',
    // "money" is a payment word, but the question asks about a policy the help center does not have.
    'Do you reimburse mileage or gas money for driving to a venue?',
  ]) {
    const turn = await turns.ask(ANA, question);
    expect(turn.draft.response_type).toBe('ROUTE_TO_TEAM');
    expect(turn.dataSufficient).toBe(false);
  }
});
