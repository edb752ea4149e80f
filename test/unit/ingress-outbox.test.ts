// The ingress's outbox on a real directory: what is acknowledged is forwarded, in order per conversation, through
// Temporal failures, a crash at any point, a line cut short and a line that no longer parses.
import * as fsPromises from 'node:fs/promises';
import { appendFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { Outbox, OutboxRejection, type Forwarded, type OutboxEntry } from '../../src/ingress/outbox';
import { EncryptionCodec, generatePayloadKey } from '../../src/encryption/payload-codec';

let dirs: string[] = [];
let logged: string[] = [];
beforeEach(() => {
  logged = [];
  const keep = (text: string | Uint8Array) => {
    logged.push(String(text));
    return true;
  };
  jest.spyOn(process.stdout, 'write').mockImplementation(keep);
  jest.spyOn(process.stderr, 'write').mockImplementation(keep);
});
async function freshDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'melvin-outbox-'));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  jest.restoreAllMocks();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  dirs = [];
});

function message(conversationId: string, notificationId: string): OutboxEntry {
  return {
    kind: 'message',
    conversationId,
    trigger: { topic: 'conversation.user.replied', notificationId, receivedAt: '2026-11-27T00:00:00.000Z' },
  };
}
const idOf = (entry: OutboxEntry) =>
  entry.kind === 'message' ? entry.trigger.notificationId : entry.action.notificationId;

/** A forward that records what Temporal took, in the order it took it. */
function recorder() {
  const taken: OutboxEntry[] = [];
  const forward = async (entry: OutboxEntry): Promise<Forwarded> => {
    await new Promise((r) => setImmediate(r));
    taken.push(entry);
    return 'signalled';
  };
  return { taken, forward };
}

async function waitUntil(holds: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!holds()) {
    if (Date.now() > until) throw new Error('the condition did not hold in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('the ingress outbox', () => {
  test('every acknowledged entry reaches Temporal, each conversation in order, whatever fails and wherever it crashes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 25 }),
        fc.array(fc.boolean(), { maxLength: 40 }),
        fc.integer({ min: 1, max: 4 }),
        fc.nat({ max: 30 }),
        async (conversations, failures, concurrency, crashAfter) => {
          const dir = await freshDir();
          const taken: OutboxEntry[] = [];
          let crashed = false;
          let attempt = 0;
          // Before the crash: Temporal fails some forwards; after it, the first process never hears back.
          const first = await Outbox.open({
            dir,
            concurrency,
            firstRetryMs: 1,
            forward: async (entry) => {
              const fails = failures[attempt++ % Math.max(failures.length, 1)] ?? false;
              await new Promise((r) => setImmediate(r));
              if (crashed) return new Promise<never>(() => undefined);
              if (fails) throw new Error('UNAVAILABLE');
              taken.push(entry);
              return 'signalled';
            },
          });
          const entries = conversations.map((c, i) => message(`c${c}`, `n${i}`));
          const acknowledged: OutboxEntry[] = [];
          await Promise.all(
            entries.map(async (entry, i) => {
              if (i >= crashAfter) return;
              await first.append(entry);
              if (!crashed) acknowledged.push(entry);
            }),
          );
          await new Promise((r) => setTimeout(r, crashAfter % 5));
          crashed = true;

          const second = recorder();
          const next = await Outbox.open({ dir, concurrency, forward: second.forward });
          for (const entry of entries.slice(crashAfter)) {
            await next.append(entry);
            acknowledged.push(entry);
          }
          await next.drained();
          await next.close();
          await first.close(0);
          // Each process hands an entry over once; only a crash can make the next one hand it over again.
          for (const forwarded of [taken, second.taken]) expect(new Set(forwarded).size).toBe(forwarded.length);
          const all = [...taken, ...second.taken].map(idOf);
          for (const entry of acknowledged) expect(all).toContain(idOf(entry));
          // Per conversation, the first time each entry reached Temporal follows the order they were acknowledged in.
          for (const c of new Set(conversations)) {
            const firstSeen = [...new Set(all)].filter(
              (id) => entries.find((e) => idOf(e) === id)!.conversationId === `c${c}`,
            );
            const order = entries.filter((e) => e.conversationId === `c${c}`).map(idOf);
            expect(firstSeen).toEqual(order.filter((id) => firstSeen.includes(id)));
          }
          // Everything forwarded is checkpointed: a third process has nothing to send.
          const third = recorder();
          const last = await Outbox.open({ dir, forward: third.forward });
          await last.drained();
          await last.close();
          expect(third.taken).toEqual([]);
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);

  test('a rejected file that cannot be written keeps the entry and the ingress up; it is kept once the disk is back', async () => {
    const dir = await freshDir();
    // A directory where the file should be: every write to it fails, as on a full or read-only volume.
    await mkdir(path.join(dir, 'rejected.jsonl'));
    const outcomes: string[] = [];
    const outbox = await Outbox.open({
      dir,
      firstRetryMs: 20,
      forward: async (entry) => {
        if (idOf(entry) === 'bad') throw new OutboxRejection('PERMISSION_DENIED: wrong namespace');
        return 'signalled';
      },
      onForwarded: (entry, outcome) => outcomes.push(`${idOf(entry)} ${outcome}`),
    });
    await outbox.append(message('a', 'bad'));
    await outbox.append(message('b', 'good'));
    await waitUntil(
      () => outcomes.includes('good signalled') && logged.join('').includes('rejected entry not written'),
    );
    expect(outcomes).toEqual(['good signalled']);
    // The entry it could not keep still waits, and the checkpoint cannot pass it.
    expect(outbox.backlog.pending).toBe(1);
    expect(logged.join('')).toContain('"message":"outbox conversation held back: the rejected file cannot be written"');

    await rm(path.join(dir, 'rejected.jsonl'), { recursive: true });
    await outbox.drained();
    await outbox.close();
    expect(outcomes).toEqual(['good signalled', 'bad rejected']);
    const kept = JSON.parse(await readFile(path.join(dir, 'rejected.jsonl'), 'utf8')) as { reason: string };
    expect(kept.reason).toBe('PERMISSION_DENIED: wrong namespace');
  });

  test('a journal larger than one string can hold is read whole: the entries after its first 512 MiB are forwarded', async () => {
    const dir = await freshDir();
    const blocked = await Outbox.open({ dir, forward: () => new Promise<never>(() => undefined) });
    await blocked.append(message('a', 'n1'));
    await blocked.close(0);
    // 540 entries of 1 MiB each, already forwarded (below the checkpoint), then one that is not: past V8's string limit.
    const journal = path.join(dir, 'journal.jsonl');
    const text = 'x'.repeat(1 << 20);
    const forwarded = await fsPromises.open(journal, 'a');
    for (let seq = 2; seq < 542; seq++) {
      const entry = { ...message('old', `old-${seq}`), message: { author: 'user', text } };
      await forwarded.write(`${JSON.stringify({ seq, at: 1, entry })}\n`);
    }
    await forwarded.write(`${JSON.stringify({ seq: 542, at: 1, entry: message('b', 'n542') })}\n`);
    await forwarded.close();
    await writeFile(path.join(dir, 'forwarded'), '541');
    expect((await stat(journal)).size).toBeGreaterThan(0x1fffffe8);
    // seq 1 is below the checkpoint too: only the last entry is still to forward.
    const { taken, forward } = recorder();
    const outbox = await Outbox.open({ dir, forward });
    await outbox.drained();
    await outbox.close();
    expect(taken.map(idOf)).toEqual(['n542']);
  }, 60_000);

  test('a journal that exists but cannot be read stops the start with a clear error, and is left as it is', async () => {
    const dir = await freshDir();
    await mkdir(path.join(dir, 'journal.jsonl'));
    await expect(Outbox.open({ dir, forward: recorder().forward })).rejects.toThrow(
      /the outbox cannot read .*journal\.jsonl \(EISDIR.*it does not start rather than take the journal for empty/,
    );
    expect((await stat(path.join(dir, 'journal.jsonl'))).isDirectory()).toBe(true);
  });

  test('the journal is read a chunk at a time: lines across chunks, a multi-byte text, a cut last line', async () => {
    for (const chunk of [1, 7, 64, 4096]) {
      const dir = await freshDir();
      const blocked = await Outbox.open({ dir, forward: () => new Promise<never>(() => undefined) });
      const texts = ['é', '日本語のメッセージ', 'a'.repeat(300), '🙂 ok'];
      for (const [i, text] of texts.entries()) {
        await blocked.append({ ...message(`c${i}`, `n${i}`), message: { author: 'user', text } } as OutboxEntry);
      }
      await blocked.close(0);
      await appendFile(path.join(dir, 'journal.jsonl'), '{"seq":9,"at":1,"entr');
      const { taken, forward } = recorder();
      const outbox = await Outbox.open({ dir, forward, readChunkBytes: chunk });
      await outbox.drained();
      await outbox.close();
      expect({ chunk, texts: taken.map((e) => (e.kind === 'message' ? e.message?.text : null)).sort() }).toEqual({
        chunk,
        texts: [...texts].sort(),
      });
      const lines = (await readFile(path.join(dir, 'journal.jsonl'), 'utf8')).split('\n');
      expect(lines.at(-1)).toBe('');
      expect(lines).toHaveLength(texts.length + 1);
    }
  });

  test('a line cut short by a crash was never acknowledged: it is cut off, and later entries follow it', async () => {
    const dir = await freshDir();
    const blocked = await Outbox.open({ dir, forward: () => new Promise<never>(() => undefined) });
    await blocked.append(message('a', 'n1'));
    await blocked.append(message('b', 'n2'));
    await appendFile(path.join(dir, 'journal.jsonl'), '{"seq":3,"at":1,"entry":{"kind":"mess');

    const { taken, forward } = recorder();
    const outbox = await Outbox.open({ dir, forward });
    await outbox.append(message('c', 'n3'));
    await outbox.drained();
    await outbox.close();
    await blocked.close(0);
    expect(taken.map(idOf).sort()).toEqual(['n1', 'n2', 'n3']);
    const lines = (await readFile(path.join(dir, 'journal.jsonl'), 'utf8')).trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { seq: number }).seq)).toEqual([1, 2, 3]);
  });

  test('a line that no longer parses goes to rejected.jsonl with where it was; the others are forwarded', async () => {
    const dir = await freshDir();
    const blocked = await Outbox.open({ dir, forward: () => new Promise<never>(() => undefined) });
    await blocked.append(message('a', 'n1'));
    await appendFile(path.join(dir, 'journal.jsonl'), '{"seq":2,"at":1,"entry":{"kind":"letter"}}\n');
    await blocked.append(message('b', 'n3'));

    const { taken, forward } = recorder();
    const outbox = await Outbox.open({ dir, forward });
    await outbox.drained();
    await outbox.close();
    await blocked.close(0);
    expect(taken.map(idOf).sort()).toEqual(['n1', 'n3']);
    const rejected = await readFile(path.join(dir, 'rejected.jsonl'), 'utf8');
    expect(rejected).toContain('journal.jsonl line 2');
    expect(rejected).toContain('entry.kind');
    // The line left the journal: the next start neither rejects it again nor loses the entries around it.
    expect(await readFile(path.join(dir, 'journal.jsonl'), 'utf8')).not.toContain('letter');
    const again = await Outbox.open({ dir, forward });
    await again.append(message('c', 'n4'));
    await again.drained();
    await again.close();
    expect(await readFile(path.join(dir, 'rejected.jsonl'), 'utf8')).toBe(rejected);
    expect(taken.map(idOf).sort()).toEqual(['n1', 'n3', 'n4']);
  });

  test('unreadable lines anywhere leave the journal, once, and every readable entry is forwarded once', async () => {
    const kinds = fc.constantFrom('entry', 'garbled', 'blank');
    await fc.assert(
      fc.asyncProperty(fc.array(kinds, { minLength: 1, maxLength: 8 }), async (lines) => {
        const dir = await freshDir();
        const blocked = await Outbox.open({ dir, forward: () => new Promise<never>(() => undefined) });
        const expected: string[] = [];
        for (const [i, kind] of lines.entries()) {
          if (kind === 'entry') {
            await blocked.append(message(`c${i}`, `n${i}`));
            expected.push(`n${i}`);
          } else {
            await appendFile(path.join(dir, 'journal.jsonl'), kind === 'blank' ? '\n' : `{"seq":"${i}","garbled":1}\n`);
          }
        }
        await blocked.close(0);
        const { taken, forward } = recorder();
        for (let start = 0; start < 2; start++) {
          const outbox = await Outbox.open({ dir, forward });
          await outbox.drained();
          await outbox.close();
        }
        expect(taken.map(idOf).sort()).toEqual(expected.sort());
        const rejected = await readFile(path.join(dir, 'rejected.jsonl'), 'utf8').catch(() => '');
        expect(rejected.split('\n').filter(Boolean)).toHaveLength(lines.filter((k) => k === 'garbled').length);
        expect(await readFile(path.join(dir, 'journal.jsonl'), 'utf8')).not.toContain('garbled');
      }),
      { numRuns: 30 },
    );
  });

  test('an entry Temporal refuses for good is kept in rejected.jsonl with the reason, and not tried again', async () => {
    const dir = await freshDir();
    const outcomes: string[] = [];
    let calls = 0;
    const outbox = await Outbox.open({
      dir,
      forward: async (entry) => {
        calls++;
        if (idOf(entry) === 'bad') throw new OutboxRejection('INVALID_ARGUMENT: summary too long');
        return 'signalled';
      },
      onForwarded: (entry, outcome) => outcomes.push(`${idOf(entry)} ${outcome}`),
    });
    await outbox.append(message('a', 'bad'));
    await outbox.append(message('a', 'good'));
    await outbox.drained();
    await outbox.close();
    expect(calls).toBe(2);
    expect(outcomes).toEqual(['bad rejected', 'good signalled']);
    const rejected = JSON.parse(await readFile(path.join(dir, 'rejected.jsonl'), 'utf8')) as { reason: string };
    expect(rejected.reason).toBe('INVALID_ARGUMENT: summary too long');
    expect(logged.join('')).toContain('"message":"outbox entry rejected by Temporal"');
  });

  test('while Temporal fails, entries wait and the backlog says so; they go once it answers', async () => {
    const dir = await freshDir();
    let up = false;
    const taken: string[] = [];
    const outbox = await Outbox.open({
      dir,
      firstRetryMs: 5,
      forward: async (entry) => {
        if (!up) throw new Error('UNAVAILABLE');
        taken.push(idOf(entry));
        return 'signalled';
      },
    });
    await Promise.all([outbox.append(message('a', 'n1')), outbox.append(message('b', 'n2'))]);
    await new Promise((r) => setTimeout(r, 50));
    expect(outbox.backlog.pending).toBe(2);
    expect(outbox.backlog.oldestSeconds).toBeGreaterThan(0);
    up = true;
    await outbox.drained();
    await outbox.close();
    expect(taken.sort()).toEqual(['n1', 'n2']);
    expect(outbox.backlog).toEqual({ pending: 0, oldestSeconds: 0 });
  });

  test('an entry that keeps failing holds back only its own conversation: the others, takeovers included, go on', async () => {
    const dir = await freshDir();
    const events: string[] = [];
    const outbox = await Outbox.open({
      dir,
      firstRetryMs: 200,
      forward: async (entry) => {
        await new Promise((r) => setImmediate(r));
        if (entry.conversationId === 'stuck') {
          events.push(`failed ${idOf(entry)}`);
          throw new Error('INTERNAL: this one workflow cannot take it');
        }
        events.push(`took ${idOf(entry)}`);
        return 'signalled';
      },
    });
    await outbox.append(message('stuck', 's1'));
    await waitUntil(() => events.includes('failed s1'));
    // Behind the failing entry: its own conversation's next message, then other conversations' messages and a takeover.
    await outbox.append(message('stuck', 's2'));
    await outbox.append(message('b', 'b1'));
    await outbox.append({ kind: 'team', conversationId: 'c', action: { notificationId: 't1', action: 'assigned' } });
    await outbox.append(message('d', 'd1'));
    await waitUntil(() => ['took b1', 'took t1', 'took d1'].every((e) => events.includes(e)));
    // The others went before the failing entry was tried again, and its conversation's order held: s2 never went first.
    expect(events.filter((e) => e.startsWith('failed'))).toEqual(['failed s1']);
    expect(events).not.toContain('took s2');
    expect(outbox.backlog.pending).toBe(2);
    await outbox.close(0);
    // What it left stays for the next process, in order. (The checkpoint cannot pass s1, so the entries behind it go
    // again too, which the workflows ignore as notifications they have seen.)
    const next = recorder();
    const reopened = await Outbox.open({ dir, forward: next.forward });
    await reopened.drained();
    await reopened.close();
    expect(next.taken.map(idOf).filter((id) => id.startsWith('s'))).toEqual(['s1', 's2']);
  });

  test('when forwards of different conversations fail in a row, the whole forwarder pauses: a dead server is not hammered', async () => {
    const dir = await freshDir();
    let attempts = 0;
    let up = false;
    const taken: string[] = [];
    const outbox = await Outbox.open({
      dir,
      firstRetryMs: 50,
      forward: async (entry) => {
        attempts += 1;
        await new Promise((r) => setImmediate(r));
        if (!up) throw new Error('UNAVAILABLE: connection refused');
        taken.push(idOf(entry));
        return 'signalled';
      },
    });
    await Promise.all(Array.from({ length: 100 }, (_, i) => outbox.append(message(`c${i}`, `n${i}`))));
    await new Promise((r) => setTimeout(r, 400));
    // Paused as a whole (50, 100, 200 ms…), a few rounds of at most `concurrency` tries each; paused one conversation at
    // a time, each of the 100 would have been tried three times or more.
    expect(attempts).toBeLessThan(60);
    up = true;
    await outbox.drained();
    await outbox.close();
    expect(taken).toHaveLength(100);
  });

  test('a pause timer that fires early by the clock still resumes forwarding', async () => {
    // Node times a timer by a millisecond-truncated monotonic clock, so it can fire up to a millisecond before
    // Date.now() says its time has come; here Date.now() runs 3 ms behind once the pause is set, to make that certain.
    const realNow = Date.now.bind(Date);
    let lagMs = 0;
    jest.spyOn(Date, 'now').mockImplementation(() => realNow() - lagMs);
    const dir = await freshDir();
    let failed = false;
    const taken: string[] = [];
    const outbox = await Outbox.open({
      dir,
      firstRetryMs: 5,
      forward: async (entry) => {
        if (!failed) {
          failed = true;
          setImmediate(() => (lagMs = 3));
          throw new Error('UNAVAILABLE');
        }
        taken.push(idOf(entry));
        return 'signalled';
      },
    });
    await outbox.append(message('a', 'n1'));
    await outbox.drained();
    await outbox.close();
    expect(taken).toEqual(['n1']);
  }, 10_000);

  test('a journal whose entries are all forwarded is emptied past its size, and numbering goes on after it', async () => {
    const dir = await freshDir();
    const { taken, forward } = recorder();
    const outbox = await Outbox.open({ dir, forward, compactBytes: 500 });
    for (let i = 0; i < 10; i++) await outbox.append(message('a', `n${i}`));
    await outbox.drained();
    await outbox.close();
    expect(taken).toHaveLength(10);
    expect((await stat(path.join(dir, 'journal.jsonl'))).size).toBe(0);
    expect(await readFile(path.join(dir, 'forwarded'), 'utf8')).toBe('10');

    const again = recorder();
    const reopened = await Outbox.open({ dir, forward: again.forward });
    await reopened.append(message('a', 'n10'));
    await reopened.drained();
    await reopened.close();
    expect(again.taken.map(idOf)).toEqual(['n10']);
    expect(await readFile(path.join(dir, 'journal.jsonl'), 'utf8')).toMatch(/^\{"seq":11,/);
  });

  test('forwarded lines leave the disk within the compaction interval, even if nothing else comes', async () => {
    const dir = await freshDir();
    const { taken, forward } = recorder();
    const outbox = await Outbox.open({ dir, forward, compactAfterMs: 200 });
    await outbox.append(message('a', 'n1'));
    await outbox.drained();
    expect(taken.map(idOf)).toEqual(['n1']);
    // Small, and the last emptying was just now: still there.
    expect((await stat(path.join(dir, 'journal.jsonl'))).size).toBeGreaterThan(0);
    await waitUntil(() => statSync(path.join(dir, 'journal.jsonl')).size === 0, 2_000);
    // A line still waiting is never cut: emptying waits until everything is forwarded.
    let up = false;
    const heldDir = await freshDir();
    const held = await Outbox.open({
      dir: heldDir,
      compactAfterMs: 1,
      firstRetryMs: 5,
      forward: async () => {
        if (!up) throw new Error('UNAVAILABLE');
        return 'signalled';
      },
    });
    await held.append(message('a', 'n1'));
    await new Promise((r) => setTimeout(r, 50));
    expect(held.backlog.pending).toBe(1);
    expect(statSync(path.join(heldDir, 'journal.jsonl')).size).toBeGreaterThan(0);
    up = true;
    await held.drained();
    await held.close();
    await outbox.close();
  });

  test('the journal, the rejected file and the checkpoint are readable by the ingress’s own user only', async () => {
    const dir = path.join(await freshDir(), 'outbox');
    const outbox = await Outbox.open({
      dir,
      forward: async (entry) => {
        if (idOf(entry) === 'bad') throw new OutboxRejection('INVALID_ARGUMENT: too big');
        return 'signalled';
      },
    });
    await outbox.append(message('a', 'bad'));
    await outbox.append(message('b', 'good'));
    await outbox.drained();
    await outbox.close();
    const mode = async (name: string) => (await stat(path.join(dir, name))).mode & 0o777;
    expect(await mode('.')).toBe(0o700);
    for (const file of ['journal.jsonl', 'rejected.jsonl', 'forwarded']) expect(await mode(file)).toBe(0o600);
  });

  test('with a codec, nothing of a talent’s is on disk in the clear; rotated keys still open old lines', async () => {
    const dir = await freshDir();
    const [old, current] = [generatePayloadKey('k-old'), generatePayloadKey('k-new')];
    const withText = (id: string, text: string): OutboxEntry => ({
      ...(message('c9', id) as Extract<OutboxEntry, { kind: 'message' }>),
      message: { author: 'Ana Quintero', text },
    });
    const first = await Outbox.open({
      dir,
      codec: new EncryptionCodec([old]),
      forward: () => new Promise<never>(() => undefined),
    });
    await first.append(withText('n1', 'my iban is DE44 5001 0517 5407 3249 31'));
    await first.close(0);
    // Written before any key, by an older ingress: still read, and sealed when the journal is opened with a key.
    await appendFile(
      path.join(dir, 'journal.jsonl'),
      `${JSON.stringify({ seq: 2, at: Date.now(), entry: withText('n2', 'plain from before') })}\n`,
    );
    const taken: OutboxEntry[] = [];
    const second = await Outbox.open({
      dir,
      codec: new EncryptionCodec([current, old]),
      forward: async (entry) => {
        if (idOf(entry) === 'n3') throw new OutboxRejection('INVALID_ARGUMENT: too big');
        taken.push(entry);
        return 'signalled';
      },
    });
    await second.append(withText('n3', 'refused, and kept sealed'));
    await second.drained();
    await second.close();
    expect(taken.map(idOf)).toEqual(['n1', 'n2']);
    expect(taken[0]).toEqual(withText('n1', 'my iban is DE44 5001 0517 5407 3249 31'));
    const onDisk =
      (await readFile(path.join(dir, 'journal.jsonl'), 'utf8')) +
      (await readFile(path.join(dir, 'rejected.jsonl'), 'utf8'));
    // Base64 has no spaces or commas: none of these can appear in a sealed line by chance.
    for (const secret of ['Ana Quintero', 'my iban', 'DE44 5001', 'refused, and kept'])
      expect(onDisk).not.toContain(secret);
    expect(onDisk).toContain('"sealed":');
    expect(onDisk).not.toContain('"entry":');
  });

  test('a sealed journal opened without its key stops the start with a clear error, and is left as it is', async () => {
    const dir = await freshDir();
    const key = generatePayloadKey('k1');
    const first = await Outbox.open({ dir, codec: new EncryptionCodec([key]), forward: () => new Promise(() => {}) });
    await first.append(message('a', 'n1'));
    await first.close(0);
    const before = await readFile(path.join(dir, 'journal.jsonl'), 'utf8');
    for (const codec of [undefined, new EncryptionCodec([generatePayloadKey('k2')])]) {
      await expect(Outbox.open({ dir, codec, forward: async () => 'signalled' })).rejects.toThrow(
        /cannot open .*journal\.jsonl line 1 .*give it the key/,
      );
    }
    expect(await readFile(path.join(dir, 'journal.jsonl'), 'utf8')).toBe(before);
    await expect(stat(path.join(dir, 'rejected.jsonl'))).rejects.toThrow('ENOENT');
  });

  test('a sealed line altered on disk goes to rejected.jsonl as it is; the others are forwarded', async () => {
    const dir = await freshDir();
    const codec = new EncryptionCodec([generatePayloadKey('k1')]);
    const first = await Outbox.open({ dir, codec, forward: () => new Promise(() => {}) });
    await first.append(message('a', 'n1'));
    await first.append(message('b', 'n2'));
    await first.close(0);
    const file = path.join(dir, 'journal.jsonl');
    const [one, two] = (await readFile(file, 'utf8')).trim().split('\n');
    const line = JSON.parse(one!) as { sealed: string };
    const bytes = Buffer.from(line.sealed, 'base64');
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 1, bytes.length - 1);
    await writeFile(file, `${JSON.stringify({ ...line, sealed: bytes.toString('base64') })}\n${two}\n`);
    const next = recorder();
    const reopened = await Outbox.open({ dir, codec, forward: next.forward });
    await reopened.drained();
    await reopened.close();
    expect(next.taken.map(idOf)).toEqual(['n2']);
    expect(await readFile(path.join(dir, 'rejected.jsonl'), 'utf8')).toContain('does not decrypt');
  });

  test('appends made together share one sync, and each resolves only once it is on disk', async () => {
    const dir = await freshDir();
    const outbox = await Outbox.open({ dir, forward: () => new Promise<never>(() => undefined) });
    await Promise.all(Array.from({ length: 50 }, (_, i) => outbox.append(message(`c${i}`, `n${i}`))));
    const lines = (await readFile(path.join(dir, 'journal.jsonl'), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(50);
    await outbox.close(0);
    await expect(outbox.append(message('c', 'late'))).rejects.toThrow('closed');
  });
});
