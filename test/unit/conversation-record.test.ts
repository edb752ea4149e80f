// The conversation record's pure rules: the bounded ledger, turns recorded once, deliveries still to answer, owners.
import {
  MAX_FRESH_BYTES,
  MAX_LEDGER_IDS,
  MAX_TURNS_KEPT,
  handBackToMelvin,
  handOverToTeam,
  freshResult,
  markHandled,
  newConversationRecord,
  rememberResults,
  recordTeamAnswer,
  recordTurn,
  unansweredDeliveries,
} from '../../src/workflows/records/conversation-record';
import type { GatheredCall, TurnRecord } from '../../src/contract/state';

const turn = (runId: string, partIds: string[] = []): TurnRecord => ({
  run_id: runId,
  ended_at: '2026-11-23T00:00:00.000Z',
  melvin_status: 'success',
  escalation_source: null,
  part_ids: partIds,
});

test('the ledger keeps each id once, newest last, and forgets the oldest past its bound', () => {
  const record = newConversationRecord();
  markHandled(record, ['a', 'b', 'a']);
  expect(record.handled_part_ids).toEqual(['a', 'b']);
  markHandled(
    record,
    Array.from({ length: MAX_LEDGER_IDS }, (_, i) => `p${i}`),
  );
  expect(record.handled_part_ids).toHaveLength(MAX_LEDGER_IDS);
  expect(record.handled_part_ids[0]).toBe('p0');
  expect(record.handled_part_ids.at(-1)).toBe(`p${MAX_LEDGER_IDS - 1}`);
});

test('a turn is recorded once per run, its parts go to the ledger, and only the latest turns are kept', () => {
  const record = newConversationRecord();
  recordTurn(record, turn('run-1', ['u1']));
  recordTurn(record, { ...turn('run-1', ['u1']), melvin_status: 'ROUTE_TO_TEAM' });
  expect(record.turns).toEqual([{ ...turn('run-1', ['u1']), melvin_status: 'ROUTE_TO_TEAM' }]);
  expect(record.turn_count).toBe(1);
  expect(record.handled_part_ids).toEqual(['u1']);
  for (let i = 2; i <= MAX_TURNS_KEPT + 5; i++) recordTurn(record, turn(`run-${i}`));
  expect(record.turn_count).toBe(MAX_TURNS_KEPT + 5);
  expect(record.turns).toHaveLength(MAX_TURNS_KEPT);
  expect(record.turns[0]!.run_id).toBe('run-6');
});

test('deliveries still to answer: from the first not consumed, without those for parts already handled', () => {
  const record = newConversationRecord();
  markHandled(record, ['u1']);
  const delivery = (n: string, partId: string | null) => ({
    notification_id: n,
    part_id: partId,
    received_at: '2026-11-23T00:00:00.000Z',
  });
  const deliveries = [delivery('n1', 'u0'), delivery('n2', 'u1'), delivery('n3', null), delivery('n4', 'u2')];
  expect(unansweredDeliveries(record, deliveries, 1).map((d) => d.notification_id)).toEqual(['n3', 'n4']);
});

test('a hand-over keeps its first reason; a hand-back starts afresh', () => {
  const record = newConversationRecord();
  handOverToTeam(record, 'User requested to talk to a human', 't1');
  handOverToTeam(record, 'a later escalation', 't2');
  expect(record.ownership).toEqual({
    owner: 'team',
    since: 't1',
    reason: 'User requested to talk to a human',
    team_told_of_new_messages: false,
  });
  record.ownership.team_told_of_new_messages = true;
  handBackToMelvin(record, 'sorted (lead)', 't3');
  expect(record.ownership).toEqual({
    owner: 'melvin',
    since: 't3',
    reason: 'sorted (lead)',
    team_told_of_new_messages: false,
  });
});

describe('fresh results', () => {
  const T0 = Date.parse('2026-11-23T10:00:00.000Z');
  const result = (tool: string, parameters: Record<string, unknown>, data: unknown, extra = {}): GatheredCall => ({
    tool_name: tool,
    parameters,
    success: true,
    data,
    error: null,
    execution_time_ms: 5,
    timestamp: new Date(T0).toISOString(),
    truncated: false,
    ...extra,
  });
  const ttl = { default_seconds: 600, per_tool: { get_user_payments: 60, get_job_details: 0 } };

  test('a successful call is reused for the same arguments in any order until its tool’s TTL passes', () => {
    const record = newConversationRecord();
    rememberResults(
      record,
      [
        result('get_user_payments', { email: 'a@x', status: 'any' }, { payments: [1] }),
        result('get_user_profile', { email: 'a@x' }, { name: 'Ana' }),
        result('get_job_details', { job_id: 'j1' }, { title: 'Cook' }),
        result('get_user_applications', { email: 'a@x' }, null, { success: false }),
      ],
      ttl,
      T0,
    );
    expect(record.fresh_results!.map((r) => r.tool_name)).toEqual(['get_user_payments', 'get_user_profile']);
    const payments = freshResult(record, 'get_user_payments', { status: 'any', email: 'a@x' }, T0 + 59_000);
    expect(payments).toMatchObject({ data: { payments: [1] }, fetched_at: new Date(T0).toISOString() });
    expect(freshResult(record, 'get_user_payments', { email: 'b@x', status: 'any' }, T0)).toBeUndefined();
    expect(freshResult(record, 'get_user_payments', { email: 'a@x', status: 'any' }, T0 + 60_000)).toBeUndefined();
    expect(freshResult(record, 'get_user_profile', { email: 'a@x' }, T0 + 599_000)).toBeDefined();

    // A later turn drops what expired and keeps a reused result's first fetch time.
    rememberResults(
      record,
      [result('get_user_profile', { email: 'a@x' }, { name: 'Ana' }, { reused_from: new Date(T0).toISOString() })],
      ttl,
      T0 + 120_000,
    );
    expect(record.fresh_results!.map((r) => [r.tool_name, r.fetched_at])).toEqual([
      ['get_user_profile', new Date(T0).toISOString()],
    ]);
  });

  test('without a TTL nothing is kept, and the kept results stay under their byte bound, newest kept', () => {
    const record = newConversationRecord();
    rememberResults(record, [result('get_user_profile', { email: 'a@x' }, {})], undefined, T0);
    expect(record.fresh_results).toEqual([]);
    const big = 'x'.repeat(20_000);
    rememberResults(
      record,
      [1, 2, 3, 4, 5].map((n) => result('get_job_details', { job_id: `j${n}` }, big)),
      { default_seconds: 600, per_tool: {} },
      T0,
    );
    expect(JSON.stringify(record.fresh_results).length).toBeLessThanOrEqual(MAX_FRESH_BYTES);
    expect(record.fresh_results!.map((r) => r.parameters.job_id)).toEqual(['j3', 'j4', 'j5']);
  });
});

test('shadow mode: a teammate’s answer goes with the latest turn only when it noted a draft and has no answer yet', () => {
  const record = newConversationRecord();
  const answer = (text: string) => ({ text, by: 'Sam', at: '2026-11-23T00:00:00.000Z' });
  expect(recordTeamAnswer(record, answer('before any turn'))).toBe(false);
  recordTurn(record, turn('run-1'));
  expect(recordTeamAnswer(record, answer('after a turn Melvin answered'))).toBe(false);
  recordTurn(record, { ...turn('run-2'), shadow_draft: 'Your pay arrives on November 27.', team_answer: null });
  expect(recordTeamAnswer(record, answer('It arrives Friday.'))).toBe(true);
  expect(recordTeamAnswer(record, answer('A second reply'))).toBe(false);
  expect(record.turns.at(-1)?.team_answer).toEqual(answer('It arrives Friday.'));
  expect(record.turns[0]?.team_answer).toBeUndefined();
});
