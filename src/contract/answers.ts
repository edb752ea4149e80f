// The two answers the workflow parses itself, the validation check's and the resolved-conversations search's: kept
// apart from schemas.ts, whose hundred-odd zod schemas every run would otherwise build at its start and keep while
// its conversation waits (zod's schemas cannot be shared between runs: see src/bundling/workflow-bundle.ts).
import { z } from 'zod';

/** The validation endpoint's answer: `overall_passed` is the contract; the per-check results are kept as they come. */
export const ValidationResponse = z.looseObject({
  overall_passed: z.boolean(),
  checks: z.array(z.looseObject({ name: z.string(), passed: z.boolean(), detail: z.string().optional() })).optional(),
});
export type ValidationResponse = z.infer<typeof ValidationResponse>;

/**
 * The team's resolved-conversations search, as a tool result: past questions with the teammate's answer, best first.
 * Only these two fields are read; anything else the server adds passes.
 */
export const ResolvedConversations = z.looseObject({
  results: z.array(z.looseObject({ question: z.string(), answer: z.string() })),
});
