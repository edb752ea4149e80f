// The resolved-conversation index's store: PostgreSQL with pgvector through `pg`, whether the server is a real one
// (production, compose) or the embedded one `npm start` runs (PGlite with pgvector, scripts/index-database.ts).
import { Pool } from 'pg';
import type { Stage } from '../contract/vocabulary';
import type { Candidate, ExampleRole } from './ranking';

/** What the index needs of a PostgreSQL connection. */
export interface Sql {
  query<Row>(text: string, params?: unknown[]): Promise<{ rows: Row[] }>;
  close(): Promise<void>;
}

/** Where the index lives: a PostgreSQL connection string. */
export type StoreLocation = { url: string };

/** One message of a resolved conversation, redacted, with its pair and its embedding: a candidate before it is scored. */
export type StoredExample = Omit<Candidate, 'similarity'> & { closed_at: string; model: string; embedding: number[] };

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

  /** Connects and makes the tables when they are missing (every statement is idempotent, so replicas may race). */
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
           (conversation_id, part_id, role, text, question, answer, stage, written_at, closed_at, model, embedding)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::vector)
         ON CONFLICT (conversation_id, part_id) DO UPDATE SET
           role = EXCLUDED.role, text = EXCLUDED.text, question = EXCLUDED.question, answer = EXCLUDED.answer,
           stage = EXCLUDED.stage, written_at = EXCLUDED.written_at, closed_at = EXCLUDED.closed_at,
           model = EXCLUDED.model, embedding = EXCLUDED.embedding, indexed_at = now()`,
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
        ],
      );
    }
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
