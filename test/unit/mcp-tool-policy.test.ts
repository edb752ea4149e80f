// The MCP tool policy: its file's validation, the identity-like rule, the listing's verdicts with each reason, and calls
// pinned to the contact at any depth, whatever case the model wrote.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadWorkerConfig, parseMcpServers } from '../../src/config/environment';
import {
  DEFAULT_MCP_TOOL_POLICY,
  McpToolPolicy,
  reviewTool,
  schemaArguments,
  pathText,
  type ListedToolFacts,
} from '../../src/guards/mcp-tool-policy';
import type { ToolDefinition } from '../../src/contract/state';
import { isIdentityLike } from '../../src/guards/tool-arguments';
import { identityArgumentNames, scopeToolCall, type Contact } from '../../src/workflows/entities/tool-calls';

const dir = mkdtempSync(path.join(tmpdir(), 'melvin-policy-'));
let files = 0;
/** A policy file with this content, as MCP_TOOL_POLICY names it. */
function policyFile(content: unknown): string {
  const file = path.join(dir, `policy-${++files}.json`);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

describe('MCP_TOOL_POLICY', () => {
  const env = {
    INTERCOM_API_KEY: 'k',
    MCP_SERVERS: 'talent=http://127.0.0.1:8765/mcp;payroll=node payroll.js',
    OPENAI_API_KEY: 'k',
    VALIDATION_ENDPOINT: 'http://127.0.0.1:8766/validate',
    VALIDATION_API_KEY: 'k',
  };
  const load = (content: unknown) => () => loadWorkerConfig({ ...env, MCP_TOOL_POLICY: policyFile(content) });

  test('the compose deployment’s example file is the built-in policy, written out', () => {
    const example = path.join(__dirname, '..', '..', 'deploy', 'melvin', 'tool-policy.example.json');
    expect(loadWorkerConfig({ ...env, MCP_TOOL_POLICY: example }).MCP_TOOL_POLICY).toEqual(DEFAULT_MCP_TOOL_POLICY);
  });

  test('unset (or empty), the built-in policy of the sandbox’s talent server applies', () => {
    expect(loadWorkerConfig(env).MCP_TOOL_POLICY).toBe(DEFAULT_MCP_TOOL_POLICY);
    expect(loadWorkerConfig({ ...env, MCP_TOOL_POLICY: '' }).MCP_TOOL_POLICY).toBe(DEFAULT_MCP_TOOL_POLICY);
    expect(Object.keys(DEFAULT_MCP_TOOL_POLICY.servers.talent!.tools)).not.toContain('update_payout_details');
  });

  test('a file is read and its omitted fields default to no identity argument and no writes', () => {
    const file = policyFile({
      servers: { payroll: { tools: { get_payslips: { identity: { 'filter.user.id': 'contact_id' } }, ping: {} } } },
    });
    expect(loadWorkerConfig({ ...env, MCP_TOOL_POLICY: file }).MCP_TOOL_POLICY).toEqual({
      servers: {
        payroll: {
          tools: {
            get_payslips: { identity: { 'filter.user.id': 'contact_id' }, write: false },
            ping: { identity: {}, write: false },
          },
        },
      },
    });
  });

  test('what is wrong is named with the variable, the file and where in the file', () => {
    const missing = path.join(dir, 'missing.json');
    expect(() => loadWorkerConfig({ ...env, MCP_TOOL_POLICY: missing })).toThrow(
      `MCP_TOOL_POLICY: cannot read ${missing}: ENOENT`,
    );
    expect(load('{"servers": ')).toThrow(/MCP_TOOL_POLICY: .*policy-\d+\.json: must be a JSON object of .*\(.*JSON/);
    expect(load({ servers: { talent: { tools: { x: { identity: { email: 'the_model' } } } } } })).toThrow(
      /policy-\d+\.json: servers\.talent\.tools\.x\.identity\.email: must be one of contact_email, contact_id/,
    );
    expect(load({ servers: { talent: { tools: { x: { write: 'yes' } } } } })).toThrow(
      /servers\.talent\.tools\.x\.write: Invalid input: expected boolean/,
    );
    expect(load({ servers: { talent: { tools: { x: { identiy: {} } } } } })).toThrow(
      /servers\.talent\.tools\.x: Unrecognized key: "identiy"/,
    );
    expect(load({ servers: { talent: { tools: { x: { identity: { 'user[0].email': 'contact_email' } } } } } })).toThrow(
      /identity\.user\[0\]\.email: must be argument names joined by dots/,
    );
    expect(load({ servers: { talent: { tools: { x: { identity: { '__proto__.a': 'contact_email' } } } } } })).toThrow(
      /must be argument names joined by dots/,
    );
    expect(
      load({
        servers: { talent: { tools: { x: { identity: { user: 'contact_id', 'user.email': 'contact_email' } } } } },
      }),
    ).toThrow(/identity\.user\.email: lies inside identity argument "user"/);
    expect(load({ servers: { talnet: { tools: {} } } })).toThrow(
      /MCP_TOOL_POLICY: servers\.talnet: no server of that name in MCP_SERVERS \(talent, payroll\)/,
    );
  });
});

test('identity-like names: any case, any separator, email anywhere in the name, a subject’s id; not a record’s id', () => {
  const identity = ['email', 'Email', 'EMAIL', 'user_email', 'talentEmail', 'contact-email-address', 'e_mail'];
  const ids = ['user_id', 'userId', 'USER_ID', 'contact_id', 'talent_id', 'account_id', 'customerIds', 'uid'];
  for (const name of [...identity, ...ids, 'username', 'member_uuid'])
    expect([name, isIdentityLike(name)]).toEqual([name, true]);
  for (const name of ['job_id', 'payment_id', 'id', 'query', 'limit', 'user', 'talent', 'mailbox', 'method'])
    expect([name, isIdentityLike(name)]).toEqual([name, false]);
});

test('a schema’s arguments at any depth: nested objects, array items, combinators, any-key maps, definitions', () => {
  const paths = schemaArguments({
    type: 'object',
    properties: {
      filter: { type: 'object', properties: { user: { properties: { email: { type: 'string' } } } } },
      recipients: { type: 'array', items: { properties: { email: {} } } },
      contact: { anyOf: [{ type: 'null' }, { properties: { userId: {} } }] },
      labels: { additionalProperties: { properties: { owner_id: {} } } },
    },
    $defs: { who: { properties: { talent_id: {} } } },
  }).map(pathText);
  expect(paths).toEqual([
    'filter',
    'filter.user',
    'filter.user.email',
    'recipients',
    'recipients[].email',
    'contact',
    'contact.userId',
    'labels',
    'labels.*.owner_id',
    '$defs.who.talent_id',
  ]);
});

describe('reviewTool: what the listing offers, and why it withholds the rest', () => {
  const policy = McpToolPolicy.parse({
    servers: {
      hr: {
        tools: {
          get_profile: { identity: { 'talent.contactEmail': 'contact_email' } },
          get_payslips: { identity: { user_id: 'contact_id', email: 'contact_email' } },
          get_stale: { identity: { email: 'contact_email' } },
          set_bank: { identity: { email: 'contact_email' }, write: true },
          set_phone: { identity: { email: 'contact_email' } },
          lookup: {},
        },
      },
    },
  });
  const schema = (properties: Record<string, unknown>) => ({ type: 'object', properties });
  const listed = (name: string, properties: Record<string, unknown>, readOnly = true): ListedToolFacts => ({
    server: 'hr',
    name,
    input_schema: schema(properties),
    read_only: readOnly,
  });

  test('a read-only tool whose every identity argument the policy names is offered with its grant', () => {
    expect(reviewTool(policy, listed('get_profile', { talent: schema({ contactEmail: {} }) }))).toEqual({
      offered: true,
      grant: { identity: [{ path: ['talent', 'contactEmail'], from: 'contact_email' }], writes: false },
    });
    expect(reviewTool(policy, listed('set_bank', { email: {}, iban: {} }, false))).toEqual({
      offered: true,
      grant: { identity: [{ path: ['email'], from: 'contact_email' }], writes: true },
    });
  });

  test.each([
    ['not in the policy', 'hr', 'delete_user', {}, true, 'not in the tool policy'],
    ['on a server the policy does not name', 'crm', 'lookup', {}, true, 'not in the tool policy'],
    [
      'an identity-like argument the policy does not name',
      'hr',
      'lookup',
      { query: {}, filter: schema({ Customer_ID: {} }) },
      true,
      'identity-like argument "filter.Customer_ID" is not named as an identity argument by the policy',
    ],
    [
      'a second identity argument under another name',
      'hr',
      'get_profile',
      { talent: schema({ contactEmail: {} }), userEmail: {} },
      true,
      'identity-like argument "userEmail" is not named as an identity argument by the policy',
    ],
    [
      'an identity in array items, which a policy path cannot name',
      'hr',
      'lookup',
      { people: { type: 'array', items: schema({ email: {} }) } },
      true,
      'identity-like argument "people[].email" is not named as an identity argument by the policy',
    ],
    [
      'an identity argument the policy names that the schema lacks',
      'hr',
      'get_stale',
      { user_email: {} },
      true,
      'the policy names identity argument "email", which the tool\'s input schema lacks',
    ],
    [
      'not marked read-only, and the policy does not allow writes',
      'hr',
      'set_phone',
      { email: {}, phone: {} },
      false,
      'its server does not mark it read-only (readOnlyHint) and the policy does not allow it to write',
    ],
  ])('withheld: %s', (_what, server, name, properties, readOnly, reason) => {
    expect(
      reviewTool(policy, {
        server,
        name,
        input_schema: schema(properties as Record<string, unknown>),
        read_only: readOnly,
      }),
    ).toEqual({ offered: false, reason });
  });

  test('a name the policy holds only on Object’s prototype is not in the policy', () => {
    expect(reviewTool(policy, { ...listed('toString', {}), server: 'constructor' })).toMatchObject({ offered: false });
    expect(reviewTool(policy, listed('hasOwnProperty', {}))).toMatchObject({ offered: false });
  });

  test('a tool whose own name holds "__" is withheld, and no server name may hold it: no name stands for another', () => {
    // Server `evil` listing `hr__lookup` beside two servers' `lookup` would otherwise be offered under the very name
    // Melvin gives hr's `lookup`, and a call meant for hr would go to whichever server came first.
    const joined = McpToolPolicy.parse({ servers: { evil: { tools: { hr__lookup: {} } } } });
    expect(reviewTool(joined, { ...listed('hr__lookup', {}), server: 'evil' })).toEqual({
      offered: false,
      reason: 'its name holds "__", which Melvin joins server and tool names with',
    });
    expect(McpToolPolicy.safeParse({ servers: { hr__x: { tools: {} } } }).success).toBe(false);
    expect(() => parseMcpServers('hr__x=http://127.0.0.1:1/mcp')).toThrow('a name cannot hold "__"');
  });
});

describe('scopeToolCall under the tool policy', () => {
  const contact: Contact = { email: 'ana@example.com', id: 'c-ana' };
  const tool = (
    name: string,
    identity: { path: string[]; from: 'contact_email' | 'contact_id' }[],
  ): ToolDefinition => ({
    name,
    server_tool_name: name,
    server: 'hr',
    description: '',
    input_schema: { type: 'object' },
    grant: { identity, writes: false },
  });
  const tools = [
    tool('get_profile', [{ path: ['talent', 'contactEmail'], from: 'contact_email' }]),
    tool('get_payslips', [
      { path: ['filter', 'user', 'id'], from: 'contact_id' },
      { path: ['email'], from: 'contact_email' },
    ]),
    tool('search', []),
  ];
  const scope = (tool_name: string, parameters: Record<string, unknown>, who = contact) =>
    scopeToolCall({ tool_name, parameters, reasoning: '' }, tools, who, [
      { server: 'hr', name: 'set_bank', reason: 'not in the tool policy' },
    ]);

  test('an identity at a nested path is set from the contact, whatever the model wrote there', () => {
    expect(scope('get_profile', { talent: { contactEmail: 'bob@example.com', nickname: 'B' } })).toMatchObject({
      ok: true,
      arguments: { talent: { contactEmail: 'ana@example.com', nickname: 'B' } },
    });
    expect(scope('get_payslips', { filter: { user: { id: 'c-bob' }, year: 2026 } })).toMatchObject({
      ok: true,
      arguments: { filter: { user: { id: 'c-ana' }, year: 2026 }, email: 'ana@example.com' },
    });
  });

  test('identity-like names the tool does not declare are dropped at any depth and in any case', () => {
    const scoped = scope('search', {
      query: 'payments',
      Email: 'bob@example.com',
      USER_ID: 'c-bob',
      filter: { user: { email: 'bob@example.com', name: 'Bob' }, rows: [{ talentEmail: 'bob@example.com', n: 1 }] },
    });
    expect(scoped).toEqual({
      ok: true,
      tool: tools[2],
      arguments: { query: 'payments', filter: { user: { name: 'Bob' }, rows: [{ n: 1 }] } },
    });
  });

  test('a value the model put where the grant expects an object is replaced by the contact’s', () => {
    expect(scope('get_profile', { talent: 'bob@example.com' })).toMatchObject({
      arguments: { talent: { contactEmail: 'ana@example.com' } },
    });
  });

  test('a withheld tool is refused with the policy’s reason, under its own or a qualified name; no call is made', () => {
    expect(scope('set_bank', { email: 'bob@example.com', iban: 'X' })).toEqual({
      ok: false,
      error: 'tool "set_bank" is withheld by the tool policy: not in the tool policy',
      arguments: { iban: 'X' },
    });
    expect(scope('hr__set_bank', {})).toMatchObject({ ok: false, error: expect.stringContaining('withheld by') });
    expect(scope('drop_tables', {})).toMatchObject({ ok: false, error: 'unknown tool "drop_tables"' });
  });

  test('a contact without the id or email an identity argument needs is a refused call', () => {
    expect(scope('get_payslips', {}, { email: 'ana@example.com', id: null })).toMatchObject({
      ok: false,
      error: "get_payslips needs the contact's id and the conversation's contact has none",
    });
  });

  test('Plan is told the old identity names and every path the offered tools’ grants name', () => {
    expect(identityArgumentNames(tools)).toEqual([
      'email',
      'user_email',
      'userEmail',
      'contact_email',
      'talent.contactEmail',
      'filter.user.id',
    ]);
  });
});
