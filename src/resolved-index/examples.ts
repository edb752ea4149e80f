// Pure: what the resolved-conversation index keeps of a closed Intercom conversation — the team's replies, redacted,
// each with the text it is found by — and nothing of the talent's own words but that search text's embedding.
import { createHash } from 'node:crypto';
import { redact } from './redact';
import type { ExampleRole } from './ranking';

/** Each message is cut here: an example shows the team's voice, not a whole thread. */
export const MAX_MESSAGE_CHARS = 1500;
/** At most this many messages of one conversation are indexed (the newest): one long thread must not fill the index. */
export const MAX_MESSAGES_PER_CONVERSATION = 100;

/** A part of the conversation as Intercom returns it (plain text), with what the index reads of it. */
export interface ConversationPart {
  id: string;
  part_type: string;
  body: string | null;
  created_at: number | null;
  author: { type: string; id: string | null; name?: string | null; email?: string | null } | null;
}

export interface IndexedMessage {
  part_id: string;
  role: ExampleRole;
  /** The team's reply, redacted: the only text the index keeps. */
  text: string;
  /** Always empty: the talent's question is another talent's words, and is not kept (issue 40). */
  question: string;
  answer: string;
  written_at: string;
  /** Who the talent is, as a one-way hash: the index counts how many talents a word was used with, never who. */
  talent: string;
  /** What the reply is found by: the talent's messages it answered and the reply, redacted. Embedded, never stored. */
  search_text: string;
}

const TALENT_AUTHORS = new Set(['user', 'lead', 'contact']);

/**
 * The teammates' replies (comments; notes, events and Melvin's own replies are left out, since Melvin must learn the
 * team's voice, not its own), redacted, each found by the talent's messages since the previous reply. A question no
 * teammate answered is left out: it shows no voice. The talent's messages themselves are never kept: a later talent's
 * draft is shown what the index returns, and one talent's words must not reach another.
 */
export function indexedMessages(parts: ConversationPart[], melvinAdminId: string): IndexedMessage[] {
  const talent = parts.find((p) => p.author && TALENT_AUTHORS.has(p.author.type))?.author;
  const context = { contactName: talent?.name ?? null, contactEmail: talent?.email ?? null };
  const who = talentKey(talent?.id ?? talent?.email ?? null);
  const clean = (body: string | null) => redact((body ?? '').trim(), context).slice(0, MAX_MESSAGE_CHARS);
  const out: IndexedMessage[] = [];
  let asked: string[] = [];
  for (const part of parts) {
    if (!part.author || !['comment', 'conversation'].includes(part.part_type)) continue;
    const text = clean(part.body);
    if (!text) continue;
    if (TALENT_AUTHORS.has(part.author.type)) {
      asked.push(text);
      continue;
    }
    if (part.author.type !== 'admin' || part.author.id === melvinAdminId) continue;
    out.push({
      part_id: part.id,
      role: 'team',
      text,
      question: '',
      answer: text,
      written_at: isoOf(part.created_at),
      talent: who,
      search_text: [...asked, text].join('\n').slice(0, 2 * MAX_MESSAGE_CHARS),
    });
    asked = [];
  }
  return out.slice(-MAX_MESSAGES_PER_CONVERSATION);
}

/** A talent's key in the index: a hash of their contact id (or email), or of nothing when the conversation has none. */
function talentKey(id: string | null): string {
  return createHash('sha256')
    .update(id ?? '')
    .digest('hex')
    .slice(0, 32);
}

function isoOf(seconds: number | null): string {
  return new Date((seconds ?? 0) * 1000).toISOString();
}
