// Intercom activities over the official SDK: fetch a conversation, reply, note, set Melvin Status, snooze.
import { Context } from '@temporalio/activity';
import { IntercomError, IntercomTimeoutError } from 'intercom-client';
import type { IntercomClient } from 'intercom-client';
import { z } from 'zod';
import {
  ESCALATION_MARK,
  HANDED_BACK_MARK,
  UNDELIVERED_MARK,
  WITHHELD_MARK,
  carriesOperatorWords,
} from '../contract/notes';
import { REPLY_MODES, type ReplyMode } from '../contract/vocabulary';
import type { Message, OwnershipEvent, Role } from '../contract/state';
import {
  IntercomAuthError,
  IntercomNotFoundError,
  IntercomRateLimitedError,
  IntercomRejectedError,
  IntercomResponseInvalidError,
  IntercomUnavailableError,
  withRetryContract,
} from './errors';
import { comparableText, partText, textToHtml } from './intercom-text';
import { retryAfterMs } from './retry-after';

export const MELVIN_STATUS_ATTRIBUTE = 'Melvin Status';
/**
 * Conversation attributes a team may set in Intercom (by hand or with an Intercom rule) to review Melvin's drafts on
 * some conversations only: they override `REPLY_MODE` and `APPROVAL_TIMEOUT_SECONDS` for that conversation.
 */
export const REPLY_MODE_ATTRIBUTE = 'Melvin Reply Mode';
export const APPROVAL_TIMEOUT_ATTRIBUTE = 'Melvin Approval Timeout';
const REQUEST_TIMEOUT_S = 12;
/** How far Intercom's clock may run behind ours when looking for a part an earlier attempt already posted. */
const CLOCK_SKEW_S = 60;

const Id = z.union([z.string(), z.number()]).transform(String);
const Author = z.looseObject({ type: z.string(), id: Id.nullish(), name: z.string().nullish() });
/** A file on a part: Melvin reads only its name, since it cannot open it. */
const Attachment = z.looseObject({ name: z.string().nullish() });
const Part = z.looseObject({
  id: Id,
  part_type: z.string(),
  body: z.string().nullish(),
  created_at: z.number().nullish(),
  author: Author.nullish(),
  attachments: z.array(Attachment).nullish(),
  /** On an assignment part, whom it assigned: an admin, a team, or nobody (`nobody_admin`, or no id). */
  assigned_to: z.looseObject({ type: z.string().nullish(), id: Id.nullish() }).nullish(),
});
export const IntercomConversation = z.looseObject({
  id: Id,
  source: z
    .looseObject({
      id: Id.nullish(),
      body: z.string().nullish(),
      author: Author.nullish(),
      attachments: z.array(Attachment).nullish(),
    })
    .nullish(),
  // Intercom returns at most the 500 most recent parts; `total_count` says how many the conversation has.
  conversation_parts: z
    .looseObject({ conversation_parts: z.array(Part), total_count: z.number().int().min(0) })
    .nullish(),
  contacts: z.looseObject({ contacts: z.array(z.looseObject({ id: Id })) }).nullish(),
  custom_attributes: z.record(z.string(), z.unknown()).nullish(),
  admin_assignee_id: Id.nullish(),
  state: z.enum(['open', 'closed', 'snoozed']).nullish(),
});
export type IntercomConversation = z.infer<typeof IntercomConversation>;
const IntercomContact = z.looseObject({ id: Id, email: z.string().nullish(), name: z.string().nullish() });

export interface FetchedConversation {
  conversation_id: string;
  /** Each message's text is cut at `MAX_MESSAGE_CHARS`, and the whole at `MAX_CONVERSATION_CHARS` (newest kept). */
  messages: Message[];
  /**
   * The Intercom part of each message, in the same order (null for a source without an id): which ones a turn answers.
   * Absent in fetches recorded before it was read.
   */
  message_part_ids?: (string | null)[];
  /**
   * Parts Melvin's messages leave out: those Intercom did not return (it returns only the 500 most recent) and the
   * earlier messages cut to keep the conversation within `MAX_CONVERSATION_CHARS`.
   */
  omitted_parts: number;
  /** Every part id Intercom returned: what a later post's retry compares against to find its own earlier attempt. */
  part_ids: string[];
  /** The ids of the user's messages among them (the source's too): what the conversation's ledger records as handled. */
  user_part_ids: string[];
  /** The user's messages that hold only files, which Melvin cannot read; absent in fetches recorded before. */
  attachment_only_part_ids?: string[];
  /**
   * The user's messages older than Melvin's newest part (a reply, a note, the snooze): what an earlier workflow of the
   * conversation answered or handed over. A conversation's new workflow starts its ledger from them.
   */
  handled_before_part_ids?: string[];
  /** The parts that changed who answers the user, oldest first (at most `MAX_OWNERSHIP_EVENTS`). */
  ownership_events?: OwnershipEvent[];
  internal_notes: string[];
  contact: { id: string; email: string | null; name: string | null } | null;
  /** The contact's id when it was left to `fetchContact` (asked with `withoutContact`). */
  contact_id?: string | null;
  admin_id: string;
  /** The conversation's own reply settings from its Intercom attributes; absent in fetches recorded before they were read. */
  reply_settings?: ConversationReplySettings;
  /** The admin the conversation is assigned to in Intercom, if any; absent in fetches recorded before it was read. */
  admin_assignee_id?: string | null;
}

/** The conversation's course as `readOwnership` reads it: its parts, in order, and those that changed its owner. */
export interface ConversationCourse {
  part_ids: string[];
  /** The user's messages among them (absent in reads recorded before it was read). */
  user_part_ids?: string[];
  /** The latest of them with their text, cut short: what a note to the team quotes (absent in reads from before). */
  user_messages?: { part_id: string; text: string }[];
  ownership_events: OwnershipEvent[];
  admin_assignee_id: string | null;
  /** What earlier workflows answered or handed over, when the read was asked with `ledgerBefore`. */
  handled_before_part_ids?: string[];
}

/** How many of the user's latest messages a read of the course quotes, and how much of each. */
const QUOTED_MESSAGES = 20;
const QUOTED_CHARS = 300;

/** What the conversation's attributes say about how Melvin replies; null where they say nothing usable. */
export interface ConversationReplySettings {
  mode: ReplyMode | null;
  approval_timeout_seconds: number | null;
  /** An attribute set to something Melvin cannot use, named with what it holds: the configured setting applies. */
  problems: string[];
}

const ReplyModeAttribute = z.enum(REPLY_MODES);
const MAX_APPROVAL_TIMEOUT_S = 7 * 86400;
const ApprovalTimeoutAttribute = z.number().int().min(1).max(MAX_APPROVAL_TIMEOUT_S);

/** The reply settings a conversation's custom attributes carry, each checked; an unusable value is reported, not used. */
export function replySettingsOf(attributes: Record<string, unknown> | null | undefined): ConversationReplySettings {
  const settings: ConversationReplySettings = { mode: null, approval_timeout_seconds: null, problems: [] };
  const mode = attributes?.[REPLY_MODE_ATTRIBUTE];
  if (mode !== undefined && mode !== null && mode !== '') {
    const parsed = ReplyModeAttribute.safeParse(typeof mode === 'string' ? mode.trim().toLowerCase() : mode);
    if (parsed.success) settings.mode = parsed.data;
    else
      settings.problems.push(`${REPLY_MODE_ATTRIBUTE} is ${JSON.stringify(mode)}: it must be auto, approve or shadow`);
  }
  const timeout = attributes?.[APPROVAL_TIMEOUT_ATTRIBUTE];
  if (timeout !== undefined && timeout !== null) {
    const parsed = ApprovalTimeoutAttribute.safeParse(timeout);
    if (parsed.success) settings.approval_timeout_seconds = parsed.data;
    else
      settings.problems.push(
        `${APPROVAL_TIMEOUT_ATTRIBUTE} is ${JSON.stringify(timeout)}: it must be a whole number of seconds from 1 to ${MAX_APPROVAL_TIMEOUT_S}`,
      );
  }
  return settings;
}

/** A reply or note to post exactly once, with what its retries need to recognise an attempt Intercom already took. */
export interface PostInput {
  conversationId: string;
  text: string;
  /** Epoch seconds the run began: the fallback check looks at parts posted since then. */
  notBefore: number;
  /** The conversation's part ids before the first attempt; absent or null when the run could not fetch them. */
  knownPartIds?: string[] | null;
  /**
   * An earlier activity may have posted it (a note sendReply answered as failed, which Intercom may have accepted): look
   * for it before the first attempt too, not only before a retry.
   */
  mayBePosted?: boolean;
  /** Epoch ms before which that earlier post may still land: the first attempt waits for it (as a retry delay). */
  checkNotBefore?: number;
}

export interface PostedPart {
  part_id: string | null;
  /** True when an earlier attempt had already posted it and this attempt only found it. */
  already_posted: boolean;
}

/** A reply, with the note to post beside it for the team (the validation result), if any. */
export interface ReplyInput extends PostInput {
  note?: string;
  /**
   * Given by runs before the rules `rules-2026-11-27-failed-note-on-its-own`: the retry policy the activity is scheduled
   * with, under which a failed note is thrown (to be retried with the reply) while attempts are left (the activity's own
   * Info does not always carry the policy: the tests' dev server sent none). Without it a failed note is answered, and
   * the workflow posts it again on its own.
   */
  retry?: { maximumAttempts: number; nonRetryableErrorTypes: string[] };
}

/** The reply's part, and what became of the note beside it: its part, or why it could not be posted. */
export interface PostedReply extends PostedPart {
  /** `checkNotBefore`: when a post of the note again may look for this one (it may still land until then). */
  note?: PostedPart | { error: string; checkNotBefore?: number };
}

const USER_AUTHORS = new Set(['user', 'lead', 'contact']);
const ASSISTANT_AUTHORS = new Set(['admin', 'bot', 'team']);

/**
 * What a turn shows of one message: a talent writes a few sentences, or pastes a contract; past this the rest is
 * cut (and the message says so), so no activity input nears Temporal's 2 MB payload limit.
 */
export const MAX_MESSAGE_CHARS = 8_000;
/** The whole conversation a turn shows: the first message and the newest ones that fit. */
export const MAX_CONVERSATION_CHARS = 64_000;
/** The team's notes are sent to the validation service only; the newest that fit. */
export const MAX_NOTE_CHARS = 4_000;
export const MAX_NOTES_CHARS = 32_000;
/** Enough of the conversation's course to know who answers it now. */
export const MAX_OWNERSHIP_EVENTS = 50;

function roleOf(authorType: string | undefined): Role | undefined {
  if (authorType === undefined) return undefined;
  if (USER_AUTHORS.has(authorType)) return 'user';
  if (ASSISTANT_AUTHORS.has(authorType)) return 'assistant';
  return undefined;
}

/** A text cut at `max` characters, saying how much was left out. */
export function cutText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)} … [${text.length - max} more characters not shown]`;
}

/**
 * The conversation as messages: the source is the first message; user/lead/contact parts are the user's, admin/bot/team
 * parts the assistant's; event parts with no text or file are dropped; a file is named in its message. Notes are kept
 * apart (never shown to the model) as the team's internal notes, which a reply must not repeat; Melvin's own notes (by
 * `melvinAdminId`: its escalation notes, its shadow drafts) are not the team's, and a later reply saying the same as one
 * of them leaks nothing, unless the note carries an operator's reason. Texts are not cut here (see `boundConversation`).
 */
export function messagesFromConversation(
  conversation: IntercomConversation,
  melvinAdminId: string,
): {
  messages: Message[];
  message_part_ids: (string | null)[];
  internal_notes: string[];
  user_part_ids: string[];
  attachment_only_part_ids: string[];
} {
  const messages: Message[] = [];
  const message_part_ids: (string | null)[] = [];
  const internal_notes: string[] = [];
  const user_part_ids: string[] = [];
  const attachment_only_part_ids: string[] = [];
  const add = (role: Role, content: string, id: string | null | undefined, filesOnly: boolean) => {
    messages.push({ role, content });
    message_part_ids.push(id ?? null);
    if (role === 'user' && id) {
      user_part_ids.push(id);
      if (filesOnly) attachment_only_part_ids.push(id);
    }
  };
  const source = conversation.source;
  const sourceRole = roleOf(source?.author?.type);
  // Bodies are fetched with display_as=plaintext, so text such as "<Austin>" is the user's own words, not markup.
  const sourceText = partText(source?.body, source?.attachments);
  if (sourceRole && sourceText) add(sourceRole, sourceText, source?.id, !(source?.body ?? '').trim());
  for (const part of conversation.conversation_parts?.conversation_parts ?? []) {
    const text = partText(part.body, part.attachments);
    if (!text) continue;
    if (part.part_type === 'note' || part.part_type === 'note_and_reopen') {
      if (part.author?.id !== melvinAdminId || carriesOperatorWords(text)) internal_notes.push(text);
      continue;
    }
    const role = roleOf(part.author?.type);
    if (role) add(role, text, part.id, !(part.body ?? '').trim());
  }
  return { messages, message_part_ids, internal_notes, user_part_ids, attachment_only_part_ids };
}

/**
 * The messages within bounds: each cut at `MAX_MESSAGE_CHARS`, then the first message and as many of the newest as fit
 * in `MAX_CONVERSATION_CHARS`; returns how many were left out between them. The notes likewise, newest kept.
 */
export function boundConversation(mapped: ReturnType<typeof messagesFromConversation>): {
  messages: Message[];
  message_part_ids: (string | null)[];
  internal_notes: string[];
  left_out: number;
} {
  const cut = mapped.messages.map((m) => ({ ...m, content: cutText(m.content, MAX_MESSAGE_CHARS) }));
  const kept = new Set<number>();
  let used = 0;
  const keep = (index: number) => {
    const size = cut[index]!.content.length;
    if (used + size > MAX_CONVERSATION_CHARS) return false;
    used += size;
    kept.add(index);
    return true;
  };
  if (cut.length) keep(0);
  for (let index = cut.length - 1; index > 0 && keep(index); index -= 1);
  const indexes = [...kept].sort((a, b) => a - b);
  const notes: string[] = [];
  let noteChars = 0;
  for (const note of [...mapped.internal_notes].reverse().map((n) => cutText(n, MAX_NOTE_CHARS))) {
    if (noteChars + note.length > MAX_NOTES_CHARS) break;
    noteChars += note.length;
    notes.unshift(note);
  }
  return {
    messages: indexes.map((i) => cut[i]!),
    message_part_ids: indexes.map((i) => mapped.message_part_ids[i] ?? null),
    internal_notes: notes,
    left_out: cut.length - indexes.length,
  };
}

/**
 * The parts that changed who answers the user, oldest first: Melvin's hand-overs (its escalation notes, a reply it
 * could not deliver, a draft it withheld because a teammate took over) and a lead's hand-back note; a teammate's reply,
 * assignment to a teammate, a team or Melvin, and close. An assignment to nobody changes nothing.
 */
export function ownershipEvents(conversation: IntercomConversation, melvinAdminId: string): OwnershipEvent[] {
  const events: OwnershipEvent[] = [];
  for (const part of conversation.conversation_parts?.conversation_parts ?? []) {
    const at = part.created_at ?? 0;
    const text = (part.body ?? '').trim();
    const byMelvin = part.author?.id === melvinAdminId;
    const byTeammate = !byMelvin && (part.author?.type === 'admin' || part.author?.type === 'team');
    const firstLine = text.split('\n')[0] ?? '';
    if (part.part_type === 'note' && byMelvin) {
      if (text.startsWith(ESCALATION_MARK)) {
        const by = carriesOperatorWords(text) ? 'operator' : 'melvin';
        events.push({ owner: 'team', at, by, reason: firstLine.slice(ESCALATION_MARK.length).trim() });
      } else if (text.startsWith(UNDELIVERED_MARK)) {
        events.push({ owner: 'team', at, by: 'melvin', reason: 'the reply could not be delivered' });
      } else if (text.startsWith(WITHHELD_MARK)) {
        events.push({ owner: 'team', at, by: 'teammate', reason: 'a teammate took over while Melvin answered' });
      } else if (text.startsWith(HANDED_BACK_MARK)) {
        events.push({ owner: 'melvin', at, by: 'operator', reason: firstLine });
      }
    } else if (part.part_type === 'comment' && byTeammate) {
      events.push({ owner: 'team', at, by: 'teammate', reason: 'a teammate replied in Intercom' });
    } else if (part.part_type === 'assignment' && part.assigned_to?.id) {
      const to = part.assigned_to;
      if (to.type === 'admin' && to.id === melvinAdminId) {
        events.push({ owner: 'melvin', at, by: 'teammate', reason: 'assigned to Melvin in Intercom' });
      } else if (to.type === 'admin' || to.type === 'team') {
        const whom =
          to.type === 'admin' ? `a teammate in Intercom (admin ${to.id})` : `a team in Intercom (team ${to.id})`;
        events.push({ owner: 'team', at, by: 'teammate', reason: `assigned to ${whom}` });
      }
    } else if (part.part_type === 'close' && byTeammate) {
      events.push({ owner: 'team', at, by: 'teammate', reason: 'a teammate closed the conversation in Intercom' });
    }
  }
  return events.slice(-MAX_OWNERSHIP_EVENTS);
}

/**
 * The user's message parts older than Melvin's newest reply or note: what an earlier workflow answered or handed over.
 * With `beforePartId` (the first reply or note the reading workflow posted before it could read the conversation), only
 * Melvin's parts before it count: from it on they are the reading workflow's own, and a message among them may be one
 * it owes. A snooze is not an answer: the reading workflow may have snoozed the conversation while its own note waited
 * for Intercom, and a message before that snooze would have counted as answered.
 */
export function handledBefore(
  conversation: IntercomConversation,
  melvinAdminId: string,
  beforePartId?: string | null,
): string[] {
  const parts = conversation.conversation_parts?.conversation_parts ?? [];
  const boundary = beforePartId ? parts.findIndex((part) => part.id === beforePartId) : -1;
  let newest = -1;
  parts.forEach((part, index) => {
    const answer = part.part_type === 'comment' || part.part_type === 'note';
    if (answer && part.author?.id === melvinAdminId && (boundary < 0 || index < boundary)) newest = index;
  });
  if (newest < 0) return [];
  const ids = parts
    .slice(0, newest)
    .filter((part) => roleOf(part.author?.type) === 'user' && part.part_type !== 'note')
    .map((part) => part.id);
  const sourceId = conversation.source?.id;
  return sourceId && roleOf(conversation.source?.author?.type) === 'user' ? [sourceId, ...ids] : ids;
}

/** How many parts of the conversation Intercom left out of its answer: never mistake a truncated list for the whole. */
export function omittedParts(conversation: IntercomConversation): number {
  const parts = conversation.conversation_parts;
  return parts ? Math.max(0, parts.total_count - parts.conversation_parts.length) : 0;
}

/** Maps an SDK failure to the named error whose class the retry policies know. */
export function intercomFailure(err: unknown, action: string): Error {
  if (err instanceof IntercomTimeoutError) return new IntercomUnavailableError(`${action}: timed out`, { cause: err });
  if (!(err instanceof IntercomError)) return new IntercomUnavailableError(`${action}: ${String(err)}`, { cause: err });
  const status = err.statusCode;
  const detail = intercomErrorDetail(err.body) ?? err.message;
  const message = `${action}: Intercom answered ${status ?? 'no status'}${detail ? ` (${detail})` : ''}`;
  if (status === undefined || status >= 500 || status === 408)
    return new IntercomUnavailableError(message, { cause: err });
  if (status === 429) {
    return new IntercomRateLimitedError(message, { cause: err, retryAfterMs: retryAfterMs(err.rawResponse?.headers) });
  }
  if (status === 401 || status === 403) return new IntercomAuthError(message, { cause: err });
  if (status === 404) return new IntercomNotFoundError(message, { cause: err });
  return new IntercomRejectedError(message, { cause: err });
}

/**
 * How long after Melvin gave up on a post (no answer within its request timeout) Intercom may still carry it out: the
 * server does not stop when the client goes. The retry's duplicate check waits this long first, or it looks before the
 * part lands and posts it a second time.
 */
const POST_SETTLE_MS = 10_000;

/**
 * The request got no answer: our timeout (the SDK reports it as an IntercomError without a status whose message is
 * "timeout", since its abort reason is a string, not an AbortError) or a connection that dropped.
 */
function noAnswer(err: unknown): boolean {
  return err instanceof IntercomTimeoutError || (err instanceof IntercomError && err.statusCode === undefined);
}

function intercomErrorDetail(body: unknown): string | undefined {
  const parsed = z
    .object({ errors: z.array(z.object({ code: z.string(), message: z.string().optional() })) })
    .safeParse(body);
  const first = parsed.success ? parsed.data.errors[0] : undefined;
  return first ? `${first.code}: ${first.message ?? ''}`.trim() : undefined;
}

function parseResponse<T>(schema: z.ZodType<T>, body: unknown, action: string): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new IntercomResponseInvalidError(`${action}: unexpected response shape: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/**
 * What two bodies are compared by when a retry looks for its own earlier attempt: the first characters of the text,
 * whitespace folded, since Intercom's plain text lays paragraphs out its own way and may trim a long body.
 */
function sameTextKey(text: string): string {
  return comparableText(text).slice(0, 200);
}

/** Whether the retry policy will try the activity again after `err`: attempts left, and a type it does not refuse. */
function retriedByPolicy(err: unknown, policy: NonNullable<ReplyInput['retry']>): boolean {
  if (Context.current().info.attempt >= policy.maximumAttempts) return false;
  return !policy.nonRetryableErrorTypes.includes(err instanceof Error ? err.name : '');
}

export function createIntercomActivities(intercom: IntercomClient, options: { adminId: string }) {
  const { adminId } = options;
  const requestOptions = () => ({
    timeoutInSeconds: REQUEST_TIMEOUT_S,
    maxRetries: 0,
    abortSignal: Context.current().cancellationSignal,
  });

  async function findConversation(conversationId: string): Promise<IntercomConversation> {
    const action = `fetch conversation ${conversationId}`;
    try {
      const body = await intercom.conversations.find(
        { conversation_id: conversationId, display_as: 'plaintext' },
        requestOptions(),
      );
      return parseResponse(IntercomConversation, body, action);
    } catch (err) {
      throw err instanceof IntercomResponseInvalidError ? err : intercomFailure(err, action);
    }
  }

  async function findContact(contactId: string): Promise<NonNullable<FetchedConversation['contact']>> {
    const action = `fetch contact ${contactId}`;
    try {
      const body = await intercom.contacts.find({ contact_id: contactId }, requestOptions());
      const found = parseResponse(IntercomContact, body, action);
      return { id: found.id, email: found.email ?? null, name: found.name ?? null };
    } catch (err) {
      throw err instanceof IntercomResponseInvalidError ? err : intercomFailure(err, action);
    }
  }

  /**
   * The part an earlier attempt of this post already made, when its request was accepted but its answer was lost (a 500
   * after accept, a timeout), so the retry must not post again: a part of this type by this admin with the same text.
   * With the ids the conversation held before the first attempt, only a part not among them counts, so the previous
   * turn saying the same words is not taken for it; the text still has to match, since another post of this run (the
   * validation note beside the approval note, say) may have landed meanwhile. Without them (the conversation could not
   * be fetched, or the task was scheduled before part ids were passed), a part posted since `notBefore`.
   */
  async function findEarlierAttempt(post: PostInput, partType: 'comment' | 'note'): Promise<string | undefined> {
    const conversation = await findConversation(post.conversationId);
    const parts = conversation.conversation_parts?.conversation_parts ?? [];
    const wanted = sameTextKey(post.text);
    const ours = parts.filter(
      (part) => part.part_type === partType && part.author?.id === adminId && sameTextKey(part.body ?? '') === wanted,
    );
    if (post.knownPartIds) {
      const known = new Set(post.knownPartIds);
      return ours.find((part) => !known.has(part.id))?.id;
    }
    return ours.find((part) => (part.created_at ?? 0) >= post.notBefore - CLOCK_SKEW_S)?.id;
  }

  async function postPartOnce(post: PostInput, messageType: 'comment' | 'note'): Promise<PostedPart> {
    const { conversationId, text } = post;
    const wait = (post.checkNotBefore ?? 0) - Date.now();
    if (wait > 0) {
      throw new IntercomUnavailableError(
        `post ${messageType} to conversation ${conversationId}: an earlier post may still land`,
        {
          retryAfterMs: wait,
        },
      );
    }
    if (Context.current().info.attempt > 1 || post.mayBePosted) {
      const existing = await findEarlierAttempt(post, messageType);
      if (existing) return { part_id: existing, already_posted: true };
    }
    const action = `post ${messageType} to conversation ${conversationId}`;
    try {
      const response = await intercom.conversations.reply(
        {
          conversation_id: conversationId,
          body: { message_type: messageType, type: 'admin', admin_id: adminId, body: textToHtml(text) },
        },
        requestOptions(),
      );
      const parts = IntercomConversation.safeParse(response).data?.conversation_parts?.conversation_parts ?? [];
      return { part_id: parts.at(-1)?.id ?? null, already_posted: false };
    } catch (err) {
      const failure = intercomFailure(err, action);
      // No answer at all (our timeout, a dropped connection): Intercom may still carry the post out.
      if (failure instanceof IntercomUnavailableError && noAnswer(err)) {
        throw new IntercomUnavailableError(failure.message, { cause: err, retryAfterMs: POST_SETTLE_MS });
      }
      throw failure;
    }
  }

  return withRetryContract({
    /**
     * The conversation, and its contact unless `withoutContact`: then the workflow reads the contact with
     * `fetchContact`, so a failed contact read does not spend an attempt that read the conversation (and the reverse).
     */
    async fetchConversation({
      conversationId,
      withoutContact,
      beforePartId,
    }: {
      conversationId: string;
      withoutContact?: boolean;
      /** The first part the workflow posted before it could read the conversation: see `handledBefore`. */
      beforePartId?: string;
    }): Promise<FetchedConversation> {
      const conversation = await findConversation(conversationId);
      const mapped = messagesFromConversation(conversation, adminId);
      const { messages, message_part_ids, internal_notes, left_out } = boundConversation(mapped);
      const contactId = conversation.contacts?.contacts[0]?.id;
      const contact = contactId && !withoutContact ? await findContact(contactId) : null;
      return {
        ...(withoutContact && { contact_id: contactId ?? null }),
        conversation_id: conversation.id,
        messages,
        message_part_ids,
        omitted_parts: omittedParts(conversation) + left_out,
        part_ids: (conversation.conversation_parts?.conversation_parts ?? []).map((part) => part.id),
        user_part_ids: mapped.user_part_ids,
        attachment_only_part_ids: mapped.attachment_only_part_ids,
        handled_before_part_ids: handledBefore(conversation, adminId, beforePartId),
        ownership_events: ownershipEvents(conversation, adminId),
        internal_notes,
        contact,
        admin_id: adminId,
        reply_settings: replySettingsOf(conversation.custom_attributes),
        admin_assignee_id: conversation.admin_assignee_id ?? null,
      };
    },

    async fetchContact({ contactId }: { contactId: string }): Promise<FetchedConversation['contact']> {
      return findContact(contactId);
    },

    /**
     * Who owns the conversation by its course in Intercom, read again after a teammate acted on it: what the workflow
     * decides from when webhooks may have come late or out of order.
     */
    async readOwnership({
      conversationId,
      ledgerBefore,
    }: {
      conversationId: string;
      /**
       * Given while the workflow has not read what the ones before it handled: the course then says it, with the first
       * part the workflow posted meanwhile, if any (`handledBefore`).
       */
      ledgerBefore?: string | null;
    }): Promise<ConversationCourse> {
      const conversation = await findConversation(conversationId);
      const { messages, message_part_ids, user_part_ids } = messagesFromConversation(conversation, adminId);
      const user_messages = messages
        .map((message, i) => ({ ...message, part_id: message_part_ids[i] }))
        .filter((m): m is typeof m & { part_id: string } => m.role === 'user' && !!m.part_id)
        .slice(-QUOTED_MESSAGES)
        .map(({ part_id, content }) => ({ part_id, text: content.slice(0, QUOTED_CHARS) }));
      return {
        part_ids: (conversation.conversation_parts?.conversation_parts ?? []).map((part) => part.id),
        user_part_ids,
        user_messages,
        ownership_events: ownershipEvents(conversation, adminId),
        admin_assignee_id: conversation.admin_assignee_id ?? null,
        ...(ledgerBefore !== undefined && {
          handled_before_part_ids: handledBefore(conversation, adminId, ledgerBefore),
        }),
      };
    },

    /** Whether the conversation is open, closed or snoozed in Intercom now: a snooze would reopen one that is closed. */
    async readState({ conversationId }: { conversationId: string }): Promise<'open' | 'closed' | 'snoozed' | null> {
      return (await findConversation(conversationId)).state ?? null;
    },

    /**
     * The reply, then the note beside it when one is given: in one activity, so the workflow hears of both at once (one
     * workflow task, not two). Each keeps its own duplicate check from attempt 2, so a retry posts neither twice. The
     * reply decides the outcome: its failure fails the activity before the note is tried. Once the reply is out, a
     * note that fails is retried with it (the reply is found, not posted again) while the policy has attempts left and
     * the error is one it retries; after that its error is part of the answer, since failing would tell the workflow
     * the reply did not go out.
     */
    async sendReply(input: ReplyInput): Promise<PostedReply> {
      const { note, retry, ...reply } = input;
      const posted = await postPartOnce(reply, 'comment');
      if (note === undefined) return posted;
      try {
        return { ...posted, note: await postPartOnce({ ...reply, text: note }, 'note') };
      } catch (err) {
        if (retry && retriedByPolicy(err, retry)) throw err;
        const settle = err instanceof IntercomUnavailableError ? err.retryAfterMs : undefined;
        return {
          ...posted,
          note: {
            error: err instanceof Error ? err.message : String(err),
            ...(settle !== undefined && { checkNotBefore: Date.now() + settle }),
          },
        };
      }
    },

    async addNote(input: PostInput): Promise<PostedPart> {
      return postPartOnce(input, 'note');
    },

    async setStatus({ conversationId, status }: { conversationId: string; status: string }): Promise<void> {
      try {
        await intercom.conversations.update(
          { conversation_id: conversationId, custom_attributes: { [MELVIN_STATUS_ATTRIBUTE]: status } },
          requestOptions(),
        );
      } catch (err) {
        throw intercomFailure(err, `set ${MELVIN_STATUS_ATTRIBUTE} on conversation ${conversationId}`);
      }
    },

    async snooze({
      conversationId,
      seconds,
    }: {
      conversationId: string;
      seconds: number;
    }): Promise<{ snoozed_until: number }> {
      const snoozedUntil = Math.floor(Date.now() / 1000) + seconds;
      try {
        await intercom.conversations.manage(
          {
            conversation_id: conversationId,
            body: { message_type: 'snoozed', admin_id: adminId, snoozed_until: snoozedUntil },
          },
          requestOptions(),
        );
        return { snoozed_until: snoozedUntil };
      } catch (err) {
        throw intercomFailure(err, `snooze conversation ${conversationId}`);
      }
    },
  });
}

export type IntercomActivities = ReturnType<typeof createIntercomActivities>;
