// The conversation record's pure rules: the bounded ledger, turns recorded once, deliveries still to answer, owners.
import {
  MAX_LEDGER_IDS,
  MAX_TURNS_KEPT,
  handBackToMelvin,
  handOverToTeam,
  markHandled,
  newConversationRecord,
  recordTurn,
  unansweredDeliveries,
} from '../../src/workflows/conversation-record';
import type { TurnRecord } from '../../src/state';

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
