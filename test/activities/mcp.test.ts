// MCP activities through the official SDK client, over Streamable HTTP and stdio, against real MCP servers.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import express from 'express';
import { MAX_TOOL_RESULT_BYTES, McpConnections, capPayload, createMcpActivities } from '../../src/activities/mcp';
import { DEFAULT_MCP_TOOL_POLICY, McpToolPolicy } from '../../src/guards/mcp-tool-policy';
import { mcpListPolicy, toolPolicy } from '../../src/workflows/activity-options/retry-policies';
import { listen, type RunningServer } from '../../sandbox/http';
import { freePorts } from '../../harness/stack';
import { Gates } from '../../sandbox/gates';
import { TalentMcpService } from '../../sandbox/talent-mcp/http';
import { TalentStore } from '../../sandbox/talent-mcp/server';
import { failureOf, runActivity } from '../helpers/activity';
import { waitFor } from '../helpers/runtime';
import { pause } from '../../sandbox/wait';
import { waitServer } from '../helpers/wait-mcp';
import { OFFERED_TALENT_TOOLS } from '../helpers/sandbox';

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
const PAYOUT_WITHHELD = { name: 'update_payout_details', reason: 'not in the tool policy' };

const talentTools = DEFAULT_MCP_TOOL_POLICY.servers.talent!;
/** Every test server's tools: the test servers here mark none read-only, so the policy lets them write. */
const POLICY = McpToolPolicy.parse({
  servers: {
    talent: talentTools,
    payroll: talentTools,
    paged: { tools: Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((n) => [`tool_${n}`, { write: true }])) },
    shapes: { tools: { plan_shifts: { write: true } } },
    wait: { tools: { wait: {}, freeze: {} } },
  },
});

const run = runActivity;

/** A tool schema of every shape JSON Schema allows: `$defs` and `$ref`, nested objects, arrays, enums, anyOf. */
const RICH_SCHEMA = {
  type: 'object',
  $defs: {
    slot: {
      type: 'object',
      properties: { start: { type: 'string', format: 'date-time' }, hours: { type: 'number', minimum: 1 } },
      required: ['start'],
    },
  },
  properties: {
    shifts: { type: 'array', items: { $ref: '#/$defs/slot' }, minItems: 1 },
    role: { enum: ['cook', 'server', 'host'], description: 'The role <to> staff' },
    contact: { anyOf: [{ type: 'string', format: 'email' }, { type: 'null' }] },
    options: {
      type: 'object',
      properties: { remote: { type: 'boolean', default: false }, tags: { type: 'array', items: { type: 'string' } } },
      additionalProperties: false,
    },
  },
  required: ['shifts', 'role'],
  additionalProperties: false,
};

/** A third-party-like MCP server on the SDK's low-level Server, offering one tool with a rich input schema. */
function shapesServer(): Server {
  const server = new Server({ name: 'shapes', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [{ name: 'plan_shifts', description: 'Plans shifts', inputSchema: RICH_SCHEMA }],
  }));
  return server;
}

/** Serves a low-level MCP server over stateless Streamable HTTP at /mcp, a fresh server per request. */
async function serveOverHttp(build: () => Server): Promise<RunningServer> {
  const app = express();
  app.use(express.json());
  app.post('/mcp', async (req, res) => {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await build().connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  return listen(app);
}

/**
 * Serves a low-level MCP server over Streamable HTTP with sessions, as a long-running server keeps them; on `port`, so a
 * restarted server is found where the old one was. `forget` drops every session, as a restart behind a proxy would.
 */
async function serveWithSessions(build: () => Server, port = 0): Promise<RunningServer & { forget: () => void }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const app = express();
  app.use(express.json());
  app.post('/mcp', async (req, res) => {
    const id = req.header('mcp-session-id');
    const known = id ? sessions.get(id) : undefined;
    if (id && !known) {
      res.status(404).json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
      return;
    }
    let transport = known;
    if (!transport) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sessionId) => void sessions.set(sessionId, created),
      });
      await build().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, req.body);
  });
  app.get('/mcp', (_req, res) => void res.status(405).end());
  return { ...(await listen(app, port)), forget: () => sessions.clear() };
}

/** A loopback URL nothing listens on: connections are refused at once. */
async function refusedUrl(): Promise<string> {
  const [port] = await freePorts(1);
  return `http://127.0.0.1:${port}/mcp`;
}

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
  const gates = new Gates();
  let talentServer: TalentMcpService;
  let pagedHttp: RunningServer;
  let mcp: McpConnections;
  let activities: ReturnType<typeof createMcpActivities>;

  beforeAll(async () => {
    store = new TalentStore(TALENT);
    talentServer = new TalentMcpService(store, gates);
    await talentServer.start();
    pagedHttp = await serveOverHttp(pagedServer);
    mcp = new McpConnections([
      { name: 'talent', url: talentServer.url },
      { name: 'paged', url: `${pagedHttp.url}/mcp` },
    ]);
    activities = createMcpActivities(mcp, POLICY);
  });

  afterAll(async () => {
    await mcp.close();
    await Promise.all([talentServer.stop(), pagedHttp.close()]);
  });

  test('listTools reads every page of every server and says which server offers each tool', async () => {
    const { tools, servers, withheld } = await run(activities.listTools);
    expect(tools.map((t) => `${t.server}:${t.name}`)).toEqual([
      ...OFFERED_TALENT_TOOLS.map((n) => `talent:${n}`),
      ...['a', 'b', 'c', 'd', 'e'].map((n) => `paged:tool_${n}`),
    ]);
    expect(tools.every((t) => t.server_tool_name === t.name)).toBe(true);
    expect(servers).toEqual([
      { name: 'talent', ok: true, tool_count: OFFERED_TALENT_TOOLS.length, error: null },
      { name: 'paged', ok: true, tool_count: 5, error: null },
    ]);
    expect(withheld).toEqual([{ server: 'talent', ...PAYOUT_WITHHELD }]);
    expect(tools.find((t) => t.name === 'get_talent_profile')!.grant).toEqual({
      identity: [{ path: ['talent', 'contactEmail'], from: 'contact_email' }],
      writes: false,
    });
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

  test('callTool refuses a tool outside the policy, and one that writes, before it reaches the server', async () => {
    const received = () => store.received.map((r) => r.tool);
    const before = received().length;
    // A worker that has not listed the tools yet: the policy alone refuses a tool it does not name.
    const fresh = createMcpActivities(mcp, POLICY);
    const outside = await failureOf(
      run(fresh.callTool, {
        server: 'talent',
        name: 'update_payout_details',
        arguments: { email: 'ana@example.com', method: 'paypal', account: 'mia@evil.example' },
      }),
    );
    expect(outside.name).toBe('McpToolRefusedError');
    expect(outside.message).toBe(
      'call update_payout_details on MCP server "talent": withheld by the tool policy: not in the tool policy',
    );
    expect(toolPolicy.retry?.nonRetryableErrorTypes).toContain('McpToolRefusedError');
    // Named by a policy that does not let it write: the server's own annotations say it writes, so it is refused too.
    const named = McpToolPolicy.parse({
      servers: { talent: { tools: { update_payout_details: { identity: { email: 'contact_email' } } } } },
    });
    const writes = await failureOf(
      run(createMcpActivities(mcp, named).callTool, {
        server: 'talent',
        name: 'update_payout_details',
        arguments: { email: 'ana@example.com', method: 'paypal', account: 'mia@evil.example' },
      }),
    );
    expect(writes.name).toBe('McpToolRefusedError');
    expect(writes.message).toContain('withheld by the tool policy: its server does not mark it read-only');
    expect(received().slice(before)).toEqual([]);
    expect(store.payoutDetails.size).toBe(0);
    // The same call once the policy allows it to write reaches the server: the policy is what decided.
    const allowed = McpToolPolicy.parse({
      servers: { talent: { tools: { update_payout_details: { identity: { email: 'contact_email' }, write: true } } } },
    });
    const outcome = await run(createMcpActivities(mcp, allowed).callTool, {
      server: 'talent',
      name: 'update_payout_details',
      arguments: { email: 'ana@example.com', method: 'paypal', account: 'ana@paypal.example' },
    });
    expect(outcome.is_error).toBe(false);
    expect(received().slice(before)).toEqual(['update_payout_details']);
    store.payoutDetails.clear();
  });

  test('a JSON-RPC invalid-params error is a non-retryable McpInvalidArgumentsError', async () => {
    const err = await failureOf(run(activities.callTool, { server: 'paged', name: 'tool_a', arguments: {} }));
    expect(err.name).toBe('McpInvalidArgumentsError');
    expect(toolPolicy.retry?.nonRetryableErrorTypes).toContain('McpInvalidArgumentsError');
  });

  test('a server error is a retryable McpTransportError, and the next call goes through', async () => {
    store.faults.set({ get_user_profile: [{ error: 'server' }] });
    const err = await failureOf(
      run(activities.callTool, { server: 'talent', name: 'get_user_profile', arguments: { email: 'ana@example.com' } }),
    );
    expect(err.name).toBe('McpTransportError');
    expect(err.message).toContain('HTTP 503');
    expect(toolPolicy.retry?.nonRetryableErrorTypes).not.toContain('McpTransportError');
    const retried = await run(activities.callTool, {
      server: 'talent',
      name: 'get_user_profile',
      arguments: { email: 'ana@example.com' },
    });
    expect(retried.is_error).toBe(false);
  });

  test('one call’s server error does not abort another call in flight on the same session', async () => {
    gates.arm({ at: 'mcp:get_user_payments' });
    const payments = run(activities.callTool, {
      server: 'talent',
      name: 'get_user_payments',
      arguments: { email: 'ana@example.com' },
    });
    await waitFor('the payments call to be held', () => gates.status().held === 'mcp:get_user_payments');
    store.faults.set({ get_job_details: [{ error: 'server' }] });
    const err = await failureOf(
      run(activities.callTool, { server: 'talent', name: 'get_job_details', arguments: { job_id: 'job-1' } }),
    );
    expect(err.name).toBe('McpTransportError');
    gates.release();
    expect(await payments).toMatchObject({
      is_error: false,
      data: { payments: [expect.objectContaining({ id: 'pay-1' })] },
    });
  });
});

describe('several servers, two offering the same tool names and two down', () => {
  let ana: TalentStore;
  let payroll: TalentStore;
  let services: TalentMcpService[];
  let shapes: RunningServer;
  let mcp: McpConnections;

  beforeAll(async () => {
    ana = new TalentStore(TALENT);
    payroll = new TalentStore({
      talent: {
        users: [{ ...TALENT.talent.users[0]!, payments: [{ ...TALENT.talent.users[0]!.payments[0]!, id: 'pay-77' }] }],
        jobs: TALENT.talent.jobs,
      },
    });
    services = [new TalentMcpService(ana), new TalentMcpService(payroll)];
    await Promise.all(services.map((s) => s.start()));
    shapes = await serveOverHttp(shapesServer);
    mcp = new McpConnections([
      { name: 'talent', url: services[0]!.url },
      { name: 'refused', url: await refusedUrl() },
      { name: 'payroll', url: services[1]!.url },
      { name: 'shapes', url: `${shapes.url}/mcp` },
      { name: 'exits', command: process.execPath, args: ['-e', 'process.exit(3)'] },
    ]);
  });

  afterAll(async () => {
    await mcp.close();
    await Promise.all([...services.map((s) => s.stop()), shapes.close()]);
  });

  test('the live servers’ tools are listed, shared names qualified on every server, the failed servers recorded', async () => {
    const started = Date.now();
    const { tools, servers } = await run(createMcpActivities(mcp, POLICY).listTools);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(tools.map((t) => [t.name, t.server, t.server_tool_name])).toEqual([
      ...OFFERED_TALENT_TOOLS.map((n) => [`talent__${n}`, 'talent', n]),
      ...OFFERED_TALENT_TOOLS.map((n) => [`payroll__${n}`, 'payroll', n]),
      ['plan_shifts', 'shapes', 'plan_shifts'],
    ]);
    expect(servers).toEqual([
      { name: 'talent', ok: true, tool_count: OFFERED_TALENT_TOOLS.length, error: null },
      { name: 'refused', ok: false, tool_count: 0, error: expect.stringMatching(/"refused".*ECONNREFUSED/) },
      { name: 'payroll', ok: true, tool_count: OFFERED_TALENT_TOOLS.length, error: null },
      { name: 'shapes', ok: true, tool_count: 1, error: null },
      { name: 'exits', ok: false, tool_count: 0, error: expect.stringMatching(/"exits".*Connection closed/) },
    ]);
  });

  test('an input schema of any shape arrives exactly as the server lists it', async () => {
    const { tools } = await run(createMcpActivities(mcp, POLICY).listTools);
    expect(tools.find((t) => t.name === 'plan_shifts')!.input_schema).toEqual(RICH_SCHEMA);
  });

  test('a call to a qualified tool reaches its own server under the server’s own name', async () => {
    const activities = createMcpActivities(mcp, POLICY);
    const { tools } = await run(activities.listTools);
    ana.calls.length = 0;
    payroll.calls.length = 0;
    const paymentIds: string[][] = [];
    for (const name of ['talent__get_user_payments', 'payroll__get_user_payments']) {
      const tool = tools.find((t) => t.name === name)!;
      const outcome = await run(activities.callTool, {
        server: tool.server,
        name: tool.server_tool_name!,
        arguments: { email: 'ana@example.com' },
      });
      paymentIds.push((outcome.data as { payments: { id: string }[] }).payments.map((p) => p.id));
    }
    expect(paymentIds).toEqual([['pay-1'], ['pay-77']]);
    expect(ana.calls.map((c) => c.tool)).toEqual(['get_user_payments']);
    expect(payroll.calls.map((c) => c.tool)).toEqual(['get_user_payments']);
  });

  test('when every server fails, the listing fails with each server’s error, and is retried', async () => {
    const none = new McpConnections([
      { name: 'down', url: await refusedUrl() },
      { name: 'exits', command: process.execPath, args: ['-e', 'process.exit(3)'] },
    ]);
    try {
      const err = await failureOf(run(createMcpActivities(none, POLICY).listTools));
      expect(err.name).toBe('McpTransportError');
      expect(err.message).toMatch(/"down".*ECONNREFUSED.*; .*"exits".*Connection closed/);
      expect(mcpListPolicy.retry?.nonRetryableErrorTypes ?? []).not.toContain('McpTransportError');
    } finally {
      await none.close();
    }
  });

  test('a server that accepts the connection but never answers is given up within the activity’s timeout', async () => {
    const silent = http.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const withSilent = new McpConnections([
      { name: 'silent', url: `http://127.0.0.1:${port}/mcp` },
      { name: 'talent', url: services[0]!.url },
    ]);
    try {
      const started = Date.now();
      const { servers } = await run(createMcpActivities(withSilent, POLICY).listTools);
      expect(Date.now() - started).toBeLessThan(15_000 - 2_000);
      expect(servers.map((s) => [s.name, s.ok])).toEqual([
        ['silent', false],
        ['talent', true],
      ]);
      expect(servers[0]!.error).toMatch(/timed out/);
    } finally {
      await withSilent.close();
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
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
    const activities = createMcpActivities(mcp, POLICY);
    const { tools } = await run(activities.listTools);
    expect(tools.map((t) => t.name)).toEqual(OFFERED_TALENT_TOOLS);
    const outcome = await run(activities.callTool, {
      server: 'talent',
      name: 'get_job_details',
      arguments: { job_id: 'job-1' },
    });
    expect(outcome.data).toMatchObject({ title: 'Event Staff', location: 'Austin, TX' });
  });
});

/** What the wait server's `wait` tool answered: how long it waited, in which process. */
async function waited(activities: ReturnType<typeof createMcpActivities>, ms: number) {
  const outcome = await run(activities.callTool, { server: 'wait', name: 'wait', arguments: { ms } });
  return outcome.data as { waited: number; pid: number };
}

describe('a session is reset only when its transport failed', () => {
  const timings = { callTimeoutMs: 1_000, probeTimeoutMs: 500 };

  test('over HTTP, a call that times out leaves the session, and another call in flight on it, untouched', async () => {
    const server = await serveWithSessions(waitServer);
    const mcp = new McpConnections([{ name: 'wait', url: `${server.url}/mcp` }], timings);
    const activities = createMcpActivities(mcp, POLICY);
    try {
      const session = await mcp.client('wait');
      const slow = failureOf(waited(activities, 3_000));
      await pause(600);
      // In flight from 0.6 s to 1.4 s: across the slow call's timeout at 1 s, and within its own.
      const other = waited(activities, 800);
      const err = await slow;
      expect(err.name).toBe('McpTransportError');
      expect(err.message).toMatch(/timed out/i);
      expect(await other).toMatchObject({ waited: 800 });
      expect(await mcp.client('wait')).toBe(session);
    } finally {
      await mcp.close();
      await server.close();
    }
  });

  test('over HTTP, a server that went down or forgot the session is reconnected on the next call', async () => {
    let server = await serveWithSessions(waitServer);
    const { port } = server;
    const mcp = new McpConnections([{ name: 'wait', url: `${server.url}/mcp` }], timings);
    const activities = createMcpActivities(mcp, POLICY);
    try {
      await waited(activities, 0);
      await server.close();
      const refused = await failureOf(waited(activities, 0));
      expect(refused.name).toBe('McpTransportError');
      // Restarted on its port, the server knows no session: had the refused call kept the old one, this would be a 404.
      server = await serveWithSessions(waitServer, port);
      expect(await waited(activities, 0)).toMatchObject({ waited: 0 });

      server.forget();
      const forgotten = await failureOf(waited(activities, 0));
      expect(forgotten.message).toContain('HTTP 404');
      expect(await waited(activities, 0)).toMatchObject({ waited: 0 });
    } finally {
      await mcp.close();
      await server.close();
    }
  });

  describe('over stdio', () => {
    const entry = path.join(__dirname, '..', 'helpers', 'wait-mcp.ts');
    let mcp: McpConnections;
    let activities: ReturnType<typeof createMcpActivities>;

    beforeEach(() => {
      mcp = new McpConnections(
        [{ name: 'wait', command: process.execPath, args: ['--import', 'tsx', entry] }],
        timings,
      );
      activities = createMcpActivities(mcp, POLICY);
    });

    afterEach(() => mcp.close());

    test('a call that times out leaves the server’s process, and another call in flight on it, untouched', async () => {
      const { pid } = await waited(activities, 0);
      const slow = failureOf(waited(activities, 3_000));
      await pause(600);
      const other = waited(activities, 800);
      expect((await slow).message).toMatch(/timed out/i);
      expect(await other).toEqual({ waited: 800, pid });
      expect(await waited(activities, 0)).toEqual({ waited: 0, pid });
    });

    test('a server killed mid-call, or frozen past a ping, is replaced by a new process on the next call', async () => {
      const first = (await waited(activities, 0)).pid;
      const inFlight = failureOf(waited(activities, 3_000));
      process.kill(first, 'SIGKILL');
      const closed = await inFlight;
      expect(closed.name).toBe('McpTransportError');
      expect(closed.message).toMatch(/Connection closed/);
      const second = (await waited(activities, 0)).pid;
      expect(second).not.toBe(first);

      // Blocked, the process answers neither the call nor the ping that follows its timeout: it is closed.
      const frozen = await failureOf(
        run(activities.callTool, { server: 'wait', name: 'freeze', arguments: { ms: 10_000 } }),
      );
      expect(frozen.message).toMatch(/timed out/i);
      const third = (await waited(activities, 0)).pid;
      expect(third).not.toBe(second);
      await waitFor('the frozen process to be gone', () => {
        try {
          process.kill(second, 0);
          return false;
        } catch {
          return true;
        }
      });
    });
  });
});

test('results above the cap are cut and marked truncated, so no payload nears Temporal’s limit', () => {
  const big = { text: 'x'.repeat(MAX_TOOL_RESULT_BYTES * 2) };
  const capped = capPayload(big);
  expect(capped.truncated).toBe(true);
  expect(Buffer.byteLength(capped.data as string)).toBeLessThanOrEqual(MAX_TOOL_RESULT_BYTES);
  expect(capPayload({ small: true })).toEqual({ data: { small: true }, truncated: false });
});
