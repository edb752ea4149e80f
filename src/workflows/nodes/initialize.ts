// The Initialize node: the conversation, the MCP tools and the prompts, and whether there is anything to answer.
import { isCancellation } from '@temporalio/workflow';
import type { LoadedPrompts } from '../../activities/prompts';
import { mcpListing, promptLoading } from '../activity-options/retry-policies';
import { awaitsReply, escalation } from '../routing/routing';
import { KEPT_PROMISES_RULES, rulesSince } from '../versions/patches';
import { toolListing } from '../entities/tool-calls';
import type { Step, Turn } from './turn';
import { describeFailure, enter, handOverOnError, fetchConversation, showDetails } from './helpers';

async function loadPrompts(): Promise<LoadedPrompts> {
  const promptActivities = promptLoading();
  try {
    return await promptActivities.loadPrompts.executeWithOptions({ summary: 'load prompts' }, []);
  } catch (err) {
    if (isCancellation(err)) throw err;
    return await promptActivities.loadBundledPrompts.executeWithOptions({ summary: 'load bundled prompts' }, [
      { fallbackReason: describeFailure(err) },
    ]);
  }
}

/** Fetches the conversation, the tools and the prompts at once; ends the turn when there is nothing to answer. */
export async function initialize(turn: Turn): Promise<Step> {
  enter(turn, 'initialize');
  try {
    const [, listing, loaded] = await Promise.all([
      fetchConversation(turn, 'fetch conversation'),
      mcpListing().listTools.executeWithOptions({ summary: 'list MCP tools' }, []),
      loadPrompts(),
    ]);
    applyToolsAndPrompts(turn, listing, loaded);
    if (turn.state.metadata.tool_servers.some((s) => !s.ok)) showDetails(turn);
  } catch (err) {
    // A run a lead's request started has no message of the user to answer: a hand-over would tell the user a person
    // follows up in a conversation the team may own already. Its read before it ends still looks for one.
    const noMessage = !turn.legacy && rulesSince(KEPT_PROMISES_RULES) && !turn.state.metadata.user_messages.length;
    if (noMessage && !isCancellation(err)) {
      turn.state.error = describeFailure(err);
      turn.state.metadata.skipped_reason = `Initialization failed with no message of the user to answer: ${turn.state.error}`;
      return { next: 'end' };
    }
    return handOverOnError(turn, 'initialization_error', err);
  }
  return planUnlessNothingToAnswer(turn);
}

/** The listed tools (and any server that failed) and the prompts into the turn. */
export function applyToolsAndPrompts(
  turn: Pick<Turn, 'state' | 'prompts'>,
  listing: Parameters<typeof toolListing>[0],
  loaded: LoadedPrompts,
): void {
  const { state } = turn;
  const { tools: availableTools, servers, withheld } = toolListing(listing);
  state.available_tools = availableTools;
  state.metadata.tool_servers = servers;
  // Listings from before the MCP tool policy withheld nothing and say nothing of it.
  if (withheld) state.metadata.withheld_tools = withheld;
  turn.prompts = loaded;
  state.metadata.prompts = loaded.used;
}

/**
 * On to Plan, or the turn's end with the reason: the team owns the conversation (its messages are left to the team
 * after the turn), or every message of the user was answered or handed over already. Messages of files only go to the
 * team, since Melvin cannot read them. Runs from before the ledger decided took the latest message for the question
 * (`legacy`): a turn whose latest message was Melvin's had nothing to answer.
 */
export function planUnlessNothingToAnswer(
  turn: Pick<Turn, 'state' | 'fetchedUserPartIds'> & Partial<Pick<Turn, 'legacy'>>,
): Step {
  const { state } = turn;
  const { handled_part_ids: handled, ownership } = state.metadata.conversation;
  if (ownership.owner === 'team') {
    state.metadata.skipped_reason = `the team owns the conversation (${ownership.reason}): Melvin does not answer`;
    return { next: 'end' };
  }
  if (turn.legacy && !awaitsReply(state.messages)) {
    state.metadata.skipped_reason = 'the latest message in the conversation is not from the user: nothing to answer';
    return { next: 'end' };
  }
  const unanswered = turn.fetchedUserPartIds.filter((id) => !handled.includes(id));
  if (turn.fetchedUserPartIds.length && !unanswered.length) {
    state.metadata.skipped_reason = 'every message of the user was answered or handed over by an earlier turn';
    return { next: 'end' };
  }
  if (!turn.legacy && !unanswered.length && !awaitsReply(state.messages)) {
    state.metadata.skipped_reason = 'no message of the user awaits a reply';
    return { next: 'end' };
  }
  const filesOnly = state.metadata.attachment_only_part_ids ?? [];
  if (!turn.legacy && unanswered.length && unanswered.every((id) => filesOnly.includes(id))) {
    const ids = state.metadata.message_part_ids ?? [];
    const files = state.messages.filter((_, i) => unanswered.includes(ids[i] ?? '')).map((m) => m.content);
    return { next: 'escalate', escalation: escalation('attachment_only', files.join(', ')) };
  }
  return { next: 'plan' };
}
