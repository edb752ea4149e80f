// Two sandbox sessions in a row, as two `npm start`s over the same `.data/`, never reuse a conversation or part id.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { IntercomEmulator } from '../sandbox/intercom/emulator';
import { inboxRouter } from '../sandbox/intercom/inbox';

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
