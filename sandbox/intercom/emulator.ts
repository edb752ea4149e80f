// The Intercom emulator: a stateful stand-in for the REST subset Melvin uses, with Intercom's auth, errors and faults.
import { createHmac, randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Gates } from '../gates';
import { htmlToText, textToHtml } from '../../src/activities/intercom-text';
import { FaultQueues, sendHttpFault, sleep } from '../faults';
import { HttpService } from '../http';
import type { HttpFault, IntercomFaults, ScenarioConversation } from '../scenario';

export type IntercomOperation = keyof IntercomFaults;

export interface Author {
  type: 'user' | 'lead' | 'admin' | 'bot';
  id: string;
  name: string;
  email?: string;
}

export interface Part {
  type: 'conversation_part';
  id: string;
  part_type: string;
  body: string | null;
  created_at: number;
  updated_at: number;
  notified_at: number;
  author: Author;
  attachments: [];
  redacted: boolean;
}

export interface Contact {
  type: 'contact';
  id: string;
  role: 'user' | 'lead';
  email: string;
  name: string;
}

export interface Conversation {
  type: 'conversation';
  id: string;
  created_at: number;
  updated_at: number;
  open: boolean;
  state: 'open' | 'closed' | 'snoozed';
  snoozed_until: number | null;
  custom_attributes: Record<string, unknown>;
  source: {
    type: 'conversation';
    id: string;
    delivered_as: 'customer_initiated';
    subject: string;
    body: string;
    author: Author;
    attachments: [];
    redacted: boolean;
  };
  contacts: { type: 'contact.list'; contacts: { type: 'contact'; id: string }[] };
  conversation_parts: { type: 'conversation_part.list'; conversation_parts: Part[]; total_count: number };
}

export interface WebhookDelivery {
  notification_id: string;
  topic: string;
  conversation_id: string;
  attempts: number;
  /** The receiver's answer to the last attempt, or the network error. */
  status: number | null;
  response: unknown;
  at: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  operation: IntercomOperation | 'me' | null;
  status: number;
  at: number;
}

const KNOWN_VERSION = /^(1\.[0-4]|2\.\d{1,2}|Unstable)$/;

export function intercomError(status: number, code: string, message: string) {
  return { type: 'error.list', request_id: randomUUID(), errors: [{ code, message }], status };
}

const ERROR_CODES: Record<number, [string, string]> = {
  400: ['parameter_invalid', 'Bad request'],
  401: ['unauthorized', 'Access Token Invalid'],
  403: ['forbidden', 'Forbidden'],
  404: ['not_found', 'Resource Not Found'],
  408: ['request_timeout', 'Request Timeout'],
  409: ['conflict', 'Conflict'],
  422: ['parameter_invalid', 'Unprocessable entity'],
  429: ['rate_limit_exceeded', 'Rate limit exceeded'],
};

function errorFor(status: number) {
  const [code, message] = ERROR_CODES[status] ?? ['server_error', 'Server Error'];
  return intercomError(status, code, message);
}

/** The gate kind of a REST request, e.g. `intercom:reply`. */
function operationKind(req: Request): string | undefined {
  const body = req.body as { message_type?: string } | undefined;
  if (req.method === 'GET' && /^\/conversations\/[^/]+$/.test(req.path)) return 'intercom:fetch';
  if (req.method === 'GET' && req.path.startsWith('/contacts/')) return 'intercom:contact';
  if (req.method === 'POST' && req.path.endsWith('/reply'))
    return `intercom:${body?.message_type === 'note' ? 'note' : 'reply'}`;
  if (req.method === 'POST' && req.path.endsWith('/parts')) return 'intercom:snooze';
  if (req.method === 'PUT') return 'intercom:update';
  return undefined;
}

export class IntercomEmulator extends HttpService {
  readonly conversations = new Map<string, Conversation>();
  readonly contacts = new Map<string, Contact>();
  readonly faults = new FaultQueues<HttpFault>();
  readonly requests: RecordedRequest[] = [];
  readonly deliveries: WebhookDelivery[] = [];
  /** Parts a scenario seeded as history: not counted as what Melvin posted. */
  private readonly seededParts = new Set<string>();
  private nextPartId = 1000;
  constructor(
    readonly options: {
      token: string;
      adminId: string;
      adminName?: string;
      /** Where `notification_event` webhooks go, signed with the app's client secret. */
      webhook?: { url: string; secret: string };
      gates?: Gates;
    },
  ) {
    super('Intercom emulator');
  }

  private readonly routers: express.Router[] = [];

  /** Serves a router without Intercom's auth, such as the inbox page or the sandbox control API; call before start. */
  mount(router: express.Router): void {
    this.routers.push(router);
  }

  private now(): number {
    return Math.floor(Date.now() / 1000);
  }

  private authorFor(kind: ScenarioConversation['parts'][number]['author'], contact: Contact): Author {
    if (kind === 'user' || kind === 'lead')
      return { type: contact.role, id: contact.id, name: contact.name, email: contact.email };
    if (kind === 'bot') return { type: 'bot', id: this.options.adminId, name: this.options.adminName ?? 'Melvin' };
    return { type: 'admin', id: '990001', name: 'Support Team' };
  }

  /** Creates the conversation of a scenario; parts are spaced a minute apart, ending now. */
  seed(conversation: ScenarioConversation): Conversation {
    const role = conversation.parts.some((p) => p.author === 'lead') ? 'lead' : 'user';
    const contact: Contact = { type: 'contact', role, ...conversation.contact };
    this.contacts.set(contact.id, contact);
    const [first, ...rest] = conversation.parts;
    const start = this.now() - 60 * conversation.parts.length;
    const created: Conversation = {
      type: 'conversation',
      id: conversation.id,
      created_at: start,
      updated_at: start,
      open: true,
      state: 'open',
      snoozed_until: null,
      custom_attributes: {},
      source: {
        type: 'conversation',
        id: `src-${conversation.id}`,
        delivered_as: 'customer_initiated',
        subject: '',
        body: textToHtml(first!.body),
        author: this.authorFor(first!.author, contact),
        attachments: [],
        redacted: false,
      },
      contacts: { type: 'contact.list', contacts: [{ type: 'contact', id: contact.id }] },
      conversation_parts: { type: 'conversation_part.list', conversation_parts: [], total_count: 0 },
    };
    this.conversations.set(created.id, created);
    rest.forEach((part, index) => {
      const added = this.addPart(created, {
        part_type: part.type,
        body: textToHtml(part.body),
        author: this.authorFor(part.author, contact),
        at: start + 60 * (index + 1),
      });
      this.seededParts.add(added.id);
    });
    return created;
  }

  private addPart(
    conversation: Conversation,
    part: { part_type: string; body: string | null; author: Author; at?: number },
  ): Part {
    const at = part.at ?? this.now();
    const created: Part = {
      type: 'conversation_part',
      id: String(this.nextPartId++),
      part_type: part.part_type,
      body: part.body,
      created_at: at,
      updated_at: at,
      notified_at: at,
      author: part.author,
      attachments: [],
      redacted: false,
    };
    conversation.conversation_parts.conversation_parts.push(created);
    conversation.conversation_parts.total_count += 1;
    conversation.updated_at = at;
    return created;
  }

  /** A new message from the conversation's contact, as when the user types in the Messenger. */
  addUserMessage(conversationId: string, text: string): Part {
    const conversation = this.mustGet(conversationId);
    const contact = this.contacts.get(conversation.contacts.contacts[0]!.id)!;
    if (conversation.state === 'snoozed') Object.assign(conversation, { state: 'open', snoozed_until: null });
    return this.addPart(conversation, {
      part_type: 'comment',
      body: textToHtml(text),
      author: { type: contact.role, id: contact.id, name: contact.name, email: contact.email },
    });
  }

  /** The contact writes a message and Intercom tells the app: the part is added, then its webhook delivered. */
  async userReplies(conversationId: string, text: string): Promise<{ part: Part; delivery: WebhookDelivery }> {
    const part = this.addUserMessage(conversationId, text);
    return { part, delivery: await this.emit('conversation.user.replied', conversationId) };
  }

  mustGet(conversationId: string): Conversation {
    const conversation = this.conversations.get(conversationId);
    if (!conversation) throw new Error(`no conversation ${conversationId} in the emulator`);
    return conversation;
  }

  /**
   * Sends a signed `notification_event` for the conversation, as Intercom does: HMAC-SHA1 of the raw body with the
   * app's client secret in `X-Hub-Signature`, retried on network errors and 5xx.
   */
  async emit(topic: string, conversationId: string, attempts = 3): Promise<WebhookDelivery> {
    const webhook = this.options.webhook;
    if (!webhook) throw new Error('the emulator has no webhook receiver configured');
    const conversation = this.mustGet(conversationId);
    const notificationId = `notif_${randomUUID()}`;
    const firstSentAt = this.now();
    const delivery: WebhookDelivery = {
      notification_id: notificationId,
      topic,
      conversation_id: conversationId,
      attempts: 0,
      status: null,
      response: null,
      at: Date.now(),
    };
    this.deliveries.push(delivery);
    while (delivery.attempts < attempts) {
      delivery.attempts += 1;
      const body = JSON.stringify({
        type: 'notification_event',
        app_id: 'sandbox',
        id: notificationId,
        topic,
        delivery_attempts: delivery.attempts,
        first_sent_at: firstSentAt,
        created_at: this.now(),
        data: { type: 'notification_event_data', item: conversation },
      });
      const signature = `sha1=${createHmac('sha1', webhook.secret).update(body).digest('hex')}`;
      try {
        const response = await fetch(webhook.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-hub-signature': signature },
          body,
          signal: AbortSignal.timeout(10_000),
        });
        delivery.status = response.status;
        const text = await response.text();
        try {
          delivery.response = JSON.parse(text) as unknown;
        } catch {
          delivery.response = text;
        }
        if (response.status < 500) break;
      } catch (err) {
        delivery.status = null;
        delivery.response = String(err);
      }
      if (delivery.attempts < attempts) await sleep(1000);
    }
    return delivery;
  }

  /** Conversation ids, newest activity first. */
  conversationIds(): string[] {
    return [...this.conversations.values()].sort((a, b) => b.updated_at - a.updated_at).map((c) => c.id);
  }

  /** Comments the bot admin posted since the conversation was seeded: what the user saw from Melvin. */
  replies(conversationId: string): string[] {
    return this.partsBy(conversationId, 'comment');
  }

  notes(conversationId: string): string[] {
    return this.partsBy(conversationId, 'note');
  }

  private partsBy(conversationId: string, partType: string): string[] {
    return this.mustGet(conversationId)
      .conversation_parts.conversation_parts.filter(
        (p) => p.part_type === partType && p.author.id === this.options.adminId && !this.seededParts.has(p.id),
      )
      .map((p) => htmlToText(p.body ?? ''));
  }

  melvinStatus(conversationId: string): unknown {
    return this.mustGet(conversationId).custom_attributes['Melvin Status'];
  }

  snoozedUntil(conversationId: string): number | null {
    return this.mustGet(conversationId).snoozed_until;
  }

  private render(conversation: Conversation, plaintext: boolean): Conversation {
    if (!plaintext) return conversation;
    const text = (body: string | null) => (body === null ? null : htmlToText(body));
    return {
      ...conversation,
      source: { ...conversation.source, body: text(conversation.source.body) ?? '' },
      conversation_parts: {
        ...conversation.conversation_parts,
        conversation_parts: conversation.conversation_parts.conversation_parts.map((p) => ({
          ...p,
          body: text(p.body),
        })),
      },
    };
  }

  override app(): express.Express {
    const app = express();
    app.use(express.json({ limit: '1mb' }));
    for (const router of this.routers) app.use(router);
    app.use((req, res, next) => {
      res.on('finish', () => {
        this.requests.push({
          method: req.method,
          path: req.path,
          operation: (res.locals.operation as RecordedRequest['operation']) ?? null,
          status: res.statusCode,
          at: Date.now(),
        });
      });
      const auth = req.header('authorization');
      if (auth !== `Bearer ${this.options.token}`) {
        return res.status(401).json(intercomError(401, 'unauthorized', 'Access Token Invalid'));
      }
      const version = req.header('intercom-version');
      if (version !== undefined && !KNOWN_VERSION.test(version)) {
        return res
          .status(400)
          .json(intercomError(400, 'intercom_version_invalid', `Requested version ${version} is not valid`));
      }
      next();
    });
    if (this.options.gates) app.use(this.options.gates.middleware(operationKind));

    /** Applies the next planned fault for an operation; returns true when the response was already sent. */
    const faulted = async (operation: IntercomOperation, res: Response, write?: () => unknown): Promise<boolean> => {
      res.locals.operation = operation;
      const fault = this.faults.take(operation);
      if (!fault) return false;
      if (fault.delay_ms) await sleep(fault.delay_ms);
      if (fault.status === undefined) return false;
      if (fault.after_accept) write?.();
      sendHttpFault(res, fault, errorFor);
      return true;
    };
    const find = (req: Request, res: Response): Conversation | undefined => {
      const conversation = this.conversations.get(String(req.params.id));
      if (!conversation) res.status(404).json(intercomError(404, 'conversation_not_found', 'Conversation not found'));
      return conversation;
    };

    app.get('/me', (_req, res) => {
      res.locals.operation = 'me';
      res.json({
        type: 'admin',
        id: this.options.adminId,
        name: this.options.adminName ?? 'Melvin',
        email: 'melvin@example.com',
      });
    });

    app.get('/conversations/:id', async (req, res) => {
      if (await faulted('fetch', res)) return;
      const conversation = find(req, res);
      if (conversation) res.json(this.render(conversation, req.query.display_as === 'plaintext'));
    });

    app.get('/contacts/:id', async (req, res) => {
      if (await faulted('contact', res)) return;
      const contact = this.contacts.get(String(req.params.id));
      if (!contact) return res.status(404).json(intercomError(404, 'not_found', 'User Not Found'));
      res.json(contact);
    });

    app.post('/conversations/:id/reply', async (req, res) => {
      const body = req.body as { message_type?: string; type?: string; admin_id?: string; body?: string };
      const operation: IntercomOperation = body.message_type === 'note' ? 'note' : 'reply';
      const conversation = this.conversations.get(String(req.params.id));
      const write = () => {
        const isBot = String(body.admin_id) === this.options.adminId;
        return this.addPart(conversation!, {
          part_type: operation === 'note' ? 'note' : 'comment',
          body: String(body.body),
          author: {
            type: isBot ? 'bot' : 'admin',
            id: String(body.admin_id),
            name: isBot ? (this.options.adminName ?? 'Melvin') : 'Admin',
          },
        });
      };
      if (!conversation) {
        res.locals.operation = operation;
        return find(req, res);
      }
      if (
        body.type !== 'admin' ||
        !body.admin_id ||
        !body.body ||
        !['comment', 'note'].includes(body.message_type ?? '')
      ) {
        res.locals.operation = operation;
        return res
          .status(400)
          .json(intercomError(400, 'parameter_invalid', 'message_type, type=admin, admin_id and body are required'));
      }
      if (await faulted(operation, res, write)) return;
      write();
      res.json(conversation);
    });

    app.post('/conversations/:id/parts', async (req, res) => {
      const body = req.body as { message_type?: string; admin_id?: string; snoozed_until?: number };
      const conversation = this.conversations.get(String(req.params.id));
      res.locals.operation = 'snooze';
      if (!conversation) return find(req, res);
      if (body.message_type !== 'snoozed' || typeof body.snoozed_until !== 'number' || !body.admin_id) {
        return res
          .status(400)
          .json(
            intercomError(400, 'parameter_invalid', 'message_type=snoozed, admin_id and snoozed_until are required'),
          );
      }
      const write = () => {
        Object.assign(conversation, { state: 'snoozed', snoozed_until: body.snoozed_until });
        this.addPart(conversation, {
          part_type: 'snoozed',
          body: null,
          author: { type: 'bot', id: String(body.admin_id), name: this.options.adminName ?? 'Melvin' },
        });
      };
      if (await faulted('snooze', res, write)) return;
      write();
      res.json(conversation);
    });

    app.put('/conversations/:id', async (req, res) => {
      const body = req.body as { custom_attributes?: Record<string, unknown> };
      const conversation = this.conversations.get(String(req.params.id));
      res.locals.operation = 'update';
      if (!conversation) return find(req, res);
      const write = () => Object.assign(conversation.custom_attributes, body.custom_attributes ?? {});
      if (await faulted('update', res, write)) return;
      write();
      res.json(conversation);
    });

    app.use((_req, res) => res.status(404).json(intercomError(404, 'not_found', 'Resource Not Found')));
    app.use((err: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
      const status = err.status ?? 500;
      res
        .status(status)
        .json(intercomError(status, status === 400 ? 'parameter_invalid' : 'server_error', err.message));
    });
    return app;
  }
}
