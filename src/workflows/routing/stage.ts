// The talent's stage (seed 002): read from their gathered records first and from their words second. Pure.
import { STAGES, type Stage, type SuggestedActionName } from '../../contract/vocabulary';
import type { SuggestedAction } from '../../contract/schemas';
import type { AgentState, StageReading } from '../../contract/state';
import { userRecords, type UserRecord } from '../entities/entities';

/**
 * A record's status as a stage, by the status's first word, so "interview_scheduled" and "Interviewing" read alike.
 * Jobs are left out: a job's status ("open", "filled") is the posting's, not the talent's. A status that ends the
 * record's road ("rejected", "withdrawn") places the talent nowhere.
 */
const STATUS_STAGES: [RegExp, Stage][] = [
  [/^(submitted|applied|received|new|pending_review)/, 'applied'],
  [/^screen/, 'screening'],
  [/^interview/, 'interviewing'],
  [/^offer/, 'offered'],
  [/^(hired|accepted|confirmed|placed|booked)/, 'hired'],
  [/^(in_progress|working|checked_in|completed|worked|clocked)/, 'working'],
];
const PAYMENT_STAGES: [RegExp, Stage][] = [
  [/^(paid|deposited|settled|sent)/, 'paid'],
  [/^(processing|pending|scheduled|initiated|in_transit|on_hold|failed|returned|due)/, 'awaiting_payment'],
];

/** Stages that speak of the same thing: an application's road, the work itself, or its pay. */
const FAMILY: Record<Stage, 'start' | 'application' | 'work' | 'pay'> = {
  exploring: 'start',
  applied: 'application',
  screening: 'application',
  interviewing: 'application',
  offered: 'application',
  hired: 'application',
  working: 'work',
  awaiting_payment: 'pay',
  paid: 'pay',
};

/** The stage one record places the talent at, or null (a job, or a status that says nothing of it). */
export function recordStage(record: Pick<UserRecord, 'kind' | 'status'>): Stage | null {
  if (!record.status || record.kind === 'job') return null;
  const status = record.status
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  const table = /pay/.test(record.kind) ? PAYMENT_STAGES : STATUS_STAGES;
  return table.find(([pattern]) => pattern.test(status))?.[1] ?? null;
}

const furthest = (stages: Stage[]): Stage => stages.reduce((a, b) => (STAGES.indexOf(b) > STAGES.indexOf(a) ? b : a));

/** Half a year, in days: a record that last moved that long before the talent's latest is their past. */
const PAST_DAYS = 182;

/**
 * The records that say where the talent is now: one that last moved half a year before their latest record is history
 * (last year's paid payment would otherwise be the furthest stage of all). Records without a date stay.
 */
function recent(records: UserRecord[]): UserRecord[] {
  const own = (r: UserRecord) => r.kind !== 'job' && r.latestDate !== undefined;
  const latest = records.filter(own).reduce((a, r) => (r.latestDate! > a ? r.latestDate! : a), '');
  if (!latest) return records;
  const cutoff = new Date(Date.parse(latest) - PAST_DAYS * 86_400_000).toISOString().slice(0, 10);
  return records.filter((r) => !own(r) || r.latestDate! >= cutoff);
}

/**
 * The turn's stage. The records the talent's words name (resolved after Gather) speak first, then all their gathered
 * records: among those, the stage the words speak of when a record confirms it, else the furthest record of the
 * same kind (the words say "payment", the records say which payment stage), else — the words speak of something no
 * record holds — the words. With no words, the furthest record. Null when neither tells.
 */
export function turnStage(state: AgentState): StageReading | null {
  const words = [...state.hops].reverse().find((h) => h.plan?.stage)?.plan?.stage;
  const spoken = words && words !== 'unknown' ? words : null;
  const records = userRecords(state.tool_data);
  const named = new Set(state.hops.flatMap((h) => h.named_records ?? []).flatMap((n) => (n.id ? [n.id] : [])));
  const namedRecords = records.filter((r) => named.has(r.id) || (r.jobId !== undefined && named.has(r.jobId)));
  const staged = (among: UserRecord[]) =>
    among.flatMap((r) => {
      const stage = recordStage(r);
      return stage ? [{ stage, evidence: `${r.kind} ${r.status}` }] : [];
    });
  const found = staged(namedRecords).length ? staged(namedRecords) : staged(recent(records));
  const fromRecords = (candidates: typeof found): StageReading => {
    const stage = furthest(candidates.map((c) => c.stage));
    return { stage, from: 'records', evidence: candidates.find((c) => c.stage === stage)!.evidence };
  };
  if (spoken) {
    const confirmed = found.filter((c) => c.stage === spoken);
    if (confirmed.length) return fromRecords(confirmed);
    const sameKind = found.filter((c) => FAMILY[c.stage] === FAMILY[spoken]);
    if (sameKind.length) return fromRecords(sameKind);
    return { stage: spoken, from: 'words', evidence: 'no gathered record speaks of it' };
  }
  return found.length ? fromRecords(found) : null;
}

/** The turn's stage, read once: Draft reads it before writing; a turn that hands over before Draft reads it then. */
export function settledStage(state: AgentState): StageReading | null {
  if (state.metadata.stage === undefined) state.metadata.stage = turnStage(state);
  return state.metadata.stage;
}

const ACTION_TEXT: Record<SuggestedActionName, string> = {
  reschedule_interview: 'reschedule the interview',
  verify_payout_details: 'verify the payout details',
  ask_business_about_pay: 'ask the business about the pay',
  fix_account_access: 'fix the talent’s account access',
  review_application: 'review the application again',
};

/**
 * The team's next step the turn proposes: the draft's when there is a draft (it has seen the records too, so its none
 * stands), else the latest plan's, from the words alone (a turn handed over before Draft). Null when none is proposed.
 */
export function suggestedStep(state: AgentState): SuggestedAction | null {
  if (state.draft) return state.draft.suggested_action ?? null;
  return [...state.hops].reverse().find((h) => h.plan)?.plan?.suggested_action ?? null;
}

/** The suggested next step for the team's note, or null when the turn proposes none. */
export function suggestedStepLine(state: AgentState): string | null {
  const action = suggestedStep(state);
  return action ? `💡 Suggested next step for the team: ${ACTION_TEXT[action.action]} — ${action.why}` : null;
}

/** The stage for the team's note, with what told it. */
export function stageLine(stage: StageReading | null): string | null {
  return stage ? `Stage: ${stage.stage.replace(/_/g, ' ')} (from the ${stage.from}: ${stage.evidence})` : null;
}
