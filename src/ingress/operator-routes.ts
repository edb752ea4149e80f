// The operator API: escalate, hand back and decide on a waiting draft, each behind the bearer token; the token check is
// shared with the codec endpoint and the report.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import express, { type Request, type Response } from 'express';
import { z } from 'zod';
import { issuesOf } from '../contract/schemas';
import { logEvent } from '../observability/log';
import { RequestRefused, decideReply, forceEscalation, handBack, type TurnOptions } from '../operations/conversations';
import { sameSecret } from './secrets';
import { classifyTemporalFailure } from './temporal-failures';
import { ConversationId } from './webhook';

/**
 * An operator's request waits for the conversation's workflow to accept or refuse it, which takes a worker: past this,
 * the answer is a 503 saying so (the request may still be applied once a worker runs). While a turn's local calls run,
 * the workflow hears of a request only when its task is extended (every 8 s); on a loaded worker that extension and
 * the task that follows it can take past 10 s, so the deadline spans two extensions.
 */
const DEFAULT_OPERATOR_DEADLINE_MS = 20_000;

/** A lead's decision on a draft waiting for approval, as the operator API takes it. */
const DecisionRequest = z.discriminatedUnion('decision', [
  z.strictObject({ decision: z.literal('approve'), requestedBy: z.string().trim().min(1).max(200).optional() }),
  z.strictObject({
    decision: z.literal('edit'),
    text: z.string().trim().min(1).max(4000),
    requestedBy: z.string().trim().min(1).max(200).optional(),
  }),
  z.strictObject({
    decision: z.literal('reject'),
    reason: z.string().trim().min(1).max(1000),
    requestedBy: z.string().trim().min(1).max(200).optional(),
  }),
]);

const OperatorRequest = z.strictObject({
  reason: z.string().trim().min(1).max(1000),
  requestedBy: z.string().trim().min(1).max(200).optional(),
});

/** What the operator API needs: Temporal, the turn's settings, its token and how long a request waits. */
export interface OperatorOptions {
  client: Client;
  turn: TurnOptions;
  /** Bearer token of the operator API; without one the API answers 503. */
  adminApiToken?: string;
  /** How long an operator's request waits for the workflow's answer before a 503 (default 20 s). */
  operatorDeadlineMs?: number;
}

/** Whether a request may use an operator route; when not, it has been answered (503 or 401). */
export type OperatorCheck = (req: Request, res: Response) => boolean;

function bearerMatches(header: string | undefined, token: string): boolean {
  return sameSecret(/^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '', token);
}

/** The operator token check of every operator route: answers 503 or 401 and returns false when the caller may not. */
export function operatorCheck(adminApiToken: string | undefined): OperatorCheck {
  return (req, res) => {
    if (!adminApiToken) {
      res.status(503).json({ error: 'the operator API is disabled: ADMIN_API_TOKEN is not set' });
      return false;
    }
    if (!bearerMatches(req.header('authorization'), adminApiToken)) {
      res.status(401).json({ error: 'a valid bearer token is required' });
      return false;
    }
    return true;
  };
}

/** `POST /conversations/:id/escalate`, `/hand-back` and `/decision`. */
export function operatorRoutes(options: OperatorOptions, operatorAllowed: OperatorCheck): express.Router {
  const router = express.Router();
  const operatorDeadlineMs = options.operatorDeadlineMs ?? DEFAULT_OPERATOR_DEADLINE_MS;

  /**
   * The operator API's checks, shared by its routes: the bearer token, the conversation id and the body (`schema`)
   * first; then `act`, where a conversation with no open workflow is a 404, a request the workflow refused a 409, and
   * a workflow that did not answer in time (no worker) a 503.
   */
  function operatorRoute<S extends z.ZodType>(
    invalid: string,
    schema: S,
    act: (conversationId: string, body: z.infer<S>) => Promise<[status: number, body: unknown]>,
  ): express.RequestHandler {
    return async (req, res) => {
      if (!operatorAllowed(req, res)) return;
      const id = ConversationId.safeParse(req.params.id);
      if (!id.success) return res.status(400).json({ error: 'invalid conversation id', issues: issuesOf(id.error) });
      const body = schema.safeParse(req.body ?? {});
      if (!body.success) return res.status(400).json({ error: invalid, issues: issuesOf(body.error) });
      try {
        const [status, answer] = await act(id.data, body.data);
        res.status(status).json(answer);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError)
          return res.status(404).json({ error: `conversation ${id.data} has no open workflow` });
        if (err instanceof RequestRefused) return res.status(409).json({ error: err.message });
        const { retryable, reason } = classifyTemporalFailure(err);
        if (!retryable) throw err;
        // No worker took the request in time (or Temporal was out of reach): it may still be applied; say so.
        logEvent('warn', 'operator request not answered', { conversation_id: id.data, reason });
        res.status(503).json({
          error: `the conversation's workflow did not answer in time (${reason}): the request may still take effect once a worker runs; read the conversation's state before asking again`,
        });
      }
    };
  }

  /**
   * An escalation or a hand-back: 202 with what the conversation's workflow will do, or 409 with why it can have no
   * effect now. A conversation with no open workflow gets a new one, which acts on the request.
   */
  const operatorRequestRoute = (action: 'escalate' | 'hand-back') =>
    operatorRoute(`invalid ${action} request`, OperatorRequest, async (id, body) => {
      const request = { reason: body.reason, requestedBy: body.requestedBy ?? 'api' };
      const send = action === 'escalate' ? forceEscalation : handBack;
      const answer = await options.client.withDeadline(Date.now() + operatorDeadlineMs, () =>
        send(options.client, id, request, options.turn),
      );
      logEvent('info', `${action} requested`, { conversation_id: id });
      return [202, { ...answer, conversationId: id }];
    });

  router.post('/conversations/:id/escalate', express.json({ limit: '16kb' }), operatorRequestRoute('escalate'));
  router.post('/conversations/:id/hand-back', express.json({ limit: '16kb' }), operatorRequestRoute('hand-back'));
  router.post(
    '/conversations/:id/decision',
    express.json({ limit: '64kb' }),
    operatorRoute('invalid decision', DecisionRequest, async (id, { requestedBy, ...decision }) => {
      const accepted = await options.client.withDeadline(Date.now() + operatorDeadlineMs, () =>
        decideReply(options.client, id, { ...decision, by: requestedBy ?? 'api' }),
      );
      logEvent('info', 'reply decision accepted', { conversation_id: id, decision: decision.decision });
      return [200, { ...accepted, conversationId: id }];
    }),
  );
  return router;
}
