// The talent MCP server against tools nobody here wrote: the MCP Inspector CLI and the MCP conformance suite (both on
// Node 22), and Melvin's MCP client activity against the reference "everything" server.
import { spawn } from 'node:child_process';
import { McpConnections, createMcpActivities } from '../../src/activities/mcp';
import { McpToolPolicy } from '../../src/guards/mcp-tool-policy';
import { loadKnowledgeBase } from '../../sandbox/talent-mcp/knowledge-base';
import { TalentMcpService } from '../../sandbox/talent-mcp/http';
import { TalentStore } from '../../sandbox/talent-mcp/server';
import { ensureMcpTools, type McpTools } from '../../harness/mcp-tools';
import { failureOf, runActivity } from '../helpers/activity';
import { OFFERED_TALENT_TOOLS } from '../helpers/sandbox';

/** Conformance scenarios that apply to a tools-only server; the others test logging, completions, resources,
 * prompts, sampling, elicitation, or call the suite's own test tools. */
const APPLICABLE_SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];

let tools: McpTools;
let server: TalentMcpService;

function run(command: string, args: string[]) {
  return new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

beforeAll(async () => {
  tools = await ensureMcpTools((line) => process.stderr.write(`${line}\n`));
  server = new TalentMcpService(new TalentStore({ knowledgeBase: loadKnowledgeBase() }));
  await server.start();
}, 600_000);

afterAll(() => server?.stop());

test('the MCP tools run on Node 22', async () => {
  const { output } = await run(tools.node22, ['--version']);
  expect(output.trim()).toMatch(/^v22\./);
});

test('the Inspector CLI lists the talent tools with their input schemas', async () => {
  const { code, output } = await run(tools.node22, [tools.inspectorCli, '--cli', server.url, '--method', 'tools/list']);
  expect(code).toBe(0);
  const listed = JSON.parse(output.slice(output.indexOf('{'))) as {
    tools: {
      name: string;
      description: string;
      inputSchema: { properties: Record<string, { description?: string }> };
    }[];
  };
  expect(listed.tools.map((t) => t.name)).toEqual([...OFFERED_TALENT_TOOLS, 'update_payout_details']);
  for (const tool of listed.tools) {
    expect(tool.description.length).toBeGreaterThan(20);
    for (const property of Object.values(tool.inputSchema.properties)) expect(property.description).toBeTruthy();
  }
});

test.each(APPLICABLE_SCENARIOS)('conformance scenario %s passes', async (scenario) => {
  const { code, output } = await run(tools.node22, [
    tools.conformanceCli,
    'server',
    '--url',
    server.url,
    '--scenario',
    scenario,
  ]);
  expect({ code, failed: /(\d+) failed/.exec(output)?.[1] }).toEqual({ code: 0, failed: '0' });
});

describe('the MCP client activity against the reference "everything" server over stdio', () => {
  let mcp: McpConnections;
  beforeAll(() => {
    mcp = new McpConnections([
      { name: 'everything', command: process.execPath, args: [tools.everythingServer, 'stdio'] },
    ]);
  });
  afterAll(() => mcp.close());

  test('lists its tools, calls one, and keeps an isError result as data', async () => {
    // A policy that offers two of its tools, whatever their annotations say; the others are withheld.
    const policy = McpToolPolicy.parse({
      servers: { everything: { tools: { echo: { write: true }, 'get-sum': { write: true } } } },
    });
    const activities = createMcpActivities(mcp, policy);
    const { tools: listed, servers } = await runActivity(activities.listTools);
    expect(listed.map((t) => t.name).sort()).toEqual(['echo', 'get-sum']);
    expect(listed.every((t) => t.server === 'everything')).toBe(true);
    expect(servers).toEqual([{ name: 'everything', ok: true, tool_count: listed.length, error: null }]);
    expect(
      await runActivity(activities.callTool, { server: 'everything', name: 'echo', arguments: { message: 'hi' } }),
    ).toEqual({
      is_error: false,
      data: 'Echo: hi',
      truncated: false,
    });
    const invalid = await runActivity(activities.callTool, {
      server: 'everything',
      name: 'get-sum',
      arguments: { a: 1, b: 'x' },
    });
    expect(invalid.is_error).toBe(true);
    const unknown = await failureOf(
      runActivity(activities.callTool, { server: 'nowhere', name: 'echo', arguments: {} }),
    );
    expect(unknown.name).toBe('McpToolRefusedError');
  });
});
