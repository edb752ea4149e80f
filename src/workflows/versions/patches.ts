// Every patch marker of the conversation workflow, and the rule that a run takes all of them in its first workflow task.
import { patched } from '@temporalio/workflow';

/**
 * Runs whose guard matched internal ids anywhere in the reply (so "$250" was blocked by an id 250) must replay with
 * that match, or a reply it blocked would now go on to the validation service; every run since records this marker.
 */
export const REPLY_GUARD_ID_TOKENS_PATCH = 'reply-guard-id-tokens';

/** Runs from before the validation note went out beside the reply posted it first, and the reply once it was posted. */
export const NOTE_BESIDE_REPLY_PATCH = 'validation-note-beside-reply';

/**
 * Runs from before turn summaries were kept in the memo must replay without the memo's command; every run since records
 * this patch marker the first time it writes one.
 */
export const TURN_SUMMARY_PATCH = 'turn-summary-memo';

/** Runs from before these calls were local activities replay with the activities they scheduled. */
export const LOCAL_ACTIVITIES_PATCH = 'local-reads-and-settings';

/**
 * Runs from before every message was answered or handed over keep the rules they were recorded with (see `Turn.legacy`);
 * every run since records this marker first.
 */
export const EVERY_MESSAGE_PATCH = 'every-message-answered-or-handed-over';

/** Runs from before the semantic and model tiers resolved what the user named go on without their calls. */
export const NAMED_RECORDS_PATCH = 'named-records-tiers';

/** Runs from before Draft retrieved the team's examples from the resolved-conversation index go on without the call. */
export const TEAM_INDEX_PATCH = 'team-examples-from-index';

/**
 * The one marker of a run: it stands for all the patches above, so a turn records one marker instead of seven (each is
 * a history event). A run that has it takes every patch as present without asking; a run recorded before it replays
 * its own markers as they were recorded.
 */
export const CURRENT_RULES_PATCH = 'current-rules-2026-11-27';

/**
 * The rules that followed: the agent's model, embedding and retrieval calls and its tool calls that cannot write run as
 * local activities, the reply and its validation note go out in one activity, and a message that came while the agent
 * worked sends a draft that passed back to Draft once. A change of rules later gets the next marker here: a run
 * records the marker of the newest rules only, still one event.
 */
export const LOCAL_AGENT_CALLS_RULES = 'rules-2026-11-27-local-agent-calls';

/** Then: such a message sends the draft back to Coverage instead, while a hop is left, so a hop can gather its data. */
export const LATE_MESSAGES_RULES = 'rules-2026-11-27-late-messages-to-coverage';

/**
 * Then: a validation note that fails beside the reply is answered by that activity, not thrown (so it spends none of
 * the reply's attempts), and posted again by an activity of its own.
 */
export const NOTE_ON_ITS_OWN_RULES = 'rules-2026-11-27-failed-note-on-its-own';

/**
 * Then: Melvin's own guard also checks that every fact of the reply is grounded and no action is claimed that no tool
 * took, and a draft it holds back is written once more, the model told what was wrong, before the turn hands over.
 */
export const GROUNDED_REPLIES_RULES = 'rules-2026-11-29-grounded-replies';

/**
 * Then: the conversation and its contact are read by two local activities, each with attempts of its own: an attempt
 * that needed both failed when either did, so at 30% of Intercom's calls failing, one read in 200 gave up.
 */
export const INTERCOM_FAULTS_RULES = 'rules-2026-11-29-intercom-faults';

/**
 * Then (issue #41): a write to Intercom that fails for good (a note, Melvin Status, the snooze) is owed and written
 * again between turns, and the workflow does not end while one is owed; before it ends, it reads the conversation once
 * more for a message nobody told it of; a lead's request that comes before the run read the conversation is judged
 * once it has, by who owns it.
 */
export const KEPT_PROMISES_RULES = 'rules-2026-11-29-kept-promises';

/**
 * Then: a local activity other than the agent's calls (the reads, the listings, the writes of a value) is never
 * cancelled. A cancelled scope stops its retries at their next wait, and the attempt that runs is waited for
 * (src/workflows/activity-options/local-calls-interceptor.ts says why).
 */
export const UNCANCELLED_LOCAL_CALLS_RULES = 'rules-2026-11-29-uncancelled-local-calls';

/**
 * Then: while the team's `💬` note is owed (Intercom refused it), a message that comes after it was written is named in
 * a note of its own, queued behind it; the team is told once only of what came after that note went out.
 */
export const WROTE_AGAIN_UNTIL_POSTED_RULES = 'rules-2026-11-30-wrote-again-until-posted';

/**
 * Then: a run that has never read the conversation refuses a lead's hand-back. It handed the conversation over without
 * knowing its reply mode, and in shadow mode such a hand-over gave the team nothing: a hand-back then gave back what
 * Melvin had, and its `↩️` note promised an answer the course in Intercom did not owe.
 */
export const HAND_BACK_NEEDS_A_READ_RULES = 'rules-2026-11-30-hand-back-needs-a-read';

/**
 * Then: when the turn learns who owns the conversation (`Turn.ownerKnown`), the lead's requests that waited for it are
 * answered before the turn goes on. A request resumed by a condition was answered once the activation's other results
 * had run the turn on, and a replay, whose activations group the local activities' results otherwise, answered it at
 * another point of the history (the model-based test found it).
 */
export const REQUESTS_ANSWERED_FIRST_RULES = 'rules-2026-11-30-requests-answered-first';

/**
 * Then: a run closed by the team reads the conversation before it ends, as a run whose quiet period passed does: a
 * message written after the close whose webhook had not come was older than Melvin's last part, so the next workflow
 * took it as handled. And a run that cannot read the conversation goes by the reply mode its record last read, not
 * the configuration: in shadow mode its hand-over gave the team a conversation the team did not own (both found by
 * the model-based test).
 */
export const LAST_READ_RULES = 'rules-2026-11-30-last-read';

/**
 * Then: a workflow that could not read the conversation when it started (a lead's request started it while Intercom
 * refused reads) learns who owns it at its first read that works, as any new workflow does, unless it has learned of a
 * change itself: the first read came in a later turn and took only what was handled before, so a conversation the team
 * owned was answered as Melvin's (the model-based test found it).
 */
export const OWNER_AT_FIRST_READ_RULES = 'rules-2026-11-30-owner-at-first-read';

/**
 * Then: a cancelled run ends only once no delivery waits either: a message written while its last note went out, whose
 * webhook came before the run ended, was named by no note and answered by no turn (the read before the end passed it
 * over, as a webhook had told of it), and a run that could not read hands over what its webhooks told of (found by the
 * model-based test).
 */
export const CANCELLED_WAITING_RULES = 'rules-2026-11-30-cancelled-waiting';

/**
 * Then: a cancelled run writes what it owes Intercom before it ends: a status, snooze or note refused until the cancel
 * was never written, as the record holding it ended with the run (found by the model-based test).
 */
export const CANCELLED_OWED_RULES = 'rules-2026-12-01-cancelled-owed';

/**
 * Then: the team counts as told that the user wrote again only by a `💬` note that went out at once. One queued behind
 * an owed hand-over note named what had come when it was written, and a message that came before the hand-over note
 * landed (before it in Intercom, so Melvin's by its course) was named by no note (found by the model-based test).
 */
export const TOLD_WHEN_LANDED_RULES = 'rules-2026-12-01-told-when-landed';

/**
 * Then: a note that lands late snoozes the conversation again whenever the conversation's last outcome snoozed it, as
 * the conversation record keeps it; runs from before went by the current turn's Finalize, which a later turn that does
 * not finalize (a shadow draft) or a new run has not, and left the conversation open after a late hand-over note
 * (found by the model-based test).
 */
export const SNOOZE_AFTER_LATE_NOTES_RULES = 'rules-2026-12-01-snooze-after-late-notes';

/**
 * Then: an assignment to Melvin dated the same second as the change that gave the team the conversation leaves it to
 * the team until Intercom's course says which came last. Webhooks come in any order: one that came after a teammate's
 * assignment, though it happened before it, gave Melvin a conversation the team owned while Intercom could not be
 * read, and a lead's escalation was accepted and handed it over a second time (found by the model-based test).
 */
export const TIES_KEEP_THE_TEAM_RULES = 'rules-2026-12-01-ties-keep-the-team';

/**
 * Then: a local activity's wait before its next attempt (a timer, once the wait is longer than its
 * `localRetryThreshold`) is started whether or not its caller was cancelled meanwhile, and the caller stops waiting for
 * it when cancelled. The SDK started it only in a caller not cancelled yet; an attempt that ends as a workflow task is
 * extended reaches the workflow before that task's cancellation when it runs, and after it in a replay, so the replay
 * found no timer where the run had one (CI met it twice, a refused Melvin Status and a refused snooze as the run was
 * cancelled: "No command scheduled for event TimerStarted").
 */
export const RETRY_WAIT_RULES = 'rules-2026-12-07-retry-wait';

/**
 * Then: while a note that changes the owner (a hand-over, a hand-back) is owed, reading the course again leaves the
 * owner as the run's record says. The course lacks that note, which lands after every part in it; its latest change
 * is older than the record's. Runs from before took the course's word: an escalation whose 🚨 note Intercom refused
 * gave the conversation back to Melvin on a teammate's older assignment, and Melvin answered the user again (found by
 * the model-based test).
 */
export const OWED_OWNER_NOTE_RULES = 'rules-2026-12-07-owed-owner-note';

/**
 * Then: a turn's Finalize does not snooze a conversation a teammate closed while the run went on, unless Intercom says
 * it is open again (the user wrote since): a snooze reopens a closed conversation. Runs from before snoozed it, while
 * the snooze after late notes already held back (found by the model-based test).
 */
export const CLOSED_STAYS_CLOSED_RULES = 'rules-2026-12-07-closed-stays-closed';

/** The rules' markers, oldest first; a run of any of them has every patch before them. */
export const RULES = [
  CURRENT_RULES_PATCH,
  LOCAL_AGENT_CALLS_RULES,
  LATE_MESSAGES_RULES,
  NOTE_ON_ITS_OWN_RULES,
  GROUNDED_REPLIES_RULES,
  INTERCOM_FAULTS_RULES,
  KEPT_PROMISES_RULES,
  UNCANCELLED_LOCAL_CALLS_RULES,
  WROTE_AGAIN_UNTIL_POSTED_RULES,
  HAND_BACK_NEEDS_A_READ_RULES,
  REQUESTS_ANSWERED_FIRST_RULES,
  LAST_READ_RULES,
  OWNER_AT_FIRST_READ_RULES,
  CANCELLED_WAITING_RULES,
  CANCELLED_OWED_RULES,
  TOLD_WHEN_LANDED_RULES,
  SNOOZE_AFTER_LATE_NOTES_RULES,
  TIES_KEEP_THE_TEAM_RULES,
  RETRY_WAIT_RULES,
  OWED_OWNER_NOTE_RULES,
  CLOSED_STAYS_CLOSED_RULES,
] as const;
type Rules = (typeof RULES)[number];

/**
 * Recorded at the start of every run from EVERY_MESSAGE_PATCH until CURRENT_RULES_PATCH: the patches before it (such a
 * run has them all).
 */
const STARTING_PATCHES = [
  REPLY_GUARD_ID_TOKENS_PATCH,
  NOTE_BESIDE_REPLY_PATCH,
  TURN_SUMMARY_PATCH,
  LOCAL_ACTIVITIES_PATCH,
  NAMED_RECORDS_PATCH,
  TEAM_INDEX_PATCH,
];

/**
 * Which of RULES the run follows (its index), -1 for a run from before them; module state is the run's own (the SDK
 * loads workflow modules per run).
 */
let runRules = -1;

/**
 * Called first thing in a run: whether it is a run from before EVERY_MESSAGE_PATCH. Every later run records its markers
 * here, so the `since` calls further on only read them. A marker first recorded later could land in a workflow task
 * after the one its code ran in: a worker stopped right after a local activity completes its task with the activity's
 * marker alone, a replay then reaches the `patched` call a task before its marker, and fails as nondeterministic (the
 * model-based test found it). The newest rules are asked first: a new run records their marker, and a replay finds the
 * one it recorded (`patched` is false, and records nothing, for a marker a replayed history does not have).
 */
export function isLegacyRun(): boolean {
  for (let i = RULES.length - 1; i >= 0; i--) {
    if (patched(RULES[i]!)) {
      runRules = i;
      return false;
    }
  }
  if (!patched(EVERY_MESSAGE_PATCH)) return true;
  for (const patch of STARTING_PATCHES) patched(patch);
  return false;
}

/** Whether the run follows `patch`: every run of the rules does; an earlier one if it recorded the marker. */
export function since(patch: (typeof STARTING_PATCHES)[number]): boolean {
  return runRules >= 0 || patched(patch);
}

/** Whether the run follows `rules` or later ones: what changed with a marker of RULES asks this. */
export function rulesSince(rules: Rules): boolean {
  return runRules >= RULES.indexOf(rules);
}
