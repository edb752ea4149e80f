// Payload encryption end to end: a real turn through the whole stack (Temporal dev server and its UI, sandbox, worker
// and ingress as processes) leaves no message, email or note in Temporal's stored history, while the codec endpoint,
// the Temporal CLI given it, and the Temporal UI in a browser show them to an operator.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_ARGS, ensureChromium } from '../../harness/chromium';
import { describeNeeding } from '../helpers/requirements';
import { freeStackPorts, startDevServer, startStack, type Stack, type StackPorts } from '../../harness/stack';
import { SANDBOX_SECRETS } from '../../sandbox/services';
import { turnOver } from '../../src/operations/conversations';
import { codecEndpointUrl, codecPathToken } from '../../src/ingress/codec-routes';
import { ENCRYPTED_ENCODING, generatePayloadKey } from '../../src/encryption/payload-codec';
import { workflowIdFor } from '../../src/contract/shared';
import { textInSomeFrame } from '../helpers/browser';
import { runNode } from '../helpers/processes';

const TALENT = { email: 'ana.ruiz@example.com', name: 'Ana Ruiz' };
/** A question the sandbox model hands to the team, so the run writes an internal note as well as a reply. */
const QUESTION = 'Could a real person call me about the lanyard-7342 badge for my Austin shift, please?';

let ports: StackPorts;
let stack: Stack;
let dataDir: string;
let conversationId: string;
let note: string;
let ingress: string;

/** `temporal <args>` against the stack's server, as an operator runs the CLI. */
function temporalCli(...args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const cli = process.env.TEMPORAL_CLI_PATH;
    if (!cli) return reject(new Error('no Temporal CLI: the global setup finds or builds one'));
    const child = spawn(cli, [...args, '--address', `127.0.0.1:${ports.temporal}`, '--namespace', 'default']);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

/** Every payload in a JSON document, found by its shape (metadata with an encoding), with the keys that lead to it. */
function payloadsIn(value: unknown, where = '', found: (JsonPayload & { where: string })[] = []) {
  if (Array.isArray(value)) value.forEach((item, i) => payloadsIn(item, `${where}[${i}]`, found));
  else if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const metadata = record.metadata as Record<string, unknown> | undefined;
    if (metadata && typeof metadata === 'object' && typeof metadata.encoding === 'string')
      found.push({ ...record, where });
    else for (const [key, child] of Object.entries(record)) payloadsIn(child, `${where}.${key}`, found);
  }
  return found;
}

const fromBase64 = (text: string | undefined) => Buffer.from(text ?? '', 'base64').toString('utf8');

/**
 * The CLI's JSON with every payload's bytes readable beside it (a plain payload's text shows, an encrypted one's not),
 * and the encodings of the payloads a codec is given: not search attributes, which Temporal must read to index, nor
 * what the SDK writes in its markers for itself (a patch's name; a local activity's sequence, attempt, type and times).
 */
function readable(json: string): { text: string; encodings: string[] } {
  const payloads = payloadsIn(JSON.parse(json));
  return {
    text: [json, ...payloads.map((p) => fromBase64(p.data))].join('\n'),
    encodings: payloads
      // A local activity's marker keeps its `result` encrypted like any other payload; its `data` is the SDK's own.
      .filter(
        (p) =>
          !/searchAttributes\.indexedFields|details\.patch-data|markerRecordedEventAttributes\.details\.data/.test(
            p.where,
          ),
      )
      .map((p) => `${fromBase64(p.metadata?.encoding)}`),
  };
}

/** What the conversation's history must not show without the key: what the user wrote, who they are, the note. */
const secrets = () => ({ question: QUESTION, email: TALENT.email, note });

beforeAll(async () => {
  ports = await freeStackPorts();
  dataDir = mkdtempSync(path.join(tmpdir(), 'melvin-encryption-'));
  ingress = `http://127.0.0.1:${ports.ingress}`;
  const temporal = await startDevServer({
    port: ports.temporal,
    uiPort: ports.temporalUi,
    dataDir,
    cli: process.env.TEMPORAL_CLI_PATH,
    payloadKeys: [generatePayloadKey('e2e-test')],
    uiCodecEndpoint: codecEndpointUrl(ingress, SANDBOX_SECRETS.adminApiToken),
  });
  stack = await startStack({ ports, temporal });
  const created = await fetch(`http://127.0.0.1:${ports.intercom}/inbox/api/conversations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...TALENT, body: QUESTION }),
  });
  conversationId = ((await created.json()) as { id: string }).id;
  await turnOver(stack.temporal.client, conversationId, { timeoutMs: 90_000 });
  const conversation = (await (await fetch(`${stack.urls.sandboxControl}/conversations/${conversationId}`)).json()) as {
    notes: string[];
  };
  // The note's first line: the team's summary of the hand-over, as the run wrote it.
  note = conversation.notes[0]?.split('\n')[0] ?? '';
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

test('the turn ran and handed the conversation over with a note', () => {
  expect(note.length).toBeGreaterThan(20);
});

test('the server stores the history, memo and summary encrypted: no message, email or note in it', async () => {
  const workflowId = workflowIdFor(conversationId);
  const history = await temporalCli('workflow', 'show', '--workflow-id', workflowId, '--output', 'json');
  const description = await temporalCli('workflow', 'describe', '--workflow-id', workflowId, '--output', 'json');
  expect({ history: history.code, description: description.code }).toEqual({ history: 0, description: 0 });
  for (const output of [history.stdout, description.stdout]) {
    const { text, encodings } = readable(output);
    // Encrypted payloads are found, so a plain payload's text would have shown in `text`.
    expect(encodings.length).toBeGreaterThan(0);
    expect(new Set(encodings)).toEqual(new Set([ENCRYPTED_ENCODING]));
    for (const [what, secret] of Object.entries(secrets())) {
      expect({ what, stored: text.includes(secret) }).toEqual({ what, stored: false });
    }
  }
});

test('the Temporal CLI given the codec endpoint and the operator token shows them all', async () => {
  const workflowId = workflowIdFor(conversationId);
  const codec = ['--codec-endpoint', `${ingress}/codec`];
  const decoded = await temporalCli(
    'workflow',
    'show',
    '--workflow-id',
    workflowId,
    '--output',
    'json',
    ...codec,
    '--codec-auth',
    `Bearer ${SANDBOX_SECRETS.adminApiToken}`,
  );
  expect(decoded.code).toBe(0);
  const { text } = readable(decoded.stdout);
  for (const [what, secret] of Object.entries(secrets())) {
    expect({ what, shown: text.includes(secret) }).toEqual({ what, shown: true });
  }
  const refused = await temporalCli('workflow', 'show', '--workflow-id', workflowId, '--output', 'json', ...codec);
  expect(refused.code).not.toBe(0);
});

test('the codec endpoint answers the UI’s preflight, decodes only with the operator token or its path token, and encodes only with the former', async () => {
  const uiOrigin = stack.urls.temporalUi!;
  const preflight = await fetch(`${ingress}/codec/${codecPathToken(SANDBOX_SECRETS.adminApiToken)}/decode`, {
    method: 'OPTIONS',
    headers: {
      origin: uiOrigin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type,x-namespace',
    },
  });
  expect(preflight.status).toBe(204);
  expect(preflight.headers.get('access-control-allow-origin')).toBe(uiOrigin);
  expect(preflight.headers.get('access-control-allow-headers')).toContain('x-namespace');
  const stranger = await fetch(`${ingress}/codec/decode`, {
    method: 'OPTIONS',
    headers: { origin: 'http://evil.example' },
  });
  expect(stranger.headers.get('access-control-allow-origin')).toBeNull();

  const history = await temporalCli(
    'workflow',
    'show',
    '--workflow-id',
    workflowIdFor(conversationId),
    '--output',
    'json',
  );
  const body = JSON.stringify({
    payloads: payloadsIn(JSON.parse(history.stdout)).map(({ metadata, data }) => ({ metadata, data })),
  });
  const decode = (url: string, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
      body,
    });
  const statuses = {
    none: (await decode(`${ingress}/codec/decode`)).status,
    wrongBearer: (await decode(`${ingress}/codec/decode`, { authorization: 'Bearer not-the-operator-token' })).status,
    wrongPath: (await decode(`${ingress}/codec/not-the-token/decode`)).status,
    operatorTokenInPath: (await decode(`${ingress}/codec/${SANDBOX_SECRETS.adminApiToken}/decode`)).status,
  };
  expect(statuses).toEqual({ none: 401, wrongBearer: 401, wrongPath: 401, operatorTokenInPath: 401 });
  const decoded = await decode(codecEndpointUrl(ingress, SANDBOX_SECRETS.adminApiToken) + '/decode', {
    origin: uiOrigin,
  });
  expect(decoded.status).toBe(200);
  expect(decoded.headers.get('access-control-allow-origin')).toBe(uiOrigin);
  const { payloads } = (await decoded.json()) as { payloads: JsonPayload[] };
  const text = payloads.map((p) => fromBase64(p.data)).join('\n');
  expect(text).toContain(QUESTION);
  expect(text).toContain(TALENT.email);

  // The path token, handed to every browser that opens the UI, never encrypts: that takes the operator token.
  const plain = JSON.stringify({ payloads: payloads.slice(0, 1) });
  const encode = (url: string, headers: Record<string, string> = {}) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: plain });
  expect((await encode(codecEndpointUrl(ingress, SANDBOX_SECRETS.adminApiToken) + '/encode')).status).toBe(404);
  const sealed = await encode(`${ingress}/codec/encode`, { authorization: `Bearer ${SANDBOX_SECRETS.adminApiToken}` });
  expect(sealed.status).toBe(200);
  expect(JSON.stringify(await sealed.json())).not.toContain(payloads[0]!.data);
});

test('melvin codec-endpoint prints the URL to give the Temporal UI, only to the operator token’s holder', async () => {
  const env = { PATH: process.env.PATH, ADMIN_API_TOKEN: SANDBOX_SECRETS.adminApiToken };
  const printed = await runNode('src/client.ts', ['codec-endpoint', '--ingress', ingress], env);
  expect({ code: printed.code, url: printed.stdout.trim() }).toEqual({
    code: 0,
    url: codecEndpointUrl(ingress, SANDBOX_SECRETS.adminApiToken),
  });
  const refused = await runNode('src/client.ts', ['codec-endpoint', '--ingress', ingress], { PATH: process.env.PATH });
  expect({ code: refused.code, stderr: refused.stderr.trim() }).toEqual({
    code: 1,
    stderr: 'ADMIN_API_TOKEN is required: the codec endpoint’s token is derived from it',
  });
});

describeNeeding(['Chromium'])('in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: await ensureChromium(), args: CHROMIUM_ARGS });
  });
  afterAll(() => browser?.close());

  test('the Temporal UI decodes the run through the codec endpoint and shows what the user wrote', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(`${stack.urls.temporalUi}/namespaces/default/workflows/${workflowIdFor(conversationId)}`);
    await page.getByText('User Metadata', { exact: true }).click({ timeout: 60_000 });
    // The run's summary is encrypted in the server: only a decoded one shows the user's words.
    await textInSomeFrame(page, QUESTION.slice(0, 60), 60_000);
  }, 120_000);
});
