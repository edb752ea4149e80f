// The pure tool helpers: names kept distinct across MCP servers, identity scoping of tool arguments, result keys that
// never overwrite, and the gather summary.
import type { ToolDefinition, ToolResult } from '../../src/contract/state';
import { distinctToolNames, type ListedTool } from '../../src/guards/tool-arguments';
import {
  docsDataKey,
  isDocsTool,
  scopeToolCall,
  serverToolName,
  summarizeGather,
  toolDataKey,
  toolListing,
} from '../../src/workflows/entities/tool-calls';

const ana = { email: 'ana@example.com', id: 'c-ana' };

/** Definitions as listings recorded before the MCP tool policy hold them: no grant, the old identity rule. */
const tools: ToolDefinition[] = [
  {
    name: 'get_user_payments',
    description: '',
    server: 'talent',
    input_schema: { type: 'object', properties: { email: {} } },
  },
  {
    name: 'get_job_details',
    description: '',
    server: 'talent',
    input_schema: { type: 'object', properties: { job_id: {} } },
  },
];

describe('scopeToolCall on tools listed before the tool policy', () => {
  test('identity arguments come from the contact, whatever the model wrote', () => {
    const scoped = scopeToolCall(
      {
        tool_name: 'get_user_payments',
        parameters: { email: 'other@example.com', user_email: 'x@y.z', limit: 5 },
        reasoning: '',
      },
      tools,
      ana,
    );
    expect(scoped).toMatchObject({ ok: true, arguments: { email: 'ana@example.com', limit: 5 } });
  });

  test('a tool without identity arguments gets none added, and model-written ones are dropped', () => {
    const scoped = scopeToolCall(
      { tool_name: 'get_job_details', parameters: { job_id: 'j', email: 'o@x.y' }, reasoning: '' },
      tools,
      { email: 'a@b.c', id: null },
    );
    expect(scoped.arguments).toEqual({ job_id: 'j' });
  });

  test('an unknown tool, or a user tool without a contact email, is a failed result without a call', () => {
    expect(
      scopeToolCall({ tool_name: 'drop_tables', parameters: {}, reasoning: '' }, tools, { email: 'a@b.c', id: null }),
    ).toMatchObject({
      ok: false,
      error: 'unknown tool "drop_tables"',
    });
    expect(
      scopeToolCall({ tool_name: 'get_user_payments', parameters: {}, reasoning: '' }, tools, {
        email: null,
        id: null,
      }),
    ).toMatchObject({ ok: false });
  });
});

describe('tools of several MCP servers', () => {
  const listed = (server: string, ...names: string[]): ListedTool[] =>
    names.map((name) => ({
      name,
      server,
      description: `${name} on ${server}`,
      input_schema: { type: 'object', properties: { email: {} } },
    }));
  const { tools: named, duplicated } = distinctToolNames([
    ...listed('talent', 'get_user_payments', 'search_talent_docs', 'get_job_details'),
    ...listed('payroll', 'get_user_payments', 'search_talent_docs', 'get_user_payments'),
    ...listed('everything', 'echo'),
  ]);

  test('a name two servers offer is qualified on both, a unique name stays, a name listed twice by one server once', () => {
    expect(named.map((t) => [t.name, t.server, t.server_tool_name])).toEqual([
      ['talent__get_user_payments', 'talent', 'get_user_payments'],
      ['talent__search_talent_docs', 'talent', 'search_talent_docs'],
      ['get_job_details', 'talent', 'get_job_details'],
      ['payroll__get_user_payments', 'payroll', 'get_user_payments'],
      ['payroll__search_talent_docs', 'payroll', 'search_talent_docs'],
      ['echo', 'everything', 'echo'],
    ]);
    expect(named.every((t) => /^[A-Za-z0-9_-]{1,64}$/.test(t.name))).toBe(true);
    expect(duplicated).toEqual([
      { name: 'get_user_payments', servers: ['talent', 'payroll'] },
      { name: 'search_talent_docs', servers: ['talent', 'payroll'] },
    ]);
  });

  test('a qualified call is scoped to the contact and keeps the server and the server’s own tool name', () => {
    const scoped = scopeToolCall(
      { tool_name: 'payroll__get_user_payments', parameters: { email: 'bob@example.com' }, reasoning: '' },
      named,
      ana,
    );
    expect(scoped).toMatchObject({ ok: true, arguments: { email: 'ana@example.com' } });
    expect(scoped.ok && [scoped.tool.server, serverToolName(scoped.tool)]).toEqual(['payroll', 'get_user_payments']);
  });

  test('the bare name of a tool several servers offer is unknown, and the error names the qualified ones', () => {
    expect(
      scopeToolCall({ tool_name: 'get_user_payments', parameters: {}, reasoning: '' }, named, {
        email: 'a@b.c',
        id: null,
      }),
    ).toEqual({
      ok: false,
      error: 'unknown tool "get_user_payments" (offered as talent__get_user_payments, payroll__get_user_payments)',
      arguments: {},
    });
  });

  test('the docs tool is known by the server’s own name, qualified or not, and in listings without it', () => {
    expect(isDocsTool('talent__search_talent_docs', named)).toBe(true);
    expect(isDocsTool('talent__get_user_payments', named)).toBe(false);
    expect(
      isDocsTool('search_talent_docs', [{ ...named[1]!, name: 'search_talent_docs', server_tool_name: undefined }]),
    ).toBe(true);
    expect(serverToolName({ ...named[0]!, server_tool_name: undefined })).toBe('talent__get_user_payments');
  });

  test('a listing recorded as a bare array (before server outcomes) reads as every listed server answering', () => {
    const old = tools.map(({ name, description, server, input_schema }) => ({
      name,
      description,
      server,
      input_schema,
    }));
    expect(toolListing(old)).toEqual({
      tools: old,
      servers: [{ name: 'talent', ok: true, tool_count: 2, error: null }],
    });
    const current = { tools: named, servers: [{ name: 'down', ok: false, tool_count: 0, error: 'refused' }] };
    expect(toolListing(current)).toBe(current);
  });
});

test('a tool called again keeps both results: by name, then "(hop N)", then numbered', () => {
  const data: Record<string, unknown> = {};
  const keys = [1, 2, 2, 2].map((hop) => {
    const key = toolDataKey(data, 'get_job_details', hop);
    data[key] = hop;
    return key;
  });
  expect(keys).toEqual([
    'get_job_details',
    'get_job_details (hop 2)',
    'get_job_details (hop 2) #2',
    'get_job_details (hop 2) #3',
  ]);
});

test('docs are keyed "<query> (hop N)", a repeated query numbered', () => {
  const data: Record<string, unknown> = {};
  data[docsDataKey(data, 'payout', 1)] = 1;
  expect(docsDataKey(data, 'payout', 1)).toBe('payout (hop 1) #2');
  expect(docsDataKey(data, 'payout', 2)).toBe('payout (hop 2)');
});

test('gather summary: skipped, completed, partial, failed', () => {
  const result = (success: boolean) => ({ success }) as ToolResult;
  expect(summarizeGather([], 0)).toMatchObject({ execution_status: 'skipped', success_rate: 1 });
  expect(summarizeGather([result(true)], 5)).toMatchObject({
    execution_status: 'completed',
    total_execution_time_ms: 5,
  });
  expect(summarizeGather([result(true), result(false)], 5)).toMatchObject({
    execution_status: 'partial',
    success_rate: 0.5,
  });
  expect(summarizeGather([result(false)], 5)).toMatchObject({ execution_status: 'failed', success_rate: 0 });
});
