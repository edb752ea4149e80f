// The Intercom emulator: a stateful stand-in for the REST subset Melvin uses (API 2.14), with Intercom's auth, errors,
// rate-limit headers, limits and faults.
import { createHmac, randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Gates } from '../gates';
import { FaultQueues, sleep } from '../faults';
import { HttpService } from '../http';
import type { HttpFault, IntercomFaults, ScenarioConversation } from '../scenario';
import { renderPlaintext, typedTextToHtml } from './plaintext';
import { SearchError, searchConversations } from './search';

export type IntercomOperation = keyof IntercomFaults;

export interface Author {
  /** Intercom's author types: a contact (`user`, `lead`), a teammate or an app posting as one (`admin`), or `bot`. */
  type: 'user' | 'lead' | 'admin' | 'bot';
  id: string;
  name: string;
  email?: string;
}

/** A file on a part, as Intercom's `part_attachment` describes it. */
export interface Attachment {
  type: 'upload';
  name: string;
  url: string;
  content_type: string;
  filesize: number;
}

/** Intercom's `reference`: on an assignment part, whom it assigned (`nobody_admin` with no id when it unassigned). */
export interface Reference {
  type: 'admin' | 'team' | 'nobody_admin';
  id: string | null;
}

export interface Part {
  type: 'conversation_part';
  id: string;
  part_type: string;
  body: string | null;
  created_at: number;
  updated_at: number;
  notified_at: number;
  /** Set on the part that changed the assignment; null on every other part. */
  assigned_to: Reference | null;
  author: Author;
  attachments: Attachment[];
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
  /** Who the conversation is assigned to; the emulator assigns no one, as a new customer conversation starts. */
  admin_assignee_id: number | null;
  team_assignee_id: string | null;
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
  /** Intercom's `conversation_statistics`, the fields the emulator keeps: closes, by whom, reopens. */
  statistics: {
    type: 'conversation_statistics';
    first_close_at: number | null;
    last_close_at: number | null;
    last_closed_by_id: string | null;
    count_reopens: number;
  };
}

/** Intercom's `notification_event`, as the app receives it (less the delivery fields each attempt sets). */
export interface Notification {
  type: 'notification_event';
  app_id: string;
  id: string;
  topic: string;
  created_at: number;
  data: { type: 'notification_event_data'; item: Conversation };
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
  /** The whole exchange as it crossed the wire, for the contract checks. */
  exchange: RecordedExchange;
}

export interface RecordedExchange {
  method: string;
  path: string;
  query: Record<string, unknown>;
  /** Header names in lower case, as Node receives them. */
  requestHeaders: Record<string, string>;
  requestBody: unknown;
  status: number;
  responseHeaders: Record<string, string>;
  responseBody: unknown;
}

/** A conversation data attribute the emulated workspace defines, and the type its values must have. */
export type AttributeType = 'string' | 'integer' | 'float' | 'boolean';

/** Intercom answers with at most this many parts of a conversation: the most recent ones. */
export const MAX_RETURNED_PARTS = 500;
/**
 * Intercom counts requests in 10-second windows. Its default for a private app is 10,000 a minute, which it enforces
 * as 1,666 a window (Intercom's "Rate Limiting" reference: "1000 per minute, which is 167 per 10-second window").
 */
const RATE_WINDOW_S = 10;
const DEFAULT_RATE_LIMIT = 1666;

const KNOWN_VERSION = /^(1\.[0-4]|2\.([0-9]|1[0-4])|Unstable)$/;
/** Conversation ids are integers (the API description types `conversation_id` so); anything else names no conversation. */
const CONVERSATION_ID = /^\d{1,19}$/;

/** Intercom's error body (`type: error.list`); the HTTP status travels only as the status. */
export function intercomError(code: string, message: string) {
  return { type: 'error.list', request_id: randomUUID(), errors: [{ code, message }] };
}

/** The admin id of the teammate a scenario's `admin` parts come from, and who assigns and closes conversations. */
export const TEAMMATE_ID = '990001';

const ERROR_CODES: Record<number, [string, string]> = {
  400: ['parameter_invalid', 'Bad request'],
  401: ['unauthorized', 'Access Token Invalid'],
  403: ['api_plan_restricted', 'Active subscription needed.'],
  404: ['not_found', 'Resource Not Found'],
  408: ['request_timeout', 'Request Timeout'],
  409: ['conflict', 'Conflict'],
  422: ['parameter_invalid', 'Unprocessable entity'],
  429: ['rate_limit_exceeded', `Exceeded rate limit of ${DEFAULT_RATE_LIMIT} in ${RATE_WINDOW_S}_seconds`],
};

function errorFor(status: number) {
  const [code, message] = ERROR_CODES[status] ?? ['server_error', 'Server Error'];
  return intercomError(code, message);
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

/** Counts requests in the current 10-second window, as Intercom's rate limiter does. */
class RateWindow {
  private windowStart = 0;
  private used = 0;

  constructor(readonly limit: number) {}

  /** Counts one request; returns the headers Intercom sends and whether the request is over the limit. */
  take(nowMs = Date.now()): { headers: Record<string, string>; exceeded: boolean } {
    const now = Math.floor(nowMs / 1000);
    const start = now - (now % RATE_WINDOW_S);
    if (start !== this.windowStart) Object.assign(this, { windowStart: start, used: 0 });
    this.used += 1;
    return {
      headers: this.headers(Math.max(0, this.limit - this.used), start + RATE_WINDOW_S),
      exceeded: this.used > this.limit,
    };
  }

  headers(remaining: number, reset: number): Record<string, string> {
    return {
      'X-RateLimit-Limit': String(this.limit),
      'X-RateLimit-Remaining': String(remaining),
      'X-RateLimit-Reset': String(reset),
    };
  }
}

export class IntercomEmulator extends HttpService {
  readonly conversations = new Map<string, Conversation>();
  readonly contacts = new Map<string, Contact>();
  readonly faults = new FaultQueues<HttpFault>();
  readonly requests: RecordedRequest[] = [];
  readonly deliveries: WebhookDelivery[] = [];
  /** Parts a scenario seeded as history: not counted as what Melvin posted. */
  private readonly seededParts = new Set<string>();
  /**
   * Part ids grow from the start time (in thousandths of a millisecond), so they never repeat across sandbox restarts
   * while Temporal keeps the conversations' workflows, and the part ids in their ledgers, in `.data/`.
   */
  private nextPartId = Date.now() * 1000;
  private readonly rateWindow: RateWindow;
  /** The workspace's conversation data attributes; `PUT /conversations/{id}` refuses any other, or a wrong type. */
  readonly conversationAttributes: Record<string, AttributeType>;

  constructor(
    readonly options: {
      token: string;
      adminId: string;
      adminName?: string;
      /** Where `notification_event` webhooks go, signed with the app's client secret. */
      webhook?: { url: string; secret: string };
      gates?: Gates;
      /** Requests allowed per 10-second window before a real 429. */
      rateLimit?: number;
      conversationAttributes?: Record<string, AttributeType>;
    },
  ) {
    super('Intercom emulator');
    this.rateWindow = new RateWindow(options.rateLimit ?? DEFAULT_RATE_LIMIT);
    this.conversationAttributes = options.conversationAttributes ?? {
      'Melvin Status': 'string',
      'Melvin Reply Mode': 'string',
      'Melvin Approval Timeout': 'integer',
    };
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
    // Melvin's earlier replies: it posts through the REST API as its admin, so Intercom shows them as an admin's.
    if (kind === 'bot') return this.adminAuthor(this.options.adminId);
    return { type: 'admin', id: TEAMMATE_ID, name: 'Support Team' };
  }

  private adminAuthor(adminId: string): Author {
    if (adminId === this.options.adminId)
      return { type: 'admin', id: adminId, name: this.options.adminName ?? 'Melvin' };
    return { type: 'admin', id: adminId, name: adminId === TEAMMATE_ID ? 'Support Team' : 'Admin' };
  }

  /** Creates the conversation of a scenario; parts are spaced a minute apart, ending now. */
  seed(conversation: ScenarioConversation): Conversation {
    const problem = conversation.attributes ? this.attributeProblem(conversation.attributes) : null;
    if (problem) throw new Error(`conversation ${conversation.id}: ${problem}`);
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
      admin_assignee_id: null,
      team_assignee_id: null,
      custom_attributes: { ...conversation.attributes },
      source: {
        type: 'conversation',
        // Unique like every part id, so a conversation seeded again is a new message to the workflow's ledger.
        id: String(this.nextPartId++),
        delivered_as: 'customer_initiated',
        subject: '',
        body: typedTextToHtml(first!.body),
        author: this.authorFor(first!.author, contact),
        attachments: [],
        redacted: false,
      },
      contacts: { type: 'contact.list', contacts: [{ type: 'contact', id: contact.id }] },
      conversation_parts: { type: 'conversation_part.list', conversation_parts: [], total_count: 0 },
      statistics: {
        type: 'conversation_statistics',
        first_close_at: null,
        last_close_at: null,
        last_closed_by_id: null,
        count_reopens: 0,
      },
    };
    this.conversations.set(created.id, created);
    rest.forEach((part, index) => {
      const added = this.addPart(created, {
        part_type: part.type,
        body: typedTextToHtml(part.body),
        author: this.authorFor(part.author, contact),
        at: start + 60 * (index + 1),
      });
      this.seededParts.add(added.id);
    });
    return created;
  }

  private addPart(
    conversation: Conversation,
    part: {
      part_type: string;
      body: string | null;
      author: Author;
      at?: number;
      attachments?: Attachment[];
      assigned_to?: Reference;
    },
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
      assigned_to: part.assigned_to ?? null,
      author: part.author,
      attachments: part.attachments ?? [],
      redacted: false,
    };
    conversation.conversation_parts.conversation_parts.push(created);
    conversation.conversation_parts.total_count += 1;
    conversation.updated_at = at;
    return created;
  }

  /**
   * A new message from the conversation's contact, as when the user types in the Messenger: text, files, or both (a
   * message of files only has an empty body, as in Intercom). A reply reopens a snoozed or closed conversation.
   */
  addUserMessage(conversationId: string, text: string, files: { name: string; content_type?: string }[] = []): Part {
    const conversation = this.mustGet(conversationId);
    const contact = this.contacts.get(conversation.contacts.contacts[0]!.id)!;
    if (conversation.state === 'closed') conversation.statistics.count_reopens += 1;
    if (conversation.state !== 'open') Object.assign(conversation, { state: 'open', open: true, snoozed_until: null });
    return this.addPart(conversation, {
      part_type: 'comment',
      body: text ? typedTextToHtml(text) : '',
      author: { type: contact.role, id: contact.id, name: contact.name, email: contact.email },
      attachments: files.map((file, index) => ({
        type: 'upload',
        name: file.name,
        url: `https://downloads.intercomcdn.com/i/o/${this.nextPartId}-${index}/${encodeURIComponent(file.name)}`,
        content_type: file.content_type ?? 'application/octet-stream',
        filesize: 1024,
      })),
    });
  }

  /**
   * A teammate assigns the conversation in the Intercom inbox, to Melvin's admin, to a teammate or to nobody, and
   * Intercom tells the app (`conversation.admin.assigned`); `deliver: false` builds the notification without sending
   * it, so a test can deliver it late.
   */
  async assign(
    conversationId: string,
    to: 'melvin' | 'teammate' | 'nobody',
    options: { deliver?: boolean } = {},
  ): Promise<{ part: Part; notification: Notification; delivery: WebhookDelivery | null }> {
    const conversation = this.mustGet(conversationId);
    const adminId = to === 'melvin' ? this.options.adminId : to === 'teammate' ? TEAMMATE_ID : null;
    conversation.admin_assignee_id = adminId === null ? null : Number(adminId);
    const part = this.addPart(conversation, {
      part_type: 'assignment',
      body: null,
      author: this.adminAuthor(TEAMMATE_ID),
      assigned_to: adminId === null ? { type: 'nobody_admin', id: null } : { type: 'admin', id: adminId },
    });
    const notification = this.notification('conversation.admin.assigned', conversationId);
    const delivery = options.deliver === false ? null : await this.deliver(notification);
    return { part, notification, delivery };
  }

  /** A teammate closes the conversation in the Intercom inbox, and Intercom tells the app (`conversation.admin.closed`). */
  async close(conversationId: string): Promise<{ part: Part; notification: Notification; delivery: WebhookDelivery }> {
    const conversation = this.mustGet(conversationId);
    Object.assign(conversation, { state: 'closed', open: false, snoozed_until: null });
    const part = this.addPart(conversation, { part_type: 'close', body: null, author: this.adminAuthor(TEAMMATE_ID) });
    const stats = conversation.statistics;
    Object.assign(stats, {
      first_close_at: stats.first_close_at ?? part.created_at,
      last_close_at: part.created_at,
      last_closed_by_id: TEAMMATE_ID,
    });
    const notification = this.notification('conversation.admin.closed', conversationId);
    return { part, notification, delivery: await this.deliver(notification) };
  }

  /** A teammate answers in the Intercom inbox, and Intercom tells the app (`conversation.admin.replied`). */
  async teammateReplies(
    conversationId: string,
    text: string,
  ): Promise<{ part: Part; notification: Notification; delivery: WebhookDelivery }> {
    const part = this.addPart(this.mustGet(conversationId), {
      part_type: 'comment',
      body: typedTextToHtml(text),
      author: this.adminAuthor(TEAMMATE_ID),
    });
    const notification = this.notification('conversation.admin.replied', conversationId);
    return { part, notification, delivery: await this.deliver(notification) };
  }

  /** The contact writes a message and Intercom tells the app: the part is added, then its webhook delivered. */
  async userReplies(
    conversationId: string,
    text: string,
    files: { name: string; content_type?: string }[] = [],
  ): Promise<{ part: Part; delivery: WebhookDelivery }> {
    const part = this.addUserMessage(conversationId, text, files);
    return { part, delivery: await this.emit('conversation.user.replied', conversationId) };
  }

  mustGet(conversationId: string): Conversation {
    const conversation = this.conversations.get(conversationId);
    if (!conversation) throw new Error(`no conversation ${conversationId} in the emulator`);
    return conversation;
  }

  /**
   * A `notification_event` for the conversation as it is now (the conversation is its item, as in Intercom), not yet
   * sent: `created_at` says when the event happened, however late it is delivered.
   */
  notification(topic: string, conversationId: string): Notification {
    return {
      type: 'notification_event',
      app_id: 'sandbox',
      id: `notif_${randomUUID()}`,
      topic,
      created_at: this.now(),
      data: { type: 'notification_event_data', item: structuredClone(this.mustGet(conversationId)) },
    };
  }

  /** Sends a signed notification for the conversation now, as Intercom does. */
  async emit(topic: string, conversationId: string, attempts = 3): Promise<WebhookDelivery> {
    return this.deliver(this.notification(topic, conversationId), attempts);
  }

  /**
   * Delivers a notification: HMAC-SHA1 of the raw body with the app's client secret in `X-Hub-Signature`, retried on
   * network errors and 5xx.
   */
  async deliver(notification: Notification, attempts = 3): Promise<WebhookDelivery> {
    const webhook = this.options.webhook;
    if (!webhook) throw new Error('the emulator has no webhook receiver configured');
    const firstSentAt = this.now();
    const delivery: WebhookDelivery = {
      notification_id: notification.id,
      topic: notification.topic,
      conversation_id: notification.data.item.id,
      attempts: 0,
      status: null,
      response: null,
      at: Date.now(),
    };
    this.deliveries.push(delivery);
    while (delivery.attempts < attempts) {
      delivery.attempts += 1;
      const body = JSON.stringify({
        ...notification,
        delivery_attempts: delivery.attempts,
        first_sent_at: firstSentAt,
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

  /** Whether a part came with the scenario's conversation, as history, rather than being posted since. */
  isSeeded(partId: string): boolean {
    return this.seededParts.has(partId);
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
      .map((p) => renderPlaintext(p.body ?? ''));
  }

  melvinStatus(conversationId: string): unknown {
    return this.mustGet(conversationId).custom_attributes['Melvin Status'];
  }

  snoozedUntil(conversationId: string): number | null {
    return this.mustGet(conversationId).snoozed_until;
  }

  /**
   * The conversation as the API returns it: only the 500 most recent parts (with `total_count` still the total), and
   * with `display_as=plaintext` every body as plain text.
   */
  private render(conversation: Conversation, plaintext: boolean): Conversation {
    const text = (body: string | null) => (body === null || !plaintext ? body : renderPlaintext(body));
    return {
      ...conversation,
      source: { ...conversation.source, body: text(conversation.source.body) ?? '' },
      conversation_parts: {
        ...conversation.conversation_parts,
        conversation_parts: conversation.conversation_parts.conversation_parts
          .slice(-MAX_RETURNED_PARTS)
          .map((p) => ({ ...p, body: text(p.body) })),
      },
    };
  }

  /** Why a `custom_attributes` update is refused, in Intercom's words, or null when the workspace takes it. */
  private attributeProblem(attributes: unknown): string | null {
    if (typeof attributes !== 'object' || attributes === null || Array.isArray(attributes))
      return 'custom_attributes must be an object';
    for (const [name, value] of Object.entries(attributes)) {
      const type = this.conversationAttributes[name];
      if (!type) return `Custom attribute '${name}' does not exist`;
      const fits =
        value === null ||
        (type === 'string' && typeof value === 'string') ||
        (type === 'integer' && Number.isInteger(value)) ||
        (type === 'float' && typeof value === 'number') ||
        (type === 'boolean' && typeof value === 'boolean');
      if (!fits) return `Custom attribute '${name}' must be of type ${type}`;
    }
    return null;
  }

  /** Records each exchange whole: what Melvin sent and what the emulator answered, for the contract checks. */
  private recorder(): express.RequestHandler {
    return (req, res, next) => {
      const json = res.json.bind(res);
      let responseBody: unknown = null;
      res.json = (body: unknown) => {
        responseBody = body;
        return json(body);
      };
      res.on('finish', () => {
        const headers = (source: Record<string, unknown>) =>
          Object.fromEntries(Object.entries(source).map(([name, value]) => [name.toLowerCase(), String(value)]));
        this.requests.push({
          method: req.method,
          path: req.path,
          operation: (res.locals.operation as RecordedRequest['operation']) ?? null,
          status: res.statusCode,
          at: Date.now(),
          exchange: {
            method: req.method,
            path: req.path,
            query: { ...(req.query as Record<string, unknown>) },
            requestHeaders: headers(req.headers),
            requestBody: req.body ?? null,
            status: res.statusCode,
            responseHeaders: headers(res.getHeaders()),
            responseBody,
          },
        });
      });
      next();
    };
  }

  override app(): express.Express {
    const app = express();
    // The inbox and the control API parse their own bodies, with their own limits.
    for (const router of this.routers) app.use(router);
    app.use(express.json({ limit: '1mb' }));
    app.use(this.recorder());
    app.use((req, res, next) => {
      const auth = req.header('authorization');
      // Intercom sends no rate-limit headers when the request has no valid credentials.
      if (auth !== `Bearer ${this.options.token}`) {
        return res.status(401).json(intercomError('unauthorized', 'Access Token Invalid'));
      }
      const rate = this.rateWindow.take();
      res.set(rate.headers);
      if (rate.exceeded) {
        return res
          .status(429)
          .json(
            intercomError(
              'rate_limit_exceeded',
              `Exceeded rate limit of ${this.rateWindow.limit} in ${RATE_WINDOW_S}_seconds`,
            ),
          );
      }
      const version = req.header('intercom-version');
      if (version !== undefined && !KNOWN_VERSION.test(version)) {
        return res
          .status(400)
          .json(intercomError('intercom_version_invalid', `Requested version ${version} is not valid`));
      }
      next();
    });
    if (this.options.gates) app.use(this.options.gates.middleware(operationKind));

    /**
     * Answers with a planned fault. A 429 carries Intercom's rate-limit headers, its reset `retry_after_s` ahead, and
     * no `Retry-After`: Intercom sends none.
     */
    const sendFault = (res: Response, fault: HttpFault) => {
      const status = fault.status ?? 500;
      // A 401 means the credentials were not valid, and Intercom sends no rate-limit headers then.
      if (status === 401) for (const name of Object.keys(this.rateWindow.headers(0, 0))) res.removeHeader(name);
      if (status === 429) {
        const reset = Math.ceil(Date.now() / 1000 + (fault.retry_after_s ?? RATE_WINDOW_S));
        res.set(this.rateWindow.headers(0, reset));
      }
      res.status(status).json(errorFor(status));
    };

    /**
     * Applies the next planned fault for an operation, a plan for this conversation's first (`reply:1004`); returns true
     * when the response was already sent.
     */
    const faulted = async (
      operation: IntercomOperation,
      res: Response,
      write?: () => unknown,
      conversationId?: string,
    ): Promise<boolean> => {
      res.locals.operation = operation;
      const planned = conversationId ? this.faults.takePlanned(`${operation}:${conversationId}`) : undefined;
      const fault = planned ?? this.faults.take(operation);
      if (!fault) return false;
      if (fault.delay_ms) await sleep(fault.delay_ms);
      if (fault.status === undefined) return false;
      if (fault.after_accept) write?.();
      sendFault(res, fault);
      return true;
    };
    const notFound = (res: Response) => res.status(404).json(intercomError('not_found', 'Resource Not Found'));
    const invalid = (res: Response, message: string) =>
      res.status(400).json(intercomError('parameter_invalid', message));
    /** The conversation the path names; a path id that is not an integer names none. */
    const find = (req: Request, res: Response): Conversation | undefined => {
      const id = String(req.params.id);
      const conversation = CONVERSATION_ID.test(id) ? this.conversations.get(id) : undefined;
      if (!conversation) notFound(res);
      return conversation;
    };

    app.get('/me', (_req, res) => {
      res.locals.operation = 'me';
      res.json({
        type: 'admin',
        id: this.options.adminId,
        name: this.options.adminName ?? 'Melvin',
        email: 'melvin@example.com',
        away_mode_enabled: false,
        away_mode_reassign: false,
        has_inbox_seat: true,
        team_ids: [],
      });
    });

    // Each conversation of the page comes as the search answers it in Intercom: without its parts.
    app.post('/conversations/search', async (req, res) => {
      if (await faulted('search', res)) return;
      try {
        const found = searchConversations(this.conversations.values(), req.body);
        res.json({
          ...found,
          conversations: found.conversations.map(({ conversation_parts: _parts, ...rest }) => rest),
        });
      } catch (err) {
        if (!(err instanceof SearchError)) throw err;
        res.status(err.status).json(intercomError(err.code, err.message));
      }
    });

    app.get('/conversations/:id', async (req, res) => {
      if (await faulted('fetch', res, undefined, String(req.params.id))) return;
      const conversation = find(req, res);
      if (conversation) res.json(this.render(conversation, req.query.display_as === 'plaintext'));
    });

    app.get('/contacts/:id', async (req, res) => {
      if (await faulted('contact', res)) return;
      const contact = this.contacts.get(String(req.params.id));
      if (!contact) return notFound(res);
      res.json(contact);
    });

    app.post('/conversations/:id/reply', async (req, res) => {
      const body = (req.body ?? {}) as { message_type?: unknown; type?: unknown; admin_id?: unknown; body?: unknown };
      const operation: IntercomOperation = body.message_type === 'note' ? 'note' : 'reply';
      res.locals.operation = operation;
      const conversation = find(req, res);
      if (!conversation) return;
      if (body.type !== 'admin') return invalid(res, 'type must be admin');
      if (typeof body.admin_id !== 'string' || !/^\d+$/.test(body.admin_id))
        return invalid(res, 'admin_id must be the id of an admin, as a string');
      if (!['comment', 'note', 'quick_reply'].includes(String(body.message_type)))
        return invalid(res, 'message_type must be one of comment, note, quick_reply');
      if (typeof body.body !== 'string' || body.body.trim() === '') return invalid(res, 'Body is required');
      const adminId = body.admin_id;
      const html = body.body;
      const write = () =>
        this.addPart(conversation, {
          part_type: operation === 'note' ? 'note' : 'comment',
          body: html,
          author: this.adminAuthor(adminId),
        });
      if (await faulted(operation, res, write, conversation.id)) return;
      write();
      res.json(this.render(conversation, false));
    });

    app.post('/conversations/:id/parts', async (req, res) => {
      const body = (req.body ?? {}) as { message_type?: unknown; admin_id?: unknown; snoozed_until?: unknown };
      res.locals.operation = 'snooze';
      const conversation = find(req, res);
      if (!conversation) return;
      if (body.message_type !== 'snoozed') return invalid(res, 'message_type must be snoozed');
      if (typeof body.admin_id !== 'string' || !/^\d+$/.test(body.admin_id))
        return invalid(res, 'admin_id must be the id of an admin, as a string');
      if (!Number.isInteger(body.snoozed_until)) return invalid(res, 'snoozed_until must be a UNIX timestamp');
      const adminId = body.admin_id;
      const snoozedUntil = body.snoozed_until as number;
      const write = () => {
        Object.assign(conversation, { state: 'snoozed', open: true, snoozed_until: snoozedUntil });
        this.addPart(conversation, { part_type: 'snoozed', body: null, author: this.adminAuthor(adminId) });
      };
      if (await faulted('snooze', res, write, conversation.id)) return;
      write();
      res.json(this.render(conversation, false));
    });

    app.put('/conversations/:id', async (req, res) => {
      const body = (req.body ?? {}) as { custom_attributes?: unknown };
      res.locals.operation = 'update';
      const conversation = find(req, res);
      if (!conversation) return;
      const problem = body.custom_attributes === undefined ? null : this.attributeProblem(body.custom_attributes);
      if (problem) return invalid(res, problem);
      const write = () => {
        Object.assign(conversation.custom_attributes, body.custom_attributes ?? {});
        conversation.updated_at = this.now();
      };
      if (await faulted('update', res, write, conversation.id)) return;
      write();
      res.json(this.render(conversation, false));
    });

    app.use((_req, res) => notFound(res));
    app.use((err: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
      const status = err.status ?? 500;
      res.status(status).json(intercomError(status === 400 ? 'parameter_invalid' : 'server_error', err.message));
    });
    return app;
  }
}
