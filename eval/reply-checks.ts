// Checks every reply of an evaluation try on its own, whatever the scenario expects: no sentence said twice, no
// help-center passage off the question's subject, a job the talent names answered or said to be missing, and wording
// a person would write (greeting, capitals, no raw status tokens). Pure functions; they share no code with the
// sandbox model or the sandbox validation, so a fault in either does not hide in these checks too.
import type { Doc, Scenario } from '../sandbox/scenario';
import type { TurnOutcome } from '../sandbox/scenario-runner';
import { KNOWLEDGE_BASE_DIR, loadKnowledgeBase } from '../sandbox/talent-mcp/knowledge-base';

/**
 * What the checks are called in the results. The hygiene figure counts the replies that fail one of HYGIENE_CHECKS;
 * a failed `named_subject` is a wrong answer instead (answer-figures.ts).
 */
export const REPLY_CHECKS = ['no_repeat', 'passage_on_subject', 'named_subject', 'wording'] as const;
export type ReplyCheckName = (typeof REPLY_CHECKS)[number];
export const HYGIENE_CHECKS: readonly ReplyCheckName[] = ['no_repeat', 'passage_on_subject', 'wording'];

export interface ReplyCheck {
  /** 0 for the scenario's first turn, as in `TryRecord.turns`. */
  turn: number;
  /** Which of the turn's replies (0 for the first). */
  reply: number;
  check: ReplyCheckName;
  passed: boolean;
  /** What was found: the repeated sentence, the passage and the message, the job named, the word. */
  detail: string;
}

/** The help center the sandbox's talent server searches: one doc per section of its knowledge base. */
export function loadHelpCenter(dir = KNOWLEDGE_BASE_DIR): Doc[] {
  return loadKnowledgeBase(dir);
}

/** Every reply of every turn, checked; the scenario's own docs count as help center for its tries. */
export function checkReplies(scenario: Scenario, turns: TurnOutcome[], helpCenter: Doc[]): ReplyCheck[] {
  const center = new HelpCenter([...helpCenter, ...scenario.docs]);
  const names = properNouns(scenario, center);
  const statuses = statusValues(scenario);
  return turns.flatMap((turn, index) => {
    const asked = askedMessages(scenario, turns, index);
    const earlier = earlierMessages(scenario, turns, index);
    return turn.replies.flatMap((reply, at) => {
      const checks: [ReplyCheckName, string | null][] = [
        ['no_repeat', repeatedSentence(reply, turn.replies.slice(0, at))],
        ['passage_on_subject', offSubjectPassage(reply, asked, earlier, center)],
        ['named_subject', unansweredSubject(reply, asked, scenario)],
        ['wording', templateWording(reply, names, statuses)],
      ];
      return checks.map(([check, problem]) => ({
        turn: index,
        reply: at,
        check,
        passed: problem === null,
        detail: problem ?? passedDetail[check],
      }));
    });
  });
}

const passedDetail: Record<ReplyCheckName, string> = {
  no_repeat: 'no sentence said twice',
  passage_on_subject: 'every help-center passage shares a subject with the message, or none is quoted',
  named_subject: 'every job the message names is answered or said to be missing, or none is named',
  wording: 'greeting, capitals and status words as a person writes them',
};

// ---------------------------------------------------------------------------------------------------------------
// The talent's messages a turn answers

/** The messages a turn's reply answers: the trailing user parts of the opening thread, or the turn's own message. */
function askedMessages(scenario: Scenario, turns: TurnOutcome[], index: number): string[] {
  const own = turns[index]?.user ?? null;
  if (index > 0) return own ? [own] : [];
  // The first reply answers every user part since the team last wrote; the last of them is the one the try sent.
  const parts = scenario.conversation.parts;
  let start = parts.length;
  while (start > 0 && parts[start - 1]!.author === 'user') start -= 1;
  const trailing = parts.slice(start, -1).map((p) => p.body);
  return [...trailing, ...(own ? [own] : parts.slice(-1).map((p) => p.body))];
}

/** What the talent wrote before the turn's message: a follow-up ("how long does that take?") keeps its subject. */
function earlierMessages(scenario: Scenario, turns: TurnOutcome[], index: number): string[] {
  const before = scenario.conversation.parts
    .filter((p) => p.author === 'user')
    .map((p) => p.body)
    .slice(0, -1);
  return [...before, ...turns.slice(0, index).flatMap((t) => (t.user ? [t.user] : []))];
}

// ---------------------------------------------------------------------------------------------------------------
// Words, sentences and their forms

const normalizeQuotes = (text: string) => text.replace(/[\u2018\u2019]/g, "'").replace(/[\u201C\u201D]/g, '"');

/** Words as a reader sees them, lower-cased; a possessive "'s" is not part of the word. */
function wordsOf(text: string): string[] {
  return (
    normalizeQuotes(text)
      .toLowerCase()
      .match(/[a-z0-9]+(?:[-'][a-z0-9]+)*/g) ?? []
  ).map((w) => w.replace(/'s$/, ''));
}

/** Abbreviations whose period ends no sentence. */
const ABBREVIATION = /^(?:[a-z]\.(?:[a-z]\.)+|e\.g\.|i\.e\.|etc\.|vs\.|approx\.|no\.|st\.|mr\.|mrs\.|ms\.|dr\.|jr\.)$/i;

/** A text's sentences: ended by . ! ? (not in an abbreviation, a decimal or an ellipsis) or by a line break. */
export function sentencesOf(text: string): string[] {
  const sentences: string[] = [];
  for (const line of normalizeQuotes(text).split(/\n+/)) {
    let current = '';
    for (const token of line.split(/\s+/).filter(Boolean)) {
      current = current ? `${current} ${token}` : token;
      const bare = token.replace(/^["'([]+/, '');
      const ends = /[.!?]["')\]]*$/.test(token) && !/(?:\.\.\.|…)["')\]]*$/.test(token) && !ABBREVIATION.test(bare);
      if (ends) {
        sentences.push(current);
        current = '';
      }
    }
    if (current) sentences.push(current);
  }
  return sentences;
}

/** Irregular forms whose stem the suffix rules cannot reach. */
const IRREGULAR: Record<string, string> = {
  paid: 'pay',
  sent: 'send',
  got: 'get',
  gotten: 'get',
  made: 'make',
  took: 'take',
  taken: 'take',
  left: 'leave',
  gave: 'give',
  given: 'give',
  went: 'go',
  gone: 'go',
  chose: 'choose',
  chosen: 'choose',
  bought: 'buy',
  found: 'find',
  told: 'tell',
  said: 'say',
  worked: 'work',
  ran: 'run',
  wrote: 'write',
  written: 'write',
};

/**
 * A word's stem, by a few suffix rules (plurals, -ing, -ed, -ment, a final y after a consonant): "payments" and
 * "paying" → "pay", "cancelled" → "cancel", "applied" and "apply" → "appli". Related words the rules leave apart
 * ("application", "appli") are joined by `sameStem`.
 */
export function stem(word: string): string {
  let w = word.toLowerCase().replace(/'s$/, '');
  const irregular = IRREGULAR[w];
  if (irregular) return irregular;
  if (/\d/.test(w) || w.length <= 3) return w;
  if (/ies$/.test(w) && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (/sses$/.test(w)) w = w.slice(0, -2);
  else if (/(?:[sxz]|ch|sh)es$/.test(w)) w = w.slice(0, -2);
  else if (/[^su]s$/.test(w) && !/is$/.test(w)) w = w.slice(0, -1);
  if (/ments?$/.test(w) && w.replace(/ments?$/, '').length >= 3) w = w.replace(/ments?$/, '');
  else if (/ied$/.test(w) && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (/ing$/.test(w) && w.length - 3 >= 3) w = undouble(w.slice(0, -3));
  else if (/ed$/.test(w) && w.length - 2 >= 3 && !/eed$/.test(w)) w = undouble(w.slice(0, -2));
  // Porter's rule: a final y after a consonant is an i, so "apply" and "applied" meet.
  if (/[^aeiou]y$/.test(w) && w.length > 3) w = `${w.slice(0, -1)}i`;
  return w;
}

/** "cancell" → "cancel", "runn" → "run": a doubled last consonant left by -ing or -ed. */
function undouble(w: string): string {
  return /([bdglmnprt])\1$/.test(w) ? w.slice(0, -1) : w;
}

/** Whether two words differ by one letter left out, added, changed or two neighbours swapped (a typo). */
function oneEditApart(a: string, b: string): boolean {
  if (a === b || Math.abs(a.length - b.length) > 1) return false;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i += 1;
  return (
    a.slice(i + 1) === b.slice(i + 1) ||
    a.slice(i + 1) === b.slice(i) ||
    a.slice(i) === b.slice(i + 1) ||
    (a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2))
  );
}

/**
 * Whether two words are forms of one: the same stem, stems that share a beginning of at least five letters making up
 * most of the shorter ("appli" and "application", "cancel" and "cancellation"; not "interview" and "international"),
 * or long words one typo apart ("aplication").
 */
export function sameStem(a: string, b: string): boolean {
  const [x, y] = [stem(a), stem(b)];
  if (x === y) return true;
  let common = 0;
  while (common < x.length && x[common] === y[common]) common += 1;
  const shorter = Math.min(x.length, y.length);
  if (common >= 5 && common >= 0.8 * shorter) return true;
  return Math.min(a.length, b.length) >= 6 && oneEditApart(a.toLowerCase(), b.toLowerCase());
}

/**
 * Words that carry no subject: function words, pronouns, question words, the verbs every question uses, greetings and
 * politeness. Whatever is left names what a message or a passage is about.
 */
const STOP_WORDS = new Set(
  (
    'a an the and or but if then than so as of at by for from in into on onto to up down out off over under with ' +
    'without about after before between during until since via per i me my mine myself you your yours yourself we us ' +
    'our ours they them their theirs he him his she her hers it its itself this that these those there here who whom ' +
    'whose which what when where why how is am are was were be been being do does did done doing have has had having ' +
    'can could will would shall should may might must get gets getting got go goes going went make makes made take ' +
    'takes took need needs want wants know let tell told ask asked say said see look please thanks thank thx hi hey ' +
    'hello dear ok okay yes no not nope any anything some something all every each much many more most long soon ' +
    'still yet just already really also too very again now today ever never always only even well back way help ' +
    'question questions wondering wonder think like anyone someone nothing everything one ones im ive id ill dont ' +
    "doesnt didnt cant wont isnt arent wasnt i'm i've i'd i'll don't doesn't didn't can't won't isn't aren't wasn't"
  ).split(/\s+/),
);

/** A text's content words, stemmed: what it is about. */
function contentStems(text: string): string[] {
  return [...new Set(wordsOf(text).filter((w) => w.length >= 2 && !STOP_WORDS.has(w)))].map(stem);
}

/** A sentence's words, stemmed, in order. */
const stemsInOrder = (sentence: string) => wordsOf(sentence).map(stem);

/** How many words of `a` appear in `b` in the same order (the longest common subsequence). */
function inOrder(a: string[], b: string[]): number {
  let previous = new Array<number>(b.length + 1).fill(0);
  for (const word of a) {
    const row = [0];
    b.forEach((other, j) => row.push(word === other ? previous[j]! + 1 : Math.max(previous[j + 1]!, row[j]!)));
    previous = row;
  }
  return previous[b.length]!;
}

const shares = (words: string[], others: string[]) => words.find((w) => others.some((o) => sameStem(w, o)));

// ---------------------------------------------------------------------------------------------------------------
// (a) No sentence said twice

/** The text of a sentence as compared: its words, without case or punctuation. */
const comparable = (sentence: string) => wordsOf(sentence).join(' ');

/**
 * A sentence of the reply said before, in the reply or in an earlier reply of the turn: the same words, or one
 * sentence of at least five words inside another ("From our help center: <the same passage>"). Null when none is.
 */
function repeatedSentence(reply: string, earlierReplies: string[]): string | null {
  const seen: string[] = earlierReplies.flatMap(sentencesOf).map(comparable).filter(Boolean);
  for (const sentence of sentencesOf(reply)) {
    const words = comparable(sentence);
    if (!words) continue;
    const count = words.split(' ').length;
    const again = seen.find((before) => {
      if (before === words) return count >= 3;
      const [short, long] = before.length < words.length ? [before, words] : [words, before];
      return short.split(' ').length >= 5 && ` ${long} `.includes(` ${short} `);
    });
    if (again !== undefined) return `said twice: "${sentence}"`;
    seen.push(words);
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------
// (b) No help-center passage without the question's subject

interface Passage {
  title: string;
  /** The passage's sentences long enough to recognise in a reply, as their words' stems in order. */
  sentences: string[][];
  /** What the passage is about: its title's content words, and its body's words that few other passages use. */
  subject: string[];
}

/** The help center as the checks read it: each doc's sentences and subject words. */
class HelpCenter {
  readonly passages: Passage[];

  constructor(readonly docs: Doc[]) {
    const bodies = docs.map((doc) => contentStems(`${doc.title} ${doc.body}`));
    // A word found in at least three passages (or a sixth of them, in a larger help center) is common to the help
    // center ("shift", "business", "app") and says nothing about which passage a reply quotes.
    const common = Math.max(3, Math.ceil(docs.length / 6));
    const frequency = new Map<string, number>();
    for (const words of bodies) for (const w of new Set(words)) frequency.set(w, (frequency.get(w) ?? 0) + 1);
    this.passages = docs.map((doc, index) => ({
      title: doc.title,
      sentences: sentencesOf(doc.body)
        .map(stemsInOrder)
        .filter((s) => s.length >= 6),
      subject: [
        ...new Set([...contentStems(doc.title), ...bodies[index]!.filter((w) => (frequency.get(w) ?? 0) < common)]),
      ],
    }));
  }

  /**
   * The passages a reply quotes: a sentence of the reply that holds four in five of the words of a passage's sentence
   * in their order (a passage pasted, or lightly reworded); sharing words in another order is writing, not quoting.
   */
  quotedIn(reply: string): Passage[] {
    const replySentences = sentencesOf(reply).map(stemsInOrder);
    return this.passages.filter((p) =>
      p.sentences.some((words) => replySentences.some((own) => inOrder(words, own) >= 0.8 * words.length)),
    );
  }
}

/** Words that point back to what was said before: "how long does that take?" */
const REFERS_BACK = /\b(?:it|that|this|those|these|they|them)\b/i;

/**
 * A quoted passage that shares no subject with the messages the reply answers (nor, for a message that points back,
 * with what the talent wrote before). Null when every quoted passage does, or none is quoted.
 */
function offSubjectPassage(reply: string, asked: string[], earlier: string[], center: HelpCenter): string | null {
  const message = contentStems(asked.join('\n'));
  const before = asked.some((m) => REFERS_BACK.test(m)) ? contentStems(earlier.join('\n')) : [];
  for (const passage of center.quotedIn(reply)) {
    if (shares(passage.subject, message) || shares(passage.subject, before)) continue;
    return `quotes "${passage.title}", which shares no subject with "${asked.join(' / ')}"`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------
// (c) A named subject is the subject of the answer, or said to be missing

/**
 * The nouns a talent names a job by: "the barista job", "my line cook position". Not "shift": a shift is named by its
 * event, place or time more often than by its job ("the convention shift", "my brunch shift"), which a correct reply
 * need not repeat; a job title of the data before "shift" is still found as a title.
 */
const JOB_NOUN = /\b(?:the|my)\s+((?:[\p{L}\p{N}][\p{L}\p{N}'/-]*\s+){1,3})(?:job|position|role)s?\b/giu;

/** Words before "job", "position" or "role" that say which one in time or order, or how it went, not what it is. */
const NOT_A_TITLE = new Set(
  (
    'same other next last first second third previous recent latest upcoming new old current whole entire only ' +
    'right wrong full part part-time full-time short long early late extra actual original usual regular normal ' +
    'morning afternoon evening night overnight weekend weekday daytime day week month year today tonight tomorrow ' +
    'yesterday daily weekly monthly hourly monday tuesday wednesday thursday friday saturday sunday january ' +
    'february march april may june july august september october november december cancelled canceled paid unpaid ' +
    'open closed filled hired completed finished missed that this these those one two three four five your my their ' +
    'a an the any every each which what big small little good great bad'
  ).split(/\s+/),
);

/** A job the talent names: the words they name it by, and the titles of the scenario's jobs those words point to. */
interface NamedJob {
  words: string[];
  titles: string[][];
}

/**
 * What the messages name as a job: titles of the scenario's jobs written in them, and the words before "job",
 * "position" or "role" after "the" or "my" ("the barista job", "the Austin warehouse job"), less those that only say
 * which one ("the last job", "my new position"). Words before a function word belong to the sentence, not the name:
 * "the business I applied to for my job" names none.
 */
function namedJobs(asked: string[], scenario: Scenario): NamedJob[] {
  const text = normalizeQuotes(asked.join('\n'));
  const said = ` ${wordsOf(text).join(' ')} `;
  const jobs = scenario.talent.jobs.map((job) => ({ title: wordsOf(job.title), place: wordsOf(job.location) }));
  const named: string[][] = jobs
    .map((job) => job.title)
    .filter((title) => title.length && said.includes(` ${title.join(' ')} `));
  for (const match of text.matchAll(JOB_NOUN)) {
    const run = wordsOf(match[1]!);
    const lastFunctionWord = run.map((w) => STOP_WORDS.has(w)).lastIndexOf(true);
    const afterFunctionWords = run.slice(lastFunctionWord + 1);
    const words = afterFunctionWords.filter((w) => !NOT_A_TITLE.has(w) && !/\d/.test(w));
    if (words.length && !named.some((n) => words.every((w) => n.includes(w)))) named.push(words);
  }
  // "The Austin shift" is the talent's job in Austin: a reply that names that job by its title is about it.
  return named.map((words) => ({
    words,
    titles: jobs
      .filter((job) => words.some((w) => [...job.title, ...job.place].some((t) => sameStem(w, t))))
      .map((job) => job.title),
  }));
}

/** How a reply says the talent has no such thing: "I don't see…", "there is no application…", "could not find". */
const SAYS_MISSING = new RegExp(
  [
    String.raw`\b(?:do|does|did|can|could|would)(?:n't| not|not)\s+(?:see|find|show|have|exist)\b`,
    String.raw`\b(?:can't|cannot|unable to|not able to)\s+(?:see|find)\b`,
    String.raw`\bnot\s+(?:find|see|found|seeing|finding)\b`,
    String.raw`\bno\s+(?:\w+\s+){0,2}(?:application|payment|record|job|shift|position|role)s?\b`,
    String.raw`\b(?:is|are|was|were)(?:n't| not)\s+(?:on|in|among|part of)\s+(?:your|our)\b`,
    String.raw`\bnothing\s+(?:for|about|under|on)\b`,
  ].join('|'),
  'i',
);

/**
 * A job the talent names that the reply neither names (a word of it in any form, or the title of the scenario's job it
 * points to) nor says is missing. Null when every named job is answered, or none is named.
 */
function unansweredSubject(reply: string, asked: string[], scenario: Scenario): string | null {
  const replyWords = wordsOf(reply);
  const said = ` ${replyWords.join(' ')} `;
  const missing = SAYS_MISSING.test(normalizeQuotes(reply));
  for (const job of namedJobs(asked, scenario)) {
    const named = job.words.some((w) => replyWords.some((r) => sameStem(w, r)));
    if (missing || named || job.titles.some((title) => said.includes(` ${title.join(' ')} `))) continue;
    return `the message names "${job.words.join(' ')}"; the reply neither answers about it nor says it is not there`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------
// (d) Greeting, capitals and status words

const WEEKDAYS_AND_MONTHS =
  'monday tuesday wednesday thursday friday saturday sunday january february march april may june july august ' +
  'september october november december';

/**
 * Words that are capitalised wherever they stand: the names in the scenario's data (people, job titles, places), words
 * the help center capitalises inside a sentence ("Crewline", "Settings"), days and months.
 */
function properNouns(scenario: Scenario, center: HelpCenter): Set<string> {
  const names = [
    scenario.conversation.contact.name,
    ...scenario.talent.users.map((u) => u.name),
    ...scenario.talent.jobs.flatMap((j) => [j.title, j.location]),
    WEEKDAYS_AND_MONTHS,
  ];
  const found = new Set(names.flatMap((n) => wordsOf(n)));
  // A title's parts ("Contracts: Your contract with Crewline") read as sentences too.
  const sentences = center.docs.flatMap((d) => [...d.title.split(/:\s*/), ...sentencesOf(d.body)]);
  for (const sentence of sentences) {
    for (const word of sentence.split(/\s+/).slice(1))
      if (/^\p{Lu}\p{Ll}/u.test(word)) found.add(wordsOf(word)[0] ?? '');
  }
  return found;
}

/** Every status the scenario's data knows (of applications, payments and jobs): the raw tokens a reply must not show. */
function statusValues(scenario: Scenario): string[] {
  const users = scenario.talent.users;
  return [
    ...new Set(
      [
        ...users.flatMap((u) => u.applications.map((a) => a.status)),
        ...users.flatMap((u) => u.payments.map((p) => p.status)),
        ...scenario.talent.jobs.map((j) => j.status),
      ].map((s) => s.toLowerCase()),
    ),
  ];
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Parts of a reply that are addresses, not prose: a token there may be anything. */
const ADDRESS = /\b(?:https?:\/\/\S+|www\.\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)/gi;

/** The first wording fault of a reply, or null: a capital after the greeting's comma, a sentence in lower case, a raw status. */
function templateWording(reply: string, names: Set<string>, statuses: string[]): string | null {
  const text = normalizeQuotes(reply);
  const prose = text.replace(ADDRESS, ' ');
  // "Hi Ana, Your payment…": after a greeting and its comma on the same line, a sentence goes on in lower case.
  const greeting =
    /^[ \t]*(?:hi|hey|hello|howdy|dear|good (?:morning|afternoon|evening))\b[^,\n.!?]{0,40},[ \t]+([\p{L}'-]+)/imu.exec(
      prose,
    );
  if (greeting) {
    const next = greeting[1]!;
    const word = wordsOf(next)[0] ?? '';
    // "I" and "I'm" are always capitals; so are names and acronyms ("ID").
    const capital = /^\p{Lu}/u.test(next);
    if (capital && !/^i(?:'|$)/.test(word) && !names.has(word) && !/^\p{Lu}+$/u.test(next)) {
      return `a capital after the greeting: "${greeting[0].trim()}"`;
    }
  }
  for (const sentence of sentencesOf(prose)) {
    const first = /^[\s"'([*•–—-]*([\p{L}][\p{L}'-]*)/u.exec(sentence)?.[1];
    // A first word in lower case starts no sentence; "iPhone" or "eBay" spell their own capitals.
    if (first && /^[\p{Ll}'-]+$/u.test(first)) {
      return `a sentence starts in lower case: "${sentence}"`;
    }
  }
  const snake = /\b[A-Za-z]+(?:_[A-Za-z0-9]+)+\b/.exec(prose);
  if (snake) return `a raw token: "${snake[0]}"`;
  if (statuses.length) {
    const alternatives = statuses.map(escape).join('|');
    const place = new RegExp(
      String.raw`\b(?:is|are|was|were|remains|stays)\s+(?:still\s+|now\s+|currently\s+)?in\s+(?:${alternatives})\b(?!\s+(?:stage|status|step|phase|state|queue|review)\b)`,
      'i',
    ).exec(prose);
    if (place) return `a status used as a place: "${place[0]}"`;
    const caps = [...prose.matchAll(/\b\p{Lu}{3,}\b/gu)].find((m) => statuses.includes(m[0].toLowerCase()));
    if (caps) return `a raw status: "${caps[0]}"`;
  }
  return null;
}
