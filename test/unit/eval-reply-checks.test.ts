// The checks every evaluation reply gets whatever its scenario expects: for each, replies a person would write that must
// pass and replies that must fail, among them the faults the evaluation once let through (issue 21).
import { checkReplies, loadHelpCenter, sameStem, sentencesOf, type ReplyCheckName } from '../../eval/reply-checks';
import { Scenario } from '../../sandbox/scenario';
import type { TurnOutcome } from '../../sandbox/scenario-runner';

const helpCenter = loadHelpCenter();

/** Ana: hired for Event Staff in Austin, one payment processing, one paid; the data every case below talks about. */
const ana = (extra: Record<string, unknown> = {}) =>
  Scenario.parse({
    id: 'reply-checks',
    description: 'd',
    conversation: {
      id: '1',
      contact: { id: 'c-1', email: 'ana.ruiz@example.com', name: 'Ana Ruiz' },
      parts: [{ author: 'user', body: 'When will I get paid?' }],
    },
    talent: {
      users: [
        {
          email: 'ana.ruiz@example.com',
          name: 'Ana Ruiz',
          applications: [{ id: 'app-11', job_id: 'job-21', status: 'hired', updated_at: '2026-10-30' }],
          payments: [
            { id: 'pay-31', job_id: 'job-21', amount: 240, currency: 'USD', status: 'processing' },
            { id: 'pay-29', job_id: 'job-21', amount: 180, currency: 'USD', status: 'paid', paid_at: '2026-11-13' },
            { id: 'pay-33', job_id: 'job-23', amount: 60, currency: 'USD', status: 'pending_approval' },
          ],
        },
      ],
      jobs: [
        { id: 'job-21', title: 'Event Staff', location: 'Austin, TX', status: 'filled', pay_rate: '$20/hour' },
        { id: 'job-23', title: 'Line Cook', location: 'Denver, CO', status: 'open' },
      ],
    },
    expect: {},
    ...extra,
  });

const turn = (user: string | null, ...replies: string[]): TurnOutcome => ({
  user,
  replies,
  handed_over: false,
  melvin_status: 'success',
});

/** The outcome of one check on every reply of the turns: passed, and what it found. */
function check(name: ReplyCheckName, turns: TurnOutcome[], scenario = ana()) {
  const results = checkReplies(scenario, turns, helpCenter).filter((c) => c.check === name);
  return { passed: results.every((c) => c.passed), details: results.filter((c) => !c.passed).map((c) => c.detail) };
}
const one = (name: ReplyCheckName, message: string, reply: string, scenario?: Scenario) =>
  check(name, [turn(message, reply)], scenario);

// Help-center passages as the knowledge base has them (sandbox/talent-mcp/knowledge-base/*.md).
const PAYOUT_SCHEDULE = 'Crewline pays completed shifts in a weekly payout run every Friday.';
const BANK_DETAILS = 'You can change your bank account in Settings under Payouts.';
const CONTRACTOR =
  'You work as an independent contractor. When you are hired for a job you accept the business’s shift terms in ' +
  'the app; they state the pay rate, the schedule and any dress code.';
const STAGES =
  'Every application moves through these stages: submitted, screening, interview, offer, hired. Screening means ' +
  'the hiring team is reviewing your profile and documents; most screenings finish within five business days.';
const CANCELLING = 'You can cancel a shift in the app up to 24 hours before it starts without any penalty.';
const TAX_FORM =
  'Talent working in the United States as independent contractors fill in a W-9 form in the app before their first payout.';

describe('words, sentences and their forms', () => {
  test('plurals, -ing, -ed, irregular forms and one typo in a long word are the same word', () => {
    for (const [a, b] of [
      ['payments', 'paying'],
      ['paid', 'pay'],
      ['cancelled', 'cancellation'],
      ['applied', 'application'],
      ['apply', 'applications'],
      ['verify', 'verification'],
      ['housekeeping', 'housekeeper'],
      ['aplication', 'application'],
      ['stages', 'stage'],
    ]) {
      expect([a, b, sameStem(a!, b!)]).toEqual([a, b, true]);
    }
    for (const [a, b] of [
      ['interview', 'international'],
      ['pay', 'pays-off-nothing'],
      ['app', 'application'],
      ['contract', 'cancel'],
    ]) {
      expect([a, b, sameStem(a!, b!)]).toEqual([a, b, false]);
    }
  });

  test('sentences end at . ! ? and line breaks, not in abbreviations, decimals or an ellipsis', () => {
    expect(sentencesOf('Hi Ana, your $212.50 is on its way, e.g. by Friday. Thanks!\n— The team')).toEqual([
      'Hi Ana, your $212.50 is on its way, e.g. by Friday.',
      'Thanks!',
      '— The team',
    ]);
    expect(sentencesOf('US talent (i.e. in the U.S. only) fill in a W-9... then wait.')).toEqual([
      'US talent (i.e. in the U.S. only) fill in a W-9... then wait.',
    ]);
  });

  test('every reply of every turn gets every check, numbered by turn and reply', () => {
    const results = checkReplies(
      ana(),
      [
        turn('When will I get paid?', 'Hi Ana, your payment of $240 is processing.'),
        turn('Thanks!'),
        turn('And?', 'a', 'b'),
      ],
      helpCenter,
    );
    expect(results.map((c) => [c.turn, c.reply]).filter((_, i) => i % 4 === 0)).toEqual([
      [0, 0],
      [2, 0],
      [2, 1],
    ]);
    expect(new Set(results.map((c) => c.check))).toEqual(
      new Set(['no_repeat', 'passage_on_subject', 'named_subject', 'wording']),
    );
  });
});

describe('(a) no sentence said twice', () => {
  test.each([
    ['a plain answer', ['Hi Ana, your payment of $240 is processing and expected on November 27.']],
    [
      'two payments in like sentences',
      ['Your payment of $240 is processing. Your payment of $180 was paid on November 13.'],
    ],
    ['a list of like lines', ['Your payments:\n- Event Staff: $240, processing\n- Event Staff: $180, paid']],
    [
      'a data answer and a passage, once',
      [`Hi Ana, your payment is processing. From our help center: ${PAYOUT_SCHEDULE}`],
    ],
    ['a short word said twice', ['Yes! Your shift is confirmed for Friday. And yes, the pay rate is $20/hour.']],
    [
      'two replies that say different things',
      ['Hi Ana, your payment is processing.', 'It is expected on November 27.'],
    ],
  ])('passes: %s', (_, replies) => {
    expect(check('no_repeat', [turn('When will I get paid?', ...replies)]).passed).toBe(true);
  });

  test('passes: a later turn may say again what an earlier one said', () => {
    const turns = [
      turn('When will I get paid?', 'Your payment of $240 is processing.'),
      turn('Sorry, when was that again?', 'Your payment of $240 is processing.'),
    ];
    expect(check('no_repeat', turns).passed).toBe(true);
  });

  test.each([
    ['the same passage twice', [`Hi Grace! ${PAYOUT_SCHEDULE} From our help center: ${PAYOUT_SCHEDULE}`]],
    ['one sentence twice', ['Your payment of $240 is processing. Your payment of $240 is processing.']],
    [
      'the same words in another case and punctuation',
      ['Your payment is expected on November 27! Thanks for your patience. your payment is expected on November 27.'],
    ],
    [
      'a sentence again in the next reply',
      ['Hi Ana, your payment of $240 is processing.', 'Your payment of $240 is processing.'],
    ],
    ['a paragraph pasted twice', [`${CANCELLING}\n\n${CANCELLING}`]],
    ['a sentence inside a longer one', [`${BANK_DETAILS} Good to know: ${BANK_DETAILS.toLowerCase()} Cheers!`]],
  ])('fails: %s', (_, replies) => {
    const result = check('no_repeat', [turn('How do I change my bank details?', ...replies)]);
    expect(result.passed).toBe(false);
    expect(result.details[0]).toMatch(/^said twice: "/);
  });
});

describe('(b) no help-center passage without the question’s subject', () => {
  test.each([
    ['a payout question, the payout passage', 'How long does a payout take?', `Hi Grace! ${PAYOUT_SCHEDULE}`],
    ['bank details, the bank passage', 'How can I change the bank account my pay goes to?', `Hi Ana, ${BANK_DETAILS}`],
    [
      'cancelling, another form of the word',
      'can i cancel my shift tomorrow without a penalty',
      `Hi Ana, ${CANCELLING.toLowerCase()}`,
    ],
    [
      'typos in the question',
      'how do i verify my identiy??',
      'Hi Ana, before your first shift we verify your identity.',
    ],
    ['no passage at all', 'When will I get paid?', 'Hi Ana, your payment of $240 is processing.'],
    ['stages, asked by their name', 'How long does the screening stage take?', `Hi Tom, ${STAGES}`],
  ])('passes: %s', (_, message, reply) => {
    expect(one('passage_on_subject', message, reply)).toEqual({ passed: true, details: [] });
  });

  test('passes: a follow-up that points back keeps the subject of the conversation', () => {
    const turns = [
      turn('Any news on my application?', 'Hi Tom, your application is at the screening stage.'),
      turn('How long does that usually take?', `Hi Tom, ${STAGES}`),
    ];
    expect(check('passage_on_subject', turns).passed).toBe(true);
  });

  test('passes: the scenario’s own docs are help center too, and on subject they pass', () => {
    const scenario = ana({
      docs: [{ title: 'Parking at venues', body: 'Most venues offer free staff parking behind the service entrance.' }],
    });
    const reply = 'Hi Ana, most venues offer free staff parking behind the service entrance.';
    expect(one('passage_on_subject', 'Where can I park at the venue?', reply, scenario).passed).toBe(true);
    expect(one('passage_on_subject', 'When will I get paid?', reply, scenario).passed).toBe(false);
  });

  test.each([
    [
      'a contractor passage after an application status',
      'Any news on my application?',
      `Hi Tom, your application for Warehouse Associate is at the screening stage. ${CONTRACTOR}`,
      'Contracts: Your contract with Crewline',
    ],
    ['a tax form passage for a payment date', 'When will I get paid?', `Hi Ana, ${TAX_FORM}`, 'Tax forms'],
    ['bank details for a withdrawal', 'How do I withdraw my application?', `Hi Tom, ${BANK_DETAILS}`, 'bank details'],
    [
      'cancelling for documents',
      'What documents do I need for the warehouse?',
      `Hi Diego, ${CANCELLING}`,
      'Cancelling a shift',
    ],
    [
      'a reworded passage off the subject',
      'Can I still withdraw my application?',
      'Reminder: Crewline pays finished shifts in a weekly payout run each Friday.',
      'Payment schedule',
    ],
  ])('fails: %s', (_, message, reply, title) => {
    const result = one('passage_on_subject', message, reply);
    expect(result.passed).toBe(false);
    expect(result.details[0]).toContain(title);
  });

  test('fails: a follow-up that asks something new does not borrow the earlier subject', () => {
    const turns = [
      turn('Any news on my application?', 'Hi Tom, your application is at the screening stage.'),
      turn('When will I get paid?', `Hi Tom, ${STAGES}`),
    ];
    expect(check('passage_on_subject', turns).passed).toBe(false);
  });
});

describe('(c) a job the talent names is the answer’s subject, or said to be missing', () => {
  test.each([
    [
      'a job the talent does not have, said to be missing',
      'Is my application for the barista job still open?',
      "Hi Ana! I don't see an application for the Barista job on your account. Your application for Event Staff in Austin, TX was successful: you were hired.",
    ],
    [
      'a job named by its place, answered by its title',
      'When will I get paid for the Austin shift?',
      'Hi Ana, your payment of $240 for Event Staff is processing.',
    ],
    [
      'a title from the data, answered',
      "What's the status of my event staff application?",
      'Hi Ana, your Event Staff application was successful.',
    ],
    ['which job, not what job', 'When will I get paid for my last job?', 'Hi Ana, your payment of $240 is processing.'],
    [
      'a shift named by its event',
      'Was I paid yet for the 11/18 convention shift?',
      'Hi Ana, your payment of $240 for Event Staff is processing.',
    ],
    [
      'a sentence before "shift", not a name',
      'The restaurant cancelled my shift two hours before it started. Do I get paid anything?',
      'Hi Ana, if a business cancels a shift less than 24 hours before it starts, you are paid two hours.',
    ],
    [
      'missing, in other words',
      'Is the sushi chef job still open?',
      'Hi Ana, I could not find that job on your account.',
    ],
    [
      'a form of the word',
      'When do I get paid for my housekeeping shifts?',
      'Hi Ana, your payment for Hotel Housekeeper is processing.',
    ],
  ])('passes: %s', (_, message, reply) => {
    expect(one('named_subject', message, reply)).toEqual({ passed: true, details: [] });
  });

  test.each([
    [
      'another job’s status for the one asked about',
      'Is my application for the barista job still open?',
      'Hey Ana, your application for Event Staff in Austin, TX is in hired',
      'barista',
    ],
    [
      'another job’s pay rate',
      'How much does the Sushi Chef job pay?',
      'The Event Staff job in Austin, TX pays $20/hour.',
      'sushi chef',
    ],
    [
      'a title of the data answered with another',
      "What's the status of my Event Staff application?",
      'Your application for Line Cook in Denver, CO is at the screening stage.',
      'event staff',
    ],
    [
      'a place and a kind of work the talent has not worked',
      'When will I get paid for the Portland catering job?',
      'Your payment of $240 for Event Staff is processing.',
      'portland catering',
    ],
    [
      'a help-center answer for a job',
      'Did the forklift position get filled?',
      `Hi Ana! ${PAYOUT_SCHEDULE}`,
      'forklift',
    ],
    [
      'a title without "the … job", answered about another',
      'Any news on my line cook application?',
      'Your application for Event Staff was successful: you were hired.',
      'line cook',
    ],
  ])('fails: %s', (_, message, reply, named) => {
    const result = one('named_subject', message, reply);
    expect(result.passed).toBe(false);
    expect(result.details[0]).toContain(`names "${named}"`);
  });
});

describe('(d) greeting, capitals and status words', () => {
  test.each([
    ['lower case after the greeting', 'Hi Ana, your payment of $240 is processing.'],
    ['"I" after the greeting', "Hi Ana, I don't see a payment on your account yet."],
    ['a job title after the greeting', 'Hey Ana, Event Staff shifts in Austin are paid on Fridays.'],
    ['a name the help center capitalises', 'Hello Ana, Crewline pays completed shifts every Friday.'],
    ['an exclamation after the name', 'Hi Ana! Crewline pays completed shifts every Friday.'],
    ['the greeting on a line of its own', 'Hi Ana,\nYour payment is processing.\n— Crewline Talent Support'],
    ['a status as a stage', 'Hi Ana, your application is at the hired stage, e.g. you can book shifts.'],
    ['an email address with an underscore', 'Hi Ana, we will write to ana_ruiz@example.com once it is paid.'],
  ])('passes: %s', (_, reply) => {
    expect(one('wording', 'When will I get paid?', reply)).toEqual({ passed: true, details: [] });
  });

  test.each([
    [
      'a capital after the greeting',
      'Hey Ana, You can change your bank account in Settings under Payouts.',
      'capital after the greeting',
    ],
    ['a capital after a greeting without a name', 'Hello, The interview is on Monday.', 'capital after the greeting'],
    [
      'a status used as a place',
      'Hi Ana, your application for Event Staff in Austin, TX is in hired.',
      'status used as a place: "is in hired"',
    ],
    ['a sentence in lower case', 'Hi Ana, your payment is processing. it should arrive on November 27.', 'lower case'],
    ['a snake_case status', 'Hi Ana, your $60 payment is pending_approval.', 'raw token: "pending_approval"'],
    [
      'a status in capitals',
      'Hi Ana, your payment is PROCESSING and expected on November 27.',
      'raw status: "PROCESSING"',
    ],
    ['the issue’s reply, as it was', 'your application for Event Staff in Austin, TX is in hired', 'lower case'],
  ])('fails: %s', (_, reply, detail) => {
    const result = one('wording', 'Is my application still open?', reply);
    expect(result.passed).toBe(false);
    expect(result.details[0]).toContain(detail);
  });
});
