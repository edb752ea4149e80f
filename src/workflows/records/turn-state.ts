// The turn's state and the pure mappings into it: a fresh state, a fetched conversation, gathered results under the
// data budget, and the validation service's raw answer. No Temporal calls, so each is testable on its own.
import type { FetchedConversation } from '../../activities/intercom';
import { ValidationResponse } from '../../contract/answers';
import {
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  DEFAULT_DATA_BUDGET_BYTES,
  DEFAULT_MAX_HOPS,
  type SupportConversationInput,
} from '../../contract/shared';
import type { AgentState, DataBudget, GatheredCall, ToolResult } from '../../contract/state';
import { newConversationRecord } from './conversation-record';
import { docsDataKey, docsQueryOf, isDocsTool, toolDataKey } from '../entities/tool-calls';

export function newState(input: SupportConversationInput, now: string): AgentState {
  return {
    conversation_id: input.conversationId,
    messages: [],
    user_email: null,
    melvin_admin_id: null,
    timestamp: now,
    available_tools: [],
    tool_data: {},
    docs_data: {},
    hops: [],
    max_hops: input.maxHops ?? DEFAULT_MAX_HOPS,
    draft: null,
    validate: null,
    escalate: null,
    response_delivery: null,
    finalize: null,
    next_node: 'initialize',
    escalation_reason: null,
    response: null,
    error: null,
    metadata: {
      trigger: input.trigger ?? null,
      contact_id: null,
      user_name: null,
      internal_notes: [],
      prompts: null,
      model: null,
      path: [],
      current_node: 'initialize',
      user_messages: input.pending ?? [],
      user_messages_fetched: 0,
      conversation_fetches: 0,
      forced_escalation: null,
      skipped_reason: null,
      tool_servers: [],
      omitted_parts: 0,
      phase: 'turn',
      conversation: input.conversation ?? newConversationRecord(),
      data_budget: { budget_bytes: input.dataBudgetBytes ?? DEFAULT_DATA_BUDGET_BYTES, used_bytes: 0, dropped: [] },
    },
  };
}

/** "7 d", "2 h", "30 min" or "45 s": how the UI and the notes say a wait. */
export function durationText(seconds: number): string {
  if (seconds % 86400 === 0) return `${seconds / 86400} d`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/**
 * A fetch's conversation into the state. Fetches recorded in older histories lack some fields (`total_count`, the
 * reply settings): those read as nothing omitted and the configured settings.
 */
export function applyFetchedConversation(
  state: AgentState,
  conversation: FetchedConversation,
  input: SupportConversationInput,
): void {
  state.messages = conversation.messages;
  // Fetches recorded before these were read leave them absent, and the turn reads the latest messages as the question.
  state.metadata.message_part_ids = conversation.message_part_ids;
  state.metadata.attachment_only_part_ids = conversation.attachment_only_part_ids;
  state.metadata.omitted_parts = conversation.omitted_parts ?? 0;
  state.metadata.internal_notes = conversation.internal_notes;
  state.user_email = conversation.contact?.email ?? null;
  state.metadata.contact_id = conversation.contact?.id ?? null;
  state.metadata.user_name = conversation.contact?.name ?? null;
  state.melvin_admin_id = conversation.admin_id;
  // The conversation's own attributes choose how Melvin replies in it; the configuration decides the rest.
  const settings = conversation.reply_settings;
  state.metadata.reply_mode = {
    mode: settings?.mode ?? input.replyMode ?? 'auto',
    approval_timeout_seconds:
      settings?.approval_timeout_seconds ?? input.approvalTimeoutSeconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS,
    set_by: settings?.mode ? 'conversation attribute' : 'configuration',
    problems: settings?.problems ?? [],
  };
  // Kept in the record, which later runs carry: one that cannot read the conversation goes by it.
  if (settings) state.metadata.conversation.reply_mode_read = settings.mode;
}

/** Characters of a value's JSON: the measure of the turn's data budget. */
function jsonLength(value: unknown): number {
  return JSON.stringify(value)?.length ?? 0;
}

/**
 * Stores a hop's gathered calls once, in `tool_data` or `docs_data`, while the turn's budget lasts: past it a result is
 * left out (Coverage sees a failed call), so no activity input nears Temporal's payload limit. Returns what the hop
 * records of each call (keys and sizes, not the data) and the calls kept with their data.
 */
export function storeGathered(
  state: AgentState,
  budget: DataBudget,
  gathered: GatheredCall[],
  hop: number,
): { results: ToolResult[]; kept: GatheredCall[] } {
  const kept: GatheredCall[] = [];
  const results = gathered.map((call): ToolResult => {
    const { data, ...outcome } = call;
    const bytes = data === null || data === undefined ? 0 : jsonLength(data);
    const dropped = call.success && budget.used_bytes + bytes > budget.budget_bytes;
    if (dropped) {
      outcome.success = false;
      outcome.error = `left out: the turn's gathered data reached its budget of ${Math.round(budget.budget_bytes / 1024)} KB`;
    } else {
      budget.used_bytes += bytes;
      if (call.success) kept.push(call);
    }
    const stored = { hop, success: outcome.success, data: dropped ? null : data, error: outcome.error };
    let key: string;
    if (isDocsTool(outcome.tool_name, state.available_tools)) {
      const query = docsQueryOf(outcome.parameters);
      key = docsDataKey(state.docs_data, query, hop);
      state.docs_data[key] = { query, ...stored, truncated: outcome.truncated };
    } else {
      key = toolDataKey(state.tool_data, outcome.tool_name, hop);
      state.tool_data[key] = {
        tool_name: outcome.tool_name,
        parameters: outcome.parameters,
        ...stored,
        truncated: outcome.truncated,
      };
    }
    if (dropped) budget.dropped.push({ hop, tool_name: outcome.tool_name, stored_as: key, bytes });
    return { ...outcome, stored_as: key, data_bytes: dropped ? 0 : bytes, ...(dropped ? { dropped } : {}) };
  });
  return { results, kept };
}

/** The validation service's raw answer, read against its contract; `problem` says why it could not be read. */
export function readValidationAnswer(raw: string): { answer: ValidationResponse | null; problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { answer: null, problem: 'the validation response is not JSON' };
  }
  const result = ValidationResponse.safeParse(json);
  if (result.success) return { answer: result.data, problem: '' };
  const issues = result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  return { answer: null, problem: `the validation response does not match the contract: ${issues}` };
}
