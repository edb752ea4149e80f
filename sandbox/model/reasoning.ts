// The sandbox model's deterministic reasoning: plan, coverage and draft answers computed from the context Melvin sends.
import type { CoverageOutput, DraftOutput, PlanOutput, ResolveOutput } from '../../src/contract/schemas';
import type { Tone } from '../../src/contract/state';
import type { LlmStep } from '../../src/contract/schemas';
import { oneEditApart } from '../words';
import { codesMissingFrom, keyCodes } from './codes';

interface Message {
  role: string;
  content: string;
}
interface Tool {
  name: string;
  description: string;
  input_schema: { properties?: Record<string, unknown>; required?: string[] };
}
interface Stored {
  tool_name?: string;
  query?: string;
  success: boolean;
  data: unknown;
}
interface Context {
  messages?: Message[];
  /** The user's messages no reply has answered yet, wherever they sit in `messages`: what to answer when given. */
  unanswered_messages?: string[];
  available_tools?: Tool[];
  identity_arguments?: string[];
  tool_data?: Record<string, Stored>;
  docs_data?: Record<string, Stored>;
  previous_hops?: { tool_calls: string[]; missing_data: string[] }[];
  user_name?: string | null;
  /** Draft: each intent with whether the data covers it, and the team's past answers for their tone. */
  intents?: { intent: string; question: string; covered: boolean }[];
  style_examples?: { question: string; answer: string }[];
  /** Coverage and draft: the records Melvin resolved the talent's words to (id null when it could not tell). */
  named_records?: { kind: string; mention: string; record_kind: string; id: string | null }[];
  /** Draft: how the user feels, as Plan read it. */
  tone?: Tone;
}

const DOCS_TOOL = 'search_talent_docs';
/**
 * MCP clients that offer several servers' tools tell a name two servers share apart as `<server>__<tool>`; the model
 * reads such a name as the tool's own name, as a real model would read through the prefix.
 */
function ownName(toolName: string): string {
  const at = toolName.lastIndexOf('__');
  return at === -1 ? toolName : toolName.slice(at + 2);
}

const STOP_WORDS = new Set(
  (
    "a an the i im i'm me my mine we our you your it its is are was were be been am do does did to of in on at for " +
    'with and or but if so that this these those there here what when where which who why how can could would should ' +
    'will just please hi hello hey thanks thank any some about from by as get got have has had not no yes still yet ' +
    'know tell let us them they he she his her one two last next week weeks ago today now also all need after before ' +
    // How a question asks ("how long does it take", "how much") says nothing about what it asks about.
    'long take takes much many soon usually normally ' +
    // Words every tool description uses say nothing about which tool to call.
    'talent user ' +
    // The platform's name and its app, words of quantity ("every", "more") and nouns any subject has ("details",
    // "info", "thing") say nothing about what a message asks about.
    'crewline app every each whose actually really detail details info information thing things more ' +
    // Particles any sentence has ("through the app", "picking up") name no subject.
    'through up via into'
  ).split(' '),
);

/** Word forms the user writes, mapped to the words tool names and descriptions use. */
const SYNONYMS: Record<string, string> = {
  pay: 'payment',
  paid: 'payment',
  pays: 'payment',
  paying: 'payment',
  payments: 'payment',
  payout: 'payment',
  payouts: 'payment',
  money: 'payment',
  salary: 'payment',
  wage: 'payment',
  wages: 'payment',
  earnings: 'payment',
  paycheck: 'payment',
  paychecks: 'payment',
  payday: 'payment',
  deposit: 'payment',
  // Abbreviations people type on a phone: "my pmt", "my appl".
  pmt: 'payment',
  pymt: 'payment',
  appl: 'application',
  applied: 'application',
  apply: 'application',
  applications: 'application',
  candidacy: 'application',
  interview: 'application',
  screening: 'application',
  hired: 'application',
  rejected: 'application',
  jobs: 'job',
  shift: 'job',
  shifts: 'job',
  role: 'job',
  position: 'job',
  gig: 'job',
  profile: 'profile',
  account: 'profile',
  acct: 'profile',
  // A contractor works under a contract: "am I an employee or a contractor?" is answered by the passage on contracts.
  // Whether one is an employee is a question about the contract too.
  employee: 'contract',
  employees: 'contract',
  contractor: 'contract',
  contractors: 'contract',
  // Ways of asking to change something: the help center says "change" and "update" for the same thing.
  update: 'change',
  updated: 'change',
  updating: 'change',
  switch: 'change',
  switched: 'change',
  changed: 'change',
  changing: 'change',
};

/**
 * Words of a question about how things work. "The stages" and "the process" are; a record's state ("has my payment
 * been processed?", "did I get to the interview stage?") is not: the talent's own record answers that. No record
 * holds bank details, what is paid back or what is allowed, so those ("will you pay me back for the uniform?", "what
 * should I do?") are questions about how things work too.
 */
const POLICY_WORDS =
  /\b(polic|withdraw|cancel|tax|w-?9|1099|w-?8|document|verif|identity|id\b|passport|contract|schedule|payout run|how (do|does|long|can)|can i|rule|fee|deadline|stages\b|process(es)?\b|required?|bank|what (should|do|can) i do|reimburs|pay (me )?back|allowance|refund|allowed|waiting period)/i;
const HUMAN_REQUEST =
  /\b(human|real person|a person|someone from|somebody|an agent|representative|talk to (a|an|some)|speak (to|with)|connect me)\b/i;
/**
 * Matters a person must handle whatever the data says: legal steps, safety, harassment, discrimination, fraud, a change
 * of the talent's legal name (their identity and tax records must change together).
 */
const SENSITIVE =
  /\b(lawyer|attorney|legal action|lawsuit|sue|suing|court|harass(ed|ment|ing)?|discriminat\w*|unsafe|injur(ed|y)|assault\w*|threaten\w*|police|fraud\w*|scam(med)?|identity theft|stolen|self[- ]harm|suicid\w*|legal name|name change[ds]?|changed my (last |legal |family )?name|name (has )?changed)\b/i;
/**
 * Another person's records, which a talent may not see: "my sister's payment", "how much did my coworker Maria make",
 * "how much he got paid". A person decides what, if anything, to tell them.
 */
const SOMEONE_ELSE =
  /\b((roommate|room-mate|friend|coworker|co-worker|colleague|wife|husband|partner|girlfriend|boyfriend|sister|brother|mom|mother|dad|father|son|daughter|cousin|neighbou?r)['’]s (pay|payments?|paychecks?|money|earnings|wages|applications?)|someone else['’]?s|another (talent|worker|person|user)['’]s|how much (he|she) (got|gets|made|makes|earned|earns|was paid|is paid)|(how much|what) (did|does|do|has|will) (he|she|my \w+( \w+)?) (get|got|make|made|earn|earned|be paid))\b/i;
const GREETING_ONLY = /^\s*(hi|hello|hey|good (morning|afternoon|evening)|thanks|thank you)[\s!.,]*(melvin)?[\s!.,]*$/i;
/** The talent speaks of their own records: "my payment", "when do I get paid". */
const OWN = /\b(my|i|i'm|i've|me|mine)\b/i;
/** A record or shift named as one the talent has: "when will the payment arrive?", "when will the 11/17 shift be paid?" */
const RECORD_NAMED =
  /\b(the|this|that)\s+(payment|pay|payout|money|application)\b|\b(the|this|that)\s+([\w/'-]+\s+){0,3}(shift|gig)s?\b/i;
/** Words asking where a record stands, which only the talent's own record answers: "still", "yet", "sent", "status". */
const STANDING = /\b(status|yet|still|sent|arrived?|news|update|happened|where(?:'s|s| is)?)\b/i;
/**
 * In a question about how things work, what still asks where the talent's own record stands: "is my payment still
 * processing?", "when is my next payout, and how do I change my bank account?", "where is my pay?". Not "where do I
 * update…", which asks where in the app. A dot inside a word (an email address, "6.5 hours") does not end the sentence.
 */
const RECORD_STANDING =
  /\b(status|pending|process(ed|ing)|yet|still|arrived?|received?|sent|late|missing|news|happened|next step|(when|where(?:'s|s| is| are| did| has))\b(?:[^.?!]|\.(?=\S))*\b(paid|pay|payments?|payouts?|money|application))\b/i;
/** A message that only thanks or acknowledges ("Noted, thanks (258)", "ok great!"): nothing to look up. */
const THANKS = /^\s*(thanks|thank you|thx|ok|okay|noted|got it|great|perfect|cool|understood)\b/i;
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

function words(text: string): string[] {
  // "Called off" is how people say a shift was cancelled; the help center says "cancels".
  const plain = text.toLowerCase().replace(/\bcall(ed|s|ing)? off\b/g, 'cancelled');
  return (plain.match(/[a-z0-9][a-z0-9'-]*/g) ?? []).map((w) => w.replace(/'s$/, '')).filter((w) => !STOP_WORDS.has(w));
}

function canonical(word: string): string {
  const known = SYNONYMS[word] ?? TYPO_FREE.get(word);
  if (known) return known;
  // People type fast: "aplication", "paymnet". A long word one edit from a word the model knows is that word.
  if (word.length >= 6) {
    for (const [form, meaning] of TYPO_FREE) if (oneEditApart(word, form)) return meaning;
  }
  return word.replace(/s$/, '');
}

/** The words the model reads meaning from, with their meaning: the synonyms and the terms they stand for. */
const TYPO_FREE = new Map<string, string>([
  ...Object.entries(SYNONYMS).filter(([form]) => form.length >= 6),
  ...[...new Set(Object.values(SYNONYMS))].map((term) => [term, term] as [string, string]),
]);

/**
 * What the user is asking now: the messages the context says no reply answered yet, else their messages after Melvin's
 * last one. Of the unanswered ones, what the user only told before someone's last reply ("I uploaded my documents",
 * then a teammate's "we can see them") was heard already: it asks nothing and frames nothing now.
 */
export function currentQuestion(messages: Message[] = [], unanswered?: string[]): string {
  if (unanswered?.length) {
    const lastReply = messages.map((m) => m.role).lastIndexOf('assistant');
    const open = unanswered.filter((text) => {
      const at = messages.reduce((found, m, i) => (m.role === 'user' && m.content === text ? i : found), -1);
      return at === -1 || at > lastReply || asksSomething(text);
    });
    return (open.length ? open : unanswered).join('\n');
  }
  let start = messages.length;
  while (start > 0 && messages[start - 1]!.role === 'user') start -= 1;
  const trailing = messages.slice(start).map((m) => m.content);
  return (
    trailing.length
      ? trailing
      : messages
          .filter((m) => m.role === 'user')
          .slice(-1)
          .map((m) => m.content)
  ).join('\n');
}

/** What a piece of the user's text asks about, read from its words. */
interface Reading {
  human: boolean;
  /** What makes the message one a person must handle (legal, safety, harassment, fraud), as written; null if nothing. */
  sensitive: string | null;
  greeting: boolean;
  policy: boolean;
  /** Asks about a job's own details (pay rate, start date, location), as opposed to the user's application for it. */
  jobDetails: boolean;
  terms: Set<string>;
}

/**
 * A job's own details: its rate ("what does the barista job pay?"), start or place ("where is the Austin shift?"). "Where
 * is my money for the Reno shifts?" asks about a payment, and "my pay for the warehouse shift" is the talent's own.
 */
const JOB_DETAILS =
  /\b(pay rate|hourly|per hour|how much does|(does|do|will|would) (the|that|this|a)\b[^?]*\bpay(?=\s*\?*\s*$)|what(?:'s| is) the pay|start date|when does .* start|starts?\b|location|where is (the|this|that) ([\w'-]+ ){0,3}(job|shift|gig|venue|event))\b/i;

/**
 * Ways of asking where an application stands that name no application: "did I get an offer?", "did I get the bartender
 * job?", "any news on the barista position?". ("Do you offer health insurance?" is not one: an offer here is a thing the talent has.)
 */
const APPLICATION_PHRASE =
  /\b(an?|the|my|job)\s+offers?\b|\b(get|got)\s+(the|that|this)\s+([\w'-]+\s+){0,3}(job|position|role|gig)\b|\b(updates?|news|word|hear(?:d)? back)\s+(on|about|from|for|regarding|with)\s+(the|that|this|my)\s+([\w'-]+\s+){0,3}(job|position|role)\b/i;

function readingOf(text: string): Reading {
  const terms = new Set(words(text).map(canonical));
  if (APPLICATION_PHRASE.test(text)) terms.add('application');
  // Only an application is withdrawn: "how do I withdraw from the hostess position?" is about the talent's application.
  if (/\bwithdraw/i.test(text)) terms.add('application');
  return {
    human: HUMAN_REQUEST.test(text),
    sensitive: (SENSITIVE.exec(text) ?? SOMEONE_ELSE.exec(text))?.[0].toLowerCase() ?? null,
    greeting: GREETING_ONLY.test(text) || (THANKS.test(text) && !/\?/.test(text) && !hasSubject(text)),
    policy: POLICY_WORDS.test(text),
    jobDetails: JOB_DETAILS.test(text) && JOB_MENTION.test(text),
    terms,
  };
}

/** One thing the user asks: its name (what the reply and the team call it), the user's words, and what they ask. */
interface AskedIntent {
  intent: string;
  question: string;
  reading: Reading;
}

/** A sentence asks something when it is a question or a request; "I worked the Austin shift." only tells. */
const REQUEST =
  /^(please|can|could|would|will|tell|send|show|give|help|explain|connect|let me|i (want|need|would like|'d like)|i'd|how|hows|what|whats|when|whens|wen|where|wheres|why|which|who|is|are|do|does|did|has|have|any|ignore)\b/i;

/**
 * Two questions joined in one sentence ("when is my pay coming and did my front desk application go through") are two
 * sentences: "and", "also" or "plus" before a word that starts a question.
 */
const JOINED_QUESTION =
  /,?\s+(?:and|also|plus)\s+(?=(?:how|hows|what|whats|what's|when|whens|where|wheres|why|which|any)\b|(?:is|are|do|does|did|has|have|can|could)\s+(?:i|my|you|it|the|there|we|this|that)\b|(?:is|are)\s+an?\b)/i;

/** Whether a message asks something: a sentence of it is a question or a request. */
function asksSomething(text: string): boolean {
  return sentencesOf(text).some((s) => s.endsWith('?') || REQUEST.test(s.replace(LEAD_IN, '')));
}

/** Words a question may open with before it asks: "Hi, can you…", "Also, when…", "Two things: when…", "2) is…". */
const LEAD_IN = /^((hi|hello|hey|also|and|ok|okay|thanks)[,!.\s]+)?([^:?]{1,24}:\s*)?(\(?\d{1,2}[).]\s*)?/i;

/** The items of a numbered list written in one line: "1) when do I get paid 2) whats next for my application". */
const NUMBERED_ITEM = /\s+(?=\(?\d{1,2}[).]\s)/;

function sentencesOf(text: string): string[] {
  return text
    .split(/(?<=[.?!])\s+|\n+/)
    .flatMap((s) => s.split(NUMBERED_ITEM))
    .flatMap((s) => s.split(JOINED_QUESTION))
    .map((s) => s.trim())
    .filter(Boolean);
}

/** A short name for an intent, from what it asks about; the same sentence always gets the same name. */
function intentName(reading: Reading, question: string): string {
  if (reading.human) return 'talk to a person';
  if (reading.jobDetails) return 'job details';
  if (reading.terms.has('payment') && !reading.policy) return 'payment status';
  if (reading.terms.has('application') && !reading.policy) return 'application status';
  const content = words(question).filter((w) => !['can', 'send', 'tell', 'show', 'give', 'need', 'want'].includes(w));
  return content.slice(0, 4).join(' ') || 'question';
}

/** Whether a text names something to look up: a payment, an application, a job, a policy or a code. */
function hasSubject(text: string): boolean {
  const terms = new Set(words(text).map(canonical));
  return (
    terms.has('payment') ||
    terms.has('application') ||
    terms.has('job') ||
    POLICY_WORDS.test(text) ||
    HUMAN_REQUEST.test(text) ||
    keyCodes(text).size > 0
  );
}

/** Whether a sentence names what it asks about: a payment, an application, a job, a policy, a code, or enough words. */
function hasTopic(sentence: string): boolean {
  const reading = readingOf(sentence);
  return (
    reading.human ||
    reading.jobDetails ||
    reading.policy ||
    reading.terms.has('payment') ||
    reading.terms.has('application') ||
    keyCodes(sentence).size > 0 ||
    // Two content words name a subject ("is there health insurance?"); "What do I need to upload?" has one.
    words(sentence).length >= 2
  );
}

/**
 * The intents of the user's latest messages: each sentence that asks something (a greeting asks nothing). A message of
 * one intent is read whole, so what it tells around its question ("I worked the Austin shift") still counts.
 */
export function intentsOf(question: string): AskedIntent[] {
  const whole = readingOf(question);
  if (whole.greeting) return [];
  const asked = sentencesOf(question).filter(
    (s) =>
      // "Two questions: what's next on my application" asks after the lead-in that announces it.
      (s.endsWith('?') || REQUEST.test(s.replace(/^[^:?]{1,40}:\s+/, '').replace(LEAD_IN, ''))) &&
      !GREETING_ONLY.test(s),
  );
  // A question with no topic of its own ("What do I need to upload?") goes on with the one before it.
  const grouped: string[] = [];
  for (const sentence of asked) {
    if (grouped.length && !hasTopic(sentence)) grouped[grouped.length - 1] += ` ${sentence}`;
    else grouped.push(sentence);
  }
  if (grouped.length <= 1) {
    return words(question).length
      ? [{ intent: intentName(whole, question), question: question.trim(), reading: whole }]
      : [];
  }
  const names = new Map<string, number>();
  return grouped.map((sentence) => {
    const reading = readingOf(sentence);
    const base = intentName(reading, sentence);
    const seen = (names.get(base) ?? 0) + 1;
    names.set(base, seen);
    return { intent: seen > 1 ? `${base} (${seen})` : base, question: sentence, reading };
  });
}

/** "the Barista job", "my Denver catering shift": how a user names one job. */
const JOB_MENTION =
  /\b(?:the|my|for|at)\s+((?:[A-Za-z][\w'-]*\s+){0,3}?[A-Za-z][\w'-]*)\s+(?:job|shift|gig|position|role)s?\b/i;

/**
 * Words before "job", "shift" or "application" that say which one by time, order or state, not by the job's title:
 * "my last shift", "the weekend shift", "my pending application".
 */
const NOT_A_TITLE = new Set(
  (
    'next last this that new other same first second third latest recent previous old current pending processing ' +
    'failed missing paid open whole entire final late delayed weekly monthly own full partial overdue outstanding ' +
    'usual morning afternoon evening night overnight day weekend monday tuesday wednesday thursday friday saturday ' +
    'sunday holiday'
  ).split(' '),
);

/**
 * Occasions the talent worked at: "the gala shift" is where they worked, which their records need not say, so no
 * record naming it is no sign of a job they do not have. (A title may hold one: "Wedding Server" is found by it.)
 */
const OCCASIONS = new Set(
  (
    'gala wedding concert festival conference party game match fundraiser show expo convention tournament ceremony ' +
    'dinner lunch brunch breakfast banquet event'
  ).split(' '),
);

/**
 * The record a job's title can stand before: "my barista application", "my warehouse application". Payments are
 * named by where or when the talent worked ("my Boulder catering payout"), not by a job, so they are not among them.
 */
const RECORD_WORDS = ['application', 'applications', 'appl'];

/** Whether a word names a record of the talent's, as typed: "application", "aplication", "paymnet". */
function isRecordWord(word: string): boolean {
  return RECORD_WORDS.includes(word) || (word.length >= 6 && RECORD_WORDS.some((r) => oneEditApart(word, r)));
}

/** Whether the words could be a job's title: none says which one by time or state, names a record, or is a number. */
function couldBeTitle(title: string[]): boolean {
  return (
    title.length > 0 &&
    title.every((w) => /^[a-z][a-z'-]*$/.test(w) && !STOP_WORDS.has(w) && !NOT_A_TITLE.has(w)) &&
    !title.some((w) => ['payment', 'application', 'job'].includes(canonical(w)))
  );
}

/**
 * The job a text names, for records of `kind` when given: "my barista application" names the job of an application,
 * not of a payment ("when do I get paid and what's next for my host application?" asks about every payment).
 */
function jobMention(text: string, kind?: 'payment' | 'application'): string | undefined {
  // "my application for the barista job" names the barista job: the words after the last "the", "my", "for" or "at".
  const mention = JOB_MENTION.exec(text)?.[1]
    ?.replace(/^(?:.*\s)?(?:the|my|for|at)\s+/i, '')
    .trim();
  if (mention && couldBeTitle(mention.toLowerCase().split(/\s+/))) return mention;
  if (kind === 'payment') return undefined;
  // "my barista application", "the line cook aplication": up to three words between "my" or "the" and the record.
  const tokens = text.match(/[A-Za-z0-9$][\w'$-]*/g) ?? [];
  for (let at = 0; at < tokens.length; at++) {
    if (!/^(the|my)$/i.test(tokens[at]!)) continue;
    for (let length = 1; length <= 3 && at + length + 1 < tokens.length; length++) {
      const title = tokens.slice(at + 1, at + 1 + length);
      if (!isRecordWord(tokens[at + 1 + length]!.toLowerCase())) continue;
      if (couldBeTitle(title.map((w) => w.toLowerCase()))) return title.join(' ');
      break;
    }
  }
  return undefined;
}

/** How well a tool's name (counted twice) and description match what the user asked. */
function toolScore(tool: Tool, terms: Set<string>): number {
  const nameTerms = ownName(tool.name).split('_').map(canonical);
  const descriptionTerms = new Set(words(tool.description).map(canonical));
  let score = 0;
  for (const term of terms) {
    if (nameTerms.includes(term)) score += 2;
    if (descriptionTerms.has(term)) score += 1;
  }
  return score;
}

/** Values of a field (e.g. `job_id`) anywhere in the gathered tool data. */
function valuesOf(field: string, value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => valuesOf(field, v, found));
  else if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if (key === field && (typeof v === 'string' || typeof v === 'number')) found.add(String(v));
      else valuesOf(field, v, found);
    }
  }
  return found;
}

/** The calls that answer one intent: user-data tools its words match, and a docs search for policies or nothing else. */
function callsFor(intent: AskedIntent, context: Context, taken: Set<string>): PlanOutput['tool_calls'] {
  const tools = context.available_tools ?? [];
  const identity = new Set(context.identity_arguments ?? []);
  const gathered = Object.values(context.tool_data ?? {});
  const succeeded = new Set(gathered.filter((t) => t.success).map((t) => t.tool_name));
  const calls: PlanOutput['tool_calls'] = [];
  const terms = intent.reading.terms;
  // A question about a job's own details wants the job, not the user's payments that its "pay" also matches.
  const scored = tools
    .filter((t) => ownName(t.name) !== DOCS_TOOL && (!intent.reading.jobDetails || /job/.test(ownName(t.name))))
    .map((tool) => ({ tool, score: toolScore(tool, terms) }));
  const best = Math.max(0, ...scored.map((s) => s.score));
  const mention = intent.reading.jobDetails ? jobMention(intent.question) : undefined;
  for (const { tool, score } of scored) {
    // A name match (worth 2), or two description matches, and close to the best tool.
    if (score < 2 || score < best * 0.6 || succeeded.has(tool.name) || taken.has(tool.name)) continue;
    const needed = (tool.input_schema.required ?? []).filter((name) => !identity.has(name));
    const args: Record<string, string> = {};
    for (const name of needed) {
      const value = [
        ...valuesOf(
          name,
          gathered.map((t) => t.data),
        ),
      ][0];
      // A job the user named in words goes as they wrote it: Melvin resolves it against their own records.
      if (value !== undefined && !mention) args[name] = value;
      else if (mention && /_id$/.test(name)) args[name] = mention;
    }
    // A tool whose inputs come from other tools' results waits for a later hop.
    if (Object.keys(args).length < needed.length) continue;
    // Details of a job the user named need the user's applications to resolve it against.
    if (mention) {
      const applications = tools.find((t) => ownName(t.name) === 'get_user_applications_detailed');
      if (applications && !succeeded.has(applications.name) && !taken.has(applications.name)) {
        taken.add(applications.name);
        calls.push({
          tool_name: applications.name,
          arguments_json: '{}',
          reasoning: `To find "${mention}" among the user's jobs.`,
        });
      }
    }
    taken.add(tool.name);
    calls.push({
      tool_name: tool.name,
      arguments_json: JSON.stringify(args),
      reasoning: `Matches "${tool.name}" to the question.`,
    });
  }
  // A payment asked about by its job ("my pay for the Austin shift") is told apart by the job's title and place, which
  // the applications hold.
  const namedJob = !intent.reading.jobDetails && calls.length ? jobMention(intent.question) : undefined;
  const applications = tools.find((t) => ownName(t.name) === 'get_user_applications_detailed');
  if (namedJob && applications && !succeeded.has(applications.name) && !taken.has(applications.name)) {
    taken.add(applications.name);
    calls.push({
      tool_name: applications.name,
      arguments_json: '{}',
      reasoning: `To find "${namedJob}" among the user's jobs.`,
    });
  }
  const docsTool = tools.find((t) => ownName(t.name) === DOCS_TOOL);
  // A search that failed is tried again on the next hop; one that came back is not repeated.
  const earlierQueries = new Set(
    Object.values(context.docs_data ?? {})
      .filter((d) => d.success)
      .map((d) => d.query),
  );
  const docsQuery = words(intent.question).slice(0, 8).join(' ');
  if (
    docsTool &&
    docsQuery &&
    (intent.reading.policy || calls.length === 0) &&
    !earlierQueries.has(docsQuery) &&
    !taken.has(`docs:${docsQuery}`)
  ) {
    taken.add(`docs:${docsQuery}`);
    calls.push({
      tool_name: docsTool.name,
      arguments_json: JSON.stringify({ query: docsQuery }),
      reasoning: 'A policy or process question.',
    });
  }
  return calls;
}

/** What the user named in their words: jobs, dates, form numbers. */
function entitiesOf(question: string): PlanOutput['entities'] {
  const entities: PlanOutput['entities'] = [];
  const job = jobMention(question);
  if (job) {
    // "the barrista job in Austin TX": where the job is belongs to which one it is.
    const at = question.toLowerCase().indexOf(job.toLowerCase());
    const place = /^\s+(?:job|shift|gig|position|role)s?\s+(?:in|at|near)\s+((?:[A-Z][\w'-]*,?\s*){1,3})/.exec(
      question.slice(at + job.length),
    )?.[1];
    const through = place ? question.indexOf(place, at) + place.trimEnd().replace(/,$/, '').length : at + job.length;
    entities.push({ kind: 'job', mention: question.slice(at, through) });
  }
  for (const date of question.match(new RegExp(`\\b(${MONTHS.join('|')})\\s+\\d{1,2}\\b`, 'gi')) ?? []) {
    entities.push({ kind: 'date', mention: date });
  }
  for (const code of question.match(/\b(?:form\s+)?[A-Z]{1,4}-?\d{1,6}[A-Z]*\b|\bform\s+\d{3,6}\b/gi) ?? []) {
    entities.push({ kind: 'form', mention: code });
  }
  return entities;
}

/**
 * The cues a reader takes from a message's own words, each with the phrase behind it: frustration ("still waiting",
 * "fed up"), anger ("this is unacceptable", words in capitals), worry, confusion, thanks; and how urgent it is ("my rent
 * is due tomorrow", "asap"). Strong cues are the ones a person should answer. Not "is it still processing?": a question
 * about where a record stands is not a complaint.
 */
const TONE_CUES: { emotion: Tone['emotions'][number]['emotion']; intensity: 'mild' | 'strong'; pattern: RegExp }[] = [
  {
    emotion: 'angry',
    intensity: 'strong',
    pattern: /\b(unacceptable|ridiculous|outrageous|furious|disgusting|a scam|scamm?ing me|fraudsters?)\b/i,
  },
  {
    emotion: 'frustrated',
    intensity: 'strong',
    pattern:
      /\b(fed up|sick (?:and tired )?of|had enough|(?:i'?m|i am) done with|(?:third|fourth|fifth|3rd|4th|5th) time|how many (?:more )?times|nobody (?:ever )?(?:answers|replies|responds|helps))\b/i,
  },
  {
    emotion: 'frustrated',
    intensity: 'mild',
    pattern:
      /\b(still (?:waiting|haven['’]?t|have not|hasn['’]?t|has not|no(?:thing)?\b)|frustrat\w*|annoy\w*|again\?|so long|taking forever|this is the second time|asked (?:this )?before)/i,
  },
  { emotion: 'anxious', intensity: 'mild', pattern: /\b(worried|nervous|anxious|stressed|scared|panick\w*)\b/i },
  {
    emotion: 'confused',
    intensity: 'mild',
    pattern: /\b(confus\w*|don'?t understand|makes no sense|not sure what)\b/i,
  },
  { emotion: 'grateful', intensity: 'mild', pattern: /\b(thanks|thank you|appreciate\w*)\b/i },
];
const URGENT =
  /\b(asap|urgent\w*|right now|need (?:it |to know |my \w+ )?(?:now|today)|immediately|emergency|(?:rent|bills?) (?:is |are )?due|(?:by|before) (?:today|tonight|tomorrow))\b/i;
const NOT_URGENT = /\b(no rush|not urgent|whenever (?:you can|works)|no hurry)\b/i;
/** Words of four letters or more written in capitals, as shouting: not an acronym of the trade (W-2, ACH, PTO). */
const SHOUTING = /\b(?!(?:ACH|ASAP|PTO|USA|IRS|SSN|EIN|ITIN|FAQ)\b)[A-Z]{4,}\b(?:\W+\b[A-Z]{2,}\b)+/;

function toneOf(question: string): Tone {
  const emotions: Tone['emotions'] = [];
  for (const cue of TONE_CUES) {
    const phrase = cue.pattern.exec(question)?.[0];
    if (phrase && !emotions.some((e) => e.emotion === cue.emotion))
      emotions.push({ emotion: cue.emotion, intensity: cue.intensity, phrase });
  }
  const shouted = SHOUTING.exec(question)?.[0];
  if (shouted && !emotions.some((e) => e.emotion === 'angry'))
    emotions.push({ emotion: 'angry', intensity: 'strong', phrase: shouted });
  const urgent = URGENT.exec(question)?.[0];
  const relaxed = NOT_URGENT.exec(question)?.[0];
  return {
    emotions,
    urgency: urgent ? 'high' : relaxed ? 'low' : 'normal',
    urgency_phrases: [urgent ?? relaxed].filter((p): p is string => Boolean(p)),
  };
}

/**
 * Where the talent's words place them, as a reader of the message would say it; the furthest step they speak of first
 * ("the pay for my first shift" is about pay). The sandbox's own reading, not Melvin's: Melvin trusts records first.
 */
const JOURNEY_WORDS: [RegExp, PlanOutput['stage']][] = [
  [/\b(got paid|was paid|been paid|(received|got) (my|the) (pay|payment|money|deposit))\b/i, 'paid'],
  [/\b(pay|paid|payment|payments|payout|paycheck|money|deposit|direct deposit|wages?|earnings)\b/i, 'awaiting_payment'],
  [/\b(shifts?|timesheets?|clock(ed)? (in|out)|check[- ]in|hours worked|worked)\b/i, 'working'],
  [/\b(start date|first day|onboarding|orientation|hired|uniform)\b/i, 'hired'],
  [/\b(job offer|an offer|the offer|my offer|offered)\b/i, 'offered'],
  [/\binterview/i, 'interviewing'],
  [/\b(screening|phone screen|background check)\b/i, 'screening'],
  [/\b(how (do|can|should) i apply|sign(ing)? up|looking for (work|a job|jobs)|new jobs|openings)\b/i, 'exploring'],
  [/\b(my applications?|applied|application status)\b/i, 'applied'],
];

function stageInWords(question: string): PlanOutput['stage'] {
  return JOURNEY_WORDS.find(([pattern]) => pattern.test(question))?.[1] ?? 'unknown';
}

/** A person must answer when the talent asks for one or writes of a matter a person handles, as the draft routes too. */
function personNeeded(whole: ReturnType<typeof readingOf>): PlanOutput['person_needed'] {
  if (whole.human) return { kind: 'asked_for_person', why: 'The user asks to talk to a person.' };
  if (whole.sensitive) return { kind: 'sensitive_request', why: `The user writes of ${whole.sensitive}.` };
  return null;
}

function plan(context: Context): PlanOutput {
  const question = currentQuestion(context.messages, context.unanswered_messages);
  const whole = readingOf(question);
  const tone = toneOf(question);
  const userQuery = question.replace(/\s+/g, ' ').trim().slice(0, 200);
  const intents = intentsOf(question);
  const named = intents.map(({ intent, question: q }) => ({ intent, question: q }));
  const entities = entitiesOf(question);
  if (whole.human || whole.sensitive || whole.greeting) {
    return {
      user_query: userQuery,
      intents: named,
      entities,
      tone,
      stage: stageInWords(question),
      suggested_action: stepInWords(question),
      person_needed: personNeeded(whole),
      reasoning: whole.human
        ? 'The user asks for a person.'
        : whole.sensitive
          ? 'A person handles this.'
          : 'A greeting needs no data.',
      tool_calls: [],
    };
  }
  const taken = new Set<string>();
  const calls = intents.flatMap((intent) => callsFor(intent, context, taken));
  const gaps = (context.previous_hops ?? []).flatMap((h) => h.missing_data);
  return {
    user_query: userQuery,
    intents: named,
    entities,
    tone,
    stage: stageInWords(question),
    suggested_action: stepInWords(question),
    person_needed: personNeeded(whole),
    reasoning: gaps.length
      ? `Filling gaps from earlier hops: ${gaps.join('; ')}`
      : 'Tools chosen by matching the question.',
    tool_calls: calls,
  };
}

interface Passage {
  title: string;
  text: string;
  score: number;
}

function passages(context: Context): Passage[] {
  return Object.values(context.docs_data ?? {})
    .filter((d) => d.success)
    .flatMap((d) => ((d.data as { results?: Passage[] })?.results ?? []) as Passage[])
    .sort((a, b) => b.score - a.score);
}

/** A term without its ending: "cancelled", "cancels" and "cancelling" meet as "cancel", "update" and "updating". */
function rootOf(term: string): string {
  if (term.length <= 4) return term;
  return term
    .replace(/(ing|ed|es|(?<!s)s)$/, '')
    .replace(/([bdglmnprt])\1$/, '$1')
    .replace(/e$/, '');
}

/**
 * A text's words as the help center is matched against them: each word's root and the root of what it means, so
 * "payouts" meets both "payout" and "payment", and "money" meets "payment".
 */
const rootTerms = (text: string) => new Set(words(text).flatMap((w) => [rootOf(w), rootOf(canonical(w))]));

/**
 * Words all of the help center uses: a passage that shares only these with a question ("will you pay me back for my
 * work shoes?" and a passage on pay and work) is not about what it asks.
 */
const GENERIC_TERMS = new Set(
  ['payment', 'pay', 'paid', 'job', 'shift', 'work', 'app', 'application', 'profile', 'account'].map(rootOf),
);

/**
 * The passage that answers: of those sharing at least two of the question's words that are not generic (or one, when
 * the question has only one), each word counted once whatever its forms, one of them not a generic one, naming every code the question names (a W-9 passage does not answer a question about
 * Form 8821) and, for a question about a payment or an application, about one too, the one whose shared words weigh
 * most. A word weighs more the fewer of the passages found use it, half as much again in the section's title, and
 * little when every passage could use it ("pay", "work"): "a business cancelled my shift, is there a fee?" is the
 * passage on a business cancelling (the only one with "fee"), not the one on cancelling a shift. The search's order
 * decides a tie.
 */
function relevantPassage(context: Context, question: string): Passage | undefined {
  // Each word of the question in its forms: "payouts" as itself and as "payment", "update" as itself and as "change".
  const asked = [...new Set(words(question))].map((w) => [...new Set([rootOf(w), rootOf(canonical(w))])]);
  // Each word of the question counts once: "contractors" meets both "contractor" and "contract", one word all the same.
  // A word that only ever means something generic ("work", "job") is not one of the two a subject needs: "how do
  // payouts work?" is about payouts alone.
  const isGeneric = (forms: string[]) => forms.every((t) => GENERIC_TERMS.has(t));
  const needed = Math.max(1, Math.min(2, asked.filter((forms) => !isGeneric(forms)).length));
  // A question about a payment or an application is answered by a passage about one: "once I finish a shift, how long
  // until the payout comes?" is not answered by how long screening takes to finish.
  const kinds = (['payment', 'application'] as const).filter((k) => readingOf(question).terms.has(k));
  const found = [...new Map(passages(context).map((p) => [p.title, p])).values()].map((p) => {
    // "Identity and documents: Required documents": the section's own title says what it is about.
    const section = p.title.split(': ').at(-1)!;
    return { p, titleTerms: rootTerms(section), passageTerms: rootTerms(`${p.title} ${p.text}`) };
  });
  const weight = (t: string) => 1 / found.filter((f) => f.passageTerms.has(t)).length;
  let best: Passage | undefined;
  let bestScore = 0;
  for (const { p, titleTerms, passageTerms } of found) {
    const shared = asked.filter((forms) => forms.some((t) => passageTerms.has(t)));
    if (shared.length < needed || codesMissingFrom(question, `${p.title} ${p.text}`).length > 0) continue;
    if (!kinds.every((k) => passageTerms.has(k))) continue;
    if (asked.length > 1 && shared.every((forms) => isGeneric(forms.filter((t) => passageTerms.has(t))))) continue;
    // Each word counts once, by the better of its forms.
    const score = asked.reduce((sum, forms) => {
      const matched = forms.filter((t) => passageTerms.has(t));
      const value = (t: string) => weight(t) * (titleTerms.has(t) ? 1.5 : 1) * (GENERIC_TERMS.has(t) ? 0.1 : 1);
      return matched.length ? sum + Math.max(...matched.map(value)) : sum;
    }, 0);
    if (score > bestScore) [best, bestScore] = [p, score];
  }
  return best;
}

function records(context: Context, tool: string, field: string): Record<string, unknown>[] {
  const stored = Object.values(context.tool_data ?? {}).filter((t) => ownName(t.tool_name ?? '') === tool && t.success);
  return stored.flatMap((t) => ((t.data as Record<string, unknown>)?.[field] as Record<string, unknown>[]) ?? []);
}

/** The jobs whose details a `get_job_details` call returned. */
function jobDetails(context: Context): Record<string, unknown>[] {
  return Object.values(context.tool_data ?? {})
    .filter(
      (t) => ownName(t.tool_name ?? '') === 'get_job_details' && t.success && t.data && typeof t.data === 'object',
    )
    .map((t) => t.data as Record<string, unknown>);
}

/** The talent's own records one intent asks about, when the tool that holds them has answered. */
interface OwnRecords {
  kind: 'payment' | 'application';
  /** Every record of that kind the talent has. */
  all: Record<string, unknown>[];
  /** The ones the question means: those of the job it names, else all of them. */
  asked: Record<string, unknown>[];
  /** The job the question names when the talent has no record of it ("the barista job"). */
  absent?: string;
}

const OWN_TOOLS = {
  payment: { tool: 'get_user_payments', field: 'payments' },
  application: { tool: 'get_user_applications_detailed', field: 'applications' },
} as const;

/** Whether `text` has a word of the same root as `word`: "housekeeping" is in "Hotel Housekeeper". */
function sameWordIn(text: string, word: string): boolean {
  const root = word.length > 6 ? word.slice(0, word.length - 3) : word;
  return (text.match(/[a-z0-9]+/g) ?? []).some((w) => w.startsWith(root) || (w.length > 3 && word.startsWith(w)));
}

/** Where a record's job is named: a payment's job title, an application's job title and place. */
function jobWordsOf(record: Record<string, unknown>): string {
  const job = record.job as { title?: string; location?: string } | null | undefined;
  return `${String(record.job_title ?? '')} ${job?.title ?? ''} ${job?.location ?? ''}`.toLowerCase();
}

/** When a record last moved: paid or due, else updated or made; 0 when it says nothing. */
const when = (r: Record<string, unknown>) =>
  Date.parse(String(r.paid_at ?? r.expected_date ?? r.updated_at ?? r.applied_at ?? '')) || 0;
const CLOSED = /^(paid|deposited|settled|withdrawn|rejected|declined|closed|expired|cancell?ed)/i;
const HALF_YEAR_MS = 182 * 24 * 3600 * 1000;

/**
 * The records a question that names none of them means: all but those closed half a year or more before the talent's
 * latest record ("my payment" is not the one paid last year), unless those are all there is.
 */
function current(all: Record<string, unknown>[]): Record<string, unknown>[] {
  const latest = Math.max(0, ...all.map(when));
  const live = all.filter((r) => !(CLOSED.test(String(r.status ?? '')) && when(r) < latest - HALF_YEAR_MS));
  return live.length ? live : all;
}

function ownRecords(context: Context, intent: AskedIntent, kind: OwnRecords['kind']): OwnRecords | null {
  const { tool, field } = OWN_TOOLS[kind];
  const answered = Object.values(context.tool_data ?? {}).some((t) => ownName(t.tool_name ?? '') === tool && t.success);
  if (!answered) return null;
  const all = records(context, tool, field);
  // The record Melvin resolved what the talent wrote to ("the barrista job in Austin TX" is job-92) is the one meant,
  // as a model reads it from the context.
  const named = (context.named_records ?? []).find(
    (n) => n.id !== null && intent.question.toLowerCase().includes(n.mention.toLowerCase()),
  );
  if (named) {
    const isMeant = (r: Record<string, unknown>) =>
      named.record_kind === 'job' ? String(r.job_id) === named.id : String(r.id) === named.id;
    const meant = all.filter(isMeant);
    // None of this kind for that job ("the warehouse shift" they were hired for, not yet paid): said below as missing.
    if (meant.length) return { kind, all, asked: meant };
  }
  const mention = jobMention(intent.question, kind);
  if (!mention) return { kind, all, asked: current(all) };
  // "my application for the barista job": the words that name the job, not the record's kind.
  const mentionWords = words(mention).filter(
    (w) => w.length > 2 && !['payment', 'application', 'job'].includes(canonical(w)),
  );
  if (!mentionWords.length) return { kind, all, asked: current(all) };
  // "The Reno warehouse job" is the record with both words, not every job in Reno.
  const hits = (r: Record<string, unknown>) => mentionWords.filter((w) => sameWordIn(jobWordsOf(r), w)).length;
  const most = Math.max(0, ...all.map(hits));
  const asked = most ? all.filter((r) => hits(r) === most) : [];
  if (asked.length) return { kind, all, asked };
  // A job the talent applied for, named by a word its application holds: "the Austin shift" (the application says
  // Austin) is that job, and its payments are the ones asked about; "the warehouse shift" they were hired for but
  // have no payment of yet has none, which the reply says instead of answering with another job's payment.
  const jobIds = new Set(
    records(context, OWN_TOOLS.application.tool, OWN_TOOLS.application.field)
      .filter((a) => mentionWords.some((w) => sameWordIn(jobWordsOf(a), w)))
      .map((a) => String(a.job_id)),
  );
  if (jobIds.size) {
    const ofJob = all.filter((r) => jobIds.has(String(r.job_id)));
    return ofJob.length ? { kind, all, asked: ofJob } : { kind, all, asked: [], absent: mention };
  }
  // A word the data knows elsewhere is a detail of a job the talent has, not another job; so is an occasion.
  const known = JSON.stringify(context.tool_data ?? {}).toLowerCase();
  if (mentionWords.some((w) => sameWordIn(known, w))) return { kind, all, asked: current(all) };
  if (mentionWords.every((w) => OCCASIONS.has(w.toLowerCase()))) return { kind, all, asked: current(all) };
  return { kind, all, asked: [], absent: mention };
}

/** The kinds of the talent's own records an intent asks about: payments, applications, or none (a job's details, a
 * policy, a person). Read from the question alone, whether or not the tool that holds them has answered. */
function ownKindsAsked(intent: AskedIntent): OwnRecords['kind'][] {
  if (intent.reading.jobDetails || intent.reading.human) return [];
  // "How long does a payout take?" and "Do you pay gas money?" ask how things work, not where the talent's own
  // payment is: a question about their records says so in their own words ("my", "I") or names one ("the payment").
  const own = OWN.test(intent.question);
  // "How can I change the bank account my pay goes to?" says "my" but asks how things work: only a question that also
  // asks where the record stands ("why is my payment still processing?") or names which one ("how do I withdraw my
  // application for the hostess job?") is answered from it too.
  const which = RECORD_STANDING.test(intent.question) || jobMention(intent.question) !== undefined;
  if (intent.reading.policy && !(own && which)) return [];
  // "Still no pay, where is it?", "host job application, still screening?": where a record stands is the talent's own.
  if (!own && !RECORD_NAMED.test(intent.question) && !STANDING.test(intent.question)) return [];
  return (['payment', 'application'] as const).filter((k) => intent.reading.terms.has(k));
}

/** The own records an intent asks about, of the kinds whose tool has answered. */
function ownRecordsAsked(context: Context, intent: AskedIntent): OwnRecords[] {
  return ownKindsAsked(intent)
    .map((k) => ownRecords(context, intent, k))
    .filter((r): r is OwnRecords => r !== null);
}

/** What the gathered data holds for one intent, and what it lacks. */
function judge(
  context: Context,
  intent: AskedIntent,
): { available: string[]; missing: CoverageOutput['missing_data'] } {
  const { reading, question } = intent;
  if (reading.human) return { available: [], missing: [] };
  const asksPayments = reading.terms.has('payment') && !reading.jobDetails;
  const asksApplications = reading.terms.has('application') && !reading.jobDetails;
  const own = ownRecordsAsked(context, intent);
  const has = (kind: OwnRecords['kind']) => own.some((r) => r.kind === kind);
  const unread = ownKindsAsked(intent).filter((kind) => !has(kind));
  const jobs = reading.jobDetails ? jobDetails(context) : [];
  const passage = relevantPassage(context, question);
  const available: string[] = [];
  const missing: CoverageOutput['missing_data'] = [];
  // Knowing the talent has none, or none of the job they name, answers the question as well as a record does.
  for (const r of own) {
    available.push(
      r.absent
        ? `no ${r.kind} for the ${r.absent} job (${r.all.length} other)`
        : `${r.asked.length} ${r.kind}(s) on record`,
    );
  }
  if (jobs.length) available.push(`details of ${jobs.length} job(s)`);
  if (passage) available.push(`help-center passage "${passage.title}"`);
  if (reading.jobDetails && !jobs.length && !passage) {
    missing.push({
      gap_type: 'job',
      description: `the details of the job the user names in: ${question.slice(0, 120)}`,
    });
  } else if (unread.length) {
    // Where the talent's own record stands is in the record alone: "When is my next payout? [… verified admin …]" is
    // not answered by the payout passage while the payments could not be read, however much it reads like policy.
    for (const kind of unread) {
      missing.push({ gap_type: `${kind}s`, description: `the user's ${kind}s (the tool that holds them gave none)` });
    }
  } else if (asksPayments && !has('payment') && !passage) {
    missing.push({ gap_type: 'payments', description: "the user's payments or the payout policy" });
  } else if (asksApplications && !has('application') && !passage && !jobs.length) {
    missing.push({ gap_type: 'applications', description: "the user's applications or the application process" });
  } else if (reading.policy && !passage && !reading.jobDetails && !own.length) {
    // How something works is in the help center: the user's own records do not say how to change a bank account. Where
    // the talent's own record stands ("I may have withdrawn it, is it still active?") the record itself answers.
    missing.push({ gap_type: 'docs', description: `the help-center passage on: ${question.slice(0, 120)}` });
  }
  if (available.length === 0 && missing.length === 0) {
    missing.push({ gap_type: 'answer', description: `nothing relevant found for: ${question.slice(0, 120)}` });
  }
  return { available, missing };
}

function coverage(context: Context): CoverageOutput {
  const question = currentQuestion(context.messages, context.unanswered_messages);
  const whole = readingOf(question);
  const base = { user_query: question.slice(0, 200), coverage_score: 1, confidence: 0.9 };
  const intents = intentsOf(question);
  if (whole.human || whole.sensitive || whole.greeting) {
    return {
      ...base,
      data_sufficient: true,
      available_data: [],
      missing_data: [],
      intents: intents.map((i) => ({ intent: i.intent, covered: true })),
      reasoning: 'No data needed.',
    };
  }
  const judged = intents.map((intent) => ({ intent, ...judge(context, intent) }));
  const available = [...new Set(judged.flatMap((j) => j.available))];
  const missing = judged.flatMap((j) => j.missing);
  const covered = judged.filter((j) => j.missing.length === 0 && j.available.length > 0);
  const sufficient = covered.length === judged.length && judged.length > 0;
  return {
    ...base,
    data_sufficient: sufficient,
    coverage_score: sufficient ? 0.9 : covered.length ? 0.5 : available.length ? 0.4 : 0,
    available_data: available,
    missing_data: missing,
    intents: judged.map((j) => ({ intent: j.intent.intent, covered: covered.includes(j) })),
    reasoning: sufficient
      ? 'The gathered data answers the question.'
      : covered.length
        ? `The data answers ${covered.length} of ${judged.length} questions.`
        : 'Relevant data is missing.',
  };
}

/** ISO dates as words, e.g. 2026-11-27 → "November 27". */
export function spokenDate(iso: unknown): string {
  const match = typeof iso === 'string' ? /^(\d{4})-(\d{2})-(\d{2})/.exec(iso) : null;
  return match ? `${MONTHS[Number(match[2]) - 1]} ${Number(match[3])}` : String(iso);
}

export function spokenAmount(amount: unknown, currency: unknown): string {
  const symbols: Record<string, string> = { USD: '$', EUR: '€', GBP: '£' };
  const value = Number(amount);
  const text = Number.isInteger(value) ? String(value) : value.toFixed(2);
  const symbol = symbols[String(currency)];
  return symbol ? `${symbol}${text}` : `${text} ${String(currency)}`;
}

function paymentSentence(payment: Record<string, unknown>): string {
  const what = `Your payment of ${spokenAmount(payment.amount, payment.currency)}${payment.job_title ? ` for ${String(payment.job_title)}` : ''}`;
  const expected = payment.expected_date ? spokenDate(payment.expected_date) : null;
  if (payment.status === 'paid')
    return `${what} was paid${payment.paid_at ? ` on ${spokenDate(payment.paid_at)}` : ''}.`;
  // A failed payment is not "failed and expected": it did not go through, and the date it was due says which one.
  if (payment.status === 'failed')
    return `${what} failed and did not go through${expected ? ` (it was due on ${expected})` : ''}.`;
  const status = String(payment.status).replace(/_/g, ' ');
  return `${what} is ${status}${expected ? ` and expected on ${expected}` : ''}.`;
}

/** An application's stage as a person says it: "is at the interview stage", "was successful: you were hired". */
const STAGE_WORDS: Record<string, string> = {
  submitted: 'was submitted and waits for screening',
  screening: 'is at the screening stage',
  interview: 'is at the interview stage',
  offer: 'has reached the offer stage',
  hired: 'was successful: you were hired',
  closed: 'was closed without being selected',
  rejected: 'was not selected',
  declined: 'was not selected',
  withdrawn: 'was withdrawn',
};

function applicationSentence(application: Record<string, unknown>): string {
  const job = application.job as { title?: string; location?: string } | null;
  const what = job?.title
    ? `Your application for ${job.title}${job.location ? ` in ${job.location}` : ''}`
    : 'Your application';
  const status = String(application.status);
  const stage = STAGE_WORDS[status] ?? `is at the ${status.replace(/_/g, ' ')} stage`;
  const next = application.next_step ? ` Next step: ${String(application.next_step)}.` : '';
  return `${what} ${stage} (last updated ${spokenDate(application.updated_at)}).${next}`;
}

/** "Barista", "Event Staff": a job as the user named it, written as a title. */
const titled = (mention: string) => mention.replace(/\b\p{L}/gu, (c) => c.toUpperCase());

/** The sentences that answer from the talent's own records: what they have, or that they have none of what they name. */
function ownRecordSentences(r: OwnRecords): string[] {
  const noun = r.kind === 'payment' ? 'a payment' : 'an application';
  if (r.absent) {
    // A payment may still come for a job the talent has; an application they never made will not appear by itself.
    const yet = r.kind === 'payment' ? ' yet' : '';
    const missing = `I don't see ${noun} for the ${titled(r.absent)} job on your account${yet}.`;
    return [missing, ...recordSentences(r.kind, current(r.all))];
  }
  if (!r.all.length) return [`I don't see ${noun} on your account yet.`];
  return recordSentences(r.kind, r.asked);
}

function recordSentences(kind: OwnRecords['kind'], found: Record<string, unknown>[]): string[] {
  if (kind === 'application') return found.map(applicationSentence);
  // The payment still on its way matters most; otherwise the latest one.
  const open = found.filter((p) => p.status !== 'paid');
  const latest = [...found].sort((a, b) => when(a) - when(b)).slice(-1);
  return (open.length ? open : latest).map(paymentSentence);
}

function jobSentence(job: Record<string, unknown>): string {
  const where = job.location ? ` in ${String(job.location)}` : '';
  const pay = job.pay_rate ? ` pays ${String(job.pay_rate)}` : ` is ${String(job.status)}`;
  const start = job.start_date ? ` and starts on ${spokenDate(job.start_date)}` : '';
  return `The ${String(job.title)} job${where}${pay}${start}.`;
}

/**
 * Two sentences of the passage, in its order: enough to answer, short enough to read. They are the two that share the
 * most with the question, a word few of the passage's sentences use counting more than one they all use, and a code
 * the question names most of all: "When will I get my 1099?" gets the sentence on the 1099, not the passage's first
 * two on the W-9. With nothing shared, the first two.
 */
function excerpt(passage: Passage, question: string): string {
  const sentences = (passage.text.match(/[^.!?]+[.!?]+/g) ?? [passage.text]).map((s) => s.trim());
  if (sentences.length <= 2) return sentences.join(' ');
  const codes = keyCodes(question);
  const sets = [rootTerms(passage.title.split(': ').at(-1)!), ...sentences.map(rootTerms)];
  const weight = (term: string) => 1 / sets.filter((set) => set.has(term)).length;
  // A word the sentence uses itself counts fully, one it only means ("contractor" for "contract") half.
  const score = (sentence: string, at: number) => {
    const own = new Set(words(sentence).map(rootOf));
    const shared = words(question).reduce((sum, w) => {
      const [raw, meaning] = [rootOf(w), rootOf(canonical(w))];
      if (own.has(raw)) return sum + weight(raw);
      return sets[at + 1]!.has(meaning) ? sum + weight(meaning) / 2 : sum;
    }, 0);
    return shared + [...keyCodes(sentence)].filter((c) => codes.has(c)).length * 2;
  };
  const chosen = sentences
    .map((sentence, at) => ({ at, score: score(sentence, at) }))
    .sort((a, b) => b.score - a.score || a.at - b.at)
    .slice(0, 2)
    .map((s) => s.at)
    .sort((a, b) => a - b);
  return chosen.map((at) => sentences[at]).join(' ');
}

/**
 * The sentences that answer one intent from the data, or none when the data does not answer it. The talent's own
 * records come first; a help-center passage joins them only for a question about how things work, and only once per
 * reply (`usedPassages`).
 */
function answerFor(context: Context, intent: AskedIntent, usedPassages: Set<string>): string[] {
  const { reading, question } = intent;
  const sentences: string[] = [];
  if (reading.jobDetails) sentences.push(...jobDetails(context).map(jobSentence));
  for (const r of ownRecordsAsked(context, intent)) sentences.push(...ownRecordSentences(r));
  const passage = sentences.length && !reading.policy ? undefined : relevantPassage(context, question);
  if (passage && !usedPassages.has(passage.title)) {
    usedPassages.add(passage.title);
    const text = excerpt(passage, question);
    sentences.push(sentences.length ? `From our help center: ${text}` : text);
  }
  return sentences;
}

/** Words that start a sentence and are not names: after "Hi Ana," they are written in lower case. */
const COMMON_START =
  /^(Your|You|The|It|Its|There|This|That|These|We|Our|A|An|From|Every|Each|If|After|Before|When|Once|Most|All|Any|To)\b/;

/** The reply after its greeting: "Hi Ana, your payment…", or "Hi Ana! Crewline pays…" before a name or "I". */
function greeted(greeting: string, firstName: string | undefined, body: string): string {
  if (!firstName) return body;
  return COMMON_START.test(body)
    ? `${greeting} ${firstName}, ${body.replace(COMMON_START, (w) => w.toLowerCase())}`
    : `${greeting} ${firstName}! ${body}`;
}

/**
 * The team's voice from its past answers (the closest resolved conversation): the greeting word and the sign-off line of the closest example,
 * never its facts. Null when there are no examples, or the example has no greeting to follow.
 */
function houseStyle(context: Context): { greeting: string | null; signOff: string | null } {
  const answer = context.style_examples?.[0]?.answer;
  if (!answer) return { greeting: null, signOff: null };
  const greeting = /^(hi|hey|hello|good (?:morning|afternoon|evening))\b/i.exec(answer.trim())?.[1] ?? null;
  const lastLine = answer.trim().split('\n').at(-1)?.trim() ?? '';
  const signOff =
    /^(—|-|–|cheers|best|thanks|warmly|kind regards)/i.test(lastLine) && lastLine.length <= 60 ? lastLine : null;
  return { greeting, signOff };
}

/**
 * What only a person on the team can do next, as a teammate reading the conversation would see it: the talent's words,
 * or a payment of theirs that failed. Checked in this order; the first that fits is proposed.
 */
const NEXT_STEPS: [RegExp, NonNullable<DraftOutput['suggested_action']>][] = [
  [
    // A reschedule asked in any words: the interview, and that its time does not work for the talent.
    /\bresched\w*|^(?=[^]*\binterview)(?=[^]*\b(?:can(?:'|no)?t (?:make|attend|do)|won'?t (?:make|be able)|another (?:day|time|date)|a different (?:day|time|date)|move|push (?:it )?back)\b)/i,
    { action: 'reschedule_interview', why: 'The talent cannot make their interview at its time.' },
  ],
  [
    /\b(can(?:'|no)?t (?:log ?in|sign in|access my account)|locked out|reset (?:my )?password|password reset|account (?:is |was |got )?(?:locked|disabled|suspended|deactivated))\b/i,
    { action: 'fix_account_access', why: 'The talent cannot get into their account.' },
  ],
  [
    /\b(underpaid|short(?:changed)?|wrong amount|paid (?:me )?(?:less|too little)|missing (?:hours|tips?|overtime)|should have (?:been paid|gotten|got) \$?\d|(?:rate|amount) (?:is|was) wrong|only (?:counts?|paid|pays|shows|covers) (?:for )?\d+(?:\.\d+)? (?:of|out of) (?:the |my )?\d+)\b/i,
    { action: 'ask_business_about_pay', why: 'The talent says they were paid less than they worked for.' },
  ],
  [
    // Done, not asked about: "I changed my bank", not "how do I change my bank details?" (the help center says how).
    /\b(i(?:'ve| have)? (?:just |recently )?(?:changed|updated|switched) (?:my |to a )?(?:new )?(?:bank|account number|routing|direct deposit)|my new bank|closed my (?:bank )?account|(?:went|sent) to (?:the |my )?wrong (?:bank|account))\b/i,
    { action: 'verify_payout_details', why: 'The talent is changing the bank details their pay goes to.' },
  ],
  [
    /\b(reconsider\w*|appeal\w*|(?:take )?another look|look (?:at it )?again|review (?:it|my application) again|(?:rejected|declined) by mistake|why (?:was|did) (?:i|my(?: [\w-]+){0,3} application) (?:get |been )?(?:rejected|declined|turned down|not selected))\b/i,
    { action: 'review_application', why: 'The talent asks for their application to be looked at again.' },
  ],
];

/** The step the talent's words call for, as Plan reads it before any record is gathered. */
function stepInWords(question: string): DraftOutput['suggested_action'] {
  return NEXT_STEPS.find(([pattern]) => pattern.test(question))?.[1] ?? null;
}

/** The step Draft proposes: the words', else one a record calls for. */
function nextStep(context: Context, question: string): DraftOutput['suggested_action'] {
  const said = stepInWords(question);
  if (said) return said;
  const failed = records(context, OWN_TOOLS.payment.tool, OWN_TOOLS.payment.field).some((p) => p.status === 'failed');
  return failed && /\b(pay|paid|payment|payout|money)\b/i.test(question)
    ? { action: 'verify_payout_details', why: 'A payment of theirs failed: the payout details need checking.' }
    : null;
}

function draft(context: Context): DraftOutput {
  const question = currentQuestion(context.messages, context.unanswered_messages);
  return { ...draftReply(context), suggested_action: nextStep(context, question) };
}

function draftReply(context: Context): Omit<DraftOutput, 'suggested_action'> {
  const question = currentQuestion(context.messages, context.unanswered_messages);
  const whole = readingOf(question);
  const firstName = context.user_name?.split(/\s+/)[0];
  const style = houseStyle(context);
  if (whole.human)
    return {
      text: 'The user asked to talk to a person from the team.',
      response_type: 'ROUTE_TO_TEAM',
      route: { kind: 'asked_for_person', explanation: 'The user asks to talk to a person.' },
      open_intents: [],
    };
  if (whole.sensitive)
    return {
      text: 'This needs a person from the team.',
      response_type: 'ROUTE_TO_TEAM',
      route: {
        kind: 'sensitive_request',
        explanation: `The user writes of ${whole.sensitive}: a person should handle this, not an automatic reply.`,
      },
      open_intents: [],
    };
  const greeting = style.greeting ?? 'Hi';
  const signed = (text: string) => (style.signOff ? `${text}\n\n${style.signOff}` : text);
  if (whole.greeting) {
    const name = firstName ? ` ${firstName}` : '';
    const text = THANKS.test(question)
      ? `${greeting}${name}, you're welcome! Let me know if there is anything else.`
      : `${greeting}${name}! How can I help you today?`;
    return {
      text: signed(text),
      response_type: 'REPLY',
      route: null,
      open_intents: [],
    };
  }
  // The intents as Melvin judged them; the sandbox reads its own when the context carries none.
  const mine = intentsOf(question);
  const judged = context.intents?.length
    ? mine.map((i) => ({ ...i, covered: context.intents!.find((c) => c.intent === i.intent)?.covered ?? true }))
    : mine.map((i) => ({ ...i, covered: true }));
  const usedPassages = new Set<string>();
  const answered = judged.map((intent) => ({
    intent,
    sentences: intent.covered ? answerFor(context, intent, usedPassages) : [],
  }));
  // Two intents the same data answers ("when will I get paid? what is the payout schedule?") share their sentences.
  const sentences = [...new Set(answered.flatMap((a) => a.sentences))];
  if (!sentences.length) {
    const asked = judged.map((j) => `"${j.question}"`).join(', ');
    return {
      text: 'I could not find what the user asked about in their data or the help center.',
      response_type: 'ROUTE_TO_TEAM',
      route: {
        kind: 'no_safe_answer',
        explanation: `Neither the user's records nor the help center answer ${asked || 'the message'}.`,
      },
      open_intents: [],
    };
  }
  // A complaint is acknowledged once, plainly, after the answer it waited for.
  const upset = context.tone?.emotions.some((e) => e.emotion === 'frustrated' || e.emotion === 'angry');
  const acknowledged = upset ? [...sentences, 'I’m sorry this has taken so much of your time.'] : sentences;
  return {
    text: signed(greeted(greeting, firstName, acknowledged.join(' '))),
    response_type: 'REPLY',
    route: null,
    open_intents: answered.filter((a) => a.sentences.length === 0).map((a) => a.intent.intent),
  };
}

/** The sandbox model's answer for one step, from the data document Melvin sent. */
export function sandboxReasoning(
  step: LlmStep,
  context: Record<string, unknown>,
): PlanOutput | CoverageOutput | DraftOutput | ResolveOutput {
  const typed = context as Context;
  if (step === 'plan') return plan(typed);
  if (step === 'coverage') return coverage(typed);
  if (step === 'resolve') return resolve(typed as ResolveRequest);
  return draft(typed);
}

interface ResolveRequest extends Context {
  mention: string;
  candidates: { id: string; label: string; record: unknown }[];
}

/** The words of every text a record holds (its status, next step, dates, place), as a reader would scan it. */
function recordText(value: unknown): string {
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  if (Array.isArray(value)) return value.map(recordText).join(' ');
  if (value && typeof value === 'object') return Object.values(value).map(recordText).join(' ');
  return '';
}

/**
 * Plain words for where and what a job's work is, as a reader knows them: "the coffee shop job" is a Barista job. Not
 * other titles: a sous chef is not a line cook, however near the two are in meaning.
 */
const DESCRIBES: Record<string, string[]> = {
  barista: ['coffee', 'cafe', 'coffeehouse', 'espresso', 'shop'],
  cook: ['kitchen', 'grill', 'diner', 'restaurant', 'cooking'],
  warehouse: ['packing', 'picking', 'forklift', 'fulfillment', 'stockroom', 'loading'],
  event: ['concert', 'wedding', 'banquet', 'catering', 'festival', 'venue'],
  driver: ['delivery', 'courier', 'driving', 'deliveries'],
  housekeeper: ['cleaning', 'hotel', 'rooms', 'housekeeping'],
  dishwasher: ['dishes', 'kitchen', 'washing'],
  bartender: ['bar', 'cocktails', 'drinks', 'pub'],
};
const GENERIC = new Set(['job', 'jobs', 'shift', 'shifts', 'gig', 'position', 'role', 'application', 'payment', 'pay']);

/**
 * Picks the candidate the user means, as a model reading the records would: one whose record every word of the
 * mention fits (its title or place, or a plain word for its work), and among several such, the one the user's other
 * words fit and no other does ("the barista job I interviewed for" is the one at interview). None otherwise.
 */
function resolve(context: ResolveRequest): ResolveOutput {
  const text = (c: ResolveRequest['candidates'][number]) => recordText(c.record).toLowerCase();
  // A word's forms ("interviewed" at "interview"), or a typo of it.
  const has = (haystack: string, word: string) =>
    sameWordIn(haystack, word) ||
    (word.length >= 5 && (haystack.match(/[a-z0-9]+/g) ?? []).some((w) => oneEditApart(w, word)));
  const describes = (haystack: string, word: string) =>
    Object.entries(DESCRIBES).some(([work, plain]) => plain.includes(word) && has(haystack, work));
  const named = words(context.mention).filter((w) => !GENERIC.has(w));
  const fitting = context.candidates.filter((c) => named.every((w) => has(text(c), w) || describes(text(c), w)));
  const none = (why: string): ResolveOutput => ({ id: '', reasoning: why });
  if (fitting.length === 0)
    return none(`"${context.mention}" names none of ${context.candidates.map((c) => c.label).join('; ')}.`);
  if (fitting.length === 1) return { id: fitting[0]!.id, reasoning: `"${context.mention}" is ${fitting[0]!.label}.` };
  const mentioned = new Set(words(context.mention));
  const clues = words(currentQuestion(context.messages, context.unanswered_messages)).filter(
    (w) => w.length >= 4 && !mentioned.has(w),
  );
  const scored = fitting.map((c) => ({ c, hits: clues.filter((clue) => has(text(c), clue)) }));
  const most = Math.max(...scored.map((s) => s.hits.length));
  const best = scored.filter((s) => s.hits.length === most);
  if (most === 0 || best.length !== 1)
    return none(`Nothing the user wrote tells ${fitting.map((c) => c.label).join(' from ')} apart.`);
  return { id: best[0]!.c.id, reasoning: `"${best[0]!.hits.join('", "')}" fits only ${best[0]!.c.label}.` };
}
