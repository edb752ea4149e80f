// The sandbox validation service: the validation contract with real checks on the draft, plus fault plans.
import express from 'express';
import { FaultQueues, sendHttpFault, sleep } from '../faults';
import { codesMissingFrom } from '../key-codes';
import { currentQuestion } from '../model/reasoning';
import type { Gates } from '../gates';
import { HttpService } from '../http';
import type { ValidationFault } from '../scenario';
import type { ValidationRequest } from '../../src/activities/validation';
import { checkReply, type ReplyCheck } from '../../src/reply-checks';

export type CheckResult = ReplyCheck;

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
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

/**
 * The reply addresses what was asked: every code the question names (a form number, an id) is in the data behind the
 * reply. A question about Form 8821 answered from the W-9 passage fails here.
 */
function answersTheQuestion(request: ValidationRequest): CheckResult {
  // A user quoting the conversation's own number is not asking about it: the data need not know it.
  const unanswered = codesMissingFrom(
    currentQuestion(request.messages),
    JSON.stringify([request.tool_data, request.docs_data, request.conversation_id]),
  );
  return {
    name: 'answers_the_question',
    passed: unanswered.length === 0,
    detail: unanswered.length
      ? `the question names ${unanswered.join(', ')}, which nothing gathered mentions: the reply cannot be about it`
      : 'every code the question names is in the data',
  };
}

/** Melvin's own reply checks (the same a production validator would make), plus: every date and amount is backed. */
export function checkDraft(request: ValidationRequest): CheckResult[] {
  const reply = request.response;
  const gathered = JSON.stringify([request.tool_data, request.docs_data, request.messages]);
  const knownDates = datesIn(gathered);
  const unbackedDates = [...datesIn(reply)].filter((d) => !knownDates.has(d));
  const knownNumbers = new Set((gathered.match(/\d+(?:\.\d+)?/g) ?? []).map(Number));
  const unbackedAmounts = amountsIn(reply).filter((a) => !knownNumbers.has(a));
  return [
    ...checkReply(reply, {
      userEmail: request.user_email,
      internalNotes: request.internal_notes,
      toolData: request.tool_data,
    }),
    {
      name: 'dates_backed_by_data',
      passed: unbackedDates.length === 0,
      detail: unbackedDates.length
        ? `dates not in the gathered data: ${unbackedDates.join(', ')}`
        : 'every date is in the data',
    },
    {
      name: 'amounts_backed_by_data',
      passed: unbackedAmounts.length === 0,
      detail: unbackedAmounts.length
        ? `amounts not in the gathered data: ${unbackedAmounts.join(', ')}`
        : 'every amount is in the data',
    },
    answersTheQuestion(request),
  ];
}

export class ValidationService extends HttpService {
  readonly faults = new FaultQueues<ValidationFault>();
  readonly requests: ValidationRequest[] = [];
  /** When set, the next answers are exactly these bodies (e.g. text that is not JSON). */
  readonly rawAnswers: string[] = [];

  constructor(readonly options: { apiKey: string; gates?: Gates }) {
    super('validation service', '/validate');
  }

  override app(): express.Express {
    const app = express();
    app.use(express.json({ limit: '5mb' }));
    app.use((req, res, next) => {
      if (req.header('authorization') === `Bearer ${this.options.apiKey}`) return next();
      res.status(401).json({ error: 'invalid API key' });
    });
    if (this.options.gates)
      app.use(this.options.gates.middleware((req) => (req.path === '/validate' ? 'validation' : undefined)));
    app.post('/validate', async (req, res) => {
      const request = req.body as ValidationRequest;
      if (typeof request?.response !== 'string') return res.status(400).json({ error: 'response must be a string' });
      this.requests.push(request);
      const fault = this.faults.take('validate');
      if (fault?.delay_ms) await sleep(fault.delay_ms);
      if (fault?.status !== undefined)
        return sendHttpFault(res, fault, (status) => ({ error: `sandbox fault: ${status}` }));
      const raw = this.rawAnswers.shift();
      if (raw !== undefined) return res.type('application/json').send(raw);
      const checks = checkDraft(request);
      const overall_passed = fault?.overall_passed ?? checks.every((c) => c.passed);
      res.json({ overall_passed, checks });
    });
    return app;
  }
}
