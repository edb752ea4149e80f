// The sandbox model's stand-in for an LLM judge: answers a `Task: judge.` request by rules, so the evaluation's judge
// path can be exercised without a real model. It does not understand a rubric; it only checks the phrases it quotes.
import { z } from 'zod';

/**
 * What the evaluation sends a judge between the data delimiters: the rubric and the conversation as the user saw it,
 * oldest first (`team` is anyone else on the platform's side: a teammate, an earlier bot message).
 */
export const JudgeRequest = z.object({
  rubric: z.string(),
  transcript: z.array(z.object({ from: z.enum(['user', 'melvin', 'team']), text: z.string() })),
});
export type JudgeRequest = z.infer<typeof JudgeRequest>;

/**
 * The judge's verdict. Its JSON Schema goes out as a strict structured-outputs `response_format`, so it stays inside
 * what strict mode accepts: every property required, no `default`, no bounds.
 */
export const JudgeVerdict = z.object({
  passed: z.boolean().describe('True only if the replies meet every point of the rubric'),
  reasoning: z.string().describe('One or two sentences: what is met or missing'),
});
export type JudgeVerdict = z.infer<typeof JudgeVerdict>;

/** The phrases a rubric puts in double quotes, straight or curly: the only part of it the stand-in can check. */
export function quotedPhrases(rubric: string): string[] {
  return [...rubric.matchAll(/["“]([^"“”]+)["”]/g)].map((m) => m[1]!.trim()).filter(Boolean);
}

/**
 * Passes when Melvin replied at all and its replies contain every phrase the rubric quotes (case-insensitive). The
 * reasoning says it is the stand-in, so a report never passes its verdict off as a model's.
 */
export function sandboxJudge(context: Record<string, unknown>): JudgeVerdict {
  const parsed = JudgeRequest.safeParse(context);
  if (!parsed.success) {
    return { passed: false, reasoning: `Sandbox stand-in judge: the request carried no rubric and transcript.` };
  }
  const replies = parsed.data.transcript
    .filter((t) => t.from === 'melvin')
    .map((t) => t.text.toLowerCase())
    .join('\n');
  if (!replies) return { passed: false, reasoning: 'Sandbox stand-in judge: Melvin did not reply.' };
  const phrases = quotedPhrases(parsed.data.rubric);
  const missing = phrases.filter((p) => !replies.includes(p.toLowerCase()));
  if (missing.length) {
    return {
      passed: false,
      reasoning: `Sandbox stand-in judge: the replies lack ${missing.map((p) => `"${p}"`).join(', ')}.`,
    };
  }
  return {
    passed: true,
    reasoning: phrases.length
      ? `Sandbox stand-in judge: the replies contain ${phrases.map((p) => `"${p}"`).join(', ')}.`
      : 'Sandbox stand-in judge: Melvin replied; the rubric quotes no phrase to check.',
  };
}
