// Pure: seed 002's re-ranking of retrieved team examples (similarity plus thread, stage, role and recency boosts),
// the top k, and the question→answer pairs Draft is given as few-shot examples.
import type { Stage } from '../contract/vocabulary';

/** Seed 002's boosts: the same thread (conversation), the same stage, the agent's own role (a team reply). */
export const BOOST_SAME_THREAD = 0.2;
export const BOOST_SAME_STAGE = 0.08;
export const BOOST_TEAM_ROLE = 0.05;
/**
 * Recency: at most 0.02, halving every 30 days. Seed 002 adds 0.01 × recency; here it is at most a fifth of a stage
 * match, so it only breaks near-ties, toward the answer written under the team's current policies.
 */
export const BOOST_RECENCY_MAX = 0.02;
export const RECENCY_HALF_LIFE_DAYS = 30;
export const TOP_K = 8;
export const FEW_SHOT_PAIRS = 2;

export type ExampleRole = 'talent' | 'team';

/** One stored message of a resolved conversation, with its similarity to the query (cosine, -1 to 1). */
export interface Candidate {
  conversation_id: string;
  part_id: string;
  role: ExampleRole;
  text: string;
  /** The pair the message belongs to: the talent's question and the team's answer to it. */
  question: string;
  answer: string;
  stage: Stage | null;
  /** When the message was written (ISO 8601). */
  written_at: string;
  similarity: number;
}

export interface RankingQuery {
  conversationId: string | null;
  stage: Stage | null;
  /** When the query is made (ISO 8601): the recency boost is measured from it. */
  now: string;
}

export interface Ranked extends Candidate {
  score: number;
  boosts: { thread: number; stage: number; role: number; recency: number };
}

function recencyBoost(writtenAt: string, now: string): number {
  const ageDays = Math.max(0, (Date.parse(now) - Date.parse(writtenAt)) / 86_400_000);
  if (!Number.isFinite(ageDays)) return 0;
  return BOOST_RECENCY_MAX * Math.pow(0.5, ageDays / RECENCY_HALF_LIFE_DAYS);
}

export function score(candidate: Candidate, query: RankingQuery): Ranked {
  const boosts = {
    thread: query.conversationId !== null && candidate.conversation_id === query.conversationId ? BOOST_SAME_THREAD : 0,
    stage: query.stage !== null && candidate.stage === query.stage ? BOOST_SAME_STAGE : 0,
    role: candidate.role === 'team' ? BOOST_TEAM_ROLE : 0,
    recency: recencyBoost(candidate.written_at, query.now),
  };
  return {
    ...candidate,
    boosts,
    score: candidate.similarity + boosts.thread + boosts.stage + boosts.role + boosts.recency,
  };
}

/**
 * The k best candidates by score, each message once (a message found by both the thread and the global search is one
 * candidate); equal scores keep a fixed order (conversation, then part id), so a retrieval is repeatable.
 */
export function rank(candidates: Candidate[], query: RankingQuery, k = TOP_K): Ranked[] {
  const unique = new Map<string, Candidate>();
  for (const c of candidates) {
    const key = `${c.conversation_id}\u0000${c.part_id}`;
    const seen = unique.get(key);
    if (!seen || c.similarity > seen.similarity) unique.set(key, c);
  }
  return [...unique.values()]
    .map((c) => score(c, query))
    .sort(
      (a, b) =>
        b.score - a.score || a.conversation_id.localeCompare(b.conversation_id) || a.part_id.localeCompare(b.part_id),
    )
    .slice(0, Math.max(0, k));
}

/**
 * The first distinct question→answer pairs among the ranked messages, for Draft's few-shot examples. The index keeps no
 * talent's question (issue 40), so its pairs are the team's answers alone, with an empty question.
 */
export function fewShotPairs(ranked: Ranked[], n = FEW_SHOT_PAIRS): { question: string; answer: string }[] {
  const pairs: { question: string; answer: string }[] = [];
  for (const r of ranked) {
    if (!r.answer) continue;
    if (pairs.some((p) => p.question === r.question && p.answer === r.answer)) continue;
    pairs.push({ question: r.question, answer: r.answer });
    if (pairs.length >= n) break;
  }
  return pairs;
}
