// Melvin's contract with Intercom's REST API 2.14, for the operations it uses: checks one recorded HTTP exchange.
//
// Written from Intercom's OpenAPI description of API 2.14 (public repository intercom/Intercom-OpenAPI, file
// descriptions/2.14/api.intercom.io.yaml): the paths and their parameter types, the request bodies
// (admin_reply_conversation_request, snooze_conversation_request, update_conversation_request), the response models
// (conversation with source, contacts, conversation_parts and custom_attributes; contact; admin_with_app) and the
// error model (`type: error.list`). The description marks almost no response field required; the contract requires
// the fields its examples always carry and Melvin reads. Two facts come from elsewhere: the rate-limit headers, from
// Intercom's "Rate Limiting" reference (sent on every authenticated response, not when credentials are invalid; a 429
// has X-RateLimit-Remaining 0 and no Retry-After), and the codes of statuses the description does not list for these
// operations (400, 429), from the codes the description uses elsewhere.
import { z } from 'zod';
import type { RecordedExchange } from '../../sandbox/intercom/emulator';

/** One HTTP exchange as the emulator records it: what the contract checks. */
export type Exchange = RecordedExchange;

const INTERCOM_VERSIONS = [
  ...['1.0', '1.1', '1.2', '1.3', '1.4'],
  ...Array.from({ length: 15 }, (_, minor) => `2.${minor}`),
] as const;

const Timestamp = z.number().int().nonnegative();
const IntegerId = z.string().regex(/^\d+$/, 'an integer id, as a string');

const Author = z.looseObject({
  type: z.enum(['user', 'lead', 'contact', 'admin', 'bot', 'team']),
  id: z.string(),
  name: z.string().nullable(),
  email: z.string().optional(),
});

const Part = z.looseObject({
  type: z.literal('conversation_part'),
  id: z.string(),
  part_type: z.string(),
  body: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
  notified_at: Timestamp,
  // `reference`: whom an assignment part assigned; null on every part that changed no assignment.
  assigned_to: z.looseObject({ type: z.string(), id: z.string().nullable() }).nullable(),
  author: Author,
  attachments: z.array(
    z.looseObject({
      type: z.string(),
      name: z.string(),
      url: z.string(),
      content_type: z.string(),
      filesize: z.number().int(),
    }),
  ),
  redacted: z.boolean(),
});

/** Intercom returns at most the 500 most recent parts; `total_count` counts them all. */
const MAX_PARTS = 500;

const Conversation = z.looseObject({
  type: z.literal('conversation'),
  id: IntegerId,
  created_at: Timestamp,
  updated_at: Timestamp,
  open: z.boolean(),
  state: z.enum(['open', 'closed', 'snoozed']),
  snoozed_until: Timestamp.nullable(),
  // The ingress reads the assignee from `conversation.admin.assigned` webhooks, which carry this same model.
  admin_assignee_id: z.number().int().nullable(),
  custom_attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
  source: z.looseObject({
    type: z.enum(['conversation', 'email', 'facebook', 'instagram', 'phone_call', 'phone_switch', 'push', 'sms']),
    id: z.string(),
    delivered_as: z.string(),
    subject: z.string(),
    body: z.string(),
    author: Author,
    attachments: z.array(z.unknown()),
    redacted: z.boolean(),
  }),
  contacts: z.looseObject({
    type: z.literal('contact.list'),
    contacts: z.array(z.looseObject({ type: z.literal('contact'), id: z.string() })),
  }),
  conversation_parts: z
    .looseObject({
      type: z.literal('conversation_part.list'),
      conversation_parts: z.array(Part).max(MAX_PARTS),
      total_count: z.number().int().nonnegative(),
    })
    .refine((parts) => parts.total_count >= parts.conversation_parts.length, 'total_count is below the parts returned'),
});

const Contact = z.looseObject({
  type: z.literal('contact'),
  id: z.string(),
  role: z.enum(['user', 'lead']),
  email: z.string(),
  name: z.string().nullable(),
});

const Admin = z.looseObject({
  type: z.literal('admin'),
  id: IntegerId,
  name: z.string(),
  email: z.string(),
  away_mode_enabled: z.boolean(),
  away_mode_reassign: z.boolean(),
  has_inbox_seat: z.boolean(),
  team_ids: z.array(z.number().int()),
});

const AdminReply = z.strictObject({
  message_type: z.enum(['comment', 'note', 'quick_reply']),
  type: z.literal('admin'),
  admin_id: IntegerId,
  body: z.string().min(1),
});

const Snooze = z.strictObject({
  message_type: z.literal('snoozed'),
  admin_id: IntegerId,
  snoozed_until: Timestamp,
});

const UpdateConversation = z.strictObject({
  read: z.boolean().optional(),
  title: z.string().optional(),
  custom_attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
  company_id: z.string().optional(),
});

/** `single_filter_search_request`, `multiple_filter_search_request` and `starting_after_paging` of API 2.14. */
const SingleFilter = z.strictObject({
  field: z.string(),
  operator: z.enum(['=', '!=', 'IN', 'NIN', '<', '<=', '>', '>=', '~', '!~', '^', '$']),
  value: z
    .union([z.string(), z.number().int(), z.boolean(), z.array(z.union([z.string(), z.number().int()]))])
    .nullable(),
});
type Filter = z.infer<typeof SingleFilter> | { operator: 'AND' | 'OR'; value: Filter[] };
const Filter: z.ZodType<Filter> = z.lazy(() =>
  z.union([SingleFilter, z.strictObject({ operator: z.enum(['AND', 'OR']), value: z.array(Filter) })]),
);
const SearchRequest = z.strictObject({
  query: Filter,
  pagination: z
    .strictObject({ per_page: z.number().int().optional(), starting_after: z.string().nullable().optional() })
    .nullable()
    .optional(),
});
/** `conversation_list` with `cursor_pages`: the search's answer. */
const ConversationList = z.looseObject({
  type: z.literal('conversation.list'),
  conversations: z.array(z.looseObject({ type: z.literal('conversation'), id: z.string() })),
  total_count: z.number().int(),
  pages: z
    .looseObject({
      type: z.literal('pages'),
      page: z.number().int().optional(),
      per_page: z.number().int().optional(),
      total_pages: z.number().int().optional(),
      next: z
        .looseObject({ per_page: z.number().int().optional(), starting_after: z.string().nullable().optional() })
        .nullable()
        .optional(),
    })
    .nullable(),
});

const ErrorList = z.looseObject({
  type: z.literal('error.list'),
  request_id: z.string().nullable().optional(),
  errors: z.array(z.looseObject({ code: z.string(), message: z.string().nullable().optional() })).min(1),
});

/** The error codes a status may carry on these operations. Statuses not listed must still be an `error.list`. */
const ERROR_CODES: Record<number, string[]> = {
  400: ['parameter_invalid', 'parameter_not_found', 'bad_request', 'data_invalid', 'intercom_version_invalid'],
  401: ['unauthorized'],
  403: ['api_plan_restricted'],
  404: ['not_found'],
  429: ['rate_limit_exceeded'],
};

interface Operation {
  name: string;
  method: 'GET' | 'POST' | 'PUT';
  path: RegExp;
  query: z.ZodType;
  body: z.ZodType | null;
  ok: z.ZodType;
}

const NoQuery = z.strictObject({});

const OPERATIONS: Operation[] = [
  {
    name: 'search conversations',
    method: 'POST',
    path: /^\/conversations\/search$/,
    query: NoQuery,
    body: SearchRequest,
    ok: ConversationList,
  },
  {
    name: 'retrieve a conversation',
    method: 'GET',
    path: /^\/conversations\/[^/]+$/,
    query: z.strictObject({
      display_as: z.literal('plaintext').optional(),
      include_translations: z.enum(['true', 'false']).optional(),
    }),
    body: null,
    ok: Conversation,
  },
  {
    name: 'update a conversation',
    method: 'PUT',
    path: /^\/conversations\/[^/]+$/,
    query: z.strictObject({ display_as: z.literal('plaintext').optional() }),
    body: UpdateConversation,
    ok: Conversation,
  },
  {
    name: 'reply to a conversation',
    method: 'POST',
    path: /^\/conversations\/[^/]+\/reply$/,
    query: NoQuery,
    body: AdminReply,
    ok: Conversation,
  },
  {
    name: 'manage a conversation (snooze)',
    method: 'POST',
    path: /^\/conversations\/[^/]+\/parts$/,
    query: NoQuery,
    body: Snooze,
    ok: Conversation,
  },
  { name: 'retrieve a contact', method: 'GET', path: /^\/contacts\/[^/]+$/, query: NoQuery, body: null, ok: Contact },
  { name: 'identify an admin', method: 'GET', path: /^\/me$/, query: NoQuery, body: null, ok: Admin },
];

function issues(schema: z.ZodType, value: unknown, where: string): string[] {
  const parsed = schema.safeParse(value);
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => `${where}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
}

function requestProblems(operation: Operation, exchange: Exchange, at: string): string[] {
  const headers = exchange.requestHeaders;
  const problems: string[] = [];
  if (!/^Bearer \S+$/.test(headers.authorization ?? ''))
    problems.push(`${at} request: Authorization must be "Bearer <access token>"`);
  const version = headers['intercom-version'];
  if (version !== undefined && !(INTERCOM_VERSIONS as readonly string[]).includes(version))
    problems.push(`${at} request: Intercom-Version "${version}" is not a version of the API`);
  problems.push(...issues(operation.query, exchange.query, `${at} request query`));
  if (operation.body) {
    if (!(headers['content-type'] ?? '').startsWith('application/json'))
      problems.push(`${at} request: Content-Type must be application/json`);
    problems.push(...issues(operation.body, exchange.requestBody, `${at} request body`));
  }
  return problems;
}

function responseProblems(operation: Operation, exchange: Exchange, at: string): string[] {
  const { status, responseHeaders: headers, responseBody: body } = exchange;
  const problems: string[] = [];
  if (!(headers['content-type'] ?? '').startsWith('application/json'))
    problems.push(`${at} response ${status}: Content-Type must be application/json`);
  const rateHeaders = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];
  if (status === 401) {
    for (const name of rateHeaders)
      if (name in headers) problems.push(`${at} response 401: ${name} is not sent without valid credentials`);
  } else {
    for (const name of rateHeaders)
      if (!/^\d+$/.test(headers[name] ?? '')) problems.push(`${at} response ${status}: ${name} must be an integer`);
  }
  if (status === 429) {
    if (headers['x-ratelimit-remaining'] !== '0') problems.push(`${at} response 429: X-RateLimit-Remaining must be 0`);
    if ('retry-after' in headers) problems.push(`${at} response 429: Intercom sends no Retry-After`);
  }
  if (status >= 200 && status < 300) return [...problems, ...issues(operation.ok, body, `${at} response ${status}`)];
  problems.push(...issues(ErrorList, body, `${at} response ${status}`));
  const allowed = ERROR_CODES[status];
  const codes = ErrorList.safeParse(body).data?.errors.map((e) => e.code) ?? [];
  if (allowed) {
    for (const code of codes)
      if (!allowed.includes(code))
        problems.push(`${at} response ${status}: error code "${code}" is not one of ${allowed.join(', ')}`);
  }
  return problems;
}

/**
 * Every way one exchange breaks the contract, each naming the operation, the side and the field; empty when none.
 * `side: 'response'` checks only Intercom's side, for requests a test sends wrong on purpose.
 */
export function contractProblems(exchange: Exchange, side: 'both' | 'response' = 'both'): string[] {
  const at = `${exchange.method} ${exchange.path}`;
  const operation = OPERATIONS.find((o) => o.method === exchange.method && o.path.test(exchange.path));
  if (!operation) return [`${at}: not an operation of Melvin's Intercom contract`];
  const request = side === 'both' ? requestProblems(operation, exchange, at) : [];
  return [...request, ...responseProblems(operation, exchange, at)];
}

/** The problems of many exchanges, for a test's one assertion. */
export function allContractProblems(exchanges: Exchange[]): string[] {
  return exchanges.flatMap((exchange) => contractProblems(exchange));
}
