// Pure: the messages of a resolved Intercom conversation worth indexing — the talent's questions and the team's replies,
// each with the question→answer pair it belongs to, redacted — and the query a draft retrieves with.
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
  text: string;
  question: string;
  answer: string;
  written_at: string;
}

const TALENT_AUTHORS = new Set(['user', 'lead', 'contact']);

/**
 * The talent's messages and the teammates' replies (comments; notes, events and Melvin's own replies are left out, since
 * Melvin must learn the team's voice, not its own), redacted. Each team reply is paired with the talent's messages
 * since the previous reply; each of those messages with the reply that answered it. A question no teammate answered is
 * left out: it shows no voice.
 */
export function indexedMessages(parts: ConversationPart[], melvinAdminId: string): IndexedMessage[] {
  const talent = parts.find((p) => p.author && TALENT_AUTHORS.has(p.author.type))?.author;
  const context = { contactName: talent?.name ?? null, contactEmail: talent?.email ?? null };
  const clean = (body: string | null) => redact((body ?? '').trim(), context).slice(0, MAX_MESSAGE_CHARS);
  const out: IndexedMessage[] = [];
  let pending: { part: ConversationPart; text: string }[] = [];
  for (const part of parts) {
    if (!part.author || !['comment', 'conversation'].includes(part.part_type)) continue;
    const text = clean(part.body);
    if (!text) continue;
    if (TALENT_AUTHORS.has(part.author.type)) {
      pending.push({ part, text });
      continue;
    }
    if (part.author.type !== 'admin' || part.author.id === melvinAdminId) continue;
    const question = pending
      .map((p) => p.text)
      .join('\n')
      .slice(0, MAX_MESSAGE_CHARS);
    for (const asked of pending) {
      out.push({
        part_id: asked.part.id,
        role: 'talent',
        text: asked.text,
        question,
        answer: text,
        written_at: isoOf(asked.part.created_at),
      });
    }
    out.push({ part_id: part.id, role: 'team', text, question, answer: text, written_at: isoOf(part.created_at) });
    pending = [];
  }
  return out.slice(-MAX_MESSAGES_PER_CONVERSATION);
}

function isoOf(seconds: number | null): string {
  return new Date((seconds ?? 0) * 1000).toISOString();
}
