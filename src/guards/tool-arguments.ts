// Tool names and arguments: names kept distinct across MCP servers (the listing's), and, as the workflow scopes a
// planned call, which argument names say whose data a call is about, and writing an argument. Apart from the policy
// (../mcp-tool-policy), so the workflow bundle, which evaluates its modules once per run, does not build and parse the
// policy's schema each run.
import type { ToolDefinition } from '../contract/state';

/**
 * Joins a server's name to a tool name offered by several servers. Server names are `[A-Za-z0-9_-]+`, so a qualified
 * name stays a valid OpenAI function name, should Melvin use native tool calling.
 */
export const SERVER_SEPARATOR = '__';

/** One listed tool as its server names it, before names are made distinct. */
export type ListedTool = Omit<ToolDefinition, 'server_tool_name'>;

/**
 * A name offered by two or more servers is offered as `<server>__<tool>` on every server that offers it, so no server's
 * tool hides another's; a name only one server offers stays as it is, so prompts that name tools keep working. A server
 * that lists one name twice keeps its first.
 */
export function distinctToolNames(listed: ListedTool[]): {
  tools: ToolDefinition[];
  duplicated: { name: string; servers: string[] }[];
} {
  const unique = listed.filter(
    (tool, index) => listed.findIndex((t) => t.server === tool.server && t.name === tool.name) === index,
  );
  const serversOf = new Map<string, string[]>();
  for (const tool of unique) serversOf.set(tool.name, [...(serversOf.get(tool.name) ?? []), tool.server]);
  const tools = unique.map((tool) => ({
    ...tool,
    name: serversOf.get(tool.name)!.length > 1 ? `${tool.server}${SERVER_SEPARATOR}${tool.name}` : tool.name,
    server_tool_name: tool.name,
  }));
  const duplicated = [...serversOf].flatMap(([name, servers]) => (servers.length > 1 ? [{ name, servers }] : []));
  return { tools, duplicated };
}

/** Words for whose data a record is: an argument named one of these followed by `id`, `ids` or `uuid` is an identity. */
const SUBJECTS = [
  'user',
  'contact',
  'talent',
  'account',
  'customer',
  'member',
  'person',
  'profile',
  'owner',
  'client',
  'worker',
  'employee',
  'candidate',
  'applicant',
];
const SUBJECT_ID = new RegExp(`^(${SUBJECTS.join('|')})(id|ids|uuid)$`);

/**
 * Whether an argument's name says whose data a call is about. Names are compared in lower case without `_`, `-` or
 * other punctuation: any name containing "email" (email, Email, talentEmail, contact_email_address), `uid`,
 * `username`, and a subject word followed by id, ids or uuid (user_id, userId, contact_id, talent_id, account_id,
 * customerIds…). A job's or a payment's id is not an identity: it names a record, which the server checks belongs to
 * the user the identity arguments name.
 */
export function isIdentityLike(name: string): boolean {
  const plain = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  return plain.includes('email') || plain === 'uid' || plain === 'username' || SUBJECT_ID.test(plain);
}

/**
 * The model's arguments with every identity-like name dropped, at any depth and in any case: whatever a prompt talked
 * the model into writing there never reaches a server. Built with `Object.fromEntries`, so a `__proto__` key the model
 * wrote stays a plain key.
 */
export function withoutIdentityArguments(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutIdentityArguments);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([name]) => !isIdentityLike(name))
      .map(([name, v]) => [name, withoutIdentityArguments(v)]),
  );
}

/** Sets `path` in `args` to `value`, replacing whatever is on the way that is not an object. */
export function setArgument(args: Record<string, unknown>, path: string[], value: unknown): void {
  let target = args;
  for (const segment of path.slice(0, -1)) {
    const next = target[segment];
    if (!next || typeof next !== 'object' || Array.isArray(next)) target[segment] = {};
    target = target[segment] as Record<string, unknown>;
  }
  target[path.at(-1)!] = value;
}
