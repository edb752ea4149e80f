// The Gather node: the hop's planned tool calls, each scoped to the user, reused while fresh, or made.
import { isCancellation } from '@temporalio/workflow';
import type { McpActivities, ToolCallOutcome } from '../../activities/mcp';
import type { GatheredCall, Hop, NamedRecord, PlannedToolCall, ToolDefinition, ToolResult } from '../../contract/state';
import { resolveContext } from '../prompt-contexts/contexts';
import { freshResult } from '../records/conversation-record';
import {
  mentionArguments,
  resolveCall,
  resolveNamedRecord,
  resolveSemantically,
  userRecords,
} from '../entities/entities';
import { NAMED_RECORDS_PATCH, since } from '../versions/patches';
import { embeddingCalls, modelCalls, toolCalls } from '../activity-options/retry-policies';
import {
  docsQueryOf,
  isDocsTool,
  offeredTools,
  scopeToolCall,
  serverToolName,
  summarizeGather,
} from '../entities/tool-calls';
import type { Step, Turn } from './turn';
import { storeGathered } from '../records/turn-state';
import { describeFailure, enter, recordModel } from './helpers';

/**
 * How a call reaches its tool: here the callTool activity with the policy's retries; the bench's LangGraph peer passes
 * its own, so both run the same Gather. `writes`: whether the tool may change something (its retry must not repeat it).
 */
export type CallTool = (
  input: Parameters<McpActivities['callTool']>[0],
  summary: string,
  writes: boolean,
) => Promise<ToolCallOutcome>;

/** The callTool activity, under the tool policy's timeouts and retries. */
export const callToolActivity: CallTool = (input, summary, writes) =>
  toolCalls(writes).callTool.executeWithOptions({ summary }, [input]);

/** Whether a listed tool may write: what the MCP tool policy granted it; a listing from before the policy may. */
export const mayWrite = (tool: Pick<ToolDefinition, 'grant'>): boolean => tool.grant?.writes ?? true;

/** One planned call: scoped to the conversation's user, reused while an earlier turn's result is fresh, else made. */
async function runToolCall(
  turn: Pick<Turn, 'state'>,
  call: PlannedToolCall,
  hopNumber: number,
  callTool: CallTool,
): Promise<GatheredCall> {
  const { state } = turn;
  const started = Date.now();
  const contact = { email: state.user_email, id: state.metadata.contact_id };
  const scoped = scopeToolCall(call, offeredTools(state.available_tools), contact, state.metadata.withheld_tools);
  const timestamp = new Date(started).toISOString();
  const refused = (parameters: Record<string, unknown>, error: string): GatheredCall => ({
    tool_name: call.tool_name,
    parameters,
    timestamp,
    success: false,
    data: null,
    error,
    execution_time_ms: 0,
    truncated: false,
  });
  if (!scoped.ok) return refused(scoped.arguments, scoped.error);
  // A record named in words ("the Barista job") is resolved against the user's own data gathered so far.
  const resolution = resolveCall(scoped.arguments, userRecords(state.tool_data));
  if (!resolution.ok) return refused(scoped.arguments, resolution.error);
  const base = {
    tool_name: call.tool_name,
    parameters: resolution.arguments,
    timestamp,
    ...(resolution.resolved.length ? { resolved: resolution.resolved } : {}),
  };
  const fresh = freshResult(state.metadata.conversation, call.tool_name, resolution.arguments, started);
  if (fresh) {
    return {
      ...base,
      success: true,
      data: fresh.data,
      error: null,
      execution_time_ms: 0,
      truncated: fresh.truncated,
      reused_from: fresh.fetched_at,
    };
  }
  const summary = isDocsTool(call.tool_name, state.available_tools)
    ? `search docs: ${docsQueryOf(scoped.arguments)}`
    : `call ${call.tool_name}`;
  try {
    const outcome = await callTool(
      { server: scoped.tool.server, name: serverToolName(scoped.tool), arguments: resolution.arguments },
      `${summary} (hop ${hopNumber})`,
      mayWrite(scoped.tool),
    );
    const error = typeof outcome.data === 'string' ? outcome.data : JSON.stringify(outcome.data);
    return {
      ...base,
      success: !outcome.is_error,
      data: outcome.data,
      error: outcome.is_error ? error : null,
      execution_time_ms: Date.now() - started,
      truncated: outcome.truncated,
    };
  } catch (err) {
    if (isCancellation(err)) throw err;
    const error = describeFailure(err);
    return { ...base, success: false, data: null, error, execution_time_ms: Date.now() - started, truncated: false };
  }
}

export async function gather(turn: Turn): Promise<Step> {
  const hop = turn.state.hops.at(-1)!;
  const calls = hop.plan?.tool_calls ?? [];
  enter(turn, 'gather', calls.length ? `Calls: ${calls.map((c) => c.tool_name).join(', ')}` : 'No tool calls planned.');
  await gatherHop(turn, callToolActivity);
  await resolveNamedRecords(turn, hop);
  return { next: 'coverage' };
}

/**
 * The records the hop's plan says the user named, resolved in tiers against the user's records gathered so far:
 * exact and fuzzy here, the embeddings endpoint for what they leave open, and the model, asked to pick only between
 * the candidates still left. A failed call costs only its tier: the record stays open, and the reply asks which.
 */
async function resolveNamedRecords(turn: Turn, hop: Hop): Promise<void> {
  const { state } = turn;
  const records = userRecords(state.tool_data);
  const named = (hop.plan?.entities ?? []).flatMap((entity) => resolveNamedRecord(entity, records) ?? []);
  if (!named.length) return;
  // Runs from before the semantic and model tiers replay without their calls.
  const tiers = since(NAMED_RECORDS_PATCH);
  for (const [i, open] of named.entries()) {
    if (!tiers || open.id !== null || !open.candidates.length) continue;
    named[i] = await resolveByMeaning(open);
    if (named[i].id !== null || !named[i].candidates.length || !turn.prompts?.resolve) continue;
    named[i] = await resolveByModel(turn, named[i]);
  }
  hop.named_records = named;
}

async function resolveByMeaning(open: NamedRecord): Promise<NamedRecord> {
  try {
    const { vectors } = await embeddingCalls().embedTexts.executeWithOptions(
      { summary: `embed "${open.mention}" and ${open.candidates.length} record(s)` },
      [{ texts: [open.mention, ...open.candidates.map((c) => c.label)] }],
    );
    return resolveSemantically(open, vectors);
  } catch (err) {
    if (isCancellation(err)) throw err;
    return { ...open, semantic_error: describeFailure(err) };
  }
}

async function resolveByModel(turn: Turn, open: NamedRecord): Promise<NamedRecord> {
  try {
    const answer = await modelCalls().resolve.executeWithOptions(
      { summary: `pick "${open.mention}" among ${open.candidates.length} record(s)` },
      [{ prompt: turn.prompts!.resolve!, context: resolveContext(turn.state, open) }],
    );
    recordModel(turn, answer);
    const chosen = open.candidates.find((c) => c.id === answer.output.id);
    const decided = { ...open, llm_reasoning: answer.output.reasoning };
    return chosen ? { ...decided, id: chosen.id, label: chosen.label, tier: 'llm', score: 1, candidates: [] } : decided;
  } catch (err) {
    if (isCancellation(err)) throw err;
    return { ...open, llm_error: describeFailure(err) };
  }
}

/** Runs the hop's calls at once; one failing does not stop the others (partial success is data for Coverage). */
export async function gatherHop(turn: Pick<Turn, 'state' | 'budget' | 'gathered'>, callTool: CallTool): Promise<void> {
  const hop = turn.state.hops.at(-1)!;
  const hopNumber = turn.state.hops.length;
  const calls = hop.plan?.tool_calls ?? [];
  const started = Date.now();
  // A call that names a record in words waits for the others, which may bring the user's records it is resolved against.
  const waits = (call: PlannedToolCall) => mentionArguments(call.parameters).length > 0;
  const results: ToolResult[] = [];
  for (const phase of [calls.filter((c) => !waits(c)), calls.filter(waits)]) {
    if (!phase.length) continue;
    const outcomes = await Promise.all(phase.map((call) => runToolCall(turn, call, hopNumber, callTool)));
    const stored = storeGathered(turn.state, turn.budget, outcomes, hopNumber);
    results.push(...stored.results);
    turn.gathered.push(...stored.kept);
  }
  hop.gather = summarizeGather(results, Date.now() - started);
}
