// The sandbox validation service's checks, written for the service alone (a validator apart from Melvin must not share
// Melvin's code, or a bug in one would hide in both): each takes the request and says whether the reply passes.
import { z } from 'zod';
import { codesMissingFrom } from '../key-codes';

/** The validation endpoint's request, as this service reads it: what it does not need passes through unchecked. */
export const ValidationRequestBody = z.looseObject({
  conversation_id: z.string(),
  response: z.string(),
  user_email: z.string().nullable(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.string() })),
  internal_notes: z.array(z.string()),
  tool_data: z.record(z.string(), z.unknown()),
  docs_data: z.record(z.string(), z.unknown()),
  /** The questions (the user's words) the reply answers, and those it leaves for the team. */
  intents: z.strictObject({ answered: z.array(z.string()), open: z.array(z.string()) }).optional(),
});
export type ValidationRequestBody = z.infer<typeof ValidationRequestBody>;

export interface CheckResult {
  name: string;
  passed: boolean;
  detail: string;
}

const check = (name: string, problems: string[], ok: string, bad: string): CheckResult => ({
  name,
  passed: problems.length === 0,
  detail: problems.length ? `${bad}: ${problems.join(', ')}` : ok,
});

const ADDRESS = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/g;

/** Addresses in the reply that are not the conversation's own user's. */
function strangersAddresses(request: ValidationRequestBody): string[] {
  const own = (request.user_email ?? '').toLowerCase();
  return [...new Set(request.response.match(ADDRESS) ?? [])].filter((a) => a.toLowerCase() !== own);
}

/** Values under `id` and `<thing>_id` keys anywhere in the gathered tool data: the platform's internal identifiers. */
function identifiers(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) identifiers(item, into);
  else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      const isId = key === 'id' || /_id$/.test(key);
      if (isId && (typeof child === 'string' || typeof child === 'number')) into.add(String(child));
      else identifiers(child, into);
    }
  }
  return into;
}

/**
 * Ids shown in the reply as whole tokens, a token being a run of letters, digits, "_" and "-": "pay-31", "job_21" and
 * "31" alone are shown, the "31" of "pay-31", "$31", "31.50" or "1,031" is not.
 */
function shownIdentifiers(request: ValidationRequestBody): string[] {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const tokenChar = '[\\p{L}\\p{N}_\\-]';
  // A currency sign makes a number an amount, not an id; before a token with letters it changes nothing.
  const amountSign = (id: string) => (/^\d+$/.test(id) ? '|[$€£¥]' : '');
  const shown = (id: string) =>
    new RegExp(`(?<!${tokenChar}${amountSign(id)}|\\d[.,])${escape(id)}(?!${tokenChar}|[.,]\\d)`, 'iu').test(
      request.response,
    );
  return [...identifiers(request.tool_data)].filter((id) => id.length >= 3 && shown(id));
}

const tokens = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];

/** Notes whose text the reply repeats: any six consecutive words of a note (a shorter note: all of it) in the reply. */
function quotedNotes(request: ValidationRequestBody): string[] {
  const reply = ` ${tokens(request.response).join(' ')} `;
  return request.internal_notes.filter((note) => {
    const words = tokens(note);
    const span = Math.min(6, words.length);
    if (span < 3) return false;
    for (let i = 0; i + span <= words.length; i++) {
      if (reply.includes(` ${words.slice(i, i + span).join(' ')} `)) return true;
    }
    return false;
  });
}

const MONTHS = 'january february march april may june july august september october november december'.split(' ');
const MONTH_DATE = new RegExp(
  `\\b(${MONTHS.map((m) => `${m}|${m.slice(0, 3)}`).join('|')})\\.?\\s+(\\d{1,2})(?:st|nd|rd|th)?\\b`,
  'gi',
);
const ISO_DATE = /\b\d{4}-(\d{2})-(\d{2})\b/g;
const AMOUNT =
  /(?:[$€£]\s?(\d[\d,]*(?:\.\d{1,2})?))|(?:\b(\d[\d,]*(?:\.\d{1,2})?)\s?(?:USD|EUR|GBP|dollars|euros)\b)/gi;

/** Month-day pairs ("11-27") named in a text, in either "November 27" or ISO form. */
export function datesIn(text: string): Set<string> {
  const found = new Set<string>();
  for (const m of text.matchAll(MONTH_DATE)) {
    const month = MONTHS.findIndex((name) => name.startsWith(m[1]!.toLowerCase().slice(0, 3))) + 1;
    found.add(`${String(month).padStart(2, '0')}-${m[2]!.padStart(2, '0')}`);
  }
  for (const m of text.matchAll(ISO_DATE)) found.add(`${m[1]}-${m[2]}`);
  return found;
}

export function amountsIn(text: string): number[] {
  return [...text.matchAll(AMOUNT)].map((m) => Number((m[1] ?? m[2])!.replace(/,/g, '')));
}

/** The user's latest words: the messages after the last answer (or the last message of the user). */
function latestQuestion(request: ValidationRequestBody): string {
  const messages = request.messages;
  let first = messages.length;
  while (first > 0 && messages[first - 1]!.role === 'user') first -= 1;
  const trailing = messages.slice(first);
  const asked = trailing.length ? trailing : messages.filter((m) => m.role === 'user').slice(-1);
  return asked.map((m) => m.content).join('\n');
}

/**
 * The reply addresses what was asked: every code the answered questions name (a form number, an id) is in the data
 * behind the reply. A question about Form 8821 answered from the W-9 passage fails here; a question the reply leaves for
 * the team (a partial answer) is not held against it.
 */
function unansweredCodes(request: ValidationRequestBody): string[] {
  const asked = request.intents ? request.intents.answered.join('\n') : latestQuestion(request);
  // A user quoting the conversation's own number is not asking about it: the data need not know it.
  return codesMissingFrom(asked, JSON.stringify([request.tool_data, request.docs_data, request.conversation_id]));
}

/** Every check, in the order the answer lists them; the reply passes when all do. */
export function checkDraft(request: ValidationRequestBody): CheckResult[] {
  const reply = request.response;
  const gathered = JSON.stringify([request.tool_data, request.docs_data, request.messages]);
  const knownDates = datesIn(gathered);
  const knownNumbers = new Set((gathered.match(/\d+(?:\.\d+)?/g) ?? []).map(Number));
  const missingCodes = unansweredCodes(request);
  const quoted = quotedNotes(request).length > 0;
  return [
    check('no_other_user_data', strangersAddresses(request), 'names no other user', 'names other addresses'),
    check('no_internal_ids', shownIdentifiers(request), 'shows no internal ids', 'shows internal ids'),
    {
      name: 'no_internal_notes',
      passed: !quoted,
      detail: quoted ? 'repeats the text of an internal note' : 'repeats no internal note',
    },
    check(
      'dates_backed_by_data',
      [...datesIn(reply)].filter((d) => !knownDates.has(d)),
      'every date is in the data',
      'dates not in the gathered data',
    ),
    check(
      'amounts_backed_by_data',
      amountsIn(reply)
        .filter((a) => !knownNumbers.has(a))
        .map(String),
      'every amount is in the data',
      'amounts not in the gathered data',
    ),
    {
      name: 'answers_the_question',
      passed: missingCodes.length === 0,
      detail: missingCodes.length
        ? `the question names ${missingCodes.join(', ')}, which nothing gathered mentions: the reply cannot be about it`
        : 'every code the question names is in the data',
    },
  ];
}
