// The worker and the CLI as real processes: configuration from the environment, a run started and inspected by CLI.
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DEFAULT_HANDOVER_MESSAGE, stateQuery } from '../../src/contract/shared';
import type { AgentState } from '../../src/contract/state';
import { coverage, draft, plan } from '../helpers/model-answers';
import { quietRuntime, waitFor } from '../helpers/runtime';
import { ROOT, runNode, startWorkerProcess, workerEnvironment } from '../helpers/processes';
import { startSandbox, withoutRunMaps, type Sandbox } from '../helpers/sandbox';
import { startTemporal } from '../helpers/temporal';
import { freePorts, startChild, stopChild } from '../../harness/stack';
import { SANDBOX_SECRETS } from '../../sandbox/services';

quietRuntime();

const TALENT = {
  users: [{ email: 'li@example.com', name: 'Li Wei', applications: [], payments: [] }],
  jobs: [],
};
let env: TestWorkflowEnvironment;
let sandbox: Sandbox;
let worker: ReturnType<typeof startWorkerProcess> | undefined;
let processEnv: NodeJS.ProcessEnv;

const cli = (...args: string[]) => runNode('src/client.ts', args, processEnv);

beforeAll(async () => {
  [env, sandbox] = await Promise.all([startTemporal(), startSandbox()]);
  // The worker reaches the talent MCP server over stdio here, the way a production MCP_SERVERS command entry does.
  const dataFile = path.join(mkdtempSync(path.join(tmpdir(), 'melvin-proc-')), 'talent.json');
  writeFileSync(dataFile, JSON.stringify({ talent: TALENT }));
  processEnv = {
    ...(await workerEnvironment(sandbox, {
      temporalAddress: env.connection.options.address,
      taskQueue: 'process-test',
      mcpServers: `talent=${process.execPath} --import tsx ${path.join(ROOT, 'sandbox/talent-mcp/stdio.ts')} ${dataFile}`,
    })),
    // One turn per conversation here: each conversation's workflow ends after its turn, so its result can be awaited.
    QUIET_PERIOD_SECONDS: '0',
  };
  worker = startWorkerProcess(processEnv);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await sandbox?.close();
  await env?.teardown();
});

test('the worker refuses to start without its configuration and names what is missing', async () => {
  const { code, stderr } = await runNode('src/worker.ts', [], { PATH: process.env.PATH, MCP_SERVERS: 'x=ftp://nope' });
  expect(code).toBe(1);
  expect(stderr).toContain('Invalid configuration:');
  expect(stderr).toContain('INTERCOM_API_KEY: required');
  expect(stderr).toContain('VALIDATION_ENDPOINT: required');
});

test('a bad CLI call is a usage error with exit code 2', async () => {
  const { code, stderr } = await cli('escalate', '42');
  expect(code).toBe(2);
  expect(stderr).toContain('reason: --reason is required');
  expect(stderr).toContain('Usage:');
});

test('the CLI answers a conversation with no open workflow in one line, not a stack trace', async () => {
  for (const args of [
    ['approve', '9199'],
    ['reject', '9199', '--reason', 'Wrong tone'],
  ]) {
    const { code, stderr } = await cli(...args);
    expect({ args, code, stderr: stderr.trim() }).toEqual({
      args,
      code: 1,
      stderr: 'conversation 9199 has no open workflow: it never started, or it has ended',
    });
  }
});

// A lead's request outlives the conversation's workflow: a new one starts with it, reads who owns the conversation, and
// judges it by the same rules as an open one (docs/decisions.md).
test('an escalation or hand-back from the CLI on a conversation with no open workflow is judged by a new one', async () => {
  const seed = (id: string, teammateReplied: boolean) =>
    sandbox.intercom.seed({
      id,
      contact: { id: `c-${id}`, email: 'li@example.com', name: 'Li Wei' },
      parts: [
        { author: 'user', type: 'comment', body: 'Is my payment out?' },
        ...(teammateReplied ? [{ author: 'admin' as const, type: 'comment' as const, body: 'Looking into it.' }] : []),
      ],
    });
  seed('9198', false);
  seed('9197', true);
  seed('9196', false);
  const escalated = await cli('escalate', '9198', '--reason', 'VIP');
  expect({ code: escalated.code, stdout: escalated.stdout }).toEqual({
    code: 0,
    stdout: expect.stringContaining('"accepted": true'),
  });
  // A teammate answered 9197: it is the team's, and a lead can hand it back.
  const handedBack = await cli('hand-back', '9197', '--reason', 'Sorted');
  expect({ code: handedBack.code, stdout: handedBack.stdout }).toEqual({
    code: 0,
    stdout: expect.stringContaining("Melvin answers the user's next message"),
  });
  // Melvin answers 9196 already: refused, in one line, as an open workflow would refuse it.
  const refused = await cli('hand-back', '9196', '--reason', 'Sorted');
  expect({ code: refused.code, stderr: refused.stderr.trim() }).toEqual({
    code: 1,
    stderr: expect.stringMatching(/^Melvin answers this conversation already/),
  });
  // Each new workflow reads its conversation and may answer it with the model before it ends; the next test scripts
  // the model's answers, so these must be done first.
  await Promise.all(
    ['9198', '9197', '9196'].map((id) => env.client.workflow.getHandle(`intercom-conversation-${id}`).result()),
  );
});

test('CLI start runs a turn on the worker process; state and list show it', async () => {
  sandbox.seed({
    conversation: {
      id: '9101',
      contact: { id: 'c-li', email: 'li@example.com', name: 'Li Wei' },
      parts: [{ author: 'user', type: 'comment', body: 'Hi there' }],
    },
    talent: TALENT,
  });
  sandbox.model
    .script('plan', plan('Greeting', ['get_user_profile']))
    .script('coverage', coverage(true))
    .script('draft', draft('Hi Li! How can I help?'));

  const started = await cli('start', '9101');
  expect(started.code).toBe(0);
  expect(JSON.parse(started.stdout)).toMatchObject({ workflowId: 'intercom-conversation-9101' });

  const handle = env.client.workflow.getHandle('intercom-conversation-9101');
  await handle.result();
  const result = await handle.query(stateQuery);
  expect(result.finalize?.melvin_status).toBe('success');
  expect(result.metadata.trigger?.topic).toBe('cli');
  expect(sandbox.intercom.replies('9101')).toEqual(['Hi Li! How can I help?']);
  expect(result.tool_data.get_user_profile).toMatchObject({ success: true, parameters: { email: 'li@example.com' } });

  const state = await cli('state', '9101');
  expect(state.code).toBe(0);
  expect(JSON.parse(state.stdout)).toMatchObject({ conversation_id: '9101', finalize: { melvin_status: 'success' } });

  const listed = await waitFor('the run to be listed as success', async () => {
    const out = await cli('list', '--status', 'success');
    const runs = JSON.parse(out.stdout) as { workflowId: string; melvinStatus: string }[];
    return runs.find((r) => r.workflowId === 'intercom-conversation-9101');
  });
  expect(listed).toMatchObject({ melvinStatus: 'success', status: 'COMPLETED', hopCount: 1 });
});

test('CLI escalate hands a running conversation to the team', async () => {
  sandbox.seed({
    conversation: {
      id: '9102',
      contact: { id: 'c-li', email: 'li@example.com', name: 'Li Wei' },
      parts: [{ author: 'user', type: 'comment', body: 'Where is my contract?' }],
    },
  });
  sandbox.model.faults.set({ plan: [{ delay_ms: 30_000 }] });
  sandbox.model.script('plan', plan('Contract'));

  const before = sandbox.model.requests.length;
  expect((await cli('start', '9102')).code).toBe(0);
  await waitFor('the plan request', () => sandbox.model.requests.length > before);
  const escalated = await cli('escalate', '9102', '--reason', 'Contract dispute', '--by', 'lead@team.example');
  expect(escalated.code).toBe(0);

  const handle9102 = env.client.workflow.getHandle('intercom-conversation-9102');
  await handle9102.result();
  const result = await handle9102.query(stateQuery);
  expect(result.escalate).toMatchObject({ escalation_source: 'operator', escalation_reason: 'Contract dispute' });
  // The CLI's configuration is the default one: the user is told a person will follow up, and the note says so.
  expect(withoutRunMaps(sandbox.intercom.notes('9102'))).toEqual([
    `🚨 Escalation: Contract dispute\nRequested by: lead@team.example\nOpen for the team:\n- “Where is my contract?”\nThe user was told: "${DEFAULT_HANDOVER_MESSAGE}"`,
  ]);
  expect(sandbox.intercom.replies('9102')).toEqual([DEFAULT_HANDOVER_MESSAGE]);
  expect(sandbox.intercom.melvinStatus('9102')).toBe('ROUTE_TO_TEAM');
});

test('the Temporal CLI escalates a running conversation with the forceEscalation signal and queries its state', async () => {
  const temporalCli = process.env.TEMPORAL_CLI_PATH;
  if (!temporalCli) throw new Error('no Temporal CLI: the global setup finds or builds one');
  sandbox.seed({
    conversation: {
      id: '9103',
      contact: { id: 'c-li', email: 'li@example.com', name: 'Li Wei' },
      parts: [{ author: 'user', type: 'comment', body: 'Where is my contract?' }],
    },
  });
  sandbox.model.faults.set({ plan: [{ delay_ms: 30_000 }] });
  sandbox.model.script('plan', plan('Contract'));
  const before = sandbox.model.requests.length;
  expect((await cli('start', '9103')).code).toBe(0);
  await waitFor('the plan request', () => sandbox.model.requests.length > before);

  const temporal = (...args: string[]) =>
    new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(temporalCli, [
        ...args,
        '--address',
        processEnv.TEMPORAL_ADDRESS!,
        '--workflow-id',
        'intercom-conversation-9103',
      ]);
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.on('exit', (code) => resolve({ code, stdout }));
    });
  const signalled = await temporal(
    'workflow',
    'signal',
    '--name',
    'forceEscalation',
    '--input',
    JSON.stringify({ reason: 'Escalated from the Temporal CLI', requestedBy: 'oncall@team.example' }),
  );
  expect(signalled.code).toBe(0);
  await env.client.workflow.getHandle('intercom-conversation-9103').result();

  const queried = await temporal('workflow', 'query', '--type', 'state', '--output', 'json');
  expect(queried.code).toBe(0);
  const state = JSON.parse(queried.stdout) as { queryResult: AgentState[] };
  expect(state.queryResult[0]).toMatchObject({
    conversation_id: '9103',
    escalate: { escalation_source: 'operator', escalation_reason: 'Escalated from the Temporal CLI' },
    finalize: { melvin_status: 'ROUTE_TO_TEAM' },
  });
  expect(withoutRunMaps(sandbox.intercom.notes('9103'))).toEqual([
    `🚨 Escalation: Escalated from the Temporal CLI\nRequested by: oncall@team.example\nOpen for the team:\n- “Where is my contract?”\nThe user was told: "${DEFAULT_HANDOVER_MESSAGE}"`,
  ]);
});

test('the ingress with an outbox starts while Temporal is unreachable, and acknowledges what it keeps', async () => {
  const [port, metricsPort, closed] = await freePorts(3);
  const dir = mkdtempSync(path.join(tmpdir(), 'melvin-proc-outbox-'));
  const ingress = startChild(
    'ingress',
    'src/ingress/main.ts',
    {
      ...processEnv,
      TEMPORAL_ADDRESS: `127.0.0.1:${closed}`,
      INGRESS_PORT: String(port),
      INGRESS_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
      INGRESS_OUTBOX_DIR: dir,
    },
    () => undefined,
  );
  try {
    await waitFor(
      'the ingress to listen',
      () => ingress.output.some((l) => l.includes('"message":"ingress listening"')),
      {
        timeoutMs: 60_000,
      },
    );
    sandbox.intercom.seed({
      id: '7301',
      contact: { id: 'c-7301', email: 'li@example.com', name: 'Li Wei' },
      parts: [{ author: 'user', type: 'comment', body: 'Is my payment out?' }],
    });
    const body = JSON.stringify(sandbox.intercom.notification('conversation.user.created', '7301'));
    const signature = `sha1=${createHmac('sha1', SANDBOX_SECRETS.webhookSecret).update(body).digest('hex')}`;
    const answer = await fetch(`http://127.0.0.1:${port}/webhooks/intercom`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature': signature },
      body,
    });
    expect(answer.status).toBe(202);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'degraded', outbox: { pending: 1 } });
  } finally {
    await stopChild(ingress);
  }
}, 90_000);
