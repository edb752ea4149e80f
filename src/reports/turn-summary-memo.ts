// A run's turn summary as reports read it from the memo (`melvin_turn`): checked, with defaults for what older runs lack.
import { z } from 'zod';
import { intentLabels, type TurnSummary } from '../contract/shared';

/**
 * A turn summary as the memo holds it. Values are checked but not narrowed to today's lists, so a status or source
 * added later (the coming `partial`) is counted under its own name instead of making the run unreadable.
 */
export const TurnSummaryMemo = z.object({
  status: z.string().min(1),
  escalation_source: z.string().nullable().default(null),
  escalation_kind: z.string().nullable().default(null),
  escalation_reason: z.string().nullable().default(null),
  escalated_at: z.iso.datetime({ offset: true }).nullable().default(null),
  replied: z.boolean(),
  hops: z.number().int().min(0),
  turn_ms: z.number().min(0),
  ended_at: z.iso.datetime({ offset: true }),
  approval_outcome: z.string().nullable().default(null),
  tools: z.array(z.object({ name: z.string(), ok: z.boolean() })).default([]),
  tokens: z.number().min(0).default(0),
  reopened_by_team: z.string().nullable().default(null),
  // Written since intents were named: a run from before reads as a turn without intent names, stage or path.
  // Labels are grouped as the workflow writes them today, whatever wrote them.
  intent_names: z.array(z.string()).default([]).transform(intentLabels),
  open_intent_names: z.array(z.string()).default([]).transform(intentLabels),
  uncovered_intent_names: z.array(z.string()).default([]).transform(intentLabels),
  stage: z.string().nullable().default(null),
  path: z.array(z.string()).default([]),
});
export type TurnSummaryMemo = z.output<typeof TurnSummaryMemo>;
/** What the workflow writes must stay readable here: this fails to compile when the two drift apart. */
const _writtenIsReadable: (summary: TurnSummary) => z.input<typeof TurnSummaryMemo> = (summary) => summary;
