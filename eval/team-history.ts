// The team's history an evaluation runs against: conversations teammates answered and closed, seeded into the
// sandbox's Intercom and indexed before the first try, and the checks that scenarios' example labels name them.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ClosedConversation } from '../sandbox/scenario';
import { ScenarioRunner } from '../sandbox/scenario-runner';
import { errorMessage } from '../src/observability/error-message';
import { MAX_TRIES, tryConversationId, type LoadedScenario } from './tries';

export const TeamHistory = z.strictObject({
  description: z.string().min(1),
  conversations: z.array(ClosedConversation).min(1),
});
export type TeamHistory = z.infer<typeof TeamHistory>;

/** The history file, checked; what is wrong with it is said with the file and the field. */
export function loadTeamHistory(file: string): TeamHistory {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: ${errorMessage(err)}`, { cause: err });
  }
  const parsed = TeamHistory.safeParse(json);
  if (!parsed.success) throw new Error(`${file}: ${z.prettifyError(parsed.error)}`);
  const ids = parsed.data.conversations.map((c) => c.id);
  const twice = ids.filter((id, index) => ids.indexOf(id) !== index);
  if (twice.length) throw new Error(`${file}: conversation ids listed twice: ${[...new Set(twice)].join(', ')}`);
  return parsed.data;
}

/**
 * What does not fit between the scenarios and the history: an example label naming a conversation the history lacks,
 * or a history conversation whose id a scenario's (or one of its tries') conversation also has.
 */
export function historyProblems(set: LoadedScenario[], history: TeamHistory): string[] {
  const known = new Set(history.conversations.map((c) => c.id));
  const problems: string[] = [];
  for (const { file, scenario } of set) {
    const unknown = (scenario.labels?.examples ?? []).filter((id) => !known.has(id));
    if (unknown.length) problems.push(`${file}: labels.examples names no conversation of the history: ${unknown}`);
    const tries = Array.from({ length: MAX_TRIES }, (_, i) => tryConversationId(scenario.conversation.id, i + 1));
    const own = [scenario.conversation.id, ...tries, ...scenario.closed_by_team.map((c) => c.id)];
    const taken = own.filter((id) => known.has(id));
    if (taken.length) problems.push(`${file}: its conversations share ids with the history: ${taken.join(', ')}`);
  }
  return problems;
}

/** Whether the history went into the index before the first try, and why not. */
export interface HistoryIndexed {
  conversations: number;
  error: string | null;
}

/**
 * Seeds the history into the sandbox's Intercom, closes it and runs the index's Schedule once. A failure (an embeddings
 * endpoint that cannot embed, say) does not stop the evaluation: every try then drafts without the team's examples,
 * and the report says why.
 */
export async function indexTeamHistory(
  history: TeamHistory,
  runner: ConstructorParameters<typeof ScenarioRunner>[0],
): Promise<HistoryIndexed> {
  const conversations = history.conversations.length;
  try {
    await new ScenarioRunner(runner).closeAndIndex(history.conversations, 'the-evaluation');
    return { conversations, error: null };
  } catch (err) {
    return { conversations, error: causes(err) };
  }
}

export function historyNotIndexed(indexed: HistoryIndexed): string {
  return `the team's history (${indexed.conversations} conversations) could not be indexed, so no try had the team's examples: ${indexed.error}`;
}

/** The error and what caused it, outermost first ("Workflow execution failed" says little by itself). */
function causes(err: unknown): string {
  const messages: string[] = [];
  for (let at: unknown = err; at && messages.length < 5; at = (at as { cause?: unknown }).cause) {
    messages.push(errorMessage(at));
  }
  return messages.join(': ');
}
