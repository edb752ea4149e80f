// Pure helpers for Gather: scoping tool calls to the conversation's own user, and keys that never overwrite a result.
import type { GatherData, GatherStatus, PlannedToolCall, ToolDefinition, ToolResult } from '../state';

/** The documentation source: its results go to `docs_data`, keyed by query and hop. */
export const DOCS_TOOL = 'search_talent_docs';

/** Argument names that say whose data a tool returns: always the conversation's contact, never the model's choice. */
export const IDENTITY_ARGUMENTS = ['email', 'user_email', 'userEmail', 'contact_email'];

export type ScopedCall =
  | { ok: true; tool: ToolDefinition; arguments: Record<string, unknown> }
  | { ok: false; error: string; arguments: Record<string, unknown> };

/**
 * Drops every identity argument the model wrote and sets the ones the tool declares to the contact's email, so a
 * model talked into naming another user's email still fetches only this user's data.
 */
export function scopeToolCall(call: PlannedToolCall, tools: ToolDefinition[], userEmail: string | null): ScopedCall {
  const args = Object.fromEntries(
    Object.entries(call.parameters).filter(([name]) => !IDENTITY_ARGUMENTS.includes(name)),
  );
  const tool = tools.find((t) => t.name === call.tool_name);
  if (!tool) return { ok: false, error: `unknown tool "${call.tool_name}"`, arguments: args };
  const properties = tool.input_schema.properties;
  const declared = properties && typeof properties === 'object' ? Object.keys(properties) : [];
  const identity = declared.filter((name) => IDENTITY_ARGUMENTS.includes(name));
  if (identity.length > 0 && !userEmail) {
    return {
      ok: false,
      error: `${tool.name} needs the user's email and the conversation's contact has none`,
      arguments: args,
    };
  }
  for (const name of identity) args[name] = userEmail;
  return { ok: true, tool, arguments: args };
}

/** The first of `candidates` not yet used, else the last one numbered: a second call never replaces the first's result. */
function freeKey(existing: Record<string, unknown>, candidates: string[]): string {
  for (const key of candidates) if (!(key in existing)) return key;
  const last = candidates[candidates.length - 1]!;
  for (let n = 2; ; n++) if (!(`${last} #${n}` in existing)) return `${last} #${n}`;
}

/** `tool_data` is keyed by tool name (seed 001); a repeat call is kept as `<tool> (hop N)`, then numbered. */
export function toolDataKey(existing: Record<string, unknown>, toolName: string, hop: number): string {
  return freeKey(existing, [toolName, `${toolName} (hop ${hop})`]);
}

/** `docs_data` is keyed `"<query> (hop N)"` (seed 001); a repeated query in one hop is numbered. */
export function docsDataKey(existing: Record<string, unknown>, query: string, hop: number): string {
  return freeKey(existing, [`${query} (hop ${hop})`]);
}

export function docsQueryOf(parameters: Record<string, unknown>): string {
  return typeof parameters.query === 'string' ? parameters.query : JSON.stringify(parameters);
}

export function summarizeGather(results: ToolResult[], totalMs: number): GatherData {
  const succeeded = results.filter((r) => r.success).length;
  let status: GatherStatus = 'completed';
  if (results.length === 0) status = 'skipped';
  else if (succeeded === 0) status = 'failed';
  else if (succeeded < results.length) status = 'partial';
  return {
    tool_results: results,
    total_execution_time_ms: totalMs,
    success_rate: results.length === 0 ? 1 : succeeded / results.length,
    execution_status: status,
  };
}
