// The Intercom webhook: a signed notification about a user's message → signal-with-start of the conversation's workflow
// (or, with the outbox, its journal first); a teammate's action → a signal to the open workflow. Every outcome has its
// answer and its metric.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import express, { type Request, type Response } from 'express';
import { z } from 'zod';
import { htmlToText, partText } from '../activities/intercom-text';
import { ConversationIdText, issuesOf } from '../contract/schemas';
import type { TeamAction } from '../contract/shared';
import { errorMessage } from '../observability/error-message';
import { logEvent } from '../observability/log';
import {
  deliverUserMessage,
  sendTeamAction,
  type TurnOptions,
  type UserMessageText,
} from '../operations/conversations';
import { countOutboxForwards, watchOutboxBacklog, type DeliveryOutcome, type IngressMetrics } from './metrics';
import { Outbox, OutboxRejection, type Forwarded, type OutboxEntry } from './outbox';
import { classifyTemporalFailure } from './temporal-failures';

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
/** A conversation id as Intercom sends it, a number or a string, as Melvin names it. */
export const ConversationId = z.union([z.string(), z.number()]).transform(String).pipe(ConversationIdText);

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
  attachments: z.array(z.looseObject({ name: z.string().nullish() })).nullish(),
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

function messageOf(part: z.infer<typeof PartRef> | null | undefined): UserMessageText | undefined {
  const text = part ? partText(part.body ? htmlToText(part.body) : '', part.attachments) : '';
  return text ? { author: part?.author?.name ?? null, text } : undefined;
}

/** What the webhook needs: Temporal, the turn's settings, the signature's secret, Melvin's admin id, the outbox. */
export interface WebhookOptions {
  client: Client;
  /** The Intercom app's client secret: the key of the webhook's HMAC-SHA1 signature. */
  clientSecret: string;
  turn: TurnOptions;
  /** The bot admin Melvin posts as: its own replies come back as `conversation.admin.replied` and are not the team's. */
  melvinAdminId: string;
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
 * direct path classifies it) is rejected, anything else is tried again. The metrics show its backlog. `codec`, the
 * payload codec of MELVIN_PAYLOAD_KEYS when they are set, seals what the outbox writes to disk.
 */
export async function openIngressOutbox(
  dir: string,
  client: Client,
  turn: TurnOptions,
  metrics: IngressMetrics,
  codec?: PayloadCodec,
): Promise<Outbox> {
  const outbox = await Outbox.open({
    dir,
    codec,
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
        const { retryable, configuration, reason } = classifyTemporalFailure(err);
        if (retryable) throw err;
        if (configuration) {
          // A rotated key or a wrong namespace refuses every delivery of the incident: they wait in the journal (with
          // an alert) until the configuration is fixed, rather than all being parked where nobody answers them.
          logEvent('error', 'outbox forwarding held: Temporal refuses the ingress’s configuration', {
            conversation_id: entry.conversationId,
            reason,
          });
          throw err;
        }
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

/** `POST /webhooks/intercom`. */
export function webhookRoutes(options: WebhookOptions, metrics: IngressMetrics): express.Router {
  const router = express.Router();
  /** Notifications this process already turned into a signal: Intercom redelivers, and a repeat needs no second call. */
  const seen = new Set<string>();

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
      // Who wrote and what (its files named), for the run's summary in the Temporal UI's list and the preview a note
      // quotes when Intercom cannot be read: both are in the team's Intercom.
      message: messageOf(part),
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

  router.post(
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
  return router;
}
