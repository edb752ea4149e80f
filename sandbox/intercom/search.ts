// Intercom's conversation search (`POST /conversations/search`, API 2.14) for the emulator: the query language, its
// limits and errors, and cursor pagination, written from Intercom's OpenAPI description and sharing no code with Melvin.
import { z } from 'zod';

/** The types Intercom gives searchable fields; each type accepts its own operators. */
type FieldType = 'string' | 'integer' | 'date' | 'boolean';

/** Operators per type, as the description of `single_filter_search_request` lists them. */
const OPERATORS: Record<FieldType, readonly string[]> = {
  string: ['=', '!=', 'IN', 'NIN', '~', '!~', '^', '$'],
  integer: ['=', '!=', 'IN', 'NIN', '<', '>', '<=', '>='],
  // "`date` fields: `=`, `<`, `>` only. `!=`, `<=`, `>=`, `IN`, and `NIN` are not supported and return an error."
  date: ['=', '<', '>'],
  boolean: ['=', '!=', 'IN', 'NIN'],
};

/** The searchable fields the emulator's conversations hold (a subset of Intercom's table), read from a conversation. */
export interface SearchableConversation {
  id: string;
  created_at: number;
  updated_at: number;
  open: boolean;
  state: string;
  snoozed_until: number | null;
  admin_assignee_id: number | null;
  team_assignee_id: string | null;
  source: { id: string; author: { id: string; type: string; email?: string } };
  contacts: { contacts: { id: string }[] };
  statistics: {
    first_close_at: number | null;
    last_close_at: number | null;
    last_closed_by_id: string | null;
    count_reopens: number;
  };
}

type Value = string | number | boolean | null | (string | number)[];

const FIELDS: Record<string, { type: FieldType; read: (c: SearchableConversation) => Value | Value[] }> = {
  id: { type: 'string', read: (c) => c.id },
  created_at: { type: 'date', read: (c) => c.created_at },
  updated_at: { type: 'date', read: (c) => c.updated_at },
  open: { type: 'boolean', read: (c) => c.open },
  state: { type: 'string', read: (c) => c.state },
  snoozed_until: { type: 'date', read: (c) => c.snoozed_until },
  admin_assignee_id: { type: 'integer', read: (c) => c.admin_assignee_id },
  team_assignee_id: { type: 'integer', read: (c) => (c.team_assignee_id === null ? null : Number(c.team_assignee_id)) },
  'source.id': { type: 'string', read: (c) => c.source.id },
  'source.author.id': { type: 'string', read: (c) => c.source.author.id },
  'source.author.type': { type: 'string', read: (c) => c.source.author.type },
  'source.author.email': { type: 'string', read: (c) => c.source.author.email ?? null },
  // A list field matches when any of its values does.
  contact_ids: { type: 'string', read: (c) => c.contacts.contacts.map((contact) => contact.id) },
  'statistics.first_close_at': { type: 'date', read: (c) => c.statistics.first_close_at },
  'statistics.last_close_at': { type: 'date', read: (c) => c.statistics.last_close_at },
  'statistics.last_closed_by_id': { type: 'string', read: (c) => c.statistics.last_closed_by_id },
  'statistics.count_reopens': { type: 'integer', read: (c) => c.statistics.count_reopens },
};

/** "There's a limit of max 2 nested filters" and "max 15 filters for each AND or OR group". */
const MAX_NESTING = 2;
const MAX_GROUP = 15;
export const DEFAULT_PER_PAGE = 20;
export const MAX_PER_PAGE = 150;

const Pagination = z
  .object({
    per_page: z.number().int().min(1).max(MAX_PER_PAGE).optional(),
    starting_after: z.string().nullish(),
  })
  .nullish();

const SearchBody = z.object({ query: z.unknown().optional(), pagination: Pagination });

/** Why a search is refused: the HTTP status and Intercom's error code and message. */
export class SearchError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Filter = (c: SearchableConversation) => boolean;

function invalid(message: string): SearchError {
  return new SearchError(400, 'parameter_invalid', message);
}

/** A query node: a single filter (`field`, `operator`, `value`) or an `AND`/`OR` group of nodes. */
function compile(node: unknown, depth: number): Filter {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) throw invalid('query must be an object');
  const { field, operator, value } = node as { field?: unknown; operator?: unknown; value?: unknown };
  if (operator === 'AND' || operator === 'OR') {
    if (field !== undefined) throw invalid(`a ${operator} group has no field`);
    if (depth >= MAX_NESTING) throw invalid(`Nesting limit exceeded: at most ${MAX_NESTING} nested filters`);
    if (!Array.isArray(value) || value.length === 0) throw invalid(`${operator} needs a list of filters as its value`);
    if (value.length > MAX_GROUP) throw invalid(`Too many filters: at most ${MAX_GROUP} in an ${operator} group`);
    const filters = value.map((child) => compile(child, depth + 1));
    return operator === 'AND' ? (c) => filters.every((f) => f(c)) : (c) => filters.some((f) => f(c));
  }
  if (typeof field !== 'string') throw invalid('field must be a string');
  const spec = FIELDS[field];
  if (!spec) throw invalid(`${field} is not a searchable field`);
  if (typeof operator !== 'string') throw invalid('operator must be a string');
  if (!OPERATORS[spec.type].includes(operator)) {
    throw invalid(`The operator ${operator} is not supported for the ${field} field (${spec.type})`);
  }
  const listed = operator === 'IN' || operator === 'NIN';
  if (listed !== Array.isArray(value)) {
    throw invalid(listed ? `${operator} needs an array of values` : `${field} needs a single value with ${operator}`);
  }
  const wanted = (Array.isArray(value) ? value : [value]).map((v) => typed(field, spec.type, v));
  const test = predicate(operator, wanted);
  return (c) => {
    const read = spec.read(c);
    const values = Array.isArray(read) ? read : [read];
    // A negative operator holds when no value of a list field matches the positive one.
    if (operator === '!=' || operator === 'NIN' || operator === '!~') return values.every((v) => test(v));
    return values.some((v) => test(v));
  };
}

/** The value in the field's type: dates and integers as numbers (Intercom's own example sends a date as a string). */
function typed(field: string, type: FieldType, value: unknown): string | number | boolean | null {
  if (value === null) return null;
  if (type === 'date' || type === 'integer') {
    const n =
      typeof value === 'number' ? value : typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : NaN;
    if (!Number.isInteger(n)) throw invalid(`${field} needs ${type === 'date' ? 'a UNIX timestamp' : 'an integer'}`);
    return n;
  }
  if (type === 'boolean') {
    if (typeof value !== 'boolean') throw invalid(`${field} needs true or false`);
    return value;
  }
  if (typeof value !== 'string' && typeof value !== 'number') throw invalid(`${field} needs a string`);
  return String(value);
}

function predicate(operator: string, wanted: (string | number | boolean | null)[]): (v: Value) => boolean {
  const [one] = wanted;
  const cmp = (v: Value, f: (a: number, b: number) => boolean) =>
    typeof v === 'number' && typeof one === 'number' && f(v, one);
  const text = (v: Value) => (typeof v === 'string' ? v.toLowerCase() : null);
  const needle = typeof one === 'string' ? one.toLowerCase() : '';
  switch (operator) {
    case '=':
      return (v) => v === one;
    case '!=':
      return (v) => v !== one;
    case 'IN':
      return (v) => wanted.includes(v as never);
    case 'NIN':
      return (v) => !wanted.includes(v as never);
    // The description's table: "> Greater (or equal) than", "< Lower (or equal) than".
    case '>':
    case '>=':
      return (v) => cmp(v, (a, b) => a >= b);
    case '<':
    case '<=':
      return (v) => cmp(v, (a, b) => a <= b);
    case '~':
      return (v) => text(v)?.includes(needle) ?? false;
    case '!~':
      return (v) => !(text(v)?.includes(needle) ?? false);
    case '^':
      return (v) => text(v)?.startsWith(needle) ?? false;
    case '$':
      return (v) => text(v)?.endsWith(needle) ?? false;
    default:
      throw invalid(`unknown operator ${operator}`);
  }
}

/** The cursor names the last conversation of the page it ends, as an opaque string. */
function encodeCursor(id: string): string {
  return Buffer.from(JSON.stringify(['c', id])).toString('base64url');
}

function decodeCursor(cursor: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(parsed) && parsed[0] === 'c' && typeof parsed[1] === 'string') return parsed[1];
  } catch {
    // Falls through to the error below.
  }
  throw invalid('starting_after is not a valid cursor');
}

/** One page of the conversations the query matches, oldest first by id, in Intercom's `conversation.list` shape. */
export function searchConversations<C extends SearchableConversation>(
  conversations: Iterable<C>,
  body: unknown,
): { type: 'conversation.list'; conversations: C[]; total_count: number; pages: Record<string, unknown> } {
  const parsed = SearchBody.safeParse(body);
  if (!parsed.success) throw invalid(`per_page must be an integer from 1 to ${MAX_PER_PAGE}`);
  if (parsed.data.query === undefined || parsed.data.query === null) throw invalid('query is required');
  const filter = compile(parsed.data.query, 0);
  const perPage = parsed.data.pagination?.per_page ?? DEFAULT_PER_PAGE;
  const matched = [...conversations]
    .filter(filter)
    .sort((a, b) => Number(a.id) - Number(b.id) || a.id.localeCompare(b.id));
  const after = parsed.data.pagination?.starting_after;
  const afterId = after ? Number(decodeCursor(after)) : null;
  const start = afterId === null ? 0 : matched.findIndex((c) => Number(c.id) > afterId);
  const from = start === -1 ? matched.length : start;
  const page = matched.slice(from, from + perPage);
  const totalPages = Math.ceil(matched.length / perPage);
  const hasNext = from + perPage < matched.length;
  return {
    type: 'conversation.list',
    conversations: page,
    total_count: matched.length,
    pages: {
      type: 'pages',
      page: Math.floor(from / perPage) + 1,
      per_page: perPage,
      total_pages: totalPages,
      ...(hasNext ? { next: { per_page: perPage, starting_after: encodeCursor(page.at(-1)!.id) } } : {}),
    },
  };
}
