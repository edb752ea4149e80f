// Pure helpers for tools: the names Plan is offered and their servers', calls scoped to the conversation's own user under the
// MCP tool policy, and result keys that never overwrite a result.
import type { ToolListing } from '../../activities/mcp';
import { SERVER_SEPARATOR, setArgument, withoutIdentityArguments } from '../../guards/tool-arguments';
import type {
  GatherData,
  GatherStatus,
  IdentitySource,
  PlannedToolCall,
  ToolDefinition,
  ToolResult,
  WithheldTool,
} from '../../contract/state';

/** The documentation source (by the server's own tool name): its results go to `docs_data`, keyed by query and hop. */
export const DOCS_TOOL = 'search_talent_docs';

/**
 * The team's resolved conversations (by the server's own tool name): Draft asks it for past answers to similar
 * questions as style examples. It is Melvin's own step, never offered to Plan, so its answers never count as facts.
 */
export const EXAMPLES_TOOL = 'search_resolved_conversations';

/** The tools Plan may choose from: every listed tool but the style-examples search. */
export function offeredTools(tools: ToolDefinition[]): ToolDefinition[] {
  return tools.filter((t) => serverToolName(t) !== EXAMPLES_TOOL);
}

/** The name the tool's server knows it by; listings recorded before names were made distinct lack it. */
export function serverToolName(tool: ToolDefinition): string {
  return tool.server_tool_name ?? tool.name;
}

/** Whether the model's tool name is the documentation search of some server, under its own or a qualified name. */
export function isDocsTool(toolName: string, tools: ToolDefinition[]): boolean {
  const tool = tools.find((t) => t.name === toolName);
  return (tool ? serverToolName(tool) : toolName) === DOCS_TOOL;
}

/**
 * The listing activity's result. Histories recorded before several servers were told apart hold a bare array of tools,
 * and they must still replay: there every server that offered a tool had answered, since any failure failed the listing.
 */
export function toolListing(result: ToolListing | ToolDefinition[]): ToolListing {
  if (!Array.isArray(result)) return result;
  const names = [...new Set(result.map((t) => t.server))];
  return {
    tools: result,
    servers: names.map((name) => ({
      name,
      ok: true,
      tool_count: result.filter((t) => t.server === name).length,
      error: null,
    })),
  };
}

/**
 * Argument names that say whose data a tool returns, for tools listed before the MCP tool policy (their definitions
 * carry no grant): always the conversation's contact's email, never the model's choice.
 */
export const IDENTITY_ARGUMENTS = ['email', 'user_email', 'userEmail', 'contact_email'];

/** Who the conversation is with: what identity arguments are set from. */
export interface Contact {
  email: string | null;
  id: string | null;
}

const CONTACT_FIELDS: Record<IdentitySource, { field: keyof Contact; words: string }> = {
  contact_email: { field: 'email', words: "the user's email" },
  contact_id: { field: 'id', words: "the contact's id" },
};

/** The identity arguments Plan is told never to set: the old names, and every path the offered tools' grants name. */
export function identityArgumentNames(tools: ToolDefinition[]): string[] {
  const granted = tools.flatMap((t) => (t.grant?.identity ?? []).map((i) => i.path.join('.')));
  return [...new Set([...IDENTITY_ARGUMENTS, ...granted])];
}

export type ScopedCall =
  | { ok: true; tool: ToolDefinition; arguments: Record<string, unknown> }
  | { ok: false; error: string; arguments: Record<string, unknown> };

/**
 * Pins a planned call to the conversation's contact. Every identity-like argument the model wrote is dropped, at any
 * depth and in any case, and the identity arguments the tool's grant names are set from the contact, so a model talked
 * into naming another user still fetches only this user's data. A tool the policy withheld, or that no server offers,
 * is refused without a call. Tools listed before the policy keep the rule they were run under: the top-level
 * `IDENTITY_ARGUMENTS`, set from the email.
 */
export function scopeToolCall(
  call: PlannedToolCall,
  tools: ToolDefinition[],
  contact: Contact,
  withheld: WithheldTool[] = [],
): ScopedCall {
  const tool = tools.find((t) => t.name === call.tool_name);
  if (tool && !tool.grant) return scopeUngranted(call, tool, contact.email);
  const args = withoutIdentityArguments(call.parameters) as Record<string, unknown>;
  if (!tool) return { ok: false, error: refusal(call.tool_name, tools, withheld), arguments: args };
  for (const { path, from } of tool.grant!.identity) {
    const { field, words } = CONTACT_FIELDS[from];
    const value = contact[field];
    if (!value) {
      return {
        ok: false,
        error: `${tool.name} needs ${words} and the conversation's contact has none`,
        arguments: args,
      };
    }
    setArgument(args, path, value);
  }
  return { ok: true, tool, arguments: args };
}

/** Why a call names no offered tool: withheld by the policy (and why), or unknown, hinting at qualified names. */
function refusal(toolName: string, tools: ToolDefinition[], withheld: WithheldTool[]): string {
  const kept = withheld.find((w) => w.name === toolName || `${w.server}${SERVER_SEPARATOR}${w.name}` === toolName);
  if (kept) return `tool "${toolName}" is withheld by the tool policy: ${kept.reason}`;
  // A bare name that several servers offer is a likely mistake: say which names the model can use instead.
  const qualified = tools.filter((t) => serverToolName(t) === toolName);
  const hint = qualified.length ? ` (offered as ${qualified.map((t) => t.name).join(', ')})` : '';
  return `unknown tool "${toolName}"${hint}`;
}

/** The rule of listings recorded before the policy: top-level `IDENTITY_ARGUMENTS` dropped, then set from the email. */
function scopeUngranted(call: PlannedToolCall, tool: ToolDefinition, userEmail: string | null): ScopedCall {
  const args = Object.fromEntries(
    Object.entries(call.parameters).filter(([name]) => !IDENTITY_ARGUMENTS.includes(name)),
  );
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

/** `tool_data` is keyed by tool name, as dashboards read it; a repeat call is kept as `<tool> (hop N)`, then numbered. */
export function toolDataKey(existing: Record<string, unknown>, toolName: string, hop: number): string {
  return freeKey(existing, [toolName, `${toolName} (hop ${hop})`]);
}

/** `docs_data` is keyed `"<query> (hop N)"`; a repeated query in one hop is numbered. */
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
