// The resolved-conversation index's store through `pg`, against PostgreSQL with the real pgvector: the embedded
// database `npm start` runs (PGlite with pgvector over the wire protocol), in memory and in a data directory. Debian 12
// packages no pgvector for the machine's PostgreSQL 15, so a production server is checked in compose only (statically).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedIndexDatabase } from '../../src/resolved-index/embedded-process';
import { ResolvedIndexStore, type StoredExample } from '../../src/resolved-index/store';

jest.setTimeout(300_000);

const example = (conversation: string, part: string, embedding: number[], extra: Partial<StoredExample> = {}) => ({
  conversation_id: conversation,
  part_id: part,
  role: 'team' as const,
  text: `reply ${conversation}/${part}`,
  question: 'q',
  answer: 'a',
  stage: null,
  written_at: '2026-11-20T10:00:00.000Z',
  closed_at: '2026-11-20T11:00:00.000Z',
  model: 'm',
  embedding,
  talent: `talent-${conversation}`,
  ...extra,
});

test('upserts by (conversation, part), finds the nearest by cosine per model, and moves the watermark forward only', async () => {
  const database = await startEmbeddedIndexDatabase();
  const store = await ResolvedIndexStore.open({ url: database.url });
  try {
    await store.upsert([
      example('1', '10', [1, 0, 0]),
      example('2', '20', [0, 1, 0]),
      example('2', '21', [0.7, 0.7, 0]),
    ]);
    // The same keys again (a rerun after a failure), one changed: replaced, not duplicated.
    await store.upsert([example('1', '10', [1, 0, 0], { text: 'edited' }), example('2', '20', [0, 1, 0])]);
    // Another model's vectors of another size are never compared with these.
    await store.upsert([example('3', '30', [1, 0], { model: 'other' })]);
    expect((await store.keys()).map((k) => `${k.conversation_id}/${k.part_id}:${k.text}`)).toEqual([
      '1/10:edited',
      '2/20:reply 2/20',
      '2/21:reply 2/21',
      '3/30:reply 3/30',
    ]);
    const near = await store.nearest({ vector: [1, 0.1, 0], model: 'm', conversationId: '2', perSearch: 2 });
    // The thread's own two first, then the two nearest of all; similarity is cosine.
    expect(near.map((c) => `${c.conversation_id}/${c.part_id}`)).toEqual(['2/21', '2/20', '1/10', '2/21']);
    expect(near[2]!.similarity).toBeCloseTo(1 / Math.sqrt(1.01), 5);
    expect(near[2]).toMatchObject({ role: 'team', stage: null, written_at: '2026-11-20T10:00:00.000Z' });
    expect(await store.watermark()).toBeNull();
    expect(await store.advanceWatermark(1_800_000_100)).toBe(1_800_000_100);
    expect(await store.advanceWatermark(1_800_000_000)).toBe(1_800_000_100);
    expect(await store.watermark()).toBe(1_800_000_100);
  } finally {
    await store.close();
    await database.stop();
  }
});

test('a word or link is shared once used with three different talents; an old index loses the talents’ words', async () => {
  const database = await startEmbeddedIndexDatabase();
  // An index as it was before issue 40: the talent's messages stored, and the question beside each reply.
  const old = await ResolvedIndexStore.open({ url: database.url });
  await old.sql.query(`INSERT INTO resolved_examples
      (conversation_id, part_id, role, text, question, answer, written_at, closed_at, model, embedding)
    VALUES ('8', '1', 'talent', 'my boss Ivo Petrov', 'my boss Ivo Petrov', 'Howdy!', now(), now(), 'm', '[1,0]'),
           ('8', '2', 'team', 'Howdy!', 'my boss Ivo Petrov', 'Howdy!', now(), now(), 'm', '[1,0]')`);
  await old.close();
  const store = await ResolvedIndexStore.open({ url: database.url });
  try {
    const rows = await store.sql.query<{ role: string; text: string; question: string }>(
      'SELECT role, text, question FROM resolved_examples',
    );
    expect(rows.rows).toEqual([{ role: 'team', text: 'Howdy!', question: '' }]);
    const text = (t: string) => ({ text: `Howdy! Ask Acme at https://help.example.com/pay — ${t} Crew` });
    await store.upsert([
      example('1', '1', [1, 0], { ...text('Maple'), talent: 'a' }),
      // The same talent twice counts once.
      example('2', '1', [1, 0], { ...text('Maple'), talent: 'a' }),
      example('3', '1', [1, 0], { ...text('Maple'), talent: 'b' }),
      example('4', '1', [1, 0], { ...text('Oak'), talent: 'c' }),
    ]);
    const shared = await store.shared([
      'Howdy',
      'Acme',
      'https://help.example.com/pay',
      'Maple',
      'Oak',
      'Crew',
      'Nope',
    ]);
    expect([...shared].sort()).toEqual(['Acme', 'Crew', 'Howdy', 'https://help.example.com/pay']);
    expect(await store.remove('4')).toBe(1);
    expect((await store.keys()).map((k) => k.conversation_id)).toEqual(['1', '2', '3', '8']);
  } finally {
    await store.close();
    await database.stop();
  }
});

test('in a data directory, what was stored is there when the database starts again', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'melvin-index-'));
  try {
    for (const round of [1, 2]) {
      const database = await startEmbeddedIndexDatabase({ dataDir: dir });
      const store = await ResolvedIndexStore.open({ url: database.url });
      try {
        if (round === 1) {
          await store.upsert([example('1', '10', [1, 0])]);
          await store.advanceWatermark(42);
        } else {
          expect(await store.keys()).toHaveLength(1);
          expect(await store.watermark()).toBe(42);
        }
      } finally {
        await store.close();
        await database.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
