// Two sandbox sessions in a row, and two whole `npm start`s over the same `.data/`, never reuse a conversation or part
// id: no new conversation joins an old one's workflow.
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { freeStackPorts, portEnvironment } from '../../harness/stack';
import { turnOver } from '../../src/operations/conversations';
import { readDevPayloadKeys } from '../../src/config/dev-payload-keys';
import { createDataConverter } from '../../src/encryption/payload-codec';
import { startNpmStart } from '../helpers/processes';
import { IntercomEmulator } from '../../sandbox/intercom/emulator';
import { inboxRouter } from '../../sandbox/intercom/inbox';

/** A webhook receiver that accepts every notification, as the ingress does. */
async function acceptingReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(202, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/intercom`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** One session: a fresh emulator (nothing remembered), two conversations typed in its inbox, each with a reply. */
async function session(webhookUrl: string): Promise<{ conversations: string[]; parts: string[] }> {
  const emulator = new IntercomEmulator({
    token: 'restart-token',
    adminId: '8918000',
    webhook: { url: webhookUrl, secret: 'restart-secret' },
  });
  emulator.mount(inboxRouter(emulator, () => []));
  const url = await emulator.start();
  try {
    const conversations: string[] = [];
    const parts: string[] = [];
    for (const body of ['When will I get paid?', 'Where is my application?']) {
      const response = await fetch(`${url}/inbox/api/conversations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'ana.ruiz@example.com', name: 'Ana Ruiz', body }),
      });
      const { id } = (await response.json()) as { id: string };
      conversations.push(id);
      const { part } = await emulator.userReplies(id, 'Any news?');
      parts.push(emulator.mustGet(id).source.id, part.id);
    }
    return { conversations, parts };
  } finally {
    await emulator.stop();
  }
}

test('a second session numbers conversations and parts past the first, so no workflow joins an old conversation', async () => {
  const receiver = await acceptingReceiver();
  try {
    const first = await session(receiver.url);
    const second = await session(receiver.url);
    const conversations = [...first.conversations, ...second.conversations];
    const parts = [...first.parts, ...second.parts];
    expect(new Set(conversations).size).toBe(4);
    expect(new Set(parts).size).toBe(8);
    expect(conversations.every((id) => /^\d+$/.test(id))).toBe(true);
  } finally {
    await receiver.close();
  }
});

test('two npm start sessions in a row over the same data directory keep their conversations apart', async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'melvin-twice-'));
  /** One session: `npm start`, a conversation typed in its inbox, its answered turn; then Ctrl-C. */
  const session = async (question: string) => {
    const ports = await freeStackPorts();
    const start = await startNpmStart({ ...process.env, ...portEnvironment(ports), MELVIN_DATA_DIR: dataDir });
    const connection = await Connection.connect({ address: `127.0.0.1:${ports.temporal}` });
    try {
      const response = await fetch(`http://127.0.0.1:${ports.intercom}/inbox/api/conversations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'ana.ruiz@example.com', name: 'Ana Ruiz', body: question }),
      });
      const { id } = (await response.json()) as { id: string };
      // npm start encrypts with the key it keeps in the data directory: the second session must have found the first's.
      const client = new Client({ connection, dataConverter: createDataConverter(readDevPayloadKeys(dataDir)) });
      const state = await turnOver(client, id, { timeoutMs: 60_000 });
      // Every conversation of the data directory so far, as this session's Temporal sees them.
      const seen: string[] = [];
      for await (const run of client.workflow.list({ query: `WorkflowType = 'supportConversation'` })) {
        seen.push(run.workflowId);
      }
      return { id, state, seen };
    } finally {
      await connection.close();
      await start.stop();
    }
  };
  const first = await session('When will I get paid for my Austin shift?');
  const second = await session('Where is my application for the Denver job?');
  expect(second.id).not.toBe(first.id);
  // The second session's Temporal holds the first conversation too: the data directory is the same one.
  expect(second.seen).toEqual(
    expect.arrayContaining([`intercom-conversation-${first.id}`, `intercom-conversation-${second.id}`]),
  );
  for (const { state } of [first, second]) {
    expect(state.metadata.conversation.turn_count).toBe(1);
    expect(state.messages.filter((m) => m.role === 'user')).toHaveLength(1);
  }
  expect(second.state.messages[0]?.content).toBe('Where is my application for the Denver job?');
}, 600_000);
