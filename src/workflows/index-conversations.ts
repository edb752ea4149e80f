// The indexing workflow the resolved-conversation schedule runs: pages through Intercom's conversations closed since
// the watermark, indexes each (an activity that fetches, redacts, embeds and upserts), then moves the watermark.
import { continueAsNew, log, workflowInfo } from '@temporalio/workflow';
import { indexing, indexSearch, indexStore } from './activity-options/retry-policies';

/**
 * Each window starts this far before the watermark: a conversation Intercom's search lists a little late (its index is
 * eventually consistent) is still found by the next run; one listed twice is upserted onto itself.
 */
export const WINDOW_OVERLAP_S = 300;
/** Conversations indexed at once: bounded, so a page of 150 does not hit Intercom or the embeddings endpoint at once. */
const CONCURRENCY = 8;
/** Pages per run before it continues as new, so a first run over months of history keeps a small history. */
const PAGES_PER_RUN = 10;

export interface IndexRunInput {
  /** How far back the first run looks, with no watermark yet (days). */
  lookbackDays?: number;
  /** Conversations a search page asks for (Intercom's most, 150, unless given) and pages before continuing as new. */
  perPage?: number;
  pagesPerRun?: number;
  /** Set by continue-as-new: the window being indexed, where its paging stands, and the counts so far. */
  window?: { since: number; until: number };
  cursor?: string | null;
  totals?: IndexTotals;
}

export interface IndexTotals {
  pages: number;
  conversations: number;
  stored: number;
  skipped: number;
}

export interface IndexRunResult extends IndexTotals {
  window: { since: number; until: number };
  watermark: number;
}

export async function indexResolvedConversations(input: IndexRunInput = {}): Promise<IndexRunResult> {
  const window = input.window ?? (await nextWindow(input.lookbackDays ?? 90));
  const totals: IndexTotals = input.totals ?? { pages: 0, conversations: 0, stored: 0, skipped: 0 };
  let cursor = input.cursor ?? null;
  for (let pagesThisRun = 0; ; pagesThisRun++) {
    if (pagesThisRun >= (input.pagesPerRun ?? PAGES_PER_RUN) || workflowInfo().continueAsNewSuggested) {
      return continueAsNew<typeof indexResolvedConversations>({ ...input, window, cursor, totals });
    }
    const page = await indexSearch.searchClosedConversations({
      ...window,
      startingAfter: cursor,
      ...(input.perPage ? { perPage: input.perPage } : {}),
    });
    for (let i = 0; i < page.conversations.length; i += CONCURRENCY) {
      const batch = page.conversations.slice(i, i + CONCURRENCY);
      const results = await Promise.all(
        batch.map((c) =>
          indexing.indexConversation.executeWithOptions({ summary: `index conversation ${c.id}` }, [
            { conversationId: c.id, closedAt: c.closed_at },
          ]),
        ),
      );
      for (const r of results) {
        totals.stored += r.stored;
        if (r.skipped) totals.skipped += 1;
      }
    }
    totals.pages += 1;
    totals.conversations += page.conversations.length;
    cursor = page.next;
    if (!cursor) break;
  }
  // Only now: Intercom's search promises no order, so a conversation of the window may be on any page, and the
  // watermark may pass the window only once every page of it is stored. A run that fails leaves it for the next run.
  const { watermark } = await indexStore.advanceIndexWatermark({ to: window.until });
  log.info('resolved conversations indexed', { ...totals, watermark });
  return { ...totals, window, watermark };
}

/** From the watermark (less the overlap) to now; the first run looks back `lookbackDays`. */
async function nextWindow(lookbackDays: number): Promise<{ since: number; until: number }> {
  const { watermark } = await indexStore.readIndexWatermark();
  const until = Math.floor(Date.now() / 1000);
  const since = watermark === null ? until - lookbackDays * 86_400 : Math.max(0, watermark - WINDOW_OVERLAP_S);
  return { since, until };
}
