// The sandbox validation service: the validation contract with real checks on the draft, plus fault plans.
import express from 'express';
import { FaultQueues, sendHttpFault, sleep } from '../faults';
import type { Gates } from '../gates';
import { HttpService } from '../http';
import type { ValidationFault } from '../scenario';
import type { ValidationRequest } from '../../src/activities/validation';

export interface CheckResult {
  name: string;
  passed: boolean;
  detail: string;
}

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

/** Every value of an `id` or `*_id` field in the gathered data: internal identifiers a reply must not show. */
function internalIds(value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => internalIds(v, found));
  else if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if ((key === 'id' || key.endsWith('_id')) && (typeof v === 'string' || typeof v === 'number'))
        found.add(String(v));
      else internalIds(v, found);
    }
  }
  return found;
}

const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];

/** True when the reply repeats six or more consecutive words of the note. */
function quotesNote(reply: string, note: string): boolean {
  const replyText = ` ${words(reply).join(' ')} `;
  const noteWords = words(note);
  if (noteWords.length < 6) return noteWords.length >= 3 && replyText.includes(` ${noteWords.join(' ')} `);
  for (let i = 0; i + 6 <= noteWords.length; i++)
    if (replyText.includes(` ${noteWords.slice(i, i + 6).join(' ')} `)) return true;
  return false;
}

export function checkDraft(request: ValidationRequest): CheckResult[] {
  const reply = request.response;
  const gathered = JSON.stringify([request.tool_data, request.docs_data, request.messages]);
  const ownEmail = request.user_email?.toLowerCase();
  const otherEmails = (reply.match(/[\w.+-]+@[\w-]+\.[\w.-]+/g) ?? []).filter((e) => e.toLowerCase() !== ownEmail);
  const ids = [...internalIds([request.tool_data])].filter((id) => id.length >= 3 && reply.includes(id));
  const quoted = request.internal_notes.filter((note) => quotesNote(reply, note));
  const knownDates = datesIn(gathered);
  const unbackedDates = [...datesIn(reply)].filter((d) => !knownDates.has(d));
  const knownNumbers = new Set((gathered.match(/\d+(?:\.\d+)?/g) ?? []).map(Number));
  const unbackedAmounts = amountsIn(reply).filter((a) => !knownNumbers.has(a));
  return [
    {
      name: 'no_other_user_data',
      passed: otherEmails.length === 0,
      detail: otherEmails.length ? `names other addresses: ${otherEmails.join(', ')}` : 'names no other user',
    },
    {
      name: 'no_internal_ids',
      passed: ids.length === 0,
      detail: ids.length ? `shows internal ids: ${ids.join(', ')}` : 'shows no internal ids',
    },
    {
      name: 'no_internal_notes',
      passed: quoted.length === 0,
      detail: quoted.length ? 'repeats the text of an internal note' : 'repeats no internal note',
    },
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
