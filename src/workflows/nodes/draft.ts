// The Draft node: the reply, written by the model in the team's voice from the data gathered.
import { isCancellation } from '@temporalio/workflow';
import type { LlmAnswer } from '../../activities/llm';
import type { DraftOutput } from '../../contract/schemas';
import { ResolvedConversations } from '../../contract/answers';
import { INDEX_SOURCE, type StyleExamples } from '../../contract/state';
import { draftContext, turnIntents } from '../prompt-contexts/contexts';
import { TEAM_INDEX_PATCH, since } from '../versions/patches';
import { exampleRetrieval, modelCalls } from '../activity-options/retry-policies';
import { partialAnswer, routeAfterDraft } from '../routing/routing';
import { turnStage } from '../routing/stage';
import { EXAMPLES_TOOL, serverToolName } from '../entities/tool-calls';
import type { Step, Turn } from './turn';
import { callToolActivity, mayWrite, type CallTool } from './gather';
import { describeFailure, enter, handOverOnError, recordModel, refetchIfNewMessages } from './helpers';

/** Style examples: how many past answers Draft sees, and how much of each (the gist of the team's voice, not a thread). */
const MAX_EXAMPLES = 3;
const MAX_EXAMPLE_CHARS = 600;

/**
 * The team's voice: past conversations a teammate resolved, retrieved by similarity to the question, for
 * Draft to match their tone. Null when no MCP server offers the search; a failed search leaves Draft without examples.
 */
export async function retrieveStyleExamples(
  turn: Pick<Turn, 'state'>,
  callTool: CallTool,
): Promise<StyleExamples | null> {
  const { state } = turn;
  const tool = state.available_tools.find((candidate) => serverToolName(candidate) === EXAMPLES_TOOL);
  if (!tool) return null;
  const query = turnIntents(state)
    .map((i) => i.question)
    .join(' ')
    .slice(0, 500);
  const found: StyleExamples = { tool: tool.name, query, examples: [], error: null };
  try {
    const outcome = await callTool(
      { server: tool.server, name: serverToolName(tool), arguments: { query, limit: MAX_EXAMPLES } },
      "find the team's past answers",
      mayWrite(tool),
    );
    const parsed = ResolvedConversations.safeParse(outcome.data);
    if (outcome.is_error || !parsed.success) {
      const text = typeof outcome.data === 'string' ? outcome.data : JSON.stringify(outcome.data);
      found.error = outcome.is_error ? text : 'the result is not a list of { question, answer }';
    } else {
      found.examples = parsed.data.results.slice(0, MAX_EXAMPLES).map((r) => ({
        question: r.question.slice(0, MAX_EXAMPLE_CHARS),
        answer: r.answer.slice(0, MAX_EXAMPLE_CHARS),
      }));
    }
  } catch (err) {
    if (isCancellation(err)) throw err;
    found.error = describeFailure(err);
  }
  return found;
}

/**
 * The team's voice from the resolved-conversation index (seed 002's ranking), when the MCP tool gave none: a team that
 * plugged in its own corpus chose it, and the index fills in where there is none or it found nothing. Null when the
 * worker has no index; a failed retrieval leaves Draft without examples, as a failed search does.
 */
async function retrieveIndexedExamples(turn: Pick<Turn, 'state'>): Promise<StyleExamples | null> {
  const { state } = turn;
  const stage = state.metadata.stage?.stage ?? null;
  const query = turnIntents(state)
    .map((i) => i.question)
    .join(' ')
    .slice(0, 500);
  const found: StyleExamples = { tool: INDEX_SOURCE, query, examples: [], error: null };
  try {
    const result = await exampleRetrieval().retrieveTeamExamples.executeWithOptions(
      { summary: "find the team's past answers" },
      [{ query, conversationId: state.conversation_id, stage }],
    );
    if (!result.configured) return null;
    found.examples = result.pairs;
    found.retrieved = result.top;
  } catch (err) {
    if (isCancellation(err)) throw err;
    found.error = describeFailure(err);
  }
  return found;
}

export async function draft(turn: Turn): Promise<Step> {
  await refetchIfNewMessages(turn);
  const { state } = turn;
  // What the reply answers: the user's messages this fetch holds. A message that comes later is the next turn's.
  turn.draftSaw = { partIds: [...turn.fetchedUserPartIds], deliveries: state.metadata.user_messages_fetched };
  enter(turn, 'draft');
  const started = Date.now();
  // A draft written again after Melvin's guard held the last one back keeps the stage and examples that one had.
  const repair = turn.repairing ? state.metadata.held_back_draft : null;
  turn.repairing = false;
  if (!repair) {
    // The stage first: the examples of the team's voice are ranked by it too.
    state.metadata.stage = turnStage(state);
    state.metadata.style_examples = await retrieveStyleExamples(turn, callToolActivity);
    if (since(TEAM_INDEX_PATCH) && !state.metadata.style_examples?.examples.length) {
      state.metadata.style_examples = (await retrieveIndexedExamples(turn)) ?? state.metadata.style_examples;
    }
  }
  const context = draftContext(state);
  if (repair) context.repair = { previous_reply: repair.draft, problems: repair.problems };
  let answer: LlmAnswer<DraftOutput>;
  try {
    answer = await modelCalls().draft.executeWithOptions({ summary: repair ? 'draft reply again' : 'draft reply' }, [
      { prompt: turn.prompts!.draft, context },
    ]);
  } catch (err) {
    return handOverOnError(turn, 'draft_error', err);
  }
  recordModel(turn, answer);
  return routeDraft(turn, answer.output, started);
}

/** The model's draft into the state (`started`: when the node began), and the route its response type gives. */
export function routeDraft(turn: Pick<Turn, 'state' | 'partial'>, output: DraftOutput, started: number): Step {
  const { state } = turn;
  // Drafts recorded before intents carry no open intents: they answered everything they replied to.
  const open = output.open_intents ?? [];
  state.draft = {
    response: output.text,
    response_type: output.response_type,
    ...(open.length ? { open_intents: open } : {}),
    ...(output.route && output.response_type === 'ROUTE_TO_TEAM' ? { route: output.route } : {}),
    // Drafts recorded before suggested actions carry none.
    ...(output.suggested_action ? { suggested_action: output.suggested_action } : {}),
    generation_time_ms: Date.now() - started,
    timestamp: new Date().toISOString(),
  };
  state.response = output.text;
  // A reply that leaves some of the user's questions open goes out, then the team gets the rest (after Response).
  if (output.response_type === 'REPLY' && open.length) turn.partial = partialAnswer(turnIntents(state), open);
  // Drafts recorded before routes had kinds carry none.
  const route = routeAfterDraft(output.response_type, output.route ?? null);
  return { next: route.next, ...(route.escalation ? { escalation: route.escalation } : {}) };
}
