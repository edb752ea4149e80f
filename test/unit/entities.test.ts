// Tiered entity resolution: a record named in words is resolved to an id of the user's own records, or never sent.
import type { StoredToolData } from '../../src/state';
import {
  mentionArguments,
  resolveCall,
  resolveReference,
  userRecords,
  type UserRecord,
} from '../../src/workflows/entities';

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
