// The resolved-conversation index's store: PostgreSQL with pgvector through `pg`, whether the server is a real one
// (production, compose) or the embedded one `npm start` runs (PGlite with pgvector, scripts/index-database.ts).
import { Pool } from 'pg';
import type { Stage } from '../contract/vocabulary';
import type { Candidate, ExampleRole } from './ranking';
import { namingTokens } from './redact';

/** What the index needs of a PostgreSQL connection. */
export interface Sql {
  query<Row>(text: string, params?: unknown[]): Promise<{ rows: Row[] }>;
  close(): Promise<void>;
}

/** Where the index lives: a PostgreSQL connection string. */
export type StoreLocation = { url: string };

/**
 * One team reply of a resolved conversation, redacted, with its embedding: a candidate before it is scored. `talent` is
 * the hashed key of the talent it answered, for counting how many talents a word was used with.
 */
export type StoredExample = Omit<Candidate, 'similarity'> & {
  closed_at: string;
  model: string;
  embedding: number[];
  talent: string;
};

/**
 * A capitalized word or a link is shown to a draft only once the team used it with this many different talents: a
 * greeting or a sign-off is, a talent's supervisor, employer or street is not.
 */
export const SHARED_BY_TALENTS = 3;

/** Candidates per search, as seed 002 takes them: from the same thread and from every thread, 60 each. */
export const CANDIDATES_PER_SEARCH = 60;

const SCHEMA = `
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS resolved_examples (
  conversation_id text NOT NULL,
  part_id text NOT NULL,
  role text NOT NULL CHECK (role IN ('talent', 'team')),
  text text NOT NULL,
  question text NOT NULL,
  answer text NOT NULL,
  stage text,
  written_at timestamptz NOT NULL,
  closed_at timestamptz NOT NULL,
  model text NOT NULL,
  embedding vector NOT NULL,
  indexed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conversation_id, part_id)
);
CREATE INDEX IF NOT EXISTS resolved_examples_by_model ON resolved_examples (model);
ALTER TABLE resolved_examples ADD COLUMN IF NOT EXISTS talent text NOT NULL DEFAULT '';
DELETE FROM resolved_examples WHERE role = 'talent';
UPDATE resolved_examples SET question = '' WHERE question <> '';
CREATE TABLE IF NOT EXISTS resolved_index_words (
  word text NOT NULL,
  talent text NOT NULL,
  PRIMARY KEY (word, talent)
);
CREATE TABLE IF NOT EXISTS resolved_index_state (
  name text PRIMARY KEY,
  watermark bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
`;

async function connect(location: StoreLocation): Promise<Sql> {
  const pool = new Pool({ connectionString: location.url, max: 4 });
  // An idle connection the server dropped must not crash the worker: the next query opens another.
  pool.on('error', () => undefined);
  return {
    query: async <Row>(text: string, params?: unknown[]) => ({ rows: (await pool.query(text, params)).rows as Row[] }),
    close: () => pool.end(),
  };
}

/** pgvector's text form of a vector. */
function vectorLiteral(vector: number[]): string {
  return `[${vector.map((v) => (Number.isFinite(v) ? v : 0)).join(',')}]`;
}

interface CandidateRow {
  conversation_id: string;
  part_id: string;
  role: ExampleRole;
  text: string;
  question: string;
  answer: string;
  stage: string | null;
  written_at: Date | string;
  similarity: number | string;
}

export class ResolvedIndexStore {
  private constructor(readonly sql: Sql) {}

  /**
   * Connects and makes the tables when they are missing (every statement is idempotent, so replicas may race). An index
   * from before issue 40 loses what it kept of talents' own words: their messages, and the questions beside replies.
   */
  static async open(location: StoreLocation): Promise<ResolvedIndexStore> {
    const sql = await connect(location);
    try {
      for (const statement of SCHEMA.split(';')
        .map((s) => s.trim())
        .filter(Boolean))
        await sql.query(statement);
    } catch (err) {
      await sql.close();
      throw err;
    }
    return new ResolvedIndexStore(sql);
  }

  close(): Promise<void> {
    return this.sql.close();
  }

  /**
   * Inserts the messages, or replaces the ones already stored under the same (conversation, part): indexing a
   * conversation again, after a failure or because it was reopened and closed again, never duplicates a message.
   */
  async upsert(examples: StoredExample[]): Promise<void> {
    for (const e of examples) {
      await this.sql.query(
        `INSERT INTO resolved_examples
           (conversation_id, part_id, role, text, question, answer, stage, written_at, closed_at, model, embedding, talent)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::vector, $12)
         ON CONFLICT (conversation_id, part_id) DO UPDATE SET
           role = EXCLUDED.role, text = EXCLUDED.text, question = EXCLUDED.question, answer = EXCLUDED.answer,
           stage = EXCLUDED.stage, written_at = EXCLUDED.written_at, closed_at = EXCLUDED.closed_at,
           model = EXCLUDED.model, embedding = EXCLUDED.embedding, talent = EXCLUDED.talent, indexed_at = now()`,
        [
          e.conversation_id,
          e.part_id,
          e.role,
          e.text,
          e.question,
          e.answer,
          e.stage,
          e.written_at,
          e.closed_at,
          e.model,
          vectorLiteral(e.embedding),
          e.talent,
        ],
      );
      const words = namingTokens(e.text);
      if (words.length) {
        await this.sql.query(
          `INSERT INTO resolved_index_words (word, talent) SELECT unnest($1::text[]), $2 ON CONFLICT DO NOTHING`,
          [words, e.talent],
        );
      }
    }
  }

  /** Takes a conversation out of the index (one handed over as sensitive since it was indexed). */
  async remove(conversationId: string): Promise<number> {
    const { rows } = await this.sql.query<{ part_id: string }>(
      'DELETE FROM resolved_examples WHERE conversation_id = $1 RETURNING part_id',
      [conversationId],
    );
    return rows.length;
  }

  /** Of the given words and links, those the team used with at least `SHARED_BY_TALENTS` different talents. */
  async shared(words: string[], minTalents = SHARED_BY_TALENTS): Promise<Set<string>> {
    if (words.length === 0) return new Set();
    const { rows } = await this.sql.query<{ word: string }>(
      `SELECT word FROM resolved_index_words WHERE word = ANY($1::text[]) GROUP BY word HAVING count(*) >= $2`,
      [words, minTalents],
    );
    return new Set(rows.map((r) => r.word));
  }

  /** The close time (UNIX seconds) up to which every closed conversation is indexed; null before the first run. */
  async watermark(name = 'closed_conversations'): Promise<number | null> {
    const { rows } = await this.sql.query<{ watermark: string | number }>(
      'SELECT watermark FROM resolved_index_state WHERE name = $1',
      [name],
    );
    return rows[0] ? Number(rows[0].watermark) : null;
  }

  /** Moves the watermark forward only: a late or repeated run never takes it back. */
  async advanceWatermark(value: number, name = 'closed_conversations'): Promise<number> {
    const { rows } = await this.sql.query<{ watermark: string | number }>(
      `INSERT INTO resolved_index_state (name, watermark) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET watermark = GREATEST(resolved_index_state.watermark, EXCLUDED.watermark),
         updated_at = now()
       RETURNING watermark`,
      [name, value],
    );
    return Number(rows[0]!.watermark);
  }

  /**
   * The nearest stored messages to the vector by cosine similarity, among those embedded by the same model: the
   * conversation's own (when given) and every conversation's, each search up to `perSearch`.
   */
  async nearest(input: {
    vector: number[];
    model: string;
    conversationId: string | null;
    perSearch?: number;
  }): Promise<Candidate[]> {
    const limit = input.perSearch ?? CANDIDATES_PER_SEARCH;
    const literal = vectorLiteral(input.vector);
    const select = `SELECT conversation_id, part_id, role, text, question, answer, stage, written_at,
        1 - (embedding <=> $1::vector) AS similarity
      FROM resolved_examples
      WHERE model = $2 AND vector_dims(embedding) = $3`;
    const order = 'ORDER BY embedding <=> $1::vector, conversation_id, part_id LIMIT';
    const dims = input.vector.length;
    const global = await this.sql.query<CandidateRow>(`${select} ${order} $4`, [literal, input.model, dims, limit]);
    const thread = input.conversationId
      ? await this.sql.query<CandidateRow>(`${select} AND conversation_id = $5 ${order} $4`, [
          literal,
          input.model,
          dims,
          limit,
          input.conversationId,
        ])
      : { rows: [] };
    return [...thread.rows, ...global.rows].map((row) => ({
      conversation_id: row.conversation_id,
      part_id: row.part_id,
      role: row.role,
      text: row.text,
      question: row.question,
      answer: row.answer,
      stage: row.stage as Stage | null,
      written_at: new Date(row.written_at).toISOString(),
      similarity: Number(row.similarity),
    }));
  }

  /** Every stored (conversation, part) key, for tests and the evaluation. */
  async keys(): Promise<
    { conversation_id: string; part_id: string; role: ExampleRole; text: string; stage: Stage | null }[]
  > {
    const { rows } = await this.sql.query<{
      conversation_id: string;
      part_id: string;
      role: ExampleRole;
      text: string;
      stage: Stage | null;
    }>('SELECT conversation_id, part_id, role, text, stage FROM resolved_examples ORDER BY conversation_id, part_id');
    return rows;
  }
}
