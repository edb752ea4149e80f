// A whole turn on a real Temporal dev server with several MCP servers at once: the sandbox's talent server over
// Streamable HTTP, a second talent server holding other data over stdio (so every talent tool name is offered twice),
// the reference "everything" server over stdio, and a server that is down.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { IntercomClient } from 'intercom-client';
import { createActivities } from '../../src/activities';
import { createOpenAiClient, oneModelForAllTiers } from '../../src/activities/llm';
import { SANDBOX_EMBEDDING_MODEL_NAME, SANDBOX_MODEL_NAME } from '../../sandbox/model/server';
import { McpConnections } from '../../src/activities/mcp';
import { DEFAULT_MCP_TOOL_POLICY, McpToolPolicy } from '../../src/guards/mcp-tool-policy';
import type { ToolSummary } from '../../src/contract/llm-contexts';
import { SANDBOX_SECRETS, startSandboxServices, type SandboxServices } from '../../sandbox/services';
import { ensureMcpTools } from '../../harness/mcp-tools';
import { freePorts } from '../../harness/stack';
import { quietRuntime, waitFor } from '../helpers/runtime';
import { startTemporal } from '../helpers/temporal';
import { ANA, ANA_TALENT, runTurnOnWorker } from '../helpers/turns';
import { OFFERED_TALENT_TOOLS } from '../helpers/sandbox';
import { workflowBundleOptions } from '../../src/bundling/workflow-bundle';

quietRuntime();

/** What the second talent server (a payroll system, say) knows about her: another payment for another job. */
const PAYROLL = {
  talent: {
    users: [
      {
        email: ANA.email,
        name: ANA.name,
        applications: [],
        payments: [
          {
            id: 'pay-58',
            job_id: 'job-44',
            amount: 75,
            currency: 'USD',
            status: 'pending',
            expected_date: '2026-12-04',
          },
        ],
      },
    ],
    jobs: [{ id: 'job-44', title: 'Kitchen Porter', location: 'Denver, CO', status: 'open' }],
  },
};

let env: TestWorkflowEnvironment;
let sandbox: SandboxServices;
let workflowBundle: WorkflowBundleWithSourceMap;
let mcp: McpConnections;
let everythingCommand: { command: string; args: string[] };
let dataDir: string;
let offlineUrl: string;

beforeAll(async () => {
  const tools = await ensureMcpTools((line) => process.stderr.write(`${line}\n`));
  everythingCommand = { command: process.execPath, args: [tools.everythingServer, 'stdio'] };
  dataDir = mkdtempSync(path.join(tmpdir(), 'melvin-mcp-servers-'));
  const payrollFile = path.join(dataDir, 'payroll.json');
  writeFileSync(payrollFile, JSON.stringify(PAYROLL));
  // A port nothing listens on: connecting is refused at once, as for a server that is down.
  const [offlinePort] = await freePorts(1);
  offlineUrl = `http://127.0.0.1:${offlinePort}/mcp`;
  [env, sandbox, workflowBundle] = await Promise.all([
    startTemporal(),
    startSandboxServices(),
    bundleWorkflowCode(workflowBundleOptions()),
  ]);
  mcp = new McpConnections([
    { name: 'talent', url: sandbox.urls.mcp },
    { name: 'everything', ...everythingCommand },
    {
      name: 'payroll',
      command: process.execPath,
      args: ['--import', 'tsx', path.join(__dirname, '..', '..', 'sandbox', 'talent-mcp', 'stdio.ts'), payrollFile],
    },
    { name: 'offline', url: offlineUrl },
  ]);
}, 600_000);

afterAll(async () => {
  await mcp?.close();
  await sandbox?.stop();
  await env?.teardown();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** The everything server's tools as an SDK client of its own lists them, from a process Melvin never touched. */
async function everythingToolsListedIndependently(): Promise<Tool[]> {
  const client = new Client({ name: 'mcp-servers-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ ...everythingCommand, stderr: 'ignore' }));
  try {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  } finally {
    await client.close();
  }
}

test('a turn uses every live server’s tools, tells duplicated names apart, and records the server that is down', async () => {
  const conversationId = '9301';
  sandbox.intercom.seed({
    id: conversationId,
    contact: ANA,
    parts: [{ author: 'user', type: 'comment', body: 'When will I get paid? What is the payout schedule?' }],
  });
  sandbox.talent.merge({ talent: ANA_TALENT });
  const independent = await everythingToolsListedIndependently();
  // Both talent servers under the built-in talent rules; every tool of the reference server, which the test trusts.
  const talentRules = DEFAULT_MCP_TOOL_POLICY.servers.talent!;
  const mcpToolPolicy = McpToolPolicy.parse({
    servers: {
      talent: talentRules,
      payroll: talentRules,
      everything: { tools: Object.fromEntries(independent.map((t) => [t.name, { write: true }])) },
    },
  });
  const openai = createOpenAiClient({ apiKey: SANDBOX_SECRETS.openAiKey, baseURL: sandbox.urls.model });
  const activities = createActivities({
    intercom: new IntercomClient({
      token: SANDBOX_SECRETS.intercomToken,
      baseUrl: sandbox.urls.intercom,
      maxRetries: 0,
    }),
    adminId: SANDBOX_SECRETS.adminId,
    mcp,
    mcpToolPolicy,
    models: oneModelForAllTiers({ openai, model: SANDBOX_MODEL_NAME }),
    embeddings: { openai, model: SANDBOX_EMBEDDING_MODEL_NAME },
    validation: { endpoint: sandbox.urls.validation, apiKey: SANDBOX_SECRETS.validationKey },
  });
  // The plan request is held until the test has read the run's current details, as the Temporal UI shows them.
  sandbox.gates.arm({ at: 'llm:plan' });
  const { state, during: details } = await runTurnOnWorker(
    { env, workflowBundle },
    conversationId,
    activities,
    async (handle) => {
      await waitFor('the plan request to be held', () => sandbox.gates.status().held === 'llm:plan', {
        timeoutMs: 60_000,
      });
      const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      sandbox.gates.release();
      return metadata.currentDetails ?? '';
    },
  );

  // The turn ends with a reply built from both talent servers' data.
  expect(state.finalize?.melvin_status).toBe('success');
  expect(state.escalate).toBeNull();
  const replies = sandbox.intercom.replies(conversationId);
  expect(replies).toHaveLength(1);
  expect(replies[0]).toContain('$240 for Event Staff is processing and expected on November 27');
  expect(replies[0]).toContain('$75 for Kitchen Porter is pending and expected on December 4');

  // The server that is down is recorded with its error, and the run showed it while it went on.
  expect(state.metadata.tool_servers).toEqual([
    { name: 'talent', ok: true, tool_count: OFFERED_TALENT_TOOLS.length, error: null },
    { name: 'everything', ok: true, tool_count: expect.any(Number), error: null },
    { name: 'payroll', ok: true, tool_count: OFFERED_TALENT_TOOLS.length, error: null },
    { name: 'offline', ok: false, tool_count: 0, error: expect.stringMatching(/"offline".*ECONNREFUSED/) },
  ]);
  expect(details).toContain('Plan: choosing tools');
  expect(details).toContain('MCP server "offline" failed, so its tools are left out');
  // The tool that writes is withheld on both talent servers, and the run records why.
  expect(state.metadata.withheld_tools).toEqual(
    ['talent', 'payroll'].map((server) => ({
      server,
      name: 'update_payout_details',
      reason: 'not in the tool policy',
    })),
  );

  // The plan request offered every live server's tools, the talent names qualified on both talent servers.
  const planRequest = sandbox.model.requests.find((r) => r.step === 'plan')!;
  const offered = planRequest.context.available_tools as ToolSummary[];
  expect(offered.map((t) => t.name)).toEqual([
    ...OFFERED_TALENT_TOOLS.map((n) => `talent__${n}`),
    ...independent.map((t) => t.name),
    ...OFFERED_TALENT_TOOLS.map((n) => `payroll__${n}`),
  ]);
  expect(state.metadata.tool_servers[1]!.tool_count).toBe(independent.length);
  // The third-party server's schemas (enums, defaults, formats, `$schema`) reached the model exactly as it lists them.
  for (const tool of independent) {
    expect(offered.find((t) => t.name === tool.name)).toEqual({
      name: tool.name,
      description: tool.description ?? '',
      input_schema: tool.inputSchema,
    });
  }

  // The model planned the payments tool of both talent servers and one docs search; each call reached its server.
  const planned = state.hops[0]!.plan!.tool_calls.map((c) => c.tool_name);
  expect(planned).toEqual(['talent__get_user_payments', 'payroll__get_user_payments', 'talent__search_talent_docs']);
  const paymentIds = (key: string) =>
    (state.tool_data[key]?.data as { payments?: { id: string }[] } | undefined)?.payments?.map((p) => p.id);
  expect(paymentIds('talent__get_user_payments')).toEqual(['pay-31']);
  expect(paymentIds('payroll__get_user_payments')).toEqual(['pay-58']);
  expect(state.tool_data['talent__get_user_payments']?.parameters).toEqual({ email: ANA.email });
  expect(sandbox.talent.calls.map((c) => c.tool).sort()).toEqual(['get_user_payments', 'search_talent_docs']);
  // The qualified docs tool is still the docs tool: its results are in docs_data, keyed by query and hop.
  expect(Object.keys(state.tool_data).some((key) => key.includes('search_talent_docs'))).toBe(false);
  const docs = Object.entries(state.docs_data);
  expect(docs).toHaveLength(1);
  expect(docs[0]![0]).toMatch(/ \(hop 1\)$/);
  expect(docs[0]![1]).toMatchObject({ success: true, data: { results: expect.any(Array) } });
});
