// The ingress: Intercom webhooks → signal-with-start of the conversation's workflow; the operator API (escalate, hand back,
// decide), the codec endpoint for the Temporal UI and the support leads' report page.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import express, { type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import {
  RequestRefused,
  decideReply,
  deliverUserMessage,
  forceEscalation,
  handBack,
  sendTeamAction,
  type TurnOptions,
} from '../operations/conversations';
import { ConversationIdText, issuesOf } from '../contract/schemas';
import type { TeamAction } from '../contract/shared';
import { logEvent } from '../observability/log';
import { htmlToText } from '../activities/intercom-text';
import { Since } from '../reports/figures';
import { loadAnalysisData, loadReport } from '../reports/visibility';
import { AnalysisFailed, AnalysisRequest, askAnalysis } from '../reports/analysis';
import type { TemporalUi } from '../reports/patterns';
import type OpenAI from 'openai';
import { codecRoutes } from './codec-routes';
import { sameSecret } from './secrets';
import {
  createIngressMetrics,
  countOutboxForwards,
  watchOutboxBacklog,
  type DeliveryOutcome,
  type IngressMetrics,
} from './metrics';
import { REPORT_PAGE, REPORT_PAGE_HEADERS } from './report-page';
import { errorMessage } from '../observability/error-message';
import { classifyTemporalFailure } from './temporal-failures';
import { Outbox, OutboxRejection, type Forwarded, type OutboxEntry } from './outbox';

/**
 * A notification carries the conversation it is about, with its newest parts: a user who pastes a long document makes
 * it megabytes. Intercom does not send a 413'd notification again, so the message would be lost; this bound is far
 * above any conversation Intercom returns (500 parts), and only keeps a body from exhausting memory. The body is
 * parsed only once its signature proves it is Intercom's.
 */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;
/** Topics that carry a user's message; every other topic is acknowledged and ignored. */
export const MESSAGE_TOPICS = ['conversation.user.created', 'conversation.user.replied'] as const;
/** Topics that show a person on the team acting on the conversation, and what each tells the workflow. */
export const TEAM_TOPICS = {
  'conversation.admin.replied': 'replied',
  'conversation.admin.assigned': 'assigned',
  'conversation.admin.closed': 'closed',
} as const satisfies Record<string, TeamAction['action']>;
/** Below Intercom's webhook timeout, so an unreachable Temporal gets a 503 (and a redelivery), not a timeout. */
const TEMPORAL_DEADLINE_MS = 3_000;
const REMEMBERED_NOTIFICATIONS = 10_000;
/**
 * An operator's request waits for the conversation's workflow to accept or refuse it, which takes a worker: past this,
 * the answer is a 503 saying so (the request may still be applied once a worker runs).
 */
const DEFAULT_OPERATOR_DEADLINE_MS = 10_000;

const ConversationId = z.union([z.string(), z.number()]).transform(String).pipe(ConversationIdText);

/** Intercom's `notification_event`; only what Melvin reads is checked, the rest passes through. */
export const Notification = z.looseObject({
  type: z.literal('notification_event'),
  id: z.string().min(1).max(200),
  topic: z.string().min(1).max(200),
  created_at: z.number().optional(),
  data: z.looseObject({ item: z.looseObject({ type: z.string().optional() }) }),
});

const IntercomId = z.union([z.string(), z.number()]);
const PartRef = z.looseObject({
  id: IntercomId,
  body: z.string().nullish(),
  author: z.looseObject({ id: IntercomId.nullish(), name: z.string().nullish() }).nullish(),
});
/** What a teammate's answer keeps of its text: enough for a lead to compare it with Melvin's shadow draft. */
const MAX_TEAM_ANSWER = 2000;
const ConversationItem = z.looseObject({
  id: ConversationId,
  admin_assignee_id: IntercomId.nullish(),
  team_assignee_id: IntercomId.nullish(),
  source: PartRef.nullish(),
  conversation_parts: z.looseObject({ conversation_parts: z.array(PartRef) }).optional(),
});

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

interface Delivery {
  status: number;
  body: unknown;
  outcome: DeliveryOutcome;
  /** Only the topics Melvin knows become a metrics label: an unsigned body cannot invent label values. */
  topic: string;
}

function reject(status: number, outcome: DeliveryOutcome, error: string, issues?: unknown): Delivery {
  return { status, body: issues ? { error, issues } : { error }, outcome, topic: 'unknown' };
}

/** Intercom leaves an assignee empty as null, and some payloads as 0 or "0": none of them is anybody. */
function assigned(id: string | number | null | undefined): boolean {
  return id !== null && id !== undefined && String(id) !== '' && String(id) !== '0';
}

function isMessageTopic(topic: string): topic is (typeof MESSAGE_TOPICS)[number] {
  return (MESSAGE_TOPICS as readonly string[]).includes(topic);
}

function isTeamTopic(topic: string): topic is keyof typeof TEAM_TOPICS {
  return Object.hasOwn(TEAM_TOPICS, topic);
}

export interface IngressOptions {
  client: Client;
  /** The Intercom app's client secret: the key of the webhook's HMAC-SHA1 signature. */
  clientSecret: string;
  turn: TurnOptions;
  /** The bot admin Melvin posts as: its own replies come back as `conversation.admin.replied` and are not the team's. */
  melvinAdminId: string;
  /** Bearer token of the operator API; without one the API answers 503. */
  adminApiToken?: string;
  /** Origins of the Temporal UI allowed to call the codec endpoint from a browser (TEMPORAL_UI_ORIGIN); none if omitted. */
  temporalUiOrigins?: readonly string[];
  metrics?: IngressMetrics;
  /** How long an operator's request waits for the workflow's answer before a 503 (default 10 s). */
  operatorDeadlineMs?: number;
  /** The report's analysis agent (`POST /report/ask`): its model endpoint; absent, that endpoint answers 503. */
  analysis?: { openai: OpenAI; model: string };
  /**
   * INGRESS_OUTBOX_DIR's outbox: a delivery is acknowledged once it is synced to disk there and handed to Temporal
   * afterwards (see outbox.ts). Absent, a delivery is acknowledged once Temporal has it.
   */
  outbox?: Outbox;
}

/**
 * Hands one delivery to Temporal: the call the webhook makes at once, or the outbox makes later. A teammate's action
 * for a conversation with no open workflow has nothing to do (`ignored`): with no workflow there is nothing to stop.
 */
export async function sendToTemporal(
  client: Client,
  turn: TurnOptions,
  entry: OutboxEntry,
): Promise<{ outcome: Forwarded; run?: { workflowId: string; runId: string } }> {
  if (entry.kind === 'message') {
    const { conversationId, trigger, partId, message } = entry;
    const run = await deliverUserMessage(client, { conversationId, trigger, partId, message }, turn);
    return { outcome: 'signalled', run };
  }
  try {
    await sendTeamAction(client, entry.conversationId, entry.action);
    return { outcome: 'signalled' };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { outcome: 'ignored' };
    throw err;
  }
}

/**
 * Opens INGRESS_OUTBOX_DIR's outbox, forwarding with `sendToTemporal`: what no retry can change (classified as the
 * direct path classifies it) is rejected, anything else is tried again. The metrics show its backlog.
 */
export async function openIngressOutbox(
  dir: string,
  client: Client,
  turn: TurnOptions,
  metrics: IngressMetrics,
): Promise<Outbox> {
  const outbox = await Outbox.open({
    dir,
    onForwarded: countOutboxForwards(metrics),
    forward: async (entry) => {
      try {
        const sent = await client.withDeadline(Date.now() + TEMPORAL_DEADLINE_MS, () =>
          sendToTemporal(client, turn, entry),
        );
        logEvent('info', sent.outcome === 'signalled' ? 'webhook delivered' : 'webhook ignored: no open workflow', {
          kind: entry.kind,
          conversation_id: entry.conversationId,
          ...(sent.run && { workflow_id: sent.run.workflowId, run_id: sent.run.runId }),
        });
        return sent.outcome;
      } catch (err) {
        const { retryable, reason } = classifyTemporalFailure(err);
        if (retryable) throw err;
        throw new OutboxRejection(reason);
      }
    },
  });
  watchOutboxBacklog(metrics, outbox);
  return outbox;
}

/** Constant-time check of `X-Hub-Signature: sha1=<hex>` against the HMAC-SHA1 of the raw body. */
export function signatureMatches(rawBody: Buffer, header: string | undefined, secret: string): boolean {
  const match = /^sha1=([0-9a-f]{40})$/i.exec(header?.trim() ?? '');
  if (!match) return false;
  const expected = createHmac('sha1', secret).update(rawBody).digest();
  return timingSafeEqual(Buffer.from(match[1]!, 'hex'), expected);
}

function bearerMatches(header: string | undefined, token: string): boolean {
  return sameSecret(/^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '', token);
}

export function createIngressApp(options: IngressOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  /** Notifications this process already turned into a signal: Intercom redelivers, and a repeat needs no second call. */
  const seen = new Set<string>();
  const metrics = options.metrics ?? createIngressMetrics();
  const operatorDeadlineMs = options.operatorDeadlineMs ?? DEFAULT_OPERATOR_DEADLINE_MS;

  function remember(notificationId: string): void {
    seen.add(notificationId);
    if (seen.size > REMEMBERED_NOTIFICATIONS) seen.delete(seen.values().next().value!);
  }

  /**
   * A teammate's reply, assignment or close goes to the conversation's open workflow, never starts one: with no
   * workflow there is nothing for Melvin to stop. Melvin's own replies come back under the same topic and are skipped.
   */
  async function teamAction(
    topic: keyof typeof TEAM_TOPICS,
    notificationId: string,
    item: z.infer<typeof ConversationItem>,
    createdAt: number | undefined,
  ): Promise<Delivery> {
    const action = TEAM_TOPICS[topic];
    const last = item.conversation_parts?.conversation_parts.at(-1);
    if (action === 'replied' && String(last?.author?.id) === options.melvinAdminId) {
      return { status: 202, body: { ignored: true, reason: 'Melvin’s own reply' }, outcome: 'ignored', topic };
    }
    // Unassigned (to no teammate and no team): nobody took the conversation over, so Melvin's part in it stays.
    if (action === 'assigned' && !assigned(item.admin_assignee_id) && !assigned(item.team_assignee_id)) {
      return { status: 202, body: { ignored: true, reason: 'assigned to nobody' }, outcome: 'ignored', topic };
    }
    const signal: TeamAction = { notificationId, action };
    // When it happened: a delivery that comes late must not undo what happened since (a lead's escalation, say).
    if (createdAt !== undefined) signal.at = new Date(createdAt * 1000).toISOString();
    if (action === 'assigned') signal.toMelvin = String(item.admin_assignee_id) === options.melvinAdminId;
    if (action === 'replied' && last?.body) {
      signal.text = htmlToText(last.body).slice(0, MAX_TEAM_ANSWER);
      signal.by = last.author?.name ?? String(last.author?.id ?? 'a teammate');
    }
    const entry: OutboxEntry = { kind: 'team', conversationId: item.id, action: signal };
    if (options.outbox) return queue(entry, topic, { queued: 'teamAction', action });
    try {
      const sent = await options.client.withDeadline(Date.now() + TEMPORAL_DEADLINE_MS, () =>
        sendToTemporal(options.client, options.turn, entry),
      );
      if (sent.outcome === 'ignored') {
        return { status: 202, body: { ignored: true, reason: 'no open workflow' }, outcome: 'ignored', topic };
      }
    } catch (err) {
      return notDelivered(err, 'team action', topic, item.id);
    }
    remember(notificationId);
    logEvent('info', 'team action delivered', { topic, conversation_id: item.id });
    return { status: 202, body: { signalled: 'teamAction', action }, outcome: 'signalled', topic };
  }

  /**
   * Outbox mode: the delivery is acknowledged once it is synced to the outbox's journal. A journal that cannot be
   * written (a full or read-only disk) is a 503, so Intercom delivers it again.
   */
  async function queue(entry: OutboxEntry, topic: string, body: Record<string, unknown>): Promise<Delivery> {
    try {
      await options.outbox!.append(entry);
    } catch (err) {
      logEvent('error', 'webhook not queued: the outbox cannot be written', {
        topic,
        conversation_id: entry.conversationId,
        reason: errorMessage(err),
      });
      return { ...reject(503, 'outbox_unwritable', 'the ingress cannot store the delivery; retry it'), topic };
    }
    const notificationId = entry.kind === 'message' ? entry.trigger.notificationId : entry.action.notificationId;
    remember(notificationId);
    logEvent('info', 'webhook queued', {
      topic,
      conversation_id: entry.conversationId,
      notification_id: notificationId,
    });
    return { status: 202, body: { ...body, notificationId }, outcome: 'queued', topic };
  }

  /**
   * A delivery Temporal did not take. A failure that can pass is a 503, which Intercom delivers again later, so the
   * message is not lost. One that fails the same way until an operator acts (a missing namespace, refused credentials,
   * an invalid request) is a 500 with the reason, logged as an error and counted apart as `temporal_rejected`.
   */
  function notDelivered(err: unknown, what: string, topic: string, conversationId: string): Delivery {
    const { retryable, reason } = classifyTemporalFailure(err);
    if (retryable) {
      logEvent('warn', `${what} not delivered: Temporal unavailable`, {
        topic,
        conversation_id: conversationId,
        reason,
      });
      return { ...reject(503, 'temporal_unavailable', 'Temporal is unavailable; retry the delivery'), topic };
    }
    logEvent('error', `${what} not delivered: Temporal rejected it`, {
      topic,
      conversation_id: conversationId,
      reason,
    });
    return {
      status: 500,
      body: { error: 'Temporal rejected the delivery; it fails the same way until an operator acts', reason },
      outcome: 'temporal_rejected',
      topic,
    };
  }

  /** Everything a delivery can come to: the answer, and the outcome the metrics count it under. */
  async function handleDelivery(raw: Buffer, signature: string | undefined): Promise<Delivery> {
    if (!signatureMatches(raw, signature, options.clientSecret)) {
      return reject(401, 'bad_signature', 'invalid signature: X-Hub-Signature must be sha1=<HMAC-SHA1 of the body>');
    }
    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch (err) {
      return reject(400, 'bad_json', `invalid JSON: ${errorMessage(err)}`);
    }
    const notification = Notification.safeParse(json);
    if (!notification.success) {
      return reject(400, 'invalid', 'not an Intercom notification_event', issuesOf(notification.error));
    }
    const { id: notificationId, topic } = notification.data;
    if (topic === 'ping') return { status: 200, body: { ok: true }, outcome: 'ping', topic };
    if (!isMessageTopic(topic) && !isTeamTopic(topic))
      return { status: 202, body: { ignored: true, topic }, outcome: 'ignored', topic: 'other' };
    const item = ConversationItem.safeParse(notification.data.data.item);
    if (!item.success) {
      const issues = issuesOf(item.error).map((i) => ({ ...i, path: `data.item.${i.path}` }));
      return { ...reject(400, 'invalid', 'the notification names no valid conversation', issues), topic };
    }
    if (seen.has(notificationId)) {
      return { status: 200, body: { duplicate: true, notificationId }, outcome: 'duplicate', topic };
    }
    const conversationId = item.data.id;
    if (isTeamTopic(topic)) return teamAction(topic, notificationId, item.data, notification.data.created_at);
    // The message the notification is about: the newest part, or the first message (the source) of a new conversation.
    // The workflow's ledger ignores a delivery for a part it already answered or handed over.
    const part = item.data.conversation_parts?.conversation_parts.at(-1) ?? item.data.source;
    const entry: OutboxEntry = {
      kind: 'message',
      conversationId,
      trigger: { topic, notificationId, receivedAt: new Date().toISOString() },
      partId: part ? String(part.id) : undefined,
      // Who wrote and what, for the run's summary in the Temporal UI's list: both are in the team's Intercom.
      message: part?.body ? { author: part.author?.name ?? null, text: htmlToText(part.body) } : undefined,
    };
    if (options.outbox) return queue(entry, topic, { queued: true, conversationId });
    try {
      // Wait for Temporal to record the signal (milliseconds), never for the run: a 2xx must mean nothing is lost.
      const sent = await options.client.withDeadline(Date.now() + TEMPORAL_DEADLINE_MS, () =>
        sendToTemporal(options.client, options.turn, entry),
      );
      const { run } = sent;
      remember(notificationId);
      logEvent('info', 'webhook delivered', {
        topic,
        conversation_id: conversationId,
        workflow_id: run?.workflowId,
        run_id: run?.runId,
      });
      return { status: 202, body: run, outcome: 'signalled', topic };
    } catch (err) {
      return notDelivered(err, 'webhook', topic, conversationId);
    }
  }

  app.post(
    '/webhooks/intercom',
    (_req, res, next) => {
      const stopTimer = metrics.ackSeconds.startTimer();
      res.on('finish', () => {
        const outcome = (res.locals.outcome as string | undefined) ?? 'error';
        metrics.deliveries.inc({ topic: (res.locals.topic as string | undefined) ?? 'unknown', outcome });
        stopTimer({ outcome });
      });
      next();
    },
    express.raw({ type: () => true, limit: MAX_BODY_BYTES }),
    async (req: Request, res: Response) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const delivery = await handleDelivery(raw, req.header('x-hub-signature'));
      if (delivery.status === 401) logEvent('warn', 'webhook rejected: bad signature', { status: 401 });
      res.locals.outcome = delivery.outcome;
      res.locals.topic = delivery.topic;
      res.status(delivery.status).json(delivery.body);
    },
  );

  /** The operator token check of every operator route: answers 503 or 401 and returns false when the caller may not. */
  function operatorAllowed(req: Request, res: Response): boolean {
    if (!options.adminApiToken) {
      res.status(503).json({ error: 'the operator API is disabled: ADMIN_API_TOKEN is not set' });
      return false;
    }
    if (!bearerMatches(req.header('authorization'), options.adminApiToken)) {
      res.status(401).json({ error: 'a valid bearer token is required' });
      return false;
    }
    return true;
  }

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

  app.post('/conversations/:id/escalate', express.json({ limit: '16kb' }), operatorRequestRoute('escalate'));
  app.post('/conversations/:id/hand-back', express.json({ limit: '16kb' }), operatorRequestRoute('hand-back'));
  app.post(
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

  app.use(
    codecRoutes({
      codecs: options.client.options.loadedDataConverter.payloadCodecs,
      adminApiToken: options.adminApiToken,
      allowedOrigins: options.temporalUiOrigins ?? [],
      operatorAllowed,
    }),
  );

  // Example runs link to the first Temporal UI allowed to call the codec endpoint: the one leads use.
  const firstUi = options.temporalUiOrigins?.[0];
  const temporalUi: TemporalUi | undefined = firstUi
    ? { url: firstUi, namespace: options.client.options.namespace }
    : undefined;

  // The page is a shell with no data in it, so it needs no token; it asks for one and fetches the figures below with it.
  app.get('/report', (_req, res) => {
    res.set(REPORT_PAGE_HEADERS).type('html').send(REPORT_PAGE);
  });
  app.get('/report/data', async (req, res) => {
    if (!operatorAllowed(req, res)) return;
    const since = Since.prefault('7d').safeParse(req.query.since);
    if (!since.success) {
      return res.status(400).json({
        error: 'invalid since',
        issues: issuesOf(since.error).map((i) => ({ ...i, path: i.path === '(root)' ? 'since' : `since.${i.path}` })),
      });
    }
    try {
      const report = await loadReport(options.client, since.data, new Date(), temporalUi);
      res.set('cache-control', 'no-store').json(report);
    } catch (err) {
      logEvent('error', 'report not built: Temporal visibility failed', {
        error: errorMessage(err),
      });
      res.status(503).json({ error: 'Temporal visibility could not be read; try again' });
    }
  });

  // A lead's question in words, answered by the analysis agent from the window's runs. Read-only and answered while the
  // lead waits, so it runs here rather than as a Temporal activity: nothing to retry durably, nothing to undo.
  app.post('/report/ask', express.json({ limit: '8kb' }), async (req, res) => {
    if (!operatorAllowed(req, res)) return;
    const request = AnalysisRequest.safeParse(req.body ?? {});
    if (!request.success) {
      return res.status(400).json({ error: 'invalid question', issues: issuesOf(request.error) });
    }
    if (!options.analysis) {
      return res.status(503).json({
        error: 'the analysis agent is not configured: set ANALYSIS_OPENAI_API_KEY or OPENAI_API_KEY on the ingress',
      });
    }
    let data;
    try {
      data = await loadAnalysisData(options.client, request.data.since, new Date(), temporalUi);
    } catch (err) {
      logEvent('error', 'question not answered: Temporal visibility failed', { error: errorMessage(err) });
      return res.status(503).json({ error: 'Temporal visibility could not be read; try again' });
    }
    try {
      const answer = await askAnalysis({ ...options.analysis, question: request.data.question, data });
      logEvent('info', 'report question answered', { rounds: answer.rounds, tools: answer.figures.length });
      res.set('cache-control', 'no-store').json(answer);
    } catch (err) {
      const why = err instanceof AnalysisFailed ? err.message : `the model endpoint failed: ${errorMessage(err)}`;
      logEvent('error', 'report question not answered', { error: why });
      res.status(502).json({ error: `the analysis agent could not answer: ${why}` });
    }
  });

  const outboxHealth = () => (options.outbox ? { outbox: options.outbox.backlog } : {});
  app.get('/healthz', async (_req, res) => {
    try {
      await options.client.withDeadline(Date.now() + 2_000, () =>
        options.client.connection.workflowService.getSystemInfo({}),
      );
      res.json({ status: 'ok', temporal: 'serving', ...outboxHealth() });
    } catch (err) {
      // With an outbox the webhook still takes deliveries; what waits for Temporal is in `outbox`.
      res.status(503).json({ status: 'unavailable', temporal: errorMessage(err), ...outboxHealth() });
    }
  });

  app.use((_req, res) => {
    res.status(404).json({ error: 'not found' });
  });
  app.use(
    (
      err: Error & { status?: number; type?: string; limit?: number },
      _req: Request,
      res: Response,
      _next: NextFunction,
    ) => {
      if (err.type === 'entity.too.large') {
        res.locals.outcome = 'too_large';
        logEvent('error', 'webhook refused: body too large', { limit: err.limit ?? MAX_BODY_BYTES });
        return res.status(413).json({ error: `the body is larger than ${err.limit ?? MAX_BODY_BYTES} bytes` });
      }
      const status = err.status && err.status >= 400 && err.status < 500 ? err.status : 500;
      if (status === 500) logEvent('error', 'ingress error', { error: err.message });
      res.status(status).json({ error: status === 500 ? 'internal error' : err.message });
    },
  );
  return app;
}
