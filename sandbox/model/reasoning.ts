// The sandbox model's deterministic reasoning: plan, coverage and draft answers computed from the context Melvin sends.
import type { CoverageOutput, DraftOutput, PlanOutput } from '../../src/schemas';
import type { LlmStep } from '../../src/schemas';
import { codesMissingFrom } from '../key-codes';

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
  available_tools?: Tool[];
  identity_arguments?: string[];
  tool_data?: Record<string, Stored>;
  docs_data?: Record<string, Stored>;
  previous_hops?: { tool_calls: string[]; missing_data: string[] }[];
  user_name?: string | null;
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
    'know tell let us them they he she his her one two last week weeks ago today now also again all ' +
    // Words every tool description uses say nothing about which tool to call.
    'talent user'
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
  applied: 'application',
  apply: 'application',
  applications: 'application',
  candidacy: 'application',
  interview: 'application',
  screening: 'application',
  hired: 'application',
  jobs: 'job',
  shift: 'job',
  shifts: 'job',
  role: 'job',
  position: 'job',
  gig: 'job',
  profile: 'profile',
  account: 'profile',
};

const POLICY_WORDS =
  /\b(polic|withdraw|cancel|tax|w-?9|1099|w-?8|document|verif|identity|id\b|passport|contract|schedule|payout run|how (do|does|long|can)|can i|rule|fee|deadline|stage|process|required?)/i;
const HUMAN_REQUEST =
  /\b(human|real person|a person|someone from|somebody|an agent|representative|talk to (a|an|some)|speak (to|with)|connect me)\b/i;
const GREETING_ONLY = /^\s*(hi|hello|hey|good (morning|afternoon|evening)|thanks|thank you)[\s!.,]*(melvin)?[\s!.,]*$/i;
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
  return (text.toLowerCase().match(/[a-z0-9][a-z0-9'-]*/g) ?? [])
    .map((w) => w.replace(/'s$/, ''))
    .filter((w) => !STOP_WORDS.has(w));
}

function canonical(word: string): string {
  return SYNONYMS[word] ?? word.replace(/s$/, '');
}

/** What the user is asking now: their messages after Melvin's last one. */
export function currentQuestion(messages: Message[] = []): string {
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

function intentOf(question: string): { human: boolean; greeting: boolean; policy: boolean; terms: Set<string> } {
  return {
    human: HUMAN_REQUEST.test(question),
    greeting: GREETING_ONLY.test(question),
    policy: POLICY_WORDS.test(question),
    terms: new Set(words(question).map(canonical)),
  };
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

function plan(context: Context): PlanOutput {
  const question = currentQuestion(context.messages);
  const intent = intentOf(question);
  const userQuery = question.replace(/\s+/g, ' ').trim().slice(0, 200);
  if (intent.human || intent.greeting) {
    return {
      user_query: userQuery,
      reasoning: intent.human ? 'The user asks for a person.' : 'A greeting needs no data.',
      tool_calls: [],
    };
  }
  const tools = context.available_tools ?? [];
  const identity = new Set(context.identity_arguments ?? []);
  const gathered = Object.values(context.tool_data ?? {});
  const succeeded = new Set(gathered.filter((t) => t.success).map((t) => t.tool_name));
  const calls: PlanOutput['tool_calls'] = [];

  const scored = tools
    .filter((t) => ownName(t.name) !== DOCS_TOOL)
    .map((tool) => ({ tool, score: toolScore(tool, intent.terms) }));
  const best = Math.max(0, ...scored.map((s) => s.score));
  for (const { tool, score } of scored) {
    // A name match (worth 2), or two description matches, and close to the best tool.
    if (score < 2 || score < best * 0.6 || succeeded.has(tool.name)) continue;
    const needed = (tool.input_schema.required ?? []).filter((name) => !identity.has(name));
    const args: Record<string, string> = {};
    for (const name of needed) {
      const value = [
        ...valuesOf(
          name,
          gathered.map((t) => t.data),
        ),
      ][0];
      if (value !== undefined) args[name] = value;
    }
    // A tool whose inputs come from other tools' results waits for a later hop.
    if (Object.keys(args).length < needed.length) continue;
    calls.push({
      tool_name: tool.name,
      arguments_json: JSON.stringify(args),
      reasoning: `Matches "${tool.name}" to the question.`,
    });
  }

  const docsTool = tools.find((t) => ownName(t.name) === DOCS_TOOL);
  const earlierQueries = new Set(Object.values(context.docs_data ?? {}).map((d) => d.query));
  const docsQuery = words(question).slice(0, 8).join(' ');
  if (docsTool && docsQuery && (intent.policy || calls.length === 0) && !earlierQueries.has(docsQuery)) {
    calls.push({
      tool_name: docsTool.name,
      arguments_json: JSON.stringify({ query: docsQuery }),
      reasoning: 'A policy or process question.',
    });
  }
  const gaps = (context.previous_hops ?? []).flatMap((h) => h.missing_data);
  return {
    user_query: userQuery,
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

/**
 * A passage answers when it shares at least two of the question's content words (or one, for a one-word question) and
 * names every code the question names: a W-9 passage does not answer a question about Form 8821.
 */
function relevantPassage(context: Context, question: string): Passage | undefined {
  const terms = intentOf(question).terms;
  const needed = Math.min(2, terms.size);
  return passages(context).find((p) => {
    const passageTerms = new Set(words(`${p.title} ${p.text}`).map(canonical));
    const shared = [...terms].filter((t) => passageTerms.has(t)).length;
    return shared >= needed && codesMissingFrom(question, `${p.title} ${p.text}`).length === 0;
  });
}

function records(context: Context, tool: string, field: string): Record<string, unknown>[] {
  const stored = Object.values(context.tool_data ?? {}).filter((t) => ownName(t.tool_name ?? '') === tool && t.success);
  return stored.flatMap((t) => ((t.data as Record<string, unknown>)?.[field] as Record<string, unknown>[]) ?? []);
}

function coverage(context: Context): CoverageOutput {
  const question = currentQuestion(context.messages);
  const intent = intentOf(question);
  const base = { user_query: question.slice(0, 200), coverage_score: 1, confidence: 0.9 };
  if (intent.human || intent.greeting) {
    return { ...base, data_sufficient: true, available_data: [], missing_data: [], reasoning: 'No data needed.' };
  }
  const asksPayments = intent.terms.has('payment');
  const asksApplications = intent.terms.has('application');
  const payments = asksPayments ? records(context, 'get_user_payments', 'payments') : [];
  const applications = asksApplications ? records(context, 'get_user_applications_detailed', 'applications') : [];
  const passage = relevantPassage(context, question);
  const available: string[] = [];
  const missing: CoverageOutput['missing_data'] = [];
  if (payments.length) available.push(`${payments.length} payment(s)`);
  if (applications.length) available.push(`${applications.length} application(s)`);
  if (passage) available.push(`help-center passage "${passage.title}"`);
  if (asksPayments && !payments.length && !passage) {
    missing.push({ gap_type: 'payments', description: "the user's payments or the payout policy" });
  }
  if (asksApplications && !applications.length && !passage) {
    missing.push({ gap_type: 'applications', description: "the user's applications or the application process" });
  }
  if (available.length === 0 && missing.length === 0) {
    missing.push({ gap_type: 'answer', description: `nothing relevant found for: ${question.slice(0, 120)}` });
  }
  const sufficient = missing.length === 0 && available.length > 0;
  return {
    ...base,
    data_sufficient: sufficient,
    coverage_score: sufficient ? 0.9 : available.length ? 0.4 : 0,
    available_data: available,
    missing_data: missing,
    reasoning: sufficient ? 'The gathered data answers the question.' : 'Relevant data is missing.',
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
  if (payment.status === 'paid' && payment.paid_at) return `${what} was paid on ${spokenDate(payment.paid_at)}.`;
  if (payment.expected_date)
    return `${what} is ${String(payment.status)} and expected on ${spokenDate(payment.expected_date)}.`;
  return `${what} is ${String(payment.status)}.`;
}

function applicationSentence(application: Record<string, unknown>): string {
  const job = application.job as { title?: string; location?: string } | null;
  const what = job?.title
    ? `Your application for ${job.title}${job.location ? ` in ${job.location}` : ''}`
    : 'Your application';
  const next = application.next_step ? ` Next step: ${String(application.next_step)}.` : '';
  return `${what} is in ${String(application.status)} (last updated ${spokenDate(application.updated_at)}).${next}`;
}

/** The passage's first two sentences: enough to answer, short enough to read. */
function excerpt(passage: Passage): string {
  return (passage.text.match(/[^.!?]+[.!?]+/g) ?? [passage.text]).slice(0, 2).join('').trim();
}

function draft(context: Context): DraftOutput {
  const question = currentQuestion(context.messages);
  const intent = intentOf(question);
  const firstName = context.user_name?.split(/\s+/)[0];
  if (intent.human)
    return { text: 'The user asked to talk to a person from the team.', response_type: 'ROUTE_TO_TEAM' };
  if (intent.greeting)
    return { text: `Hi${firstName ? ` ${firstName}` : ''}! How can I help you today?`, response_type: 'REPLY' };
  const sentences: string[] = [];
  const payments = records(context, 'get_user_payments', 'payments');
  const applications = records(context, 'get_user_applications_detailed', 'applications');
  if (intent.terms.has('payment')) {
    // The payment still on its way matters most; otherwise the latest one.
    const open = payments.filter((p) => p.status !== 'paid');
    sentences.push(...(open.length ? open : payments.slice(-1)).map(paymentSentence));
  }
  if (intent.terms.has('application')) {
    sentences.push(...applications.map(applicationSentence));
  }
  const passage = relevantPassage(context, question);
  if (passage) sentences.push(sentences.length ? `From our help center: ${excerpt(passage)}` : excerpt(passage));
  if (!sentences.length) {
    return {
      text: 'I could not find what the user asked about in their data or the help center.',
      response_type: 'ROUTE_TO_TEAM',
    };
  }
  const body = sentences.join(' ');
  return { text: firstName ? `Hi ${firstName}, ${body.replace(/^Your\b/, 'your')}` : body, response_type: 'REPLY' };
}

/** The sandbox model's answer for one step, from the data document Melvin sent. */
export function sandboxReasoning(
  step: LlmStep,
  context: Record<string, unknown>,
): PlanOutput | CoverageOutput | DraftOutput {
  const typed = context as Context;
  if (step === 'plan') return plan(typed);
  if (step === 'coverage') return coverage(typed);
  return draft(typed);
}
