// Pure: what the resolved-conversation index removes from a message before it is embedded and stored.
// Contact details and ids never reach the store, since any later talent's draft may be shown the example.

export interface RedactionContext {
  /** The conversation's contact, when known: their name's words are removed wherever they appear. */
  contactName?: string | null;
  contactEmail?: string | null;
}

const EMAIL = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/g;
/** A URL whose path or query holds something id-like: a run of 4+ digits, a UUID or a long hex or base64-ish token. */
const URL = /\bhttps?:\/\/[^\s<>"')]+/gi;
const ID_IN_URL = /\d{4,}|[0-9a-f]{8}-[0-9a-f]{4}-|[A-Za-z0-9_-]{20,}/;
/**
 * A phone number: an optional +country code, then at least 7 digits in groups split by spaces, dots, dashes or
 * parentheses. Dates (2026-11-27) and amounts are not phone-shaped: the groups must add up to 7 digits or more.
 */
const PHONE = /(?<![\w-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]\d{2,4}){1,4}(?![\w-])/g;
/** A sum of money, with its currency sign or code before or after: another talent's pay is theirs alone. */
const AMOUNT =
  /(?:[$€£¥₹]\s?\d[\d,.]*\d|[$€£¥₹]\s?\d)(?:\s?(?:USD|EUR|GBP|CAD|AUD))?|\b\d[\d,.]*\s?(?:USD|EUR|GBP|CAD|AUD|dollars|euros|pounds)\b/gi;
/** Six or more digits in a row: account, card, payout and reference numbers. */
const LONG_DIGITS = /\d{6,}/g;
/** An internal id written as a lower-case prefix and digits (`app-51`, `pay_61`, `usr-93a7`), not a form (`W-2`). */
const PREFIXED_ID = /\b[a-z]{2,6}[-_](?=[a-z0-9]*\d)[a-z0-9]{2,}\b/g;

function digitCount(text: string): number {
  return (text.match(/\d/g) ?? []).length;
}

/** A date written with dashes, slashes or dots (2026-11-27, 27.11.2026, 11/27/2026) is kept: it is not a phone. */
const DATE_LIKE = /^(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})$/;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The contact's name words worth removing: two letters or more, so an initial does not blank every "A". */
function nameWords(name: string | null | undefined): string[] {
  return [...new Set((name ?? '').split(/[\s,]+/).filter((word) => /^\p{L}[\p{L}'-]+$/u.test(word)))];
}

/**
 * The text with contact details, ids and amounts replaced by placeholders: `[email]`, `[phone]`, `[link]`, `[amount]`,
 * `[number]`, `[id]`, `[name]`.
 */
export function redact(text: string, context: RedactionContext = {}): string {
  let out = text.replace(EMAIL, '[email]');
  out = out.replace(URL, (url) => (ID_IN_URL.test(url.replace(/^https?:\/\/[^/]+/i, '')) ? '[link]' : url));
  out = out.replace(AMOUNT, '[amount]');
  out = out.replace(PHONE, (match) => (digitCount(match) >= 7 && !DATE_LIKE.test(match.trim()) ? '[phone]' : match));
  out = out.replace(LONG_DIGITS, '[number]');
  out = out.replace(PREFIXED_ID, '[id]');
  const local = context.contactEmail?.split('@')[0];
  const words = nameWords(context.contactName);
  if (local && local.length >= 3) words.push(local);
  // Longest first, so the email's local part ("maya.chen") goes whole before its words do.
  for (const word of words.sort((a, b) => b.length - a.length)) {
    out = out.replace(new RegExp(`(?<![\\p{L}\\d])${escapeRegExp(word)}(?![\\p{L}\\d])`, 'giu'), '[name]');
  }
  return out;
}

/**
 * The words that can name someone or something of one talent's: a capitalized word (Sam, Acme, McDonald's, ACME, the
 * Baker of Baker Street) and a link. Lower-case words are the language, shared by every conversation.
 */
const NAMING_TOKEN = /https?:\/\/[^\s<>"')]+|(?<![\p{L}\p{N}])\p{Lu}[\p{L}\p{M}'’-]*(?![\p{L}\p{N}])/gu;

export function namingTokens(text: string): string[] {
  return [...new Set(text.match(NAMING_TOKEN) ?? [])];
}

/**
 * The text with every naming token that `shared` does not hold masked: `[link]` for a link, `[name]` for a word. The
 * index calls a token shared once the team used it with enough different talents (a greeting, a sign-off, a product,
 * the help center's address), so what is one talent's (their supervisor, employer, street, portfolio) never reaches
 * another talent's draft.
 */
export function maskUnshared(text: string, shared: ReadonlySet<string>): string {
  return text.replace(NAMING_TOKEN, (token) =>
    shared.has(token) ? token : /^https?:/i.test(token) ? '[link]' : '[name]',
  );
}
