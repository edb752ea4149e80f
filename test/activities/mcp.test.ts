// MCP activities through the official SDK client, over Streamable HTTP and stdio, against real MCP servers.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import express from 'express';
import { MAX_TOOL_RESULT_BYTES, McpConnections, capPayload, createMcpActivities } from '../../src/activities/mcp';
import { toolPolicy } from '../../src/workflows/policies';
import { listen, type RunningServer } from '../../sandbox/http';
import { TalentMcpService } from '../../sandbox/talent-mcp/http';
import { TalentStore } from '../../sandbox/talent-mcp/server';
import { failureOf, runActivity } from '../helpers/activity';

const TALENT = {
  talent: {
    users: [
      {
        email: 'ana@example.com',
        name: 'Ana',
        applications: [],
        payments: [
          {
            id: 'pay-1',
            job_id: 'job-1',
            amount: 240,
            currency: 'USD',
            status: 'processing',
            expected_date: '2026-11-27',
          },
        ],
      },
    ],
    jobs: [{ id: 'job-1', title: 'Event Staff', location: 'Austin, TX', status: 'filled' }],
  },
  docs: [
    { title: 'Payment schedule', body: 'Payouts run every Friday.' },
    { title: 'Withdrawing an application', body: 'You can withdraw an application until you are hired.' },
  ],
};
const TOOL_NAMES = [
  'get_user_profile',
  'get_user_applications_detailed',
  'get_job_details',
  'get_user_payments',
  'search_talent_docs',
];

const run = runActivity;

/** A minimal MCP server written on the SDK's low-level Server: tools in pages of two, and JSON-RPC errors on call. */
function pagedServer(): Server {
  const server = new Server({ name: 'paged', version: '1.0.0' }, { capabilities: { tools: {} } });
  const tools = ['a', 'b', 'c', 'd', 'e'].map((n) => ({
    name: `tool_${n}`,
    description: n,
    inputSchema: { type: 'object' as const },
  }));
  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    const start = Number(request.params?.cursor ?? 0);
    return {
      tools: tools.slice(start, start + 2),
      nextCursor: start + 2 < tools.length ? String(start + 2) : undefined,
    };
  });
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    throw new McpError(ErrorCode.InvalidParams, `bad arguments for ${request.params.name}`);
  });
  return server;
}

describe('over Streamable HTTP', () => {
  let store: TalentStore;
  let talentServer: TalentMcpService;
  let pagedHttp: RunningServer;
  let mcp: McpConnections;
  let activities: ReturnType<typeof createMcpActivities>;

  beforeAll(async () => {
    store = new TalentStore(TALENT);
    talentServer = new TalentMcpService(store);
    await talentServer.start();
    const app = express();
    app.use(express.json());
    app.post('/mcp', async (req, res) => {
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      await pagedServer().connect(transport);
      await transport.handleRequest(req, res, req.body);
    });
    pagedHttp = await listen(app);
    mcp = new McpConnections([
      { name: 'talent', url: talentServer.url },
      { name: 'paged', url: `${pagedHttp.url}/mcp` },
    ]);
    activities = createMcpActivities(mcp);
  });

  afterAll(async () => {
    await mcp.close();
    await Promise.all([talentServer.stop(), pagedHttp.close()]);
  });

  test('listTools reads every page of every server and says which server offers each tool', async () => {
    const tools = await run(activities.listTools);
    expect(tools.map((t) => `${t.server}:${t.name}`)).toEqual([
      ...TOOL_NAMES.map((n) => `talent:${n}`),
      ...['a', 'b', 'c', 'd', 'e'].map((n) => `paged:tool_${n}`),
    ]);
    const payments = tools.find((t) => t.name === 'get_user_payments')!;
    expect(payments.description).toContain('payments');
    expect(payments.input_schema).toMatchObject({
      type: 'object',
      properties: { email: expect.any(Object) },
      required: ['email'],
    });
  });

  test('callTool returns the tool result as data', async () => {
    const outcome = await run(activities.callTool, {
      server: 'talent',
      name: 'get_user_payments',
      arguments: { email: 'ana@example.com' },
    });
    expect(outcome).toEqual({
      is_error: false,
      truncated: false,
      data: {
        payments: [expect.objectContaining({ id: 'pay-1', expected_date: '2026-11-27', job_title: 'Event Staff' })],
      },
    });
  });

  test('an isError result arrives as data, not as a failure', async () => {
    const unknownUser = await run(activities.callTool, {
      server: 'talent',
      name: 'get_user_payments',
      arguments: { email: 'who@example.com' },
    });
    expect(unknownUser).toEqual({
      is_error: true,
      truncated: false,
      data: 'No talent account found for who@example.com',
    });
    store.faults.set({ get_job_details: [{ error: 'tool' }] });
    const toolFault = await run(activities.callTool, {
      server: 'talent',
      name: 'get_job_details',
      arguments: { job_id: 'job-1' },
    });
    expect(toolFault.is_error).toBe(true);
  });

  test('search_talent_docs ranks the best passage first', async () => {
    const outcome = await run(activities.callTool, {
      server: 'talent',
      name: 'search_talent_docs',
      arguments: { query: 'withdraw application' },
    });
    const results = (outcome.data as { results: { title: string }[] }).results;
    expect(results[0]!.title).toBe('Withdrawing an application');
  });

  test('a JSON-RPC invalid-params error is a non-retryable McpInvalidArgumentsError', async () => {
    const err = await failureOf(run(activities.callTool, { server: 'paged', name: 'tool_a', arguments: {} }));
    expect(err.name).toBe('McpInvalidArgumentsError');
    expect(toolPolicy.retry?.nonRetryableErrorTypes).toContain('McpInvalidArgumentsError');
  });

  test('a transport failure is a retryable McpTransportError, and the next call reconnects', async () => {
    store.faults.set({ get_user_profile: [{ error: 'server' }] });
    const err = await failureOf(
      run(activities.callTool, { server: 'talent', name: 'get_user_profile', arguments: { email: 'ana@example.com' } }),
    );
    expect(err.name).toBe('McpTransportError');
    expect(toolPolicy.retry?.nonRetryableErrorTypes).not.toContain('McpTransportError');
    const retried = await run(activities.callTool, {
      server: 'talent',
      name: 'get_user_profile',
      arguments: { email: 'ana@example.com' },
    });
    expect(retried.is_error).toBe(false);
  });

  test('an unreachable server fails listTools with McpTransportError', async () => {
    const nowhere = createMcpActivities(new McpConnections([{ name: 'down', url: 'http://127.0.0.1:9/mcp' }]));
    const err = await failureOf(run(nowhere.listTools));
    expect(err.name).toBe('McpTransportError');
    expect(err.message).toContain('"down"');
  });
});

describe('over stdio', () => {
  let mcp: McpConnections;

  beforeAll(() => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'melvin-mcp-')), 'talent.json');
    writeFileSync(file, JSON.stringify(TALENT));
    const entry = path.join(__dirname, '..', '..', 'sandbox', 'talent-mcp', 'stdio.ts');
    mcp = new McpConnections([{ name: 'talent', command: process.execPath, args: ['--import', 'tsx', entry, file] }]);
  });

  afterAll(() => mcp.close());

  test('lists and calls the talent tools over a child process', async () => {
    const activities = createMcpActivities(mcp);
    const tools = await run(activities.listTools);
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    const outcome = await run(activities.callTool, {
      server: 'talent',
      name: 'get_job_details',
      arguments: { job_id: 'job-1' },
    });
    expect(outcome.data).toMatchObject({ title: 'Event Staff', location: 'Austin, TX' });
  });
});

test('results above the cap are cut and marked truncated, so no payload nears Temporal’s limit', () => {
  const big = { text: 'x'.repeat(MAX_TOOL_RESULT_BYTES * 2) };
  const capped = capPayload(big);
  expect(capped.truncated).toBe(true);
  expect(Buffer.byteLength(capped.data as string)).toBeLessThanOrEqual(MAX_TOOL_RESULT_BYTES);
  expect(capPayload({ small: true })).toEqual({ data: { small: true }, truncated: false });
});
