// `npm start` on a model endpoint the environment names: the worker answers from that OpenAI-compatible server (one the
// test starts, with its own key and model names), not from the stack's sandbox model; a wrong setting stops it, named.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ScenarioResult } from '../../sandbox/scenario-runner';
import { sandboxReasoning } from '../../sandbox/model/reasoning';
import { SANDBOX_EMBEDDING_MODEL_NAME, SandboxModel } from '../../sandbox/model/server';
import { startNpmStart, type NpmStart } from '../helpers/processes';
import { freeStackPorts, portEnvironment } from '../../harness/stack';

const ROOT = path.join(__dirname, '..', '..');
const KEY = 'key-of-the-named-endpoint';
const MODEL = 'named-endpoint-model';
const endpoint = new SandboxModel({ apiKey: KEY, responder: sandboxReasoning, models: [MODEL] });
let start: NpmStart | undefined;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  const url = await endpoint.start();
  const ports = await freeStackPorts();
  env = {
    ...process.env,
    ...portEnvironment(ports),
    MELVIN_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'melvin-endpoint-')),
    SANDBOX_CONTROL_URL: `http://127.0.0.1:${ports.intercom}/_sandbox`,
    TEMPORAL_ADDRESS: `127.0.0.1:${ports.temporal}`,
    OPENAI_BASE_URL: url,
    OPENAI_API_KEY: KEY,
    MODEL_NAME: MODEL,
    // A tier setting reaches the worker too: the endpoint's embeddings model, for the team's index.
    EMBEDDING_MODEL_NAME: SANDBOX_EMBEDDING_MODEL_NAME,
  };
  start = await startNpmStart(env);
}, 300_000);

afterAll(async () => {
  await start?.stop();
  await endpoint.stop();
});

function run(command: string, args: string[], environment: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn('npm', ['run', '--silent', command, '--', ...args], { cwd: ROOT, env: environment });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

test('the inbox answers from the endpoint OPENAI_BASE_URL names, and says so', async () => {
  expect(start!.output()).toContain(`The model is ${MODEL} at ${env.OPENAI_BASE_URL} (from OPENAI_BASE_URL).`);
  expect(start!.output()).not.toContain('The model is the sandbox stand-in');
  const scenario = path.join(ROOT, 'scenarios', 'shared', 'payment-processing.json');
  const { code, stdout } = await run('scenario', [scenario], env);
  const results = stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as ScenarioResult);
  expect(results.map((r) => ({ id: r.id, passed: r.passed, failed: r.expectations.filter((e) => !e.passed) }))).toEqual(
    [{ id: expect.any(String), passed: true, failed: [] }],
  );
  expect(code).toBe(0);
  // Every step of the turn was asked of the named endpoint, with its key and its model, on both tiers.
  const steps = new Set(endpoint.requests.map((r) => r.step));
  for (const step of ['plan', 'coverage', 'draft']) expect(steps.has(step as never)).toBe(true);
  expect(new Set(endpoint.requests.map((r) => r.model))).toEqual(new Set([MODEL]));
  expect(new Set(endpoint.requests.map((r) => r.authorization))).toEqual(new Set([`Bearer ${KEY}`]));
}, 300_000);

test('an endpoint named without its key stops npm start before anything starts, naming the variable', async () => {
  const ports = await freeStackPorts();
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve) => {
      const child = spawn('npm', ['start'], {
        cwd: ROOT,
        env: { ...env, ...portEnvironment(ports), OPENAI_API_KEY: '' },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
      child.on('exit', (exit) => resolve({ code: exit, stdout: out, stderr: err }));
    },
  );
  expect(code).not.toBe(0);
  expect(stderr).toContain('OPENAI_API_KEY: is required when OPENAI_BASE_URL names a model endpoint');
  expect(stdout).not.toContain('Starting the Temporal dev server');
}, 120_000);
