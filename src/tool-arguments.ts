// Tool names and arguments as the workflow scopes a planned call: the separator of a server-qualified name, which
// argument names say whose data a call is about, and writing an argument. Apart from the policy (../mcp-tool-policy), so
// the workflow bundle, which evaluates its modules once per run, does not build and parse the policy's schema each run.

/**
 * Joins a server's name to a tool name offered by several servers. Server names are `[A-Za-z0-9_-]+`, so a qualified
 * name stays a valid OpenAI function name, should Melvin use native tool calling.
 */
export const SERVER_SEPARATOR = '__';

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
