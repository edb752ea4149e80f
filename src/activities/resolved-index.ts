// The resolved-conversation index's activities: page Intercom's search for closed conversations, index one conversation
// (fetch, redact, embed, upsert), keep the watermark, and retrieve the team's examples for Draft with seed 002's ranking.
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { IntercomClient } from 'intercom-client';
import { z } from 'zod';
import { handsOverAsSensitive } from '../contract/notes';
import { indexedMessages, type ConversationPart } from '../resolved-index/examples';
import { fewShotPairs, rank, TOP_K } from '../resolved-index/ranking';
import { maskUnshared, namingTokens } from '../resolved-index/redact';
import type { ResolvedIndexStore, StoredExample } from '../resolved-index/store';
import { searchAttributes, workflowIdFor } from '../contract/shared';
import { STAGES, type Stage } from '../contract/vocabulary';
import { createEmbeddingActivities, type EmbeddingEndpoint } from './embeddings';
import { IntercomResponseInvalidError, withRetryContract } from './errors';
import { IntercomConversation, intercomFailure } from './intercom';

const REQUEST_TIMEOUT_S = 12;
/** Intercom's largest page: fewer requests per run. */
export const SEARCH_PAGE_SIZE = 150;
/** How much of each retrieved message Draft sees: the gist of the team's voice, not a thread. */
const MAX_EXAMPLE_CHARS = 600;

export interface ResolvedIndexClients {
  intercom: IntercomClient;
  adminId: string;
  embeddings: EmbeddingEndpoint;
  /** The store, opened on first use (PGlite takes seconds to start); null when no index is configured. */
  store: () => Promise<ResolvedIndexStore> | null;
}

/** A conversation the search found: its id and when it was last closed (UNIX seconds). */
export interface ClosedConversation {
  id: string;
  closed_at: number;
}

export interface SearchPage {
  conversations: ClosedConversation[];
  /** The cursor of the next page; null on the last. */
  next: string | null;
  total_count: number;
}

const SearchAnswer = z.looseObject({
  total_count: z.number().int().min(0).optional(),
  conversations: z.array(
    z.looseObject({
      id: z.union([z.string(), z.number()]).transform(String),
      statistics: z.looseObject({ last_close_at: z.number().nullish() }).nullish(),
      updated_at: z.number().nullish(),
    }),
  ),
  pages: z.looseObject({ next: z.looseObject({ starting_after: z.string().nullish() }).nullish() }).nullish(),
});

/**
 * What Draft is given from the index: the team's replies nearest the question by seed 002's ranking, and the first one
 * or two as examples. Only team replies are kept, and a capitalized word or a link the team did not use with several
 * talents is masked, so nothing of one talent's reaches another's draft (issue 40); the examples' questions are empty.
 */
export interface TeamExamples {
  /** False when the worker has no index configured: Draft then has only the MCP tool, when a server offers one. */
  configured: boolean;
  query: string;
  top: { role: 'talent' | 'team'; text: string; score: number; conversation_id: string; part_id: string }[];
  pairs: { question: string; answer: string }[];
}

export function createResolvedIndexActivities(clients: ResolvedIndexClients) {
  const { intercom, adminId } = clients;
  const { embedTexts } = createEmbeddingActivities(clients.embeddings);
  const requestOptions = () => ({
    timeoutInSeconds: REQUEST_TIMEOUT_S,
    maxRetries: 0,
    abortSignal: Context.current().cancellationSignal,
  });
  async function store(): Promise<ResolvedIndexStore> {
    const opened = clients.store();
    if (!opened) throw new Error('no resolved-conversation index is configured (INDEX_DATABASE_URL or INDEX_DATA_DIR)');
    return opened;
  }

  return withRetryContract({
    /**
     * One page of the conversations closed in [since, until] (UNIX seconds; Intercom's `>` and `<` on dates include the
     * bound, so a conversation closed at a window's edge comes in both windows and its upsert makes that harmless).
     */
    async searchClosedConversations(input: {
      since: number;
      until: number;
      startingAfter: string | null;
      perPage?: number;
    }): Promise<SearchPage> {
      const action = `search conversations closed from ${input.since} to ${input.until}`;
      let page;
      try {
        page = await intercom.conversations.search(
          {
            query: {
              operator: 'AND',
              value: [
                { field: 'state', operator: '=', value: 'closed' },
                { field: 'statistics.last_close_at', operator: '>', value: input.since },
                { field: 'statistics.last_close_at', operator: '<', value: input.until },
              ],
            },
            pagination: {
              per_page: input.perPage ?? SEARCH_PAGE_SIZE,
              ...(input.startingAfter ? { starting_after: input.startingAfter } : {}),
            },
          },
          requestOptions(),
        );
      } catch (err) {
        throw intercomFailure(err, action);
      }
      const parsed = SearchAnswer.safeParse(page.response);
      if (!parsed.success) {
        throw new IntercomResponseInvalidError(
          `${action}: unexpected response shape: ${z.prettifyError(parsed.error)}`,
        );
      }
      return {
        conversations: parsed.data.conversations.map((c) => ({
          id: c.id,
          closed_at: c.statistics?.last_close_at ?? c.updated_at ?? input.until,
        })),
        next: parsed.data.pages?.next?.starting_after ?? null,
        total_count: parsed.data.total_count ?? parsed.data.conversations.length,
      };
    },

    /**
     * Fetches one closed conversation, keeps the talent's questions and the team's replies (redacted), embeds them and
     * upserts them by (conversation, part). The vectors stay inside the activity: through the workflow's history they
     * would weigh tens of kilobytes each. A conversation deleted since the search is skipped, not failed.
     */
    async indexConversation(input: {
      conversationId: string;
      closedAt: number;
    }): Promise<{ stored: number; skipped?: string }> {
      const action = `fetch conversation ${input.conversationId} for the index`;
      let conversation: IntercomConversation;
      try {
        const body = await intercom.conversations.find(
          { conversation_id: input.conversationId, display_as: 'plaintext' },
          requestOptions(),
        );
        const parsed = IntercomConversation.safeParse(body);
        if (!parsed.success) {
          throw new IntercomResponseInvalidError(
            `${action}: unexpected response shape: ${z.prettifyError(parsed.error)}`,
          );
        }
        conversation = parsed.data;
      } catch (err) {
        const failure = err instanceof IntercomResponseInvalidError ? err : intercomFailure(err, action);
        if (failure.name === 'IntercomNotFoundError')
          return { stored: 0, skipped: 'the conversation no longer exists' };
        throw failure;
      }
      const parts = partsOf(conversation);
      // Handed over as sensitive (harassment, legal, safety): not an example for anyone, and out if it was one before.
      if (parts.some((p) => p.part_type === 'note' && handsOverAsSensitive(p.body ?? ''))) {
        const removed = await (await store()).remove(input.conversationId);
        return { stored: 0, skipped: `handed over as sensitive${removed ? `; ${removed} messages taken out` : ''}` };
      }
      const messages = indexedMessages(parts, adminId);
      if (messages.length === 0) return { stored: 0, skipped: 'no question the team answered' };
      const stage = await stageMelvinSettled(input.conversationId);
      const embedded = await embedTexts({ texts: messages.map((m) => m.search_text) });
      const rows: StoredExample[] = messages.map(({ search_text: _found, ...m }, i) => ({
        conversation_id: input.conversationId,
        ...m,
        stage,
        closed_at: new Date(input.closedAt * 1000).toISOString(),
        model: embedded.model,
        embedding: embedded.vectors[i]!,
      }));
      await (await store()).upsert(rows);
      return { stored: rows.length };
    },

    async readIndexWatermark(): Promise<{ watermark: number | null }> {
      return { watermark: await (await store()).watermark() };
    },

    async advanceIndexWatermark({ to }: { to: number }): Promise<{ watermark: number }> {
      return { watermark: await (await store()).advanceWatermark(to) };
    },

    /**
     * The team's examples for a draft: the query embedded, the nearest messages of the same conversation and of all,
     * re-ranked with seed 002's boosts, the top 8 and the first one or two question→answer pairs among them.
     */
    async retrieveTeamExamples(input: {
      query: string;
      conversationId: string | null;
      stage: Stage | null;
    }): Promise<TeamExamples> {
      const opened = clients.store();
      if (!opened || !input.query.trim())
        return { configured: opened !== null, query: input.query, top: [], pairs: [] };
      const embedded = await embedTexts({ texts: [input.query] });
      const candidates = await (
        await opened
      ).nearest({
        vector: embedded.vectors[0]!,
        model: embedded.model,
        conversationId: input.conversationId,
      });
      // Talents' messages are no longer kept; one a worker of an older build stored meanwhile is still not shown.
      const ranked = rank(
        candidates.filter((c) => c.role === 'team'),
        { conversationId: input.conversationId, stage: input.stage, now: new Date().toISOString() },
        TOP_K,
      );
      // A team reply's text is its answer: masked once, it is both.
      const replies = ranked.map((r) => r.text.slice(0, MAX_EXAMPLE_CHARS));
      const shared = await (await opened).shared([...new Set(replies.flatMap(namingTokens))]);
      const masked = ranked.map((r, i) => {
        const text = maskUnshared(replies[i]!, shared);
        return { ...r, text, answer: text };
      });
      return {
        configured: true,
        query: input.query,
        top: masked.map((r) => ({
          role: r.role,
          text: r.text,
          score: Math.round(r.score * 1000) / 1000,
          conversation_id: r.conversation_id,
          part_id: r.part_id,
        })),
        pairs: fewShotPairs(masked),
      };
    },
  });
}

/**
 * The stage Melvin last settled for the conversation (its workflow's `MelvinStage`, set by Finalize), read through the
 * worker's own Temporal client; null when Melvin never handled it or never settled one (a null stage never boosts).
 * Any other failure fails the activity, to be retried: a stage stored as null would never be read again.
 */
async function stageMelvinSettled(conversationId: string): Promise<Stage | null> {
  let attributes;
  try {
    const handle = Context.current().client.workflow.getHandle(workflowIdFor(conversationId));
    attributes = (await handle.describe()).typedSearchAttributes;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
  const stage = z.enum(STAGES).safeParse(attributes.get(searchAttributes.melvinStage));
  return stage.success ? stage.data : null;
}

/** The conversation's messages in order: its source (the first message) and its parts. */
function partsOf(conversation: IntercomConversation): ConversationPart[] {
  const source = conversation.source;
  const first: ConversationPart[] =
    source?.id && source.author
      ? [
          {
            id: source.id,
            part_type: 'conversation',
            body: source.body ?? null,
            created_at: (conversation as { created_at?: number }).created_at ?? null,
            author: authorOf(source.author),
          },
        ]
      : [];
  const rest = (conversation.conversation_parts?.conversation_parts ?? []).map((p) => ({
    id: p.id,
    part_type: p.part_type,
    body: p.body ?? null,
    created_at: p.created_at ?? null,
    author: p.author ? authorOf(p.author) : null,
  }));
  return [...first, ...rest];
}

function authorOf(author: { type: string; id?: string | null; name?: string | null }): ConversationPart['author'] {
  const email = (author as { email?: unknown }).email;
  return {
    type: author.type,
    id: author.id ?? null,
    name: author.name ?? null,
    email: typeof email === 'string' ? email : null,
  };
}

export type ResolvedIndexActivities = ReturnType<typeof createResolvedIndexActivities>;
