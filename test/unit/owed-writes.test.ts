// The record's side of the writes a conversation's workflow owes Intercom (src/workflows/records/owed-writes.ts): notes
// kept in order, a setting owed once (its latest value), and the wait between tries.
import { newConversationRecord } from '../../src/workflows/records/conversation-record';
import {
  noteOwed,
  oweNote,
  oweSetting,
  retryDelayMs,
  settled,
  writesOwed,
} from '../../src/workflows/records/owed-writes';

test('notes are owed in the order they were written; a later note waits behind an earlier one', () => {
  const record = newConversationRecord();
  expect(writesOwed(record)).toBe(false);
  oweNote(record, { text: '🚨 first', summary: 'note escalation', notBefore: 1 }, 'Intercom answered 401');
  oweNote(record, { text: '↩️ second', summary: 'note hand-back', notBefore: 2 }, 'waits');
  expect(noteOwed(record)).toBe(true);
  expect(record.owed_writes!.map((w) => (w.kind === 'note' ? w.text : w.kind))).toEqual(['🚨 first', '↩️ second']);
});

test('Melvin Status and the snooze are owed once each, with their latest value; a write that took settles them', () => {
  const record = newConversationRecord();
  oweSetting(record, { kind: 'status', status: 'success' }, 'down');
  oweSetting(record, { kind: 'snooze', seconds: 300 }, 'down');
  oweSetting(record, { kind: 'status', status: 'ROUTE_TO_TEAM' }, 'down');
  expect(record.owed_writes!.map((w) => (w.kind === 'status' ? w.status : w.kind))).toEqual([
    'snooze',
    'ROUTE_TO_TEAM',
  ]);
  expect(noteOwed(record)).toBe(false);
  settled(record, 'status');
  settled(record, 'snooze');
  expect(writesOwed(record)).toBe(false);
});

test('the wait between tries doubles from the configured one, up to 32 times as long', () => {
  expect([1, 2, 3, 6, 7, 40].map((rounds) => retryDelayMs(10, rounds))).toEqual([
    10_000, 20_000, 40_000, 320_000, 320_000, 320_000,
  ]);
  expect(retryDelayMs(undefined, 1)).toBe(60_000);
});
