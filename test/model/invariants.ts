// The model of a conversation: what must hold after any sequence of events on it, checked on what was observed (the
// conversation in Intercom, what the operator API answered, and every run's history). Pure, so each rule is tested on
// hand-built observations (test/unit/conversation-model.test.ts) and can be shown to fail.
import {
  APPROVAL_MARK,
  ESCALATION_MARK,
  HANDED_BACK_MARK,
  SENSITIVE_REASON,
  REQUESTED_BY,
  SHADOW_MARK,
  UNDELIVERED_MARK,
  WITHHELD_MARK,
  WROTE_AGAIN_MARK,
} from '../../src/contract/notes';
import { STOPPED_BY_CANCELLATION } from '../../src/workflows/activity-options/local-calls-interceptor';
import type { Fact, RunFacts } from './history';

export type ReplyMode = 'auto' | 'approve' | 'shadow';

/** A part of the conversation in Intercom, in order; the source (the first message) first. */
export interface ObservedPart {
  id: string;
  type: string;
  author: 'user' | 'melvin' | 'teammate';
  text: string;
  /** On an assignment part: to whom. */
  assignedTo?: 'melvin' | 'teammate' | 'nobody';
}

/** A lead's request through the operator API, what it answered, and how many parts the conversation had then. */
export interface OperatorCall {
  action: 'escalate' | 'hand_back' | 'approve' | 'edit' | 'reject';
  /** Unique per call: the reason of an escalation, hand-back or rejection, the text of an edit. */
  words: string;
  status: number;
  partsBefore: number;
  /**
   * On an approval: the draft waiting when the lead decided, as the report page and the CLI show it (the state query);
   * undefined when none was waiting or the query failed, and then the last `✋` note before the call stands for it.
   */
  draftSeen?: string;
  /**
   * The worker was down, or had just gone away (its workflows' tasks wait out the sticky queue's timeout first): the
   * workflow may answer after the operator API's deadline, so a 503 is an honest answer, whatever came of it.
   */
  workerDisrupted?: boolean;
  /**
   * A 503 that names `workflow not ready`: Temporal refused the request because the workflow's task failed (with two
   * workers, sdk-core fails one now and then) and recorded nothing of it. It counts as refused, so it must have no effect.
   */
  notReady?: boolean;
}

export interface Observation {
  mode: ReplyMode;
  /** The texts that only tell the user a person will follow up. */
  handoverTexts: string[];
  /** Each message the user wrote: its part, and the tag its text (or its file's name) carries. */
  userMessages: { partId: string; tag: string }[];
  parts: ObservedPart[];
  melvinStatus: string | null;
  calls: OperatorCall[];
  runs: RunFacts[];
  /** Why the conversation never settled, if it did not. */
  unsettled: string | null;
}

const HAND_OVER_NOTES = [ESCALATION_MARK, UNDELIVERED_MARK, WITHHELD_MARK];
const TOLD_NOTES = [...HAND_OVER_NOTES, WROTE_AGAIN_MARK];
/** Workflow task failures that are part of normal operation: a task that met new events, a worker that went away. */
const BENIGN_TASK_FAILURES = [
  'WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND',
  'WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE',
  'WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED',
];

const starts = (text: string, marks: string[]) => marks.some((mark) => text.startsWith(mark));
const fold = (text: string) => text.replace(/\s+/g, ' ').trim();

/** A completed post: the activity's text and the part it says it made. */
interface Post {
  activity: 'sendReply' | 'addNote';
  text: string;
  partId: string | null;
  run: RunFacts;
  scheduled: Extract<Fact, { kind: 'scheduled' }>;
}

function completedPosts(runs: RunFacts[]): Post[] {
  const posts: Post[] = [];
  for (const run of runs) {
    const scheduled = new Map<number, Extract<Fact, { kind: 'scheduled' }>>();
    for (const fact of run.facts) {
      if (fact.kind === 'scheduled') scheduled.set(fact.id, fact);
      if (fact.kind !== 'completed') continue;
      const s = scheduled.get(fact.scheduledId);
      if (!s || (s.activity !== 'sendReply' && s.activity !== 'addNote')) continue;
      const input = s.input as { text?: string; note?: string };
      const result = fact.result as { part_id?: string | null; note?: { part_id?: string | null } } | null;
      posts.push({ activity: s.activity, text: input.text ?? '', partId: result?.part_id ?? null, run, scheduled: s });
      // A reply can carry the validation note beside it: a post of its own, made by the same activity.
      if (input.note !== undefined && result?.note && 'part_id' in result.note) {
        posts.push({ activity: 'addNote', text: input.note, partId: result.note.part_id ?? null, run, scheduled: s });
      }
    }
  }
  return posts;
}

/** Every reply and note posted exactly once: each completed post is one part of its own, and each of Melvin's parts one post's. */
export function postedOnce(o: Observation): string[] {
  const problems: string[] = [];
  const posts = completedPosts(o.runs);
  const byPart = new Map<string, Post[]>();
  for (const post of posts) {
    if (!post.partId) continue;
    byPart.set(post.partId, [...(byPart.get(post.partId) ?? []), post]);
  }
  for (const [partId, shared] of byPart) {
    if (shared.length > 1) {
      problems.push(
        `${shared.length} posts took part ${partId} as theirs, so the others never went out: ${shared.map((p) => `"${p.text.slice(0, 60)}"`).join(', ')}`,
      );
    }
  }
  const parts = new Map(o.parts.map((p) => [p.id, p]));
  for (const post of posts) {
    const part = post.partId ? parts.get(post.partId) : undefined;
    if (!part)
      problems.push(`the ${post.activity} "${post.text.slice(0, 60)}" completed, but its part is not in Intercom`);
    else if (fold(part.text) !== fold(post.text)) {
      problems.push(
        `the ${post.activity} "${post.text.slice(0, 60)}" took part ${part.id} ("${part.text.slice(0, 60)}") as its own`,
      );
    }
  }
  for (const part of o.parts) {
    if (part.author !== 'melvin' || (part.type !== 'comment' && part.type !== 'note')) continue;
    if (!byPart.has(part.id))
      problems.push(`Melvin's ${part.type} "${part.text.slice(0, 60)}" was posted more than once`);
  }
  return problems;
}

/** Who answers the user, as the events of the runs decided it, in the order the workflow saw them. */
interface OwnerChange {
  /** History position from which the workflow knew of it: a signal's event, an update's sequencing event. */
  at: number;
  /**
   * From a local activity's result: its marker is recorded with the commands the code issued after reading it, in the
   * same workflow task completion, so commands after the marker knew it.
   */
  local?: boolean;
  run: RunFacts;
  owner?: 'melvin' | 'team';
  /** An operator's escalation accepted (its reason) or acted on (`done`). */
  escalation?: { reason: string; done: boolean };
}

/**
 * Who owns the conversation by its course in Intercom: the latest of Melvin's hand-over notes, a lead's hand-back note,
 * and a teammate's reply, assignment (to Melvin or a teammate; to nobody changes nothing) or close; null when none is
 * there. In shadow mode the team answers anyway, so only a lead's escalation or hand-back counts.
 */
export function ownerByCourse(parts: ObservedPart[], mode: ReplyMode): 'melvin' | 'team' | null {
  let owner: 'melvin' | 'team' | null = null;
  for (const p of parts) {
    const byOperator = p.text.split('\n').some((line) => line.startsWith(REQUESTED_BY));
    if (p.author === 'melvin' && p.type === 'note') {
      if (p.text.startsWith(ESCALATION_MARK) && (mode !== 'shadow' || byOperator)) owner = 'team';
      if (starts(p.text, [UNDELIVERED_MARK, WITHHELD_MARK]) && mode !== 'shadow') owner = 'team';
      if (p.text.startsWith(HANDED_BACK_MARK)) owner = 'melvin';
    }
    if (p.author !== 'teammate' || mode === 'shadow') continue;
    if (p.type === 'comment' || p.type === 'close') owner = 'team';
    if (p.type === 'assignment' && p.assignedTo === 'teammate') owner = 'team';
    if (p.type === 'assignment' && p.assignedTo === 'melvin') owner = 'melvin';
  }
  return owner;
}

function ownerChanges(o: Observation): OwnerChange[] {
  const changes: OwnerChange[] = [];
  let since = 0;
  // A teammate's action delivered again (Intercom redelivers; another ingress forwards it) is the same action.
  const teamActionsSeen = new Set<string>();
  // Melvin's notes that change the owner, written but not in Intercom yet (refused, so owed): the course read meanwhile
  // lacks its latest change, and the owner stays what the workflow made it. Owed notes go on across continue-as-new.
  const owedOwnerNotes = new Set<string>();
  for (const [index, run] of o.runs.entries()) {
    // A workflow that starts afresh (not continued from the run before) reads the owner from Intercom at its first
    // fetch, from the parts there were then: what happened while no workflow was open (a teammate assigning the
    // conversation, say) is known only from there.
    const previous = o.runs[index - 1]?.facts.find((f) => f.kind === 'closed');
    let fresh = !(previous?.kind === 'closed' && previous.how === 'continuedAsNew');
    if (fresh) owedOwnerNotes.clear();
    const ownerNotes = new Map<number, string>();
    // A hand-back that comes before the first fetch is held until the run's first turn is over, then applied (its ↩️
    // note is posted then): that turn goes by the owner Intercom shows.
    let heldHandBack = false;
    for (const fact of run.facts) {
      // The course in Intercom decides at a new workflow's first fetch, and when the workflow reads it again after a
      // teammate acted (webhooks may come late or out of order).
      const reread = fact.kind === 'local' && fact.activity === 'readOwnership' && !fact.failed;
      if ((fresh && fact.kind === 'local' && fact.activity === 'fetchConversation' && !fact.failed) || reread) {
        fresh = false;
        const ids = new Set((fact.result as { part_ids?: string[] } | null)?.part_ids ?? []);
        const read = o.parts.filter((p, i) => i === 0 || ids.has(p.id));
        const course = ownerByCourse(read, o.mode);
        const owedMissing = [...owedOwnerNotes].some((text) => !read.some((p) => p.text === text));
        if (course && !(reread && owedMissing)) changes.push({ at: fact.id, local: true, run, owner: course });
        continue;
      }
      if (fact.kind === 'scheduled' && fact.activity === 'addNote') {
        const text = String((fact.input as { text?: unknown }).text ?? '');
        if (starts(text, [ESCALATION_MARK, UNDELIVERED_MARK, WITHHELD_MARK, HANDED_BACK_MARK])) {
          ownerNotes.set(fact.id, text);
          owedOwnerNotes.add(text);
        }
      }
      if (fact.kind === 'completed' && ownerNotes.has(fact.scheduledId)) {
        owedOwnerNotes.delete(ownerNotes.get(fact.scheduledId)!);
      }
      // A lead's request the workflow refused (409) changed nothing.
      if (fact.kind === 'update' && fact.refused) continue;
      const handBackRequest =
        (fact.kind === 'update' && fact.name === 'requestHandBack') ||
        (fact.kind === 'signal' && fact.name === 'handBack');
      if (fresh && handBackRequest) {
        heldHandBack = true;
        continue;
      }
      if (heldHandBack && fact.kind === 'scheduled' && fact.activity === 'addNote') {
        const text = String((fact.input as { text?: unknown }).text ?? '');
        if (text.startsWith(HANDED_BACK_MARK)) {
          heldHandBack = false;
          since = Math.max(since, Date.parse(fact.time));
          changes.push({ at: fact.id, run, owner: 'melvin' });
          continue;
        }
      }
      if (fact.kind === 'signal' && fact.name === 'teamAction' && o.mode !== 'shadow') {
        const args = fact.args as { action?: string; toMelvin?: boolean; at?: string; notificationId?: string };
        if (args.notificationId && teamActionsSeen.has(args.notificationId)) continue;
        if (args.notificationId) teamActionsSeen.add(args.notificationId);
        const toMelvin = args.action === 'assigned' && !!args.toMelvin;
        // A late delivery of something older than the current owner changes nothing; Intercom dates to the second, and
        // within the owner's second the webhook is taken until the course is read again.
        const second = Math.floor(Date.parse(args.at ?? fact.time) / 1000);
        if (second < Math.floor(since / 1000)) continue;
        since = Date.parse(args.at ?? fact.time);
        changes.push({ at: fact.id, run, owner: toMelvin ? 'melvin' : 'team' });
      } else if (
        (fact.kind === 'update' && fact.name === 'requestHandBack') ||
        (fact.kind === 'signal' && fact.name === 'handBack')
      ) {
        since = Date.parse(fact.time);
        changes.push({ at: fact.kind === 'update' ? fact.seenAt : fact.id, run, owner: 'melvin' });
      } else if (
        (fact.kind === 'update' && fact.name === 'requestEscalation') ||
        (fact.kind === 'signal' && fact.name === 'forceEscalation')
      ) {
        const reason = String((fact.args as { reason?: unknown }).reason ?? '');
        changes.push({ at: fact.kind === 'update' ? fact.seenAt : fact.id, run, escalation: { reason, done: false } });
      } else if (fact.kind === 'scheduled' && fact.activity === 'addNote') {
        const text = String((fact.input as { text?: unknown }).text ?? '');
        const byOperator = text.split('\n').some((line) => line.startsWith(REQUESTED_BY));
        if (text.startsWith(ESCALATION_MARK) && (o.mode !== 'shadow' || byOperator)) {
          since = Date.parse(fact.time);
          changes.push({ at: fact.id, run, owner: 'team', escalation: { reason: text, done: true } });
        } else if (starts(text, [UNDELIVERED_MARK, WITHHELD_MARK])) {
          since = Date.parse(fact.time);
          changes.push({ at: fact.id, run, owner: 'team' });
        }
      }
    }
  }
  return changes;
}

/**
 * No reply from Melvin while a lead or teammate owns the conversation, nor after a lead's escalation it had accepted
 * (until that escalation's note, which may tell the user a person will follow up); none at all in shadow mode.
 */
export function noReplyAgainstTheOwner(o: Observation): string[] {
  const problems: string[] = [];
  const changes = ownerChanges(o);
  for (const [index, run] of o.runs.entries()) {
    for (const fact of run.facts) {
      if (fact.kind !== 'scheduled' || fact.activity !== 'sendReply') continue;
      const text = String((fact.input as { text?: unknown }).text ?? '');
      if (o.mode === 'shadow') {
        problems.push(`shadow mode sent the user "${text.slice(0, 60)}"`);
        continue;
      }
      // What the workflow knew when it decided this reply: every change of earlier runs, and this run's up to then.
      const known = changes.filter(
        (c) => o.runs.indexOf(c.run) < index || (c.run === run && (c.local ? c.at < fact.id : c.at <= fact.seenUpTo)),
      );
      let owner: 'melvin' | 'team' = 'melvin';
      const pending: string[] = [];
      for (const change of known) {
        if (change.owner) owner = change.owner;
        if (change.owner === 'melvin') pending.length = 0;
        if (change.escalation?.done) {
          const i = pending.findIndex((reason) => change.escalation!.reason.includes(reason));
          if (i >= 0) pending.splice(i, 1);
        } else if (change.escalation) pending.push(change.escalation.reason);
      }
      const handover = o.handoverTexts.includes(text);
      if (owner === 'team')
        problems.push(`Melvin replied "${text.slice(0, 60)}" while the team owned the conversation`);
      else if (pending.length && !handover) {
        problems.push(`Melvin replied "${text.slice(0, 60)}" after accepting a lead's escalation (${pending[0]})`);
      }
    }
  }
  return problems;
}

/** The approval note of the draft a lead was asked to decide on: the draft is its last paragraph. */
function approvalNoteBefore(parts: ObservedPart[], before: number): ObservedPart | undefined {
  return parts
    .slice(0, before)
    .filter((p) => p.author === 'melvin' && p.type === 'note' && p.text.startsWith(APPROVAL_MARK))
    .at(-1);
}

/**
 * The part whose change of owner the course at `end` goes by (`ownerByCourse`), or undefined when none changed it: a
 * part of Melvin's (a hand-over or hand-back note) the workflow knew of, a teammate's it may have heard of late.
 */
function lastOwnerChange(parts: ObservedPart[], end: number, mode: ReplyMode): ObservedPart | undefined {
  return parts
    .slice(0, end)
    .filter((p) => ownerByCourse([p], mode) !== null)
    .at(-1);
}

/**
 * Every operator request has its effect, or is refused with 409 (404: no conversation; 503 `workflow not ready`: the
 * workflow's task failed) and has none. An escalation's
 * `🚨` note hands over a conversation the team did not own by its course, a hand-back's `↩️` note gives back one the
 * team owned; an approval sends the draft the lead saw, an edit the lead's text (or, a teammate having taken over,
 * the draft goes to them in a withheld note).
 */
export function operatorRequestsTookEffect(o: Observation): string[] {
  const problems: string[] = [];
  const indexed = o.parts.map((p, index) => ({ ...p, index }));
  const melvin = indexed.filter((p) => p.author === 'melvin');
  const after = (call: OperatorCall) => melvin.filter((p) => p.index >= call.partsBefore);
  const noteOf = (parts: typeof melvin, mark: string, words: string) =>
    parts.find((p) => p.type === 'note' && p.text.startsWith(mark) && p.text.includes(words));
  for (const call of o.calls) {
    const accepted = call.status >= 200 && call.status < 300;
    const refused = call.status === 409 || call.status === 404 || (call.status === 503 && call.notReady === true);
    if (!accepted && !refused) {
      if (!(call.status === 503 && call.workerDisrupted)) {
        problems.push(`the operator API answered ${call.status} to ${call.action} "${call.words}"`);
      }
      continue;
    }
    const describe = `${call.action} "${call.words}" (answered ${call.status})`;
    if (call.action === 'escalate' || call.action === 'hand_back' || call.action === 'reject') {
      const mark = call.action === 'hand_back' ? HANDED_BACK_MARK : ESCALATION_MARK;
      const note = noteOf(after(call), mark, call.words);
      if (accepted && !note) problems.push(`${describe} left no ${mark} note`);
      if (refused && noteOf(melvin, mark, call.words)) problems.push(`${describe} was refused, yet acted on`);
      if (!accepted || !note || call.action === 'reject') continue;
      // Judged by what the workflow could know: Melvin's own notes it always knows; a teammate's action it may hear of
      // after the request (a late webhook), and a request taken before then stands.
      const change = lastOwnerChange(o.parts, note.index, o.mode);
      const known = !change || change.author === 'melvin';
      const owner = ownerByCourse(o.parts.slice(0, note.index), o.mode);
      if (call.action === 'hand_back' && owner !== 'team' && known) {
        problems.push(`${describe} handed back a conversation the team did not own (its owner: ${owner ?? 'Melvin'})`);
      }
      if (call.action === 'escalate' && owner === 'team' && known) {
        problems.push(`${describe} handed over a conversation the team owned already`);
      }
    } else {
      // The draft the lead saw: the one waiting when they decided, else the last `✋` note before the call (whose last
      // paragraph is the draft). The note alone is not enough: one refused or queued behind an owed write never lands.
      const seen = call.draftSeen ?? approvalNoteBefore(o.parts, call.partsBefore)?.text;
      const sent = after(call).some((p) => {
        if (p.type !== 'comment' || !fold(p.text)) return false;
        return call.action === 'edit'
          ? fold(p.text) === fold(call.words)
          : seen !== undefined && fold(seen).endsWith(fold(p.text));
      });
      const withheld = after(call).some((p) => p.type === 'note' && p.text.startsWith(WITHHELD_MARK));
      if (accepted && !sent && !withheld) {
        problems.push(
          `${describe} sent no reply of the text the lead ${call.action === 'edit' ? 'wrote' : 'saw'}, and withheld none`,
        );
      }
      if (refused && call.action === 'edit' && melvin.some((p) => p.type === 'comment' && p.text === call.words)) {
        problems.push(`${describe} was refused, yet its text was sent`);
      }
    }
  }
  return problems;
}

/**
 * The Melvin Status each kind of hand-over sets, by the reason its `🚨` note opens with: seed 000's table (a request
 * for a person, hops exhausted, validation failed, a draft that failed, an initialization that failed) and the kinds
 * Melvin adds (docs/architecture.md). Any other reason is an operator's (a lead's escalation, a rejection, an approval
 * that timed out, a cancelled run): the team's.
 */
const STATUS_BY_REASON: [prefix: string, status: string][] = [
  ['Exceeded maximum hops', 'ROUTE_TO_TEAM'],
  ['User requested to talk to a human', 'ROUTE_TO_TEAM'],
  ['No safe answer', 'NO_SAFE_ANSWER'],
  [SENSITIVE_REASON, 'SENSITIVE_REQUEST'],
  ['Validation failed', 'VALIDATION_FAILED'],
  ['Draft generation error', 'RESPONSE_FAILED'],
  ['Initialization failed', 'error'],
  ['Coverage analysis failed', 'error'],
  ['Validation error', 'error'],
  ['Planning failed', 'error'],
  ['Partly answered', 'partial'],
  ['The talent is frustrated', 'FRUSTRATED'],
  ['The user sent only files', 'ROUTE_TO_TEAM'],
];

function handOverStatus(note: string): string {
  const reason = note.slice(ESCALATION_MARK.length).trim();
  return STATUS_BY_REASON.find(([prefix]) => reason.startsWith(prefix))?.[1] ?? 'ROUTE_TO_TEAM';
}

/**
 * Melvin Status and the snooze follow the conversation's last outcome: a reply (success), a hand-over (the status of
 * its kind), a reply not delivered (MESSAGE_FAILED), a reply withheld for a teammate who took over (ROUTE_TO_TEAM, not
 * snoozed: a teammate is on it). Shadow notes and hand-backs are not outcomes, and a teammate who closed the
 * conversation after the outcome, or closed it with no message of the user's since, excuses its snooze, which would
 * reopen it (docs/testing.md says why).
 */
export function statusMatchesLastOutcome(o: Observation): string[] {
  let last: { index: number; expect: string; what: string; snooze: boolean } | null = null;
  o.parts.forEach((p, index) => {
    if (p.author !== 'melvin') return;
    if (p.type === 'comment' && !o.handoverTexts.includes(p.text))
      last = { index, expect: 'success', what: 'a reply', snooze: true };
    if (p.type === 'note' && p.text.startsWith(ESCALATION_MARK)) {
      last = { index, expect: handOverStatus(p.text), what: 'a hand-over', snooze: true };
    }
    if (p.type === 'note' && p.text.startsWith(UNDELIVERED_MARK)) {
      last = { index, expect: 'MESSAGE_FAILED', what: 'a reply not delivered', snooze: true };
    }
    if (p.type === 'note' && p.text.startsWith(WITHHELD_MARK)) {
      last = { index, expect: 'ROUTE_TO_TEAM', what: 'a reply withheld for a teammate', snooze: false };
    }
  });
  if (!last) return [];
  const { index, expect, what, snooze } = last as { index: number; expect: string; what: string; snooze: boolean };
  const problems: string[] = [];
  if (o.melvinStatus !== expect) {
    problems.push(`Melvin Status is ${o.melvinStatus}, but the last outcome was ${what} (${expect})`);
  }
  const snoozed = o.parts.some((p, i) => i > index && p.author === 'melvin' && p.type === 'snoozed');
  const closedAfter = o.parts.some((p, i) => i > index && p.author === 'teammate' && p.type === 'close');
  if (snooze && !snoozed && !closedAfter && !closedForGood(o.parts))
    problems.push(`the conversation was not snoozed after its last outcome (${what})`);
  return problems;
}

/**
 * A teammate closed the conversation and the user has not written since (a message of theirs reopens it): the close
 * ends its course, and a note of Melvin's that lands after it (owed, refused until then) asks for no snooze.
 */
export function closedForGood(parts: ObservedPart[]): boolean {
  let closed = false;
  for (const p of parts) {
    if (p.author === 'teammate' && p.type === 'close') closed = true;
    if (p.author === 'user') closed = false;
  }
  return closed;
}

interface DraftContextSeen {
  messages?: { role: string; content: string }[];
  unanswered_messages?: string[];
}

/** Drafts from before the unanswered messages were named answered the user's messages after Melvin's last one. */
function trailingUserMessages(messages: { role: string; content: string }[]): string[] {
  let start = messages.length;
  while (start > 0 && messages[start - 1]!.role === 'user') start -= 1;
  return messages.slice(start).map((m) => m.content);
}

type DraftFact = Extract<Fact, { kind: 'scheduled' | 'local' }>;

/** The drafts of a run: activities in runs from before the agent's calls were local, local activities since. */
const draftsOf = (run: RunFacts): DraftFact[] =>
  run.facts.filter(
    (f): f is DraftFact => (f.kind === 'scheduled' || (f.kind === 'local' && !f.failed)) && f.activity === 'draft',
  );

/**
 * The draft a reply or shadow note came from: the last one before it in its run, unless an earlier run wrote its text.
 * A note that failed for good is owed and posted by a later run, after that run's own draft (a shadow note whose
 * run could not post it is the next run's first post).
 */
function draftOf(o: Observation, post: Post): DraftFact | undefined {
  const own = draftsOf(post.run)
    .filter((f) => f.id < post.scheduled.id)
    .at(-1);
  const wrote = (f: DraftFact) => {
    const text = (f.kind === 'local' ? (f.result as { output?: { text?: string } } | null)?.output?.text : null) ?? '';
    return text !== '' && post.text.includes(text);
  };
  if (own && wrote(own)) return own;
  const earlier = o.runs.slice(0, o.runs.indexOf(post.run)).flatMap(draftsOf).filter(wrote).at(-1);
  return earlier ?? own;
}

/** The user's messages each reply answered: those its draft was told were unanswered (by the tags they carry). */
function answersOf(o: Observation): Map<string, number> {
  const answers = new Map<string, number>();
  for (const post of completedPosts(o.runs)) {
    const answering =
      (post.activity === 'sendReply' && !o.handoverTexts.includes(post.text)) ||
      (post.activity === 'addNote' && post.text.startsWith(SHADOW_MARK));
    if (!answering) continue;
    const draft = draftOf(o, post);
    const context = (draft?.input as { context?: DraftContextSeen } | undefined)?.context;
    const unanswered = context?.unanswered_messages ?? trailingUserMessages(context?.messages ?? []);
    for (const { partId, tag } of o.userMessages) {
      if (unanswered.some((m) => m.includes(tag))) answers.set(partId, (answers.get(partId) ?? 0) + 1);
    }
  }
  return answers;
}

/**
 * The owner by the conversation's course at each part (as `ownerByCourse` reads it up to and with that part), and where
 * the period of that owner began: the part of the change that gave it the conversation (-1 from the start).
 */
function ownerPeriods(parts: ObservedPart[], mode: ReplyMode): { owner: 'melvin' | 'team' | null; since: number }[] {
  let owner: 'melvin' | 'team' | null = null;
  let since = -1;
  return parts.map((_, index) => {
    const now = ownerByCourse(parts.slice(0, index + 1), mode);
    if (now !== owner) {
      owner = now;
      since = index;
    }
    return { owner, since };
  });
}

/**
 * Every message of the user is answered by exactly one reply, or handed to the team: a note of Melvin's after it names
 * it (quotes its words, or its file's name), or the conversation was already the team's when it came and the team was
 * told that the user wrote again (`💬`) in that period of its ownership. A teammate acting after a message does not
 * excuse it: Melvin tells the team of every message it leaves unanswered.
 */
export function everyMessageAnsweredOrHandedOver(o: Observation): string[] {
  const problems: string[] = [];
  const answers = answersOf(o);
  const position = new Map(o.parts.map((p, index) => [p.id, index]));
  const periods = ownerPeriods(o.parts, o.mode);
  const melvinNote = (p: ObservedPart) => p.author === 'melvin' && p.type === 'note';
  for (const { partId, tag } of o.userMessages) {
    const count = answers.get(partId) ?? 0;
    if (count > 1) problems.push(`the user's message "${tag}" was answered ${count} times`);
    if (count >= 1) continue;
    const at = position.get(partId);
    if (at === undefined) {
      problems.push(`the user's message "${tag}" is not in the conversation`);
      continue;
    }
    const named = o.parts
      .slice(at + 1)
      .some((p) => melvinNote(p) && starts(p.text, TOLD_NOTES) && p.text.includes(tag));
    // The owner when the message came: the course before it.
    const before = at > 0 ? periods[at - 1]! : { owner: null, since: -1 };
    const teamsAlready = before.owner === 'team';
    const toldInPeriod =
      teamsAlready &&
      o.parts.some(
        (p, i) =>
          i > before.since &&
          periods[i]!.since === before.since &&
          melvinNote(p) &&
          p.text.startsWith(WROTE_AGAIN_MARK),
      );
    if (!named && !toldInPeriod) {
      problems.push(
        teamsAlready
          ? `the user's message "${tag}" came while the team owned the conversation, and the team was never told the user wrote again`
          : `the user's message "${tag}" was neither answered nor named in a note to the team`,
      );
    }
  }
  return problems;
}

/**
 * sdk-core's race on a cancelled agent call (temporalio/sdk-core#705, docs/decisions.md "A read or a write of a value
 * is never cancelled"): a cancellation (a cancel request, a signal, an update, which the history shows only once a
 * later task accepted it) reached the workflow, which cancelled a
 * model, tool, embeddings or retrieval call that Core had already seen end; the task failed as non-deterministic, and
 * the next task recorded that call's result and went on. A deliberate exception (docs/testing.md), counted by
 * `sdkRacesMet`; a race that kept failing the task would leave the conversation unsettled.
 */
function isSdkRaceOnAgentCall(run: RunFacts, failure: Extract<Fact, { kind: 'taskFailed' }>): boolean {
  if (
    failure.cause !== 'WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR' ||
    !failure.message.includes('Invalid transition in state machine')
  )
    return false;
  const before = run.facts.filter((f) => f.id < failure.id);
  const lastMarker = Math.max(0, ...before.filter((f) => f.kind === 'local').map((f) => f.id));
  const cancelling = before.some(
    (f) => f.id > lastMarker && (f.kind === 'cancelRequested' || f.kind === 'signal' || f.kind === 'update'),
  );
  const next = run.facts.find((f) => f.id > failure.id && ['local', 'scheduled', 'taskFailed'].includes(f.kind));
  // An update is recorded only by a task that completes: one the failed task met is accepted by the task after it.
  const updateRetried = run.facts.some((f) => f.kind === 'update' && f.id > failure.id && (!next || f.id < next.id));
  return (cancelling || updateRetried) && next?.kind === 'local' && STOPPED_BY_CANCELLATION.has(next.activity);
}

/** How many workflow tasks of the conversation met sdk-core's race on an agent call (`isSdkRaceOnAgentCall`). */
export function sdkRacesMet(o: Observation): number {
  return o.runs.reduce(
    (count, run) => count + run.facts.filter((f) => f.kind === 'taskFailed' && isSdkRaceOnAgentCall(run, f)).length,
    0,
  );
}

/**
 * Every run settled, none failed, and no workflow task failed but in the ordinary ways (and sdk-core's race on an
 * agent call, retried at once).
 */
export function runsHealthy(o: Observation): string[] {
  const problems: string[] = o.unsettled ? [`the conversation never settled: ${o.unsettled}`] : [];
  for (const run of o.runs) {
    for (const fact of run.facts) {
      if (
        fact.kind === 'taskFailed' &&
        !BENIGN_TASK_FAILURES.includes(fact.cause) &&
        !isSdkRaceOnAgentCall(run, fact)
      ) {
        problems.push(`a workflow task of run ${run.runId} failed (${fact.cause}): ${fact.message.slice(0, 200)}`);
      }
      if (fact.kind === 'closed' && ['failed', 'terminated', 'timedOut'].includes(fact.how)) {
        problems.push(`run ${run.runId} ended ${fact.how}`);
      }
    }
  }
  return problems;
}

/** Every rule of the model, each violation named with the rule. */
export function violations(o: Observation): string[] {
  const rules = {
    'posted once': postedOnce,
    'no reply against the owner': noReplyAgainstTheOwner,
    'operator requests take effect': operatorRequestsTookEffect,
    'status follows the last outcome': statusMatchesLastOutcome,
    'every message answered or handed over': everyMessageAnsweredOrHandedOver,
    'runs healthy': runsHealthy,
  };
  return Object.entries(rules).flatMap(([name, rule]) => rule(o).map((problem) => `${name}: ${problem}`));
}

/** The conversation as a failure report shows it: each part's author, kind and first words. */
export function conversationSummary(o: Observation): string {
  return o.parts
    .map(
      (p, i) =>
        `  ${i}. ${p.author} ${p.type}${p.assignedTo ? ` → ${p.assignedTo}` : ''}: ${fold(p.text).slice(0, 90)}`,
    )
    .concat(`  Melvin Status: ${o.melvinStatus}`)
    .join('\n');
}
