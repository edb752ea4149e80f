// Melvin's grounding check of a drafted reply: every date, amount, number, time and capitalized name it states must be
// found in what the turn rests on, and it claims no action Melvin has no tool for and promises nothing the sources do
// not (./claims). Pure, so the workflow runs it itself.
import { claimedActions, unbackedPromises } from './claims';
import { dateFields, misreadDates, mixedFacts, namesIn, recordsOf, type SentenceFact } from './record-facts';

/** What a reply may state facts from. */
export interface GroundingSources {
  /** The turn's gathered data: tool results and help-center passages, as the tools returned them. */
  data: unknown;
  /** Every message of the conversation, the talent's and Melvin's, and the talent's own name and address. */
  conversation: string[];
  /** Words a reply may write with a capital though no data has them: the team's sign-offs, Melvin's own name. */
  names?: string[];
  /** The tools that ran this turn and may write: a claim of what they do ("cancel_shift": cancelled) is backed. */
  actionsTaken?: string[];
  /** The turn's date (YYYY-MM-DD): "tomorrow" is good when a data date is the day after it. */
  today?: string;
}

export type UngroundedKind = 'date' | 'amount' | 'number' | 'time' | 'name' | 'record' | 'action' | 'promise';

/** One fact of the reply that none of the sources holds, as the reply wrote it. */
export interface Ungrounded {
  kind: UngroundedKind;
  text: string;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const MONTH = String.raw`(?:january|february|march|april|may|june|july|august|september|october|november|december|(?:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?)`;
const DAY = String.raw`(\d{1,2})(?:st|nd|rd|th)?`;
const YEAR = String.raw`(?:,?\s+(\d{4}))?`;

/**
 * Dates as people and data write them, each read as month, day and (when given) year. Numbers separated by a slash are
 * month first, as in the United States, unless the first cannot be a month (4/12 is April 12; 25/12 is December 25).
 */
const DATE_PATTERNS: { pattern: RegExp; read: (m: RegExpExecArray) => SpokenDate | null }[] = [
  {
    pattern: /\b(\d{4})-(\d{2})-(\d{2})(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?\b/g,
    read: (m) => date(Number(m[2]), Number(m[3]), Number(m[1])),
  },
  {
    pattern: new RegExp(String.raw`\b(${MONTH})\s+${DAY}\b${YEAR}`, 'gi'),
    read: (m) => date(monthOf(m[1]!), Number(m[2]), m[3] ? Number(m[3]) : undefined),
  },
  {
    pattern: new RegExp(String.raw`\b${DAY}\s+(?:of\s+)?(${MONTH})(?![\p{L}])${YEAR}`, 'giu'),
    read: (m) => date(monthOf(m[2]!), Number(m[1]), m[3] ? Number(m[3]) : undefined),
  },
  {
    pattern: /(?<![\d/.])(\d{1,2})\/(\d{1,2})(?:\/(\d{4}|\d{2}))?(?![\d/])/g,
    read: (m) => {
      const [a, b] = [Number(m[1]), Number(m[2])];
      const year = m[3] ? Number(m[3].length === 2 ? `20${m[3]}` : m[3]) : undefined;
      return a <= 12 ? date(a, b, year) : date(b, a, year);
    },
  },
];

interface SpokenDate {
  month: number;
  day: number;
  year?: number;
}

function date(month: number, day: number, year?: number): SpokenDate | null {
  if (month < 1 || month > 12 || day < 1 || day > 31) return null;
  return year === undefined ? { month, day } : { month, day, year };
}

const monthOf = (name: string) => MONTHS.indexOf(name.slice(0, 3).toLowerCase()) + 1;

const CURRENCY_WORDS = String.raw`(?:usd|eur|gbp|cad|aud|dollars?|euros?|pounds?|bucks)`;
const NUMBER = String.raw`\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?`;
/** Amounts of money: "$1,250.50", "€40", "210 USD", "USD 210", "210 dollars". */
const AMOUNT = new RegExp(
  String.raw`[$€£]\s?(${NUMBER})|\b(${NUMBER})\s?${CURRENCY_WORDS}\b|\b(?:usd|eur|gbp|cad|aud)\s?(${NUMBER})`,
  'gi',
);
/** Times of day: "5pm", "5:30 PM", "17:00". */
const TIME = /\b(\d{1,2})(?::(\d{2}))?\s?([ap])\.?m\.?(?![\p{L}])|\b(\d{1,2}):(\d{2})\b/giu;

/** The value of a number as written, commas apart: "1,250.50" → 1250.5. */
const valueOf = (text: string) => Number(text.replace(/,/g, ''));

function timeOf(m: RegExpExecArray): string {
  if (m[4] !== undefined) return `${Number(m[4])}:${m[5]}`;
  let hour = Number(m[1]) % 12;
  if (m[3]!.toLowerCase() === 'p') hour += 12;
  return `${hour}:${m[2] ?? '00'}`;
}

/** Every string and number the data holds, as text: values only, never the keys that name them. */
function textsOf(value: unknown, into: string[] = []): string[] {
  if (typeof value === 'string') into.push(value);
  else if (typeof value === 'number' || typeof value === 'bigint') into.push(String(value));
  else if (Array.isArray(value)) value.forEach((v) => textsOf(v, into));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => textsOf(v, into));
  return into;
}

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu;
/** A word as the sources are searched for it: lower case, without a possessive "'s". */
const wordKey = (word: string) => word.toLowerCase().replace(/['’]s$/u, '');

/** What the sources hold, in the forms the reply's facts are compared in. */
interface Known {
  dates: SpokenDate[];
  weekdays: Set<number>;
  numbers: Set<number>;
  digits: Set<string>;
  times: Set<string>;
  words: Set<string>;
}

/** Numbers as written, with thousands separators and decimals: "1,250.50", "19", "2026". */
const NUMBERS = new RegExp(NUMBER, 'g');

function known(sources: GroundingSources): Known {
  // One text, each source on a line of its own: every pattern runs once over all of them.
  const text = [...textsOf(sources.data), ...sources.conversation].join('\n');
  const found: Known = {
    dates: [],
    weekdays: new Set(),
    numbers: new Set(),
    digits: new Set(),
    times: new Set(),
    words: new Set(),
  };
  for (const { pattern, read } of DATE_PATTERNS) {
    for (const m of text.matchAll(pattern)) {
      const d = read(m as RegExpExecArray);
      if (!d) continue;
      found.dates.push(d);
      if (d.year !== undefined) found.weekdays.add(new Date(Date.UTC(d.year, d.month - 1, d.day)).getUTCDay());
    }
  }
  for (const m of text.matchAll(NUMBERS)) {
    found.numbers.add(valueOf(m[0]));
    for (const run of m[0].match(/\d+/g) ?? []) found.digits.add(run.replace(/^0+(?=\d)/, ''));
  }
  for (const m of text.matchAll(TIME)) found.times.add(timeOf(m as RegExpExecArray));
  for (const w of [...(text.match(WORD) ?? []), ...(sources.names ?? []).flatMap((name) => name.match(WORD) ?? [])]) {
    const key = wordKey(w);
    found.words.add(key);
    const weekday = WEEKDAYS.indexOf(key.replace(/s$/, ''));
    if (weekday >= 0) found.weekdays.add(weekday);
  }
  return found;
}

const sameDate = (said: SpokenDate, k: SpokenDate) =>
  said.month === k.month &&
  said.day === k.day &&
  (said.year === undefined || k.year === undefined || said.year === k.year);

/**
 * The reply with a span already read blanked out, so no later pattern reads it again ("$240 on 11/27" is one amount and
 * one date, not numbers too): its letters and digits become spaces, its punctuation stays where a sentence ends.
 */
function blank(text: string, start: number, end: number): string {
  return text.slice(0, start) + text.slice(start, end).replace(/[\p{L}\p{N}]/gu, ' ') + text.slice(end);
}

/**
 * Words that begin a sentence are capitalized whatever they are, so only a capital elsewhere says "a name": after a
 * sentence's end, a colon, a line break, an opening bracket or quote, or a list's dash, the next word is a start.
 */
const STARTS = /(?:^|[.!?:;]\s+|\n\s*|[(“"‘']\s*|[-–—•*]\s+)$/u;
/** Capitalized words that are no one's name. */
const NEVER_NAMES = ['i', 'i’m', "i'm", 'i’ve', "i've", 'i’ll', "i'll", 'i’d', "i'd", 'ok', 'mr', 'ms', 'mrs', 'dr'];

/** Capitalized words of the reply that are not a sentence's first, unless possessive ("Maria's"), with their text. */
function capitalizedWords(reply: string): string[] {
  const found: string[] = [];
  for (const m of reply.matchAll(WORD)) {
    const word = m[0];
    if (!/^\p{Lu}/u.test(word)) continue;
    const key = word.toLowerCase();
    if (NEVER_NAMES.includes(key)) continue;
    if (MONTHS.includes(key.slice(0, 3)) && new RegExp(`^${MONTH}$`, 'i').test(word)) continue;
    if (WEEKDAYS.includes(key.replace(/s$/, ''))) continue;
    const atStart = STARTS.test(reply.slice(0, m.index));
    if (atStart && !/['’]s$/u.test(word)) continue;
    found.push(word);
  }
  return found;
}

/**
 * The facts of `reply` that none of `sources` holds: dates (any format; a weekday must be one a known date falls on or
 * the sources name), amounts of money, times of day, other numbers of two digits or more, capitalized words that are not
 * a sentence's first (names of people, places, jobs, businesses), and claims of an action no writing tool of the turn
 * took. Empty when every fact is grounded.
 */
export function ungroundedFacts(reply: string, sources: GroundingSources): Ungrounded[] {
  const k = known(sources);
  const problems: Ungrounded[] = [];
  let rest = reply;
  for (const { pattern, read } of DATE_PATTERNS) {
    for (const m of rest.matchAll(pattern)) {
      const said = read(m as RegExpExecArray);
      if (!said) continue;
      if (!k.dates.some((d) => sameDate(said, d))) problems.push({ kind: 'date', text: m[0].trim() });
      rest = blank(rest, m.index, m.index + m[0].length);
    }
  }
  for (const m of rest.matchAll(AMOUNT)) {
    const value = valueOf((m[1] ?? m[2] ?? m[3])!);
    if (!k.numbers.has(value)) problems.push({ kind: 'amount', text: m[0].trim() });
    rest = blank(rest, m.index, m.index + m[0].length);
  }
  for (const m of rest.matchAll(TIME)) {
    if (!k.times.has(timeOf(m as RegExpExecArray))) problems.push({ kind: 'time', text: m[0].trim() });
    rest = blank(rest, m.index, m.index + m[0].length);
  }
  for (const m of rest.matchAll(/\d+(?:[.,]\d+)*/g)) {
    const runs = m[0].match(/\d+/g)!.map((run) => run.replace(/^0+(?=\d)/, ''));
    if (m[0].replace(/\D/g, '').length < 2) continue;
    if (!runs.every((run) => k.digits.has(run))) problems.push({ kind: 'number', text: m[0] });
  }
  for (const m of reply.matchAll(/\b(sunday|monday|tuesday|wednesday|thursday|friday|saturday)s?\b/gi)) {
    if (!k.weekdays.has(WEEKDAYS.indexOf(m[1]!.toLowerCase()))) problems.push({ kind: 'date', text: m[0] });
  }
  for (const word of capitalizedWords(rest)) {
    if (!k.words.has(wordKey(word))) problems.push({ kind: 'name', text: word });
  }
  for (const claim of claimedActions(reply, sources.actionsTaken ?? [])) problems.push({ kind: 'action', text: claim });
  const days = k.dates.flatMap((d) =>
    d.year === undefined ? [] : [`${d.year}-${String(d.month).padStart(2, '0')}-${String(d.day).padStart(2, '0')}`],
  );
  for (const promise of unbackedPromises(reply, textsOf(sources.data).join('\n'), days, sources.today)) {
    problems.push({ kind: 'promise', text: promise });
  }
  for (const fact of factsOfOtherRecords(reply, sources.data)) problems.push({ kind: 'record', text: fact });
  return dedupe(problems);
}

/** The dates, amounts and record names of one sentence, each as written and as records are compared. */
function sentenceFacts(sentence: string, records: ReturnType<typeof recordsOf>): SentenceFact[] {
  const facts: SentenceFact[] = [];
  for (const { pattern, read } of DATE_PATTERNS) {
    for (const m of sentence.matchAll(pattern)) {
      const d = read(m as RegExpExecArray);
      if (d) facts.push({ text: m[0].trim(), at: m.index, key: { date: `${d.month}-${d.day}` } });
    }
  }
  for (const m of sentence.matchAll(AMOUNT)) {
    facts.push({ text: m[0].trim(), at: m.index, key: { amount: valueOf((m[1] ?? m[2] ?? m[3])!) } });
  }
  return [...facts, ...namesIn(sentence, records)];
}

/**
 * Facts that belong to another of the talent's records than the rest of their sentence, or dates the sentence calls
 * what the data does not (./record-facts).
 */
function factsOfOtherRecords(reply: string, data: unknown): string[] {
  const records = recordsOf(data);
  const fields = dateFields(data);
  return reply.split(/(?<=[.!?])\s+|\n+/).flatMap((sentence) => {
    const facts = sentenceFacts(sentence, records);
    const mixed = records.length < 2 ? [] : mixedFacts(facts, records);
    return [...mixed, ...misreadDates(sentence, facts, fields)].map((f) => f.text);
  });
}

function dedupe(problems: Ungrounded[]): Ungrounded[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const key = `${p.kind}:${p.text.toLowerCase()}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

const KIND_WORDS: Record<UngroundedKind, string> = {
  date: 'date',
  amount: 'amount',
  number: 'number',
  time: 'time',
  name: 'name',
  record: 'fact',
  action: 'claim of an action',
  promise: 'promise',
};

/** One line per problem, as the model is told in a repair and the team in the note. */
export function describeUngrounded(problems: Ungrounded[]): string[] {
  return problems.map((p) => {
    if (p.kind === 'action') return `claims an action Melvin has no tool for: “${p.text}”`;
    if (p.kind === 'promise') return `promises “${p.text}”, which no data, message or help-center passage says`;
    if (p.kind === 'record') return `states “${p.text}” of what another of the talent’s records has it for`;
    return `states the ${KIND_WORDS[p.kind]} “${p.text}”, which is in none of the data, the conversation or the help-center passages`;
  });
}
