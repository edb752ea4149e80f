// Intercom activities over the official SDK: fetch a conversation, reply, note, set Melvin Status, snooze.
import { Context } from '@temporalio/activity';
import { IntercomError, IntercomTimeoutError } from 'intercom-client';
import type { IntercomClient } from 'intercom-client';
import { z } from 'zod';
import { REPLY_MODES, type ReplyMode } from '../shared';
import type { Message, Role } from '../state';
import { REQUESTED_BY } from '../workflows/routing';
import {
  IntercomAuthError,
  IntercomNotFoundError,
  IntercomRateLimitedError,
  IntercomRejectedError,
  IntercomResponseInvalidError,
  IntercomUnavailableError,
  withRetryContract,
} from './errors';
import { comparableText, textToHtml } from './intercom-text';
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
const Part = z.looseObject({
  id: Id,
  part_type: z.string(),
  body: z.string().nullish(),
  created_at: z.number().nullish(),
  author: Author.nullish(),
});
export const IntercomConversation = z.looseObject({
  id: Id,
  source: z.looseObject({ id: Id.nullish(), body: z.string().nullish(), author: Author.nullish() }).nullish(),
  // Intercom returns at most the 500 most recent parts; `total_count` says how many the conversation has.
  conversation_parts: z
    .looseObject({ conversation_parts: z.array(Part), total_count: z.number().int().min(0) })
    .nullish(),
  contacts: z.looseObject({ contacts: z.array(z.looseObject({ id: Id })) }).nullish(),
  custom_attributes: z.record(z.string(), z.unknown()).nullish(),
  admin_assignee_id: Id.nullish(),
});
export type IntercomConversation = z.infer<typeof IntercomConversation>;
const IntercomContact = z.looseObject({ id: Id, email: z.string().nullish(), name: z.string().nullish() });

export interface FetchedConversation {
  conversation_id: string;
  messages: Message[];
  /** Parts Intercom did not return (it returns only the 500 most recent): the messages miss that many earlier ones. */
  omitted_parts: number;
  /** Every part id Intercom returned: what a later post's retry compares against to find its own earlier attempt. */
  part_ids: string[];
  /** The ids of the user's messages among them (the source's too): what the conversation's ledger records as handled. */
  user_part_ids: string[];
  internal_notes: string[];
  contact: { id: string; email: string | null; name: string | null } | null;
  admin_id: string;
  /** The conversation's own reply settings from its Intercom attributes; absent in fetches recorded before they were read. */
  reply_settings?: ConversationReplySettings;
  /** The admin the conversation is assigned to in Intercom, if any; absent in fetches recorded before it was read. */
  admin_assignee_id?: string | null;
}

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
}

export interface PostedPart {
  part_id: string | null;
  /** True when an earlier attempt had already posted it and this attempt only found it. */
  already_posted: boolean;
}

const USER_AUTHORS = new Set(['user', 'lead', 'contact']);
const ASSISTANT_AUTHORS = new Set(['admin', 'bot', 'team']);

function roleOf(authorType: string | undefined): Role | undefined {
  if (authorType === undefined) return undefined;
  if (USER_AUTHORS.has(authorType)) return 'user';
  if (ASSISTANT_AUTHORS.has(authorType)) return 'assistant';
  return undefined;
}

/** A note Melvin posted that carries an operator's words: an escalation they asked for, whose reason they wrote. */
const operatorWords = (note: string) => note.split('\n').some((line) => line.startsWith(REQUESTED_BY));

/**
 * The conversation as messages: the source is the first message; user/lead/contact parts are the user's, admin/bot/team
 * parts the assistant's; event parts with no text are dropped. Notes are kept apart (never shown to the model) as the
 * team's internal notes, which a reply must not repeat; Melvin's own notes (by `melvinAdminId`: its escalation notes,
 * its shadow drafts) are not the team's, and a later reply saying the same as one of them leaks nothing, unless the
 * note carries an operator's reason.
 */
export function messagesFromConversation(
  conversation: IntercomConversation,
  melvinAdminId: string,
): {
  messages: Message[];
  internal_notes: string[];
  user_part_ids: string[];
} {
  const messages: Message[] = [];
  const internal_notes: string[] = [];
  const user_part_ids: string[] = [];
  const add = (role: Role, content: string, id: string | null | undefined) => {
    messages.push({ role, content });
    if (role === 'user' && id) user_part_ids.push(id);
  };
  const source = conversation.source;
  const sourceRole = roleOf(source?.author?.type);
  // Bodies are fetched with display_as=plaintext, so text such as "<Austin>" is the user's own words, not markup.
  const sourceText = (source?.body ?? '').trim();
  if (sourceRole && sourceText) add(sourceRole, sourceText, source?.id);
  for (const part of conversation.conversation_parts?.conversation_parts ?? []) {
    const text = (part.body ?? '').trim();
    if (!text) continue;
    if (part.part_type === 'note' || part.part_type === 'note_and_reopen') {
      if (part.author?.id !== melvinAdminId || operatorWords(text)) internal_notes.push(text);
      continue;
    }
    const role = roleOf(part.author?.type);
    if (role) add(role, text, part.id);
  }
  return { messages, internal_notes, user_part_ids };
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

  /**
   * The part an earlier attempt of this post already made, when its request was accepted but its answer was lost (a 500
   * after accept, a timeout), so the retry must not post again. With the ids the conversation held before the first
   * attempt, it is a part of this type by this admin that is not among them, whatever its text: the previous turn may
   * have said the same words. Without them (the conversation could not be fetched, or the task was scheduled before
   * part ids were passed), a part with the same text posted since `notBefore`.
   */
  async function findEarlierAttempt(post: PostInput, partType: 'comment' | 'note'): Promise<string | undefined> {
    const conversation = await findConversation(post.conversationId);
    const parts = conversation.conversation_parts?.conversation_parts ?? [];
    const ours = parts.filter((part) => part.part_type === partType && part.author?.id === adminId);
    if (post.knownPartIds) {
      const known = new Set(post.knownPartIds);
      return ours.find((part) => !known.has(part.id))?.id;
    }
    const wanted = comparableText(post.text);
    return ours.find(
      (part) => (part.created_at ?? 0) >= post.notBefore - CLOCK_SKEW_S && comparableText(part.body ?? '') === wanted,
    )?.id;
  }

  async function postPartOnce(post: PostInput, messageType: 'comment' | 'note'): Promise<PostedPart> {
    const { conversationId, text } = post;
    if (Context.current().info.attempt > 1) {
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
      throw intercomFailure(err, action);
    }
  }

  return withRetryContract({
    async fetchConversation({ conversationId }: { conversationId: string }): Promise<FetchedConversation> {
      const conversation = await findConversation(conversationId);
      const { messages, internal_notes, user_part_ids } = messagesFromConversation(conversation, adminId);
      const contactId = conversation.contacts?.contacts[0]?.id;
      let contact: FetchedConversation['contact'] = null;
      if (contactId) {
        const action = `fetch contact ${contactId}`;
        try {
          const body = await intercom.contacts.find({ contact_id: contactId }, requestOptions());
          const found = parseResponse(IntercomContact, body, action);
          contact = { id: found.id, email: found.email ?? null, name: found.name ?? null };
        } catch (err) {
          throw err instanceof IntercomResponseInvalidError ? err : intercomFailure(err, action);
        }
      }
      return {
        conversation_id: conversation.id,
        messages,
        omitted_parts: omittedParts(conversation),
        part_ids: (conversation.conversation_parts?.conversation_parts ?? []).map((part) => part.id),
        user_part_ids,
        internal_notes,
        contact,
        admin_id: adminId,
        reply_settings: replySettingsOf(conversation.custom_attributes),
        admin_assignee_id: conversation.admin_assignee_id ?? null,
      };
    },

    async sendReply(input: PostInput): Promise<PostedPart> {
      return postPartOnce(input, 'comment');
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
