// Tiered entity resolution: a record named in words is resolved to an id of the user's own records, or never sent.
import type { StoredToolData } from '../../src/contract/state';
import fc from 'fast-check';
import {
  mentionArguments,
  resolveCall,
  resolveNamedRecord,
  resolveReference,
  resolveSemantically,
  userRecords,
  type UserRecord,
} from '../../src/workflows/entities/entities';
import { sandboxEmbedding } from '../../sandbox/model/embeddings';

const stored = (tool_name: string, data: unknown, success = true): StoredToolData => ({
  tool_name,
  parameters: {},
  hop: 1,
  success,
  data,
  error: null,
  truncated: false,
});

const TOOL_DATA = {
  get_user_applications_detailed: stored('get_user_applications_detailed', {
    applications: [
      {
        id: 'app-13',
        job_id: 'job-23',
        status: 'interview',
        job: { id: 'job-23', title: 'Barista', location: 'Portland, OR' },
      },
      {
        id: 'app-14',
        job_id: 'job-24',
        status: 'screening',
        job: { id: 'job-24', title: 'Line Cook', location: 'Denver, CO' },
      },
    ],
  }),
  get_user_payments: stored('get_user_payments', {
    payments: [
      { id: 'pay-41', job_id: 'job-25', job_title: 'Event Staff', expected_date: '2026-11-27', status: 'processing' },
    ],
  }),
  failed: stored('get_job_details', { id: 'job-99', title: 'Secret Role' }, false),
};
const records = userRecords(TOOL_DATA);

test('the user’s records: jobs, applications and payments with the words that describe them; failed calls give none', () => {
  expect(records.map((r) => `${r.kind} ${r.id}`).sort()).toEqual([
    'application app-13',
    'application app-14',
    'job job-23',
    'job job-24',
    'job job-25',
    'payment pay-41',
  ]);
  expect(records.find((r) => r.id === 'pay-41')?.words).toEqual(
    new Set(['event', 'staff', 'processing', 'november', '27']),
  );
});

test.each([
  ['job-23', 'exact', 'job-23'],
  ['JOB-24', 'exact', 'job-24'],
  ['job-77', 'exact', 'job-77'],
  ['Barista', 'fuzzy', 'job-23'],
  ['the line cook shift', 'fuzzy', 'job-24'],
  ['Baristta', 'fuzzy', 'job-23'],
  ['event staff', 'fuzzy', 'job-25'],
])('job_id "%s" resolves %s to %s', (value, tier, id) => {
  const result = resolveReference('job_id', value, records);
  expect(result).toMatchObject({ ok: true, resolution: { tier, id } });
});

test('a mention that matches nothing, or two records equally, is refused with why', () => {
  expect(resolveReference('job_id', 'Sushi Chef', records)).toEqual({
    ok: false,
    error: `"Sushi Chef" (job_id) matches none of the user's 3 job record(s): not resolved, so the tool was not called`,
  });
  const twins = userRecords({
    a: stored('a', {
      jobs: [
        { id: 'job-1', title: 'Event Staff' },
        { id: 'job-2', title: 'Event Staff' },
      ],
    }),
  });
  expect(resolveReference('job_id', 'event staff', twins)).toMatchObject({ ok: false });
  expect((resolveReference('job_id', 'event staff', twins) as { error: string }).error).toContain('equally');
});

test('a payment is found by the date the user gives for it', () => {
  expect(resolveReference('payment_id', 'my payout on November 27', records)).toMatchObject({
    ok: true,
    resolution: { tier: 'fuzzy', id: 'pay-41' },
  });
});

test('only words wait for the records: ids and other arguments go as they are; unknown kinds are not resolved', () => {
  expect(mentionArguments({ job_id: 'Barista', query: 'pay rate', limit: 3 })).toEqual([['job_id', 'Barista']]);
  expect(mentionArguments({ job_id: 'job-23', resourceId: '42' })).toEqual([]);
  expect(resolveCall({ job_id: 'Barista', other: 1 }, records)).toEqual({
    ok: true,
    arguments: { job_id: 'job-23', other: 1 },
    resolved: [
      { argument: 'job_id', mention: 'Barista', id: 'job-23', tier: 'fuzzy', score: 1, label: 'Barista, Portland, OR' },
    ],
  });
  // A third-party tool's own kind of id is none of the user's records: it goes to that tool as the model wrote it.
  expect(resolveCall({ ticketId: 'the printer one' }, records)).toEqual({
    ok: true,
    arguments: { ticketId: 'the printer one' },
    resolved: [],
  });
});

test('an identity argument the tool policy pinned is never taken for a mention, whatever its value', () => {
  const records: UserRecord[] = [{ kind: 'user', id: 'u-1', label: 'Ana Ruiz', words: new Set(['ana', 'ruiz']) }];
  const pinned = { user_id: 'ana', job_id: 'the Barista job' };
  expect(mentionArguments(pinned)).toEqual([['job_id', 'the Barista job']]);
  const resolved = resolveCall(pinned, records);
  expect(resolved).toMatchObject({ ok: true, arguments: { user_id: 'ana' } });
});

describe('what the user named, resolved in tiers', () => {
  const applications = (jobs: { id: string; title: string; location: string }[]) =>
    userRecords({
      get_user_applications_detailed: stored('get_user_applications_detailed', {
        applications: jobs.map((job, i) => ({ id: `app-${i}`, job_id: job.id, status: 'screening', job })),
      }),
    });
  const PRIYA = applications([
    { id: 'job-91', title: 'Barista', location: 'Portland, OR' },
    { id: 'job-92', title: 'Barista', location: 'Austin, TX' },
    { id: 'job-93', title: 'Line Cook', location: 'Austin, TX' },
  ]);
  const resolve = (mention: string, kind = 'job') => resolveNamedRecord({ kind, mention }, PRIYA);

  test.each([
    ['the barrista job in Austin TX', 'job', 'job-92', 'fuzzy'],
    ['the Line Cook job', 'job', 'job-93', 'exact'],
    ['Barista Portland', 'job', 'job-91', 'exact'],
    ['job-93', 'job', 'job-93', 'exact'],
    ['line cok in austin', 'job', 'job-93', 'fuzzy'],
    ['the baristta gig in portland, OR', 'shift', 'job-91', 'fuzzy'],
    ['my barista application in Austin', 'application', 'job-92', 'exact'],
    ['the Austin barista payment', 'payment', 'job-92', 'exact'],
  ])('"%s" (%s) is %s, found %s', (mention, kind, id, tier) => {
    expect(resolve(mention, kind)).toMatchObject({ record_kind: 'job', id, tier, candidates: [] });
  });

  test('what no word tells apart is left open with the records still in question; other kinds are not records', () => {
    expect(resolve('the barista job')).toMatchObject({
      id: null,
      tier: null,
      candidates: [
        { id: 'job-91', label: 'Barista, Portland, OR' },
        { id: 'job-92', label: 'Barista, Austin, TX' },
      ],
    });
    // Nothing matched: every job is still in question, for the semantic tier.
    expect(resolve('the coffee shop job')?.candidates.map((c) => c.id)).toEqual(['job-91', 'job-92', 'job-93']);
    expect(resolve('November 27', 'date')).toBeNull();
    expect(resolveNamedRecord({ kind: 'job', mention: 'barista' }, [])).toBeNull();
  });

  test('a place, status or date alone does not make a job the one named by a title it does not have', () => {
    const ana = applications([{ id: 'job-21', title: 'Event Staff', location: 'Austin, TX' }]);
    const named = (mention: string) => resolveNamedRecord({ kind: 'job', mention }, ana);
    expect(named('the Barista position in Austin')).toMatchObject({ id: null, candidates: [{ id: 'job-21' }] });
    expect(named('the sushi chef gig in Austin TX')).toMatchObject({ id: null });
    // Named by its place alone, or by its title in another words' company, it is that job.
    expect(named('the Austin shift')).toMatchObject({ id: 'job-21', tier: 'exact' });
    expect(named('the event staf job in Dallas')).toMatchObject({ id: 'job-21', tier: 'fuzzy' });
  });

  test('the semantic tier keeps the candidates near in meaning for the model, and takes one alone only when near-certain', () => {
    const semantic = (mention: string) => {
      const open = resolve(mention)!;
      expect(open.id).toBeNull();
      const vectors = [mention, ...open.candidates.map((c) => c.label)].map(sandboxEmbedding);
      return resolveSemantically(open, vectors);
    };
    const left = (mention: string) =>
      semantic(mention)
        .candidates.map((c) => c.id)
        .sort();
    expect(left('the coffee shop job in Austin')).toEqual(['job-92']);
    expect(left('the kitchen job in Austin')).toEqual(['job-93']);
    expect(left('the espresso bar gig in Austin')).toEqual(['job-92']);
    // Near is not the same: the model decides whether a sous chef job is the Line Cook job (it is not).
    expect(left('the sous chef job in Austin')).toEqual(['job-93']);
    expect(left('the coffee job')).toEqual(['job-91', 'job-92']);
    // Nothing near enough: no candidate is left, and the model is not asked.
    expect(semantic('my dog walking job')).toMatchObject({ id: null, tier: null, candidates: [] });
    // Near-certain and clearly ahead: taken alone.
    const open = resolve('the coffee job')!;
    const certain = resolveSemantically(open, [
      [1, 0],
      [0.9, 0.1],
      [0, 1],
      [0.1, 0.9],
    ]);
    expect(certain).toMatchObject({ id: open.candidates[0]!.id, tier: 'semantic', candidates: [] });
    // A wrong number of vectors changes nothing.
    expect(resolveSemantically(open, [[1, 0]])).toBe(open);
  });

  test('property: a job named by its title and place, with filler and typos, is that job whenever it is the only one there', () => {
    const TITLES = [
      'Barista',
      'Line Cook',
      'Warehouse Associate',
      'Event Staff',
      'Hotel Housekeeper',
      'Delivery Driver',
    ];
    const PLACES = ['Austin, TX', 'Portland, OR', 'Denver, CO', 'Reno, NV', 'Boulder, CO', 'Seattle, WA'];
    const typo = (word: string, at: number) =>
      word.length >= 6 ? word.slice(0, at % (word.length - 1)) + word.slice((at % (word.length - 1)) + 1) : word;
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.constantFrom(...TITLES), fc.constantFrom(...PLACES)), {
          minLength: 1,
          maxLength: 6,
          selector: ([title, place]) => `${title}|${place}`,
        }),
        fc.nat(),
        fc.nat(),
        fc.constantFrom('the {} job', 'my {} application', 'any news on the {} shift?', '{}'),
        (jobs, pick, at, frame) => {
          const records = applications(jobs.map(([title, location], i) => ({ id: `job-${i}`, title, location })));
          const [title, place] = jobs[pick % jobs.length]!;
          const words = `${title} in ${place}`.split(/\s+/).map((w, i) => (i === 0 ? typo(w, at) : w));
          const mention = frame.replace('{}', words.join(' '));
          const named = resolveNamedRecord({ kind: 'job', mention }, records);
          expect(named).toMatchObject({ id: `job-${pick % jobs.length}` });
        },
      ),
    );
  });
});
