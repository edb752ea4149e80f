// Melvin's grounding guard: a reply whose every fact comes from the turn's sources passes, in whatever format it writes
// them; a reply with one fact from nowhere, or a claim of an action no tool took, fails, whatever the fact is.
import fc from 'fast-check';
import { ungroundedFacts, type GroundingSources } from '../../src/guards/grounding';

const MONTH_NAMES = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const WEEKDAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const TITLES = ['Event Staff', 'Barista', 'Line Cook', 'Arena Vendor', 'Banquet Server', 'Warehouse Associate'];
const PLACES = ['Austin, TX', 'Milwaukee, WI', 'Portland, OR', 'Denver, CO', 'Leeds', 'Toronto, ON'];
const FIRST_NAMES = ['Ana', 'Tyrone', 'Priya', 'Mateo', 'Yuki', 'Fatima', 'Olu', 'Grace'];
const LAST_NAMES = ['Ruiz', 'Jackson', 'Patel', 'Silva', 'Tanaka', 'Haddad'];

interface Day {
  year: number;
  month: number;
  day: number;
}

const iso = (d: Day) => `${d.year}-${String(d.month).padStart(2, '0')}-${String(d.day).padStart(2, '0')}`;
const weekday = (d: Day) => WEEKDAY_NAMES[new Date(Date.UTC(d.year, d.month - 1, d.day)).getUTCDay()]!;
const ordinal = (n: number) =>
  `${n}${[11, 12, 13].includes(n % 100) ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th')}`;

/** A date as a reply may write it: every format the guard claims to read (docs/decisions.md). */
const dateFormats: ((d: Day) => string)[] = [
  (d) => `${MONTH_NAMES[d.month - 1]} ${d.day}`,
  (d) => `${MONTH_NAMES[d.month - 1]!.slice(0, 3)} ${d.day}`,
  (d) => `${MONTH_NAMES[d.month - 1]!.slice(0, 3)}. ${ordinal(d.day)}`,
  (d) => `${d.day} ${MONTH_NAMES[d.month - 1]}`,
  (d) => `the ${ordinal(d.day)} of ${MONTH_NAMES[d.month - 1]}`,
  (d) => `${MONTH_NAMES[d.month - 1]} ${d.day}, ${d.year}`,
  (d) => `${d.month}/${d.day}`,
  (d) => `${d.month}/${d.day}/${d.year}`,
  (d) => iso(d),
  (d) => `${weekday(d)}, ${MONTH_NAMES[d.month - 1]} ${d.day}`,
];

/** An amount as a reply may write it. */
const amountFormats: ((value: number) => string)[] = [
  (v) => `$${v}`,
  (v) => `$${v.toFixed(2)}`,
  (v) => `${v} USD`,
  (v) => `USD ${v}`,
  (v) => `${v} dollars`,
  (v) => `$${v.toLocaleString('en-US')}`,
];

const day = fc.record({
  year: fc.constantFrom(2025, 2026, 2027),
  month: fc.integer({ min: 1, max: 12 }),
  day: fc.integer({ min: 1, max: 28 }),
});

const talentData = fc.record({
  first: fc.constantFrom(...FIRST_NAMES),
  last: fc.constantFrom(...LAST_NAMES),
  payments: fc.array(
    fc.record({ amount: fc.integer({ min: 20, max: 4000 }), date: day, title: fc.constantFrom(...TITLES) }),
    { minLength: 1, maxLength: 3 },
  ),
  job: fc.record({ title: fc.constantFrom(...TITLES), place: fc.constantFrom(...PLACES), start: day }),
});
type TalentData = typeof talentData extends fc.Arbitrary<infer T> ? T : never;

function sourcesOf(t: TalentData): GroundingSources {
  return {
    data: {
      get_user_payments: {
        data: {
          payments: t.payments.map((p, i) => ({
            id: `pay-${i + 41}`,
            amount: p.amount,
            currency: 'USD',
            status: 'processing',
            expected_date: iso(p.date),
            job_title: p.title,
          })),
        },
      },
      get_job_details: {
        data: { title: t.job.title, location: t.job.place, start_date: `${iso(t.job.start)}T09:00:00Z` },
      },
    },
    conversation: [`Hi, when do I get paid for my shifts?`, `${t.first} ${t.last}`],
  };
}

/** A reply that says only what the data says, each fact in a format of its own, in sentences of several shapes. */
const groundedReply = (t: TalentData) =>
  fc
    .record({
      dateFormat: fc.array(fc.constantFrom(...dateFormats), { minLength: 3, maxLength: 3 }),
      amountFormat: fc.array(fc.constantFrom(...amountFormats), { minLength: 3, maxLength: 3 }),
      shape: fc.integer({ min: 0, max: 2 }),
      greet: fc.boolean(),
    })
    .map(({ dateFormat, amountFormat, shape, greet }) => {
      const sentences = t.payments.map((p, i) => {
        const amount = amountFormat[i]!(p.amount);
        const when = dateFormat[i]!(p.date);
        return [
          `your payment of ${amount} for ${p.title} is expected on ${when}.`,
          `the ${amount} from your ${p.title} shifts should arrive ${when}.`,
          `on ${when} you can expect ${amount} (${p.title}).`,
        ][shape]!;
      });
      const job = `The ${t.job.title} job in ${t.job.place} starts ${dateFormat[0]!(t.job.start)}.`;
      const body = sentences.map((s) => s[0]!.toUpperCase() + s.slice(1)).join(' ');
      return `${greet ? `Hi ${t.first}! ` : ''}${body} ${job}`;
    });

test('a reply whose every fact is in the data passes, whatever formats it writes them in', () => {
  fc.assert(
    fc.property(
      talentData.chain((t) => fc.tuple(fc.constant(t), groundedReply(t))),
      ([t, reply]) => {
        expect(ungroundedFacts(reply, sourcesOf(t))).toEqual([]);
      },
    ),
    { numRuns: 300 },
  );
});

/** One fact of the reply swapped for one from nowhere: a date, an amount, a title, a place or a name. */
type Planted = { kind: 'date' | 'amount' | 'name'; from: string; to: string };

function plantings(t: TalentData): fc.Arbitrary<Planted> {
  const known = sourcesOf(t);
  const dataText = JSON.stringify(known.data) + known.conversation.join(' ');
  const p = t.payments[0]!;
  const spoken = `${MONTH_NAMES[p.date.month - 1]} ${p.date.day}`;
  // A day no data date falls on (a date without a year matches that day in any year).
  const dataDays = [...t.payments.map((q) => q.date), t.job.start];
  const otherDay = day.filter((d) => !dataDays.some((q) => q.month === d.month && q.day === d.day));
  return fc.oneof(
    otherDay.map((d) => ({ kind: 'date' as const, from: spoken, to: `${MONTH_NAMES[d.month - 1]} ${d.day}` })),
    fc
      .integer({ min: 1, max: 9999 })
      .filter((v) => !dataText.includes(String(v)))
      .map((v) => ({ kind: 'amount' as const, from: `$${p.amount}`, to: `$${v}` })),
    fc
      .constantFrom(...TITLES.filter((title) => !title.split(' ').every((w) => dataText.includes(w))))
      .map((title) => ({ kind: 'name' as const, from: p.title, to: title })),
    fc
      .constantFrom(...FIRST_NAMES.filter((name) => !dataText.includes(name)))
      .map((name) => ({ kind: 'name' as const, from: `Hi ${t.first}`, to: `Hi ${name}` })),
    fc
      .constantFrom(...PLACES.filter((place) => !dataText.includes(place.split(',')[0]!)))
      .map((place) => ({ kind: 'name' as const, from: t.job.place, to: place })),
  );
}

test('a reply with one fact that is in none of the sources fails, and the fact is named', () => {
  fc.assert(
    fc.property(
      talentData.chain((t) => fc.tuple(fc.constant(t), plantings(t))),
      ([t, planted]) => {
        const p = t.payments[0]!;
        const grounded =
          `Hi ${t.first}, your payment of $${p.amount} for ${p.title} is expected on ` +
          `${MONTH_NAMES[p.date.month - 1]} ${p.date.day}. The ${t.job.title} job is in ${t.job.place}.`;
        expect(ungroundedFacts(grounded, sourcesOf(t))).toEqual([]);
        const wrong = grounded.replace(planted.from, planted.to);
        const found = ungroundedFacts(wrong, sourcesOf(t));
        expect(found.map((f) => f.kind)).toContain(planted.kind);
        const named = found.map((f) => f.text).join(' ');
        for (const word of planted.to.replace(/^Hi /, '').match(/\p{Lu}\p{L}+|\d+/gu) ?? [])
          expect(named).toContain(word);
      },
    ),
    { numRuns: 300 },
  );
});

const sources: GroundingSources = {
  data: {
    payments: [{ amount: 228, currency: 'USD', expected_date: '2026-11-27', job_title: 'Arena Vendor' }],
    job: { title: 'Arena Vendor', location: 'Milwaukee, WI', pay_rate: '$19/hour', shift: '5:00 PM' },
    passage:
      'Payments are processed every Friday. Most banks show a deposit within 2 business days. Call 1-800-555-0100.',
  },
  conversation: ['Where is my money for the Milwaukee arena shifts? Ticket 48213.', 'Tyrone Jackson'],
  names: ['Melvin', '— Crewline Talent Support'],
};

test.each([
  ['the talent’s own name, and a title and place from the data', 'Hi Tyrone, the Arena Vendor job in Milwaukee, WI.'],
  ['a date in several formats', 'Expected November 27 (Nov 27th, 11/27/2026, Friday, 2026-11-27).'],
  ['an amount with cents and a rate', 'Your $228.00 at $19/hour.'],
  ['a number the talent wrote', 'I see ticket 48213.'],
  ['a time of day from the data, written another way', 'Your shift starts at 5pm.'],
  ['a weekday the help center names', 'We pay every Friday and banks take 2 business days.'],
  ['the team’s sign-off', 'Your pay is on its way.\n— Crewline Talent Support'],
  ['words at a sentence’s start, capitalized as any sentence starts', 'Unfortunately, it is late. Sadly so. Great!'],
  ['a phone number of the help center', 'Call 1-800-555-0100 if it does not arrive.'],
  ['handing over to the team', "I've passed this to our team and sent your question to a teammate."],
  ['saying what it cannot do', "I can't change your bank details, and I have not cancelled anything."],
  ['a policy in the present', 'We pay every Friday and we process payments weekly.'],
])('grounded: %s', (_why, reply) => {
  expect(ungroundedFacts(reply, sources)).toEqual([]);
});

test.each([
  ['an invented date', 'It arrives December 29.', 'date'],
  ['an invented date, numbers only', 'It arrives 12/29.', 'date'],
  ['a weekday no date falls on', 'It arrives on Tuesday.', 'date'],
  ['an invented amount', 'You are owed $999.', 'amount'],
  ['an invented amount in words', 'You are owed 310 dollars.', 'amount'],
  ['a total the data does not state', 'Together that is $456.', 'amount'],
  ['another person’s name', 'Hi Maria, it is on its way.', 'name'],
  ['another talent’s possessive at a sentence’s start', "Maria's payment was sent.", 'name'],
  ['an invented place', 'Your shift in Denver is confirmed.', 'name'],
  ['an invented job title', 'Your Forklift Operator shift is set.', 'name'],
  ['an invented phone number', 'Call 555-0199 about it.', 'number'],
  ['an invented time', 'It lands by 9:30 AM.', 'time'],
  ['hours the data does not have', 'You worked 37 hours.', 'number'],
])('ungrounded: %s', (_why, reply, kind) => {
  expect(ungroundedFacts(reply, sources).map((f) => f.kind)).toContain(kind);
});

test.each([
  "I've cancelled your shift.",
  'I have updated your bank details.',
  'I went ahead and rescheduled your interview.',
  "I'm processing your refund now.",
  "I'll send the payment today.",
  'I can change your payout method for you.',
  'We have approved your timesheet.',
  'Your application has been withdrawn for you.',
  'I just reset your password.',
  "I've updated the team's records and reissued your W-2.",
  'I contacted the business about your hours.',
])('claims an action: %s', (reply) => {
  expect(ungroundedFacts(reply, { data: {}, conversation: [] }).map((f) => f.kind)).toContain('action');
});

test('a claim is backed when a tool of the turn that may write did it', () => {
  const reply = "I've cancelled your shift.";
  expect(ungroundedFacts(reply, { data: {}, conversation: [], actionsTaken: ['cancel_shift'] })).toEqual([]);
  expect(ungroundedFacts(reply, { data: {}, conversation: [], actionsTaken: ['get_shifts'] })).not.toEqual([]);
});

describe('facts of two of the talent’s records in one sentence', () => {
  const twoPayments: GroundingSources = {
    data: {
      get_user_payments: {
        tool_name: 'get_user_payments',
        success: true,
        data: {
          payments: [
            { id: 'p1', amount: 228, currency: 'USD', expected_date: '2026-11-27', job_title: 'Arena Vendor' },
            { id: 'p2', amount: 140, currency: 'USD', expected_date: '2026-12-04', job_title: 'Banquet Server' },
            { id: 'p3', amount: 180, currency: 'USD', paid_at: '2026-11-13', job_title: 'Arena Vendor' },
          ],
        },
      },
      get_job_details: {
        tool_name: 'get_job_details',
        success: true,
        data: { title: 'Arena Vendor', location: 'Milwaukee, WI', pay_rate: '$19/hour', start_date: '2026-12-04' },
      },
    },
    conversation: ['When will I get paid?'],
  };
  test.each([
    ['another payment’s date beside this one’s amount', 'Your $228 payment is expected on December 4.', 'December 4'],
    ['another payment’s amount beside this one’s title', 'Your Arena Vendor payment of $140 is processing.', '$140'],
    ['another payment’s title beside this one’s date', 'Your Banquet Server pay arrives 11/27.', 'Banquet Server'],
  ])('mixed: %s', (_why, reply, fact) => {
    expect(ungroundedFacts(reply, twoPayments)).toContainEqual({ kind: 'record', text: fact });
  });
  test.each([
    ['the amount of another payment for the same job', 'Your $180 for Arena Vendor is expected on November 27.'],
    ['two amounts given one payment’s date', 'Your $228 and $180 payments are expected on November 27.'],
    ['the date of a paid payment for an open one', 'Your Arena Vendor payment of $228 was paid on November 13.'],
  ])('mixed: %s', (_why, reply) => {
    expect(ungroundedFacts(reply, twoPayments).map((f) => f.kind)).toContain('record');
  });
  test.each([
    ['each payment with its own facts', 'Your $228 is expected November 27, and your $140 on December 4.'],
    ['a payment and its job’s rate', 'Your $228 for Arena Vendor at $19/hour arrives November 27.'],
    ['a job and its start date, which another payment shares', 'The Arena Vendor job starts December 4.'],
    ['one fact a sentence', 'It is $140. It arrives December 4.'],
    ['a list of one kind', 'You have payments of $228, $140 and $180.'],
    ['a paid payment with its own date', 'Your $180 for Arena Vendor was paid on November 13.'],
  ])('not mixed: %s', (_why, reply) => {
    expect(ungroundedFacts(reply, twoPayments)).toEqual([]);
  });
});

describe('promises', () => {
  const dated: GroundingSources = {
    data: {
      payment: { amount: 228, expected_date: '2026-11-27', status: 'processing' },
      passage: 'Most banks show a deposit within two business days of the payout.',
    },
    conversation: ['Will it come today? I need it by tomorrow!'],
    today: '2026-11-26',
  };
  test.each([
    ['“tomorrow”, when a data date is the day after the turn', 'It should arrive tomorrow.'],
    ['the help center’s own timeline', 'Most banks show it within two business days.'],
    ['“today” in a greeting', 'Hi! How can I help you today?'],
  ])('backed: %s', (_why, reply) => {
    expect(ungroundedFacts(reply, dated)).toEqual([]);
  });
  test.each([
    ['“today” for what no data dates today, though the talent asked', 'It will be in your account today.'],
    ['a number of hours no data has', 'You will have it within 24 hours.'],
    ['“soon”', 'You will hear back soon.'],
    ['a guarantee', 'It is guaranteed to arrive.'],
    ['a certainty', 'You will definitely get the job.'],
    ['next week', 'The team will call you next week.'],
  ])('unbacked: %s', (_why, reply) => {
    expect(ungroundedFacts(reply, dated).map((f) => f.kind)).toContain('promise');
  });
});

describe('a date told as what the data does not hold it as', () => {
  const records: GroundingSources = {
    data: {
      payments: [
        { amount: 228, expected_date: '2026-11-27', job_title: 'Arena Vendor' },
        { amount: 180, paid_at: '2026-11-13', job_title: 'Arena Vendor' },
      ],
      applications: [
        { status: 'hired', updated_at: '2026-10-31', job: { title: 'Arena Vendor', start_date: '2026-12-04' } },
      ],
    },
    conversation: ['When do I get paid?'],
  };
  test.each([
    ['an update told as a payment’s expected date', 'Your $228 is expected on October 31.'],
    ['an expected date told as an update', 'Your application was last updated November 27.'],
    ['an expected date told as a start', 'The job starts November 27.'],
    ['a paid date told as an expected one', 'It should arrive by November 13.'],
    ['an update told as a paid date', 'It was paid on October 31.'],
  ])('misread: %s', (_why, reply) => {
    expect(ungroundedFacts(reply, records).map((f) => f.kind)).toContain('record');
  });
  test.each([
    ['each date as the data has it', 'Expected November 27; paid November 13; updated October 31; starts December 4.'],
    ['a date with no word of what it is', 'Please accept the offer by October 31.'],
    ['a date of the conversation’s', 'You wrote on October 31.'],
  ])('read right: %s', (_why, reply) => {
    expect(ungroundedFacts(reply, records)).toEqual([]);
  });
});
