// The sandbox validation service's checks, written for the service alone (a validator apart from Melvin and from the
// sandbox model must share neither's code, or a bug in one would hide in both): each says whether the reply passes.
import { z } from 'zod';
import { oneEditApart } from '../words';

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
  /** The records Melvin resolved the user's words to: what the question names, as the data holds it. */
  named_records: z
    .array(z.looseObject({ mention: z.string(), id: z.string().nullable(), label: z.string() }))
    .optional(),
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
 * What a question is about, when it names it: a form ("Form 8821", "the W-9", "my 1099 form"), a job by its title ("the
 * barista job"), or the talent's own payments or applications. Other numbers in a question (a zip code, a phone number,
 * hours worked, a ticket or the conversation's own number) describe the talent and name no subject.
 */
export interface Subject {
  kind: 'form' | 'job' | 'payment' | 'application';
  /** How the question names it: the form's code, the job's title words; absent for the talent's own records. */
  name?: string;
  /**
   * A job that says which of the talent's payments or applications is asked about ("my pay for the warehouse shift"):
   * the reply must be about that job, not only find it somewhere in the data.
   */
  ofRecord?: boolean;
}

/** A code next to the word "form", either side ("Form 8821", "W-9 form"), or a W- or I-series tax form on its own. */
const FORM_CODE = /[a-z]{0,3}-?\d{1,5}(?:-?[a-z]{1,4})?/.source;
const FORMS = new RegExp(
  `\\bforms?\\s+#?(${FORM_CODE})\\b|\\b(${FORM_CODE})\\s+(?:tax\\s+)?forms?\\b|\\b([wi]-?\\d{1,2}(?:[a-z]{2,4})?)\\b`,
  'gi',
);
const JOB_NAMED =
  /\b(?:the|my|for|at|as)\s+((?:[a-z][\w'-]*\s+){0,2}?[a-z][\w'-]*)\s+(?:job|shift|gig|position|role)s?\b/gi;
/** A job named before the application for it: "my barista application", "the line cook application". */
const APPLICATION_NAMED = /\b(?:the|my)\s+((?:[a-z][\w'-]*\s+){0,2}?[a-z][\w'-]*)\s+(?:job\s+)?applications?\b/gi;
/** Words that join others and are never part of a job's title. */
const LITTLE_WORDS = new Set('the my a an of for on at in to with from and or is was'.split(' '));
/** Words that say which job by time, order or state, not by name: "the next shift", "my last application". */
const NOT_A_TITLE = new Set(
  (
    'next last this that new other same first second third latest recent previous old current own job pending ' +
    'weekend night day morning afternoon evening overnight monday tuesday wednesday thursday friday saturday sunday ' +
    'holiday'
  ).split(' '),
);
/**
 * Where the talent worked rather than which job: "the gala shift". A reply need not name an occasion the data does not
 * know; one a job's title holds ("Wedding Server") is a job like any other.
 */
const OCCASIONS = new Set(
  (
    'gala wedding concert festival conference party game match fundraiser show expo convention tournament ceremony ' +
    'dinner lunch brunch breakfast banquet event'
  ).split(' '),
);
/** The talent asks where their own payment or application stands (how payouts work in general asks about no record). */
const OWN = /\b(my|i|i'm|i've|me)\b/i;
const STANDING =
  /\b(when|where|why|status|pending|processing|yet|arrive[ds]?|receive[ds]?|got|sent|late|missing|still|open|hear|news|update|next step)\b/i;
const PAYMENT_WORD = /\b(pa(id|y|yment|yments|yout|youts)|money|earnings)\b/i;
const APPLICATION_WORD = /\b(appl(ied|y|ication|ications))\b/i;
/**
 * A question about how to do something or what is allowed ("can I apply again?"), which the help center answers for
 * every job alike.
 */
const HOW_TO =
  /\bhow (do|can|should|would) (i|we)\b|\bhow to\b|\bwhere (do|can) i\b|\bcan i\b|\bwhat (should|do|can) i do\b/i;

/** A form code in one spelling, so "W-9", "w9" and "W 9" compare equal. */
const formKey = (code: string) => code.toLowerCase().replace(/[^a-z0-9]/g, '');

export function subjectsOf(question: string): Subject[] {
  const subjects: Subject[] = [];
  for (const m of question.matchAll(FORMS)) {
    const code = (m[1] ?? m[2] ?? m[3])!;
    // A form's code carries a digit and is not a year ("the 2025 form" asks for a year's form, which the data dates).
    if (/\d/.test(code) && !/^(19|20)\d\d$/.test(code)) subjects.push({ kind: 'form', name: formKey(code) });
  }
  // "How do I withdraw my application for the hostess job?" asks how things work: a help-center answer need not name
  // the job, so the job only has to be the talent's, as for a question that names no record.
  const ofRecord = (PAYMENT_WORD.test(question) || APPLICATION_WORD.test(question)) && !HOW_TO.test(question);
  for (const m of [...question.matchAll(JOB_NAMED), ...question.matchAll(APPLICATION_NAMED)]) {
    // "the status of my application" names no job: only the words after the last little word can be a title.
    const title = m[1]!.toLowerCase().split(/\s+/);
    const after = title.slice(title.reduce((last, w, at) => (LITTLE_WORDS.has(w) ? at : last), -1) + 1);
    const named = after.filter((w) => !NOT_A_TITLE.has(w));
    const name = named.join(' ');
    if (named.length && !/\d/.test(name) && !subjects.some((s) => s.kind === 'job' && s.name === name)) {
      subjects.push({ kind: 'job', name, ...(ofRecord ? { ofRecord } : {}) });
    }
  }
  const standing = OWN.test(question) && STANDING.test(question);
  if (standing && !subjects.some((s) => s.kind === 'job')) {
    if (PAYMENT_WORD.test(question)) subjects.push({ kind: 'payment' });
    if (APPLICATION_WORD.test(question)) subjects.push({ kind: 'application' });
  }
  return subjects;
}

/** A sentence that says something is not there: "I don't see…", "there is no…", "you have not applied…". */
const NEGATION = /\b(no|not|none|nothing|never|without|cannot)\b|n't\b/i;
const sentencesOf = (text: string) => text.split(/(?<=[.!?])\s+|\n+/);

/** Records the talent has of one kind (`payments`, `applications`) in the gathered tool data; null when none came. */
function recordsIn(toolData: unknown, field: string): unknown[] | null {
  let found: unknown[] | null = null;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) {
        if (key === field && Array.isArray(child)) found = [...(found ?? []), ...child];
        else visit(child);
      }
    }
  };
  visit(toolData);
  return found;
}

/** Titles of the jobs in the gathered tool data whose title or place `named` finds: "Austin" finds Event Staff. */
function jobTitlesIn(toolData: unknown, named: (text: string) => boolean): string[] {
  const titles = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (value !== null && typeof value === 'object') {
      const record = value as Record<string, unknown>;
      const title = [record.title, record.job_title].find((t): t is string => typeof t === 'string');
      const place = typeof record.location === 'string' ? record.location : '';
      if (title && named(`${title} ${place}`)) titles.add(title);
      Object.values(record).forEach(visit);
    }
  };
  visit(toolData);
  return [...titles];
}

/**
 * What is wrong with the reply's subject, or null: a subject the data holds is answered; one it does not hold must be
 * said to be missing, in a sentence that names it, instead of answered with something else.
 */
function subjectProblem(subject: Subject, request: ValidationRequestBody): string | null {
  const gathered = JSON.stringify([request.tool_data, request.docs_data]).toLowerCase();
  const saysMissing = (mentions: (sentence: string) => boolean) =>
    sentencesOf(request.response).some((s) => mentions(s.toLowerCase()) && NEGATION.test(s));
  switch (subject.kind) {
    case 'form': {
      const named = (text: string) =>
        (text.match(new RegExp(`\\b${FORM_CODE}\\b`, 'gi')) ?? []).some((c) => formKey(c) === subject.name);
      if (named(gathered) || saysMissing(named)) return null;
      return `the question asks about form ${subject.name}, which nothing gathered mentions, and the reply does not say so`;
    }
    case 'job': {
      // The record Melvin resolved the question's words to ("the coffee shop job" is the Barista job) is held by the
      // data; a reply that names its title answers about it. Otherwise the question's own words are looked for below.
      const resolved = (request.named_records ?? []).find(
        (n) => n.id !== null && n.mention.toLowerCase().includes(subject.name!.toLowerCase()),
      );
      const title = resolved?.label.split(',')[0]!.trim().toLowerCase();
      if (resolved && title && (!subject.ofRecord || request.response.toLowerCase().includes(title))) return null;
      const words = subject.name!.split(/\s+/).filter((w) => w.length > 2);
      // A job is named by the root of its words: "housekeeping" names the Hotel Housekeeper job; and, as a reader
      // takes a typo, by a word one letter off: "barrista" names the Barista job.
      const roots = words.map((w) => w.slice(0, Math.max(4, w.length - 3)));
      const long = words.map((w) => w.toLowerCase()).filter((w) => w.length >= 5);
      const named = (text: string) =>
        roots.some((r) => new RegExp(`\\b${r}`, 'i').test(text)) ||
        (text.toLowerCase().match(/[a-z]{5,}/g) ?? []).some((t) => long.some((w) => oneEditApart(t, w)));
      if (saysMissing(named)) return null;
      if (!subject.ofRecord) {
        if (named(gathered)) return null;
        return `the question asks about the ${subject.name} job, which the talent's data does not hold, and the reply does not say so`;
      }
      // The payment or application of one job: the reply names that job, in the question's words or by the title of
      // the talent's record it resolves to ("the Austin shift" is their Event Staff job in Austin).
      const titles = jobTitlesIn(request.tool_data, named);
      const reply = request.response.toLowerCase();
      if (named(reply) || titles.some((t) => reply.includes(t.toLowerCase()))) return null;
      if (!titles.length && words.every((w) => OCCASIONS.has(w))) return null;
      // A talent with no payment (or application) at all is answered by saying so, whichever job they name.
      const noneAtAll = (['payment', 'application'] as const).some(
        (kind) => recordsIn(request.tool_data, `${kind}s`)?.length === 0 && saysMissing((s) => s.includes(kind)),
      );
      if (noneAtAll) return null;
      return titles.length
        ? `the question asks about the ${subject.name} job (${titles.join(', ')}), and the reply is about another job`
        : `the question asks about the ${subject.name} job, which the talent's data does not hold, and the reply does not say so`;
    }
    case 'payment':
    case 'application': {
      const field = `${subject.kind}s`;
      const records = recordsIn(request.tool_data, field);
      if (records === null || records.length > 0) return null;
      if (saysMissing((s) => s.includes(subject.kind))) return null;
      return `the talent has no ${field} on record and the reply does not say so`;
    }
  }
}

/**
 * The reply answers what was asked: each subject the answered questions name is in the data behind the reply, or the
 * reply says it is not there. A question about Form 8821 answered from the W-9 passage fails here, and so does one
 * about the barista job answered with the talent's event-staff job; a question the reply leaves for the team (a partial
 * answer) is not held against it.
 */
function subjectProblems(request: ValidationRequestBody): string[] {
  const questions = request.intents ? request.intents.answered : [latestQuestion(request)];
  const problems = questions.flatMap((q) => subjectsOf(q).map((s) => subjectProblem(s, request)));
  return [...new Set(problems.filter((p): p is string => p !== null))];
}

/** Every check, in the order the answer lists them; the reply passes when all do. */
export function checkDraft(request: ValidationRequestBody): CheckResult[] {
  const reply = request.response;
  const gathered = JSON.stringify([request.tool_data, request.docs_data, request.messages]);
  const knownDates = datesIn(gathered);
  const knownNumbers = new Set((gathered.match(/\d+(?:\.\d+)?/g) ?? []).map(Number));
  const wrongSubject = subjectProblems(request);
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
      passed: wrongSubject.length === 0,
      detail: wrongSubject.length ? wrongSubject.join('; ') : 'every subject the question names is answered',
    },
  ];
}
