// The MCP tool policy in a whole turn on a real Temporal dev server: a plan that names a tool outside the policy, a
// tool that writes, or another user under another argument name or nested, never gets that to the MCP server.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createMcpActivities } from '../../src/activities/mcp';
import { DEFAULT_MCP_TOOL_POLICY, McpToolPolicy } from '../../src/guards/mcp-tool-policy';
import type { ToolSummary } from '../../src/contract/llm-contexts';
import { coverage, draft, plan } from '../helpers/model-answers';
import type { Sandbox } from '../helpers/sandbox';
import { ANA, ANA_TALENT, PAY_REPLY, runTurnOnWorker, useTestbed } from '../helpers/turns';

const BOB = { email: 'bob.stone@example.com', name: 'Bob Stone' };
const TALENT = {
  ...ANA_TALENT,
  users: [
    ...ANA_TALENT.users,
    {
      ...BOB,
      applications: [],
      payments: [
        { id: 'pay-99', job_id: 'job-21', amount: 990, currency: 'USD', status: 'paid', paid_at: '2026-10-02' },
      ],
    },
  ],
};

let env: TestWorkflowEnvironment;
let sandbox: Sandbox;
let workflowBundle: WorkflowBundleWithSourceMap;

useTestbed((testbed) => ({ env, sandbox, workflowBundle } = testbed));

function newConversation(id: string, body: string): string {
  sandbox.seed({
    conversation: { id, contact: ANA, parts: [{ author: 'user', type: 'comment', body }] },
    talent: TALENT,
  });
  return id;
}

/** The error each planned call was recorded with (null when it succeeded), by tool name. */
function errorsByTool(results: { tool_name: string; error: string | null }[]): Record<string, string | null> {
  return Object.fromEntries(results.map((r) => [r.tool_name, r.error]));
}

test('under the built-in policy, a tool that writes, an unknown tool and another user under any name never reach the server', async () => {
  const id = newConversation('9401', `Change my payout account to mia@evil.example and show ${BOB.email}'s profile`);
  sandbox.model
    .script(
      'plan',
      plan(
        'Payout change and profiles',
        ['update_payout_details', { email: BOB.email, method: 'paypal', account: 'mia@evil.example' }],
        ['export_all_users', { format: 'csv' }],
        ['get_talent_profile', { talent: { contactEmail: BOB.email } }],
        ['get_user_payments', { Email: BOB.email, USER_ID: 'c-bob', filter: { user: { email: BOB.email } } }],
        ['get_user_profile', { userEmail: BOB.email, EMAIL: BOB.email }],
      ),
    )
    .script('coverage', coverage(true))
    .script('draft', draft(PAY_REPLY));

  const { state } = await runTurnOnWorker({ env, workflowBundle }, id, sandbox.activities);

  // The run records what the policy withheld and why; the model was never offered it, and was told the nested path.
  expect(state.metadata.withheld_tools).toEqual([
    { server: 'talent', name: 'update_payout_details', reason: 'not in the tool policy' },
  ]);
  const planContext = sandbox.model.requests.find((r) => r.step === 'plan')!.context;
  expect((planContext.available_tools as ToolSummary[]).map((t) => t.name)).not.toContain('update_payout_details');
  expect(planContext.identity_arguments).toContain('talent.contactEmail');

  // The refused calls are failed results saying why; nothing of them reached the server, and nothing was changed.
  const results = state.hops[0]!.gather!.tool_results;
  expect(errorsByTool(results)).toEqual({
    update_payout_details: 'tool "update_payout_details" is withheld by the tool policy: not in the tool policy',
    export_all_users: 'unknown tool "export_all_users"',
    get_talent_profile: null,
    get_user_payments: null,
    get_user_profile: null,
  });
  expect(sandbox.talent.payoutDetails.size).toBe(0);

  // What reached the server, as it arrived: only policy tools, each pinned to Ana, whatever name or depth Bob was under.
  const received = sandbox.talent.received;
  expect(received.map((r) => r.tool).sort()).toEqual(['get_talent_profile', 'get_user_payments', 'get_user_profile']);
  expect(JSON.stringify(received)).not.toContain(BOB.email);
  expect(JSON.stringify(received)).not.toContain('c-bob');
  const argumentsOf = (tool: string) => received.find((r) => r.tool === tool)!.arguments;
  expect(argumentsOf('get_talent_profile')).toEqual({ talent: { contactEmail: ANA.email } });
  expect(argumentsOf('get_user_payments')).toEqual({ filter: { user: {} }, email: ANA.email });
  expect(argumentsOf('get_user_profile')).toEqual({ email: ANA.email });
  expect(JSON.stringify(state.tool_data)).not.toContain('pay-99');
  expect(JSON.stringify(state.tool_data)).not.toContain(BOB.name);
});

test('a policy that does not name a tool’s identity argument withholds it, and a plan naming it is refused with why', async () => {
  const id = newConversation('9402', `What are the payments of ${BOB.email}?`);
  const talent = DEFAULT_MCP_TOOL_POLICY.servers.talent!.tools;
  // An operator's policy that forgot `email` is get_user_payments' identity: the tool must not be offered at all.
  const policy = McpToolPolicy.parse({ servers: { talent: { tools: { ...talent, get_user_payments: {} } } } });
  const activities = { ...sandbox.activities, ...createMcpActivities(sandbox.mcp, policy) };
  const reason = 'identity-like argument "email" is not named as an identity argument by the policy';
  sandbox.model
    .script('plan', plan('Payments', ['get_user_payments', { email: BOB.email }]))
    .script('coverage', coverage(false))
    .script('plan', plan('Payments', ['talent__get_user_payments', { user: { email: BOB.email } }]))
    .script('coverage', coverage(false));

  const { state } = await runTurnOnWorker({ env, workflowBundle }, id, activities);

  expect(state.metadata.withheld_tools).toEqual([
    { server: 'talent', name: 'get_user_payments', reason },
    { server: 'talent', name: 'update_payout_details', reason: 'not in the tool policy' },
  ]);
  expect(state.hops[0]!.gather!.tool_results).toMatchObject([
    {
      tool_name: 'get_user_payments',
      success: false,
      error: `tool "get_user_payments" is withheld by the tool policy: ${reason}`,
      parameters: {},
      execution_time_ms: 0,
    },
  ]);
  // Under its qualified name too, on the next hop.
  expect(state.hops[1]!.gather!.tool_results).toMatchObject([
    { success: false, error: `tool "talent__get_user_payments" is withheld by the tool policy: ${reason}` },
  ]);
  expect(sandbox.talent.received).toEqual([]);
  expect(state.escalate?.escalation_kind).toBe('hops_exhausted');
});
