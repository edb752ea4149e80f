// The sandbox validation service: the validation contract over HTTP, with its own checks (./checks) and fault plans.
import express from 'express';
import { z } from 'zod';
import { FaultQueues, sendHttpFault, sleep } from '../faults';
import type { Gates } from '../gates';
import { HttpService } from '../http';
import type { ValidationFault } from '../scenario';
import { ValidationRequestBody, checkDraft } from './checks';

export class ValidationService extends HttpService {
  readonly faults = new FaultQueues<ValidationFault>();
  readonly requests: ValidationRequestBody[] = [];
  /** When set, the next answers are exactly these bodies (e.g. text that is not JSON). */
  readonly rawAnswers: string[] = [];
  /**
   * `lenient`: every draft passes, its checks still listed, as a team's own service may answer. What Melvin's own guard
   * catches is then all that stands between a wrong draft and the talent.
   */
  mode: 'checking' | 'lenient' = 'checking';
  /** Conversations whose drafts are answered leniently whatever `mode` says (an evaluation's lenient tries). */
  readonly lenientConversations = new Set<string>();

  /** Whether a draft of this conversation passes whatever its checks say. */
  private lenientFor(conversationId: string): boolean {
    return this.mode === 'lenient' || this.lenientConversations.has(conversationId);
  }

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
      const parsed = ValidationRequestBody.safeParse(req.body);
      if (parsed.success) this.requests.push(parsed.data);
      // An outage answers before anything reads the body.
      const fault = this.faults.take('validate');
      if (fault?.delay_ms) await sleep(fault.delay_ms);
      if (fault?.status !== undefined)
        return sendHttpFault(res, fault, (status) => ({ error: `sandbox fault: ${status}` }));
      if (!parsed.success) return res.status(400).json({ error: z.prettifyError(parsed.error) });
      const request = parsed.data;
      const raw = this.rawAnswers.shift();
      if (raw !== undefined) return res.type('application/json').send(raw);
      const checks = checkDraft(request);
      const overall_passed =
        fault?.overall_passed ?? (this.lenientFor(request.conversation_id) || checks.every((c) => c.passed));
      res.json({ overall_passed, checks });
    });
    return app;
  }
}
