// Writes to Intercom the conversation's workflow owes: a note, Melvin Status or the snooze that failed for good (an
// outage longer than its activity's retries, credentials refused). The conversation's course in Intercom is how the
// team, and the next workflow, know who answers it, so a lost note would flip its owner: an owed write is kept in the
// conversation record (it survives continue-as-new), written again between turns (../between-turns.ts), and the
// workflow does not end while one is owed. Pure: the record's side of it.
import { HAND_OVER_MARKS, HANDED_BACK_MARK } from '../../contract/notes';
import { DEFAULT_WRITE_RETRY_SECONDS } from '../../contract/shared';
import type { ConversationRecord, MelvinStatus } from '../../contract/state';

/** The longest wait between two tries, as a multiple of the first. */
const MAX_RETRY_FACTOR = 32;
/** A write still refused after a week is given up (a workspace that no longer exists): the workflow may end then. */
export const GIVE_UP_OWED_AFTER_MS = 7 * 24 * 3600 * 1000;

export const owed = (record: ConversationRecord) => (record.owed_writes ??= []);

/** Whether any write is owed. */
export function writesOwed(record: ConversationRecord): boolean {
  return (record.owed_writes?.length ?? 0) > 0;
}

/**
 * Whether a note (one that begins with `mark`, when given) is owed: written, and not yet in Intercom. A later note waits
 * behind any owed one, so the notes reach Intercom in the order they were written.
 */
export function noteOwed(record: ConversationRecord, mark = ''): boolean {
  return record.owed_writes?.some((w) => w.kind === 'note' && w.text.startsWith(mark)) ?? false;
}

/**
 * Whether a note that changes who owns the conversation (a hand-over, a hand-back) is owed: until it lands, the
 * conversation's course in Intercom lacks the latest change of owner, which the record holds.
 */
export function ownerChangeOwed(record: ConversationRecord): boolean {
  return [...HAND_OVER_MARKS, HANDED_BACK_MARK].some((mark) => noteOwed(record, mark));
}

export function oweNote(
  record: ConversationRecord,
  note: { text: string; summary: string; notBefore: number },
  error: string,
): void {
  owed(record).push({
    kind: 'note',
    text: note.text,
    summary: note.summary,
    not_before: note.notBefore,
    owed_since: new Date().toISOString(),
    error,
  });
}

/** Melvin Status or the snooze owed: the latest replaces any owed before it. */
export function oweSetting(
  record: ConversationRecord,
  setting: { kind: 'status'; status: MelvinStatus } | { kind: 'snooze'; seconds: number },
  error: string,
): void {
  settled(record, setting.kind);
  owed(record).push({ ...setting, owed_since: new Date().toISOString(), error });
}

/** A later write of the setting took: the one owed is no longer due. */
export function settled(record: ConversationRecord, kind: 'status' | 'snooze'): void {
  if (!record.owed_writes) return;
  record.owed_writes = record.owed_writes.filter((w) => w.kind !== kind);
}

/** How long to wait before the next try, after `failures` rounds in a row left writes owed. */
export function retryDelayMs(retrySeconds: number | undefined, failures: number): number {
  const factor = Math.min(MAX_RETRY_FACTOR, 2 ** Math.max(0, failures - 1));
  return (retrySeconds ?? DEFAULT_WRITE_RETRY_SECONDS) * 1000 * factor;
}
