// One user turn as a graph: a table of nodes (Initialize, Plan, Gather, Coverage, Draft, Validate, Escalate, Response),
// each returning the node to go to next (and the escalation, when it escalates), driven by one short loop. Workflow code: every side effect is an activity from ./policies.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  TimeoutFailure,
  condition,
  isCancellation,
  log,
  metricMeter,
  patched,
  setCurrentDetails,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { PostedPart } from '../activities/intercom';
import type { LlmAnswer } from '../activities/llm';
import { ResolvedConversations, type DraftOutput } from '../schemas';
import type { LoadedPrompts } from '../activities/prompts';
import { checkReply, type ReplyCheck } from '../reply-checks';
import {
  DEFAULT_SNOOZE_SECONDS,
  TURN_SUMMARY_MEMO,
  searchAttributes,
  type ReplyDecision,
  type SupportConversationInput,
} from '../shared';
import type {
  AgentState,
  ApprovalData,
  CoverageAnalysis,
  DataBudget,
  EscalationKind,
  GatheredCall,
  Hop,
  NodeName,
  PlannedToolCall,
  StyleExamples,
  ToolResult,
  UserTold,
} from '../state';
import { coverageContext, draftContext, planContext, turnIntents } from './contexts';
import { freshResult, handOverToTeam } from './conversation-record';
import { intercom, llm, mcpList, prompts as promptActivities, tools, validation } from './policies';
import {
  awaitsReply,
  escalation,
  escalationNote,
  melvinStatusFor,
  partialAnswer,
  routeAfterCoverage,
  routeAfterDraft,
  routeAfterValidation,
  type Escalation,
} from './routing';
import { mentionArguments, resolveCall, userRecords } from './entities';
import {
  EXAMPLES_TOOL,
  docsQueryOf,
  isDocsTool,
  offeredTools,
  scopeToolCall,
  serverToolName,
  summarizeGather,
  toolListing,
} from './tool-calls';
import { runMap, turnOutcomeDetails, turnSummary } from './run-summary';
import { applyFetchedConversation, durationText, readValidationAnswer, storeGathered } from './turn-state';
import { errorMessage } from '../error-message';

/** What a node decides: where the turn goes next and, when it goes to Escalate, why. */
export interface Step {
  next: NodeName;
  escalation?: Escalation;
}

/** What the nodes of one run's turn share: its state, and what the run keeps beside the state. */
export interface Turn {
  input: SupportConversationInput;
  state: AgentState;
  budget: DataBudget;
  /** Epoch seconds the run began: parts this run posts are at or after it (the fallback duplicate check). */
  notBefore: number;
  /** Epoch ms the run began, and when its turn first ended (a later escalation neither lengthens nor re-dates it). */
  startedAt: number;
  endedAt: number | null;
  prompts?: LoadedPrompts;
  /**
   * The conversation's part ids as last fetched, plus every part this run posted since: a post's retry takes a part of
   * its type by Melvin outside this set for its own earlier attempt. Null until a fetch succeeds.
   */
  knownPartIds: Set<string> | null;
  /** The user's message ids in the last fetch: once the turn is over, every one of them is answered or handed over. */
  fetchedUserPartIds: string[];
  /** The turn's successful calls with their data, which later turns may reuse while fresh. */
  gathered: GatheredCall[];
  /** Why Escalate hands the conversation over, set by the node that routed there. */
  escalation: Escalation | null;
  /** A reply that answers only some intents: once it is sent, Escalate hands the rest to the team. */
  partial: Escalation | null;
  /** Until the reply starts going out, a forced escalation cancels the agent's in-flight LLM and tool calls. */
  agentScope: CancellationScope;
  replyStarted: boolean;
  /** Approval mode: the lead's decision, once the `decideReply` update has delivered it. */
  decision: ReplyDecision | null;
}

export function newTurn(input: SupportConversationInput, state: AgentState, startedAt: number): Turn {
  return {
    input,
    state,
    budget: state.metadata.data_budget!,
    notBefore: Math.floor(startedAt / 1000),
    startedAt,
    endedAt: null,
    knownPartIds: null,
    fetchedUserPartIds: [],
    gathered: [],
    escalation: null,
    partial: null,
    agentScope: new CancellationScope(),
    replyStarted: false,
    decision: null,
  };
}

const NODE_TITLES: Record<NodeName, string> = {
  initialize: 'Initialize: fetching the conversation, tools and prompts',
  plan: 'Plan: choosing tools and documentation searches',
  gather: 'Gather: running the planned tool calls',
  coverage: 'Coverage: judging whether the data answers the question',
  draft: 'Draft: writing the reply',
  validate: 'Validate: checking the draft with the validation service',
  escalate: 'Escalate: handing the conversation to the team',
  response: 'Response: sending the reply',
  finalize: 'Finalize: setting Melvin Status and snoozing',
  end: 'Finished',
};

/** The agent's nodes: they run in the agent's cancellation scope, and an operator's escalation pre-empts them. */
const AGENT_NODES = new Set<NodeName>(['initialize', 'plan', 'gather', 'coverage', 'draft', 'validate']);

/** The turn: Initialize → [Plan → Gather → Coverage]×hops → Draft → Validate → Response or Escalate → Finalize. */
const NODES: Record<Exclude<NodeName, 'end'>, (t: Turn) => Promise<Step>> = {
  initialize,
  plan,
  gather,
  coverage,
  draft,
  validate,
  response,
  escalate,
  finalize,
};

/**
 * Runs the graph from `from` to its end. After each agent node an operator's escalation wins over what the agent was
 * about to do; a node cancelled by it goes to Escalate too.
 */
export async function runGraph(t: Turn, from: NodeName): Promise<void> {
  let node = from;
  while (node !== 'end') {
    let step: Step;
    const run = NODES[node as Exclude<NodeName, 'end'>];
    if (AGENT_NODES.has(node)) {
      try {
        step = await t.agentScope.run(() => run(t));
      } catch (err) {
        if (!(isCancellation(err) && t.state.metadata.forced_escalation)) throw err;
        step = { next: 'escalate' };
      }
      if (t.state.metadata.forced_escalation) step = { next: 'escalate', escalation: operatorEscalation(t) };
      if (!AGENT_NODES.has(step.next)) t.replyStarted = true;
    } else {
      step = await run(t);
    }
    if (step.escalation) t.escalation = step.escalation;
    t.state.next_node = step.next;
    node = step.next;
  }
  endTurn(t);
}

/**
 * Runs from before turn summaries were kept in the memo must replay without the memo's command; every run since records
 * this patch marker the first time it writes one.
 */
const TURN_SUMMARY_PATCH = 'turn-summary-memo';

/**
 * The turn's outcome into its run's memo, where reports read it from visibility; `reopenedByTeam` says why the team took
 * the conversation over after the turn ended.
 */
export function recordTurnSummary(t: Turn, reopenedByTeam: string | null = null): void {
  if (!patched(TURN_SUMMARY_PATCH)) return;
  t.endedAt ??= Date.now();
  upsertMemo({
    [TURN_SUMMARY_MEMO]: turnSummary(t.state, { startedAt: t.startedAt, endedAt: t.endedAt }, reopenedByTeam),
  });
}

/** The end in the UI's details, the memo and the log: the outcome, or why nothing was sent. */
function endTurn(t: Turn): void {
  const { state } = t;
  if (!state.finalize) upsertSearchAttributes([{ key: searchAttributes.melvinStatus, value: 'skipped' }]);
  enter(t, 'end', outcomeDetails(t));
  recordTurnSummary(t);
  // Counted on the worker's Prometheus endpoint; the SDK emits no workflow metric while replaying, so each turn counts once.
  metricMeter
    .createCounter('melvin_turns', undefined, 'Turns that ended, by Melvin Status and escalation source')
    .add(1, {
      melvin_status: state.finalize?.melvin_status ?? 'skipped',
      escalation_source: state.escalate?.escalation_source ?? 'none',
    });
  log.info(state.finalize ? 'turn finished' : 'turn skipped', {
    melvin_status: state.finalize?.melvin_status ?? 'skipped',
    skipped_reason: state.metadata.skipped_reason,
    escalation_source: state.escalate?.escalation_source ?? null,
    hops: state.hops.length,
    replied: state.response_delivery?.delivery_successful ?? false,
  });
}

function enter(t: Turn, node: NodeName, detail?: string): void {
  t.state.metadata.current_node = node;
  t.state.metadata.path.push(node);
  showDetails(t, detail);
}

/** What the UI's details say of a finished turn, also while the run waits for the next message. */
export function outcomeDetails(t: Turn): string {
  return turnOutcomeDetails(t.state).join('\n\n');
}

/**
 * The Temporal UI's current details: the node and hop, what is worth knowing about it, any MCP server that failed
 * (the run goes on without its tools, which whoever watches it should know), and the path so far.
 */
export function showDetails(t: Turn, detail?: string): void {
  const { state } = t;
  const node = state.metadata.current_node;
  const hop = state.hops.length;
  // Once the turn is over its outcome leads; while it runs, the node it is at.
  const lines = [
    node === 'end' ? '' : `**${NODE_TITLES[node]}**${hop > 0 ? ` (hop ${hop} of ${state.max_hops})` : ''}`,
    detail ?? '',
    ...state.metadata.tool_servers.flatMap((s) =>
      s.ok ? [] : [`MCP server "${s.name}" failed, so its tools are left out: ${s.error}`],
    ),
    `Path: ${state.metadata.path.join(' → ')}`,
    // Once the turn is over, the map of its path goes last: the panel shows its top first.
    node === 'end' ? `\`\`\`mermaid\n${runMap(state)}\n\`\`\`` : '',
  ];
  setCurrentDetails(lines.filter(Boolean).join('\n\n'));
}

/** The most specific message in an activity failure chain, e.g. the Intercom or model error behind "Activity task failed". */
export function describeFailure(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return describeFailure(err.cause);
  if (err instanceof TimeoutFailure) return `timed out (${err.timeoutType})`;
  if (err instanceof ApplicationFailure) return err.message || err.type || 'failed';
  return errorMessage(err);
}

export function operatorEscalation(t: Turn): Escalation {
  const forced = t.state.metadata.forced_escalation!;
  return escalation('operator', forced.reason, forced.requested_by);
}

/** A node's activity failed for good: the escalation its row names. A cancellation (forced escalation) passes on. */
function failed(t: Turn, kind: EscalationKind, err: unknown): Step {
  if (isCancellation(err)) throw err;
  t.state.error = describeFailure(err);
  return { next: 'escalate', escalation: escalation(kind, t.state.error) };
}

/**
 * Which model answered, and what the turn's model calls cost so far. Answers recorded in histories from before
 * response-format modes lack the mode (they were strict outputs), and those from before usage was read lack the usage.
 */
function recordModel(t: Turn, answer: LlmAnswer<unknown>): void {
  const { metadata } = t.state;
  metadata.model = {
    name: answer.model,
    stand_in: answer.stand_in,
    response_format: answer.response_format ?? 'json_schema',
    format_fallback: answer.format_fallback ?? null,
  };
  const total = (metadata.usage ??= { calls: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  total.calls += answer.usage?.calls ?? 1;
  total.prompt_tokens += answer.usage?.prompt_tokens ?? 0;
  total.completion_tokens += answer.usage?.completion_tokens ?? 0;
  total.total_tokens += answer.usage?.total_tokens ?? 0;
}

/**
 * Posts a reply or a note. Intercom writes are never cancelled: once asked for, a post must land, and exactly once;
 * the part it made joins the parts its successors' retries compare against.
 */
async function post(t: Turn, kind: 'sendReply' | 'addNote', text: string, summary: string): Promise<PostedPart> {
  const input = {
    conversationId: t.input.conversationId,
    text,
    notBefore: t.notBefore,
    knownPartIds: t.knownPartIds ? [...t.knownPartIds] : null,
  };
  const posted = await CancellationScope.nonCancellable(() => intercom[kind].executeWithOptions({ summary }, [input]));
  if (posted.part_id) t.knownPartIds?.add(posted.part_id);
  return posted;
}

export async function postNote(
  t: Turn,
  text: string,
  summary: string,
): Promise<{ added: boolean; error: string | null }> {
  try {
    await post(t, 'addNote', text, summary);
    return { added: true, error: null };
  } catch (err) {
    log.warn('could not add note', { error: describeFailure(err) });
    return { added: false, error: describeFailure(err) };
  }
}

async function fetchConversation(t: Turn, summary: string): Promise<void> {
  const { state } = t;
  const seen = state.metadata.user_messages.length;
  const conversation = await intercom.fetchConversation.executeWithOptions({ summary }, [
    { conversationId: t.input.conversationId },
  ]);
  applyFetchedConversation(state, conversation, t.input);
  const { problems } = state.metadata.reply_mode!;
  if (problems.length) log.warn('unusable reply settings on the conversation', { problems });
  // Fetches recorded before user part ids were read carry none: the deliveries' own part ids then fill the ledger.
  t.fetchedUserPartIds = conversation.user_part_ids ?? [];
  // Parts this run posted stay known even if they fell out of the 500 most recent. Fetches recorded before part ids
  // were read carry none, and leave the posts on the fallback check.
  t.knownPartIds = conversation.part_ids ? new Set([...conversation.part_ids, ...(t.knownPartIds ?? [])]) : null;
  // A conversation's workflow that starts afresh (the last one ended after its quiet period) learns its owner from
  // Intercom: a teammate it is assigned to holds it. Later, the team's webhooks and the leads' hand-backs decide.
  const record = state.metadata.conversation;
  const assignee = conversation.admin_assignee_id;
  if (record.turn_count === 0 && !record.ownership.since && assignee && assignee !== conversation.admin_id) {
    handOverToTeam(record, `assigned to a teammate in Intercom (admin ${assignee})`, new Date().toISOString());
  }
  state.metadata.user_messages_fetched = seen;
  state.metadata.conversation_fetches += 1;
}

/**
 * Messages that arrived during the run are fetched before Coverage and Draft: Coverage can then send the agent back
 * to Plan for what the new message asks, and the reply answers everything the user said.
 */
async function refetchIfNewMessages(t: Turn): Promise<void> {
  if (t.state.metadata.user_messages.length <= t.state.metadata.user_messages_fetched) return;
  try {
    await fetchConversation(t, 're-fetch conversation for new messages');
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('could not re-fetch the conversation; drafting from the messages already fetched', {
      error: describeFailure(err),
    });
  }
}

async function loadPrompts(): Promise<LoadedPrompts> {
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
async function initialize(t: Turn): Promise<Step> {
  const { state } = t;
  enter(t, 'initialize');
  try {
    const [, listing, loaded] = await Promise.all([
      fetchConversation(t, 'fetch conversation'),
      mcpList.listTools.executeWithOptions({ summary: 'list MCP tools' }, []),
      loadPrompts(),
    ]);
    const { tools: availableTools, servers, withheld } = toolListing(listing);
    state.available_tools = availableTools;
    state.metadata.tool_servers = servers;
    // Listings from before the MCP tool policy withheld nothing and say nothing of it.
    if (withheld) state.metadata.withheld_tools = withheld;
    if (servers.some((s) => !s.ok)) showDetails(t);
    t.prompts = loaded;
    state.metadata.prompts = loaded.used;
  } catch (err) {
    return failed(t, 'initialization_error', err);
  }
  const { handled_part_ids: handled, ownership } = state.metadata.conversation;
  if (ownership.owner === 'team') {
    state.metadata.skipped_reason = `the team owns the conversation (${ownership.reason}): Melvin does not answer`;
    return { next: 'end' };
  }
  if (!awaitsReply(state.messages)) {
    state.metadata.skipped_reason = 'the latest message in the conversation is not from the user: nothing to answer';
    return { next: 'end' };
  }
  if (t.fetchedUserPartIds.length && t.fetchedUserPartIds.every((id) => handled.includes(id))) {
    state.metadata.skipped_reason = 'every message of the user was answered or handed over by an earlier turn';
    return { next: 'end' };
  }
  return { next: 'plan' };
}

/** Starts a hop: the model chooses the tool calls and documentation searches. */
async function plan(t: Turn): Promise<Step> {
  const { state } = t;
  const hop: Hop = { plan: null, gather: null, coverage: null };
  state.hops.push(hop);
  const hopNumber = state.hops.length;
  upsertSearchAttributes([{ key: searchAttributes.hopCount, value: hopNumber }]);
  enter(t, 'plan');
  try {
    const answer = await llm.plan.executeWithOptions({ summary: `plan hop ${hopNumber}` }, [
      { prompt: t.prompts!.plan, context: planContext(state, hopNumber) },
    ]);
    recordModel(t, answer);
    hop.plan = answer.output;
  } catch (err) {
    return failed(t, 'plan_error', err);
  }
  return { next: 'gather' };
}

/** One planned call: scoped to the conversation's user, reused while an earlier turn's result is fresh, else made. */
async function runToolCall(t: Turn, call: PlannedToolCall, hopNumber: number): Promise<GatheredCall> {
  const { state } = t;
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
    const outcome = await tools.callTool.executeWithOptions({ summary: `${summary} (hop ${hopNumber})` }, [
      { server: scoped.tool.server, name: serverToolName(scoped.tool), arguments: resolution.arguments },
    ]);
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

/** Runs the hop's calls at once; one failing does not stop the others (partial success is data for Coverage). */
async function gather(t: Turn): Promise<Step> {
  const hop = t.state.hops.at(-1)!;
  const hopNumber = t.state.hops.length;
  const calls = hop.plan?.tool_calls ?? [];
  enter(t, 'gather', calls.length ? `Calls: ${calls.map((c) => c.tool_name).join(', ')}` : 'No tool calls planned.');
  const started = Date.now();
  // A call that names a record in words waits for the others, which may bring the user's records it is resolved against.
  const waits = (call: PlannedToolCall) => mentionArguments(call.parameters).length > 0;
  const results: ToolResult[] = [];
  for (const phase of [calls.filter((c) => !waits(c)), calls.filter(waits)]) {
    if (!phase.length) continue;
    const outcomes = await Promise.all(phase.map((call) => runToolCall(t, call, hopNumber)));
    const stored = storeGathered(t.state, t.budget, outcomes, hopNumber);
    results.push(...stored.results);
    t.gathered.push(...stored.kept);
  }
  hop.gather = summarizeGather(results, Date.now() - started);
  return { next: 'coverage' };
}

/** The coverage rule: enough data → Draft; not enough with hops left → Plan again; else escalate. */
async function coverage(t: Turn): Promise<Step> {
  await refetchIfNewMessages(t);
  const { state } = t;
  const hop = state.hops.at(-1)!;
  const hopNumber = state.hops.length;
  enter(t, 'coverage');
  let answer: LlmAnswer<CoverageAnalysis>;
  try {
    answer = await llm.coverage.executeWithOptions({ summary: `coverage hop ${hopNumber}` }, [
      { prompt: t.prompts!.coverage, context: coverageContext(state, hopNumber) },
    ]);
  } catch (err) {
    const step = failed(t, 'coverage_error', err);
    hop.coverage = {
      coverage_analysis: null,
      data_sufficient: false,
      next_node: 'escalate',
      escalation_reason: step.escalation!.reason,
    };
    return step;
  }
  recordModel(t, answer);
  const analysis = answer.output;
  const route = routeAfterCoverage({
    dataSufficient: analysis.data_sufficient,
    hop: hopNumber,
    maxHops: state.max_hops,
    intentsCovered: analysis.intents?.filter((i) => i.covered).length,
  });
  hop.coverage = {
    coverage_analysis: analysis,
    data_sufficient: analysis.data_sufficient,
    next_node: route.next,
    escalation_reason: route.escalation?.reason ?? null,
  };
  return { next: route.next, ...(route.escalation ? { escalation: route.escalation } : {}) };
}

/** Style examples: how many past answers Draft sees, and how much of each (the gist of the team's voice, not a thread). */
const MAX_EXAMPLES = 3;
const MAX_EXAMPLE_CHARS = 600;

/**
 * The team's voice: past conversations a teammate resolved, retrieved by similarity to the question, for
 * Draft to match their tone. Null when no MCP server offers the search; a failed search leaves Draft without examples.
 */
async function retrieveStyleExamples(t: Turn): Promise<StyleExamples | null> {
  const { state } = t;
  const tool = state.available_tools.find((candidate) => serverToolName(candidate) === EXAMPLES_TOOL);
  if (!tool) return null;
  const query = turnIntents(state)
    .map((i) => i.question)
    .join(' ')
    .slice(0, 500);
  const found: StyleExamples = { tool: tool.name, query, examples: [], error: null };
  try {
    const outcome = await tools.callTool.executeWithOptions({ summary: "find the team's past answers" }, [
      { server: tool.server, name: serverToolName(tool), arguments: { query, limit: MAX_EXAMPLES } },
    ]);
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

async function draft(t: Turn): Promise<Step> {
  await refetchIfNewMessages(t);
  const { state } = t;
  enter(t, 'draft');
  const started = Date.now();
  state.metadata.style_examples = await retrieveStyleExamples(t);
  let answer: LlmAnswer<DraftOutput>;
  try {
    answer = await llm.draft.executeWithOptions({ summary: 'draft reply' }, [
      { prompt: t.prompts!.draft, context: draftContext(state) },
    ]);
  } catch (err) {
    return failed(t, 'draft_error', err);
  }
  recordModel(t, answer);
  // Drafts recorded before intents carry no open intents: they answered everything they replied to.
  const open = answer.output.open_intents ?? [];
  state.draft = {
    response: answer.output.text,
    response_type: answer.output.response_type,
    ...(open.length ? { open_intents: open } : {}),
    generation_time_ms: Date.now() - started,
    timestamp: new Date().toISOString(),
  };
  state.response = answer.output.text;
  // A reply that leaves some of the user's questions open goes out, then the team gets the rest (after Response).
  if (answer.output.response_type === 'REPLY' && open.length) t.partial = partialAnswer(turnIntents(state), open);
  const route = routeAfterDraft(answer.output.response_type);
  return { next: route.next, ...(route.escalation ? { escalation: route.escalation } : {}) };
}

/**
 * Runs whose guard matched internal ids anywhere in the reply (so "$250" was blocked by an id 250) must replay with
 * that match, or a reply it blocked would now go on to the validation service; every run since records this marker.
 */
const REPLY_GUARD_ID_TOKENS_PATCH = 'reply-guard-id-tokens';

/** Melvin's own checks, before the validation service is asked: a reply that fails them never goes further. */
function guardFindings(t: Turn): ReplyCheck[] {
  const { state, prompts } = t;
  const checks = checkReply(
    state.response ?? '',
    {
      userEmail: state.user_email,
      internalNotes: state.metadata.internal_notes,
      toolData: state.tool_data,
      prompts: prompts ? [prompts.plan, prompts.coverage, prompts.draft] : [],
    },
    { idsAsSubstrings: !patched(REPLY_GUARD_ID_TOKENS_PATCH) },
  );
  return checks.some((c) => !c.passed) ? checks : [];
}

/** The user's questions the draft answers, and those it leaves open for the team, in the user's words. */
function answeredAndOpen(state: AgentState): { answered: string[]; open: string[] } {
  const open = state.draft?.open_intents ?? [];
  const intents = turnIntents(state);
  return {
    answered: intents.filter((i) => !open.includes(i.intent)).map((i) => i.question),
    open: intents.filter((i) => open.includes(i.intent)).map((i) => i.question),
  };
}

/** The validation service's raw answer, or the escalation when it cannot be had. */
async function askValidationService(t: Turn): Promise<string | Step> {
  const { state } = t;
  try {
    const answer = await validation.validateDraft.executeWithOptions({ summary: 'validate draft' }, [
      {
        conversation_id: t.input.conversationId,
        response: state.response ?? '',
        user_email: state.user_email,
        user_name: state.metadata.user_name,
        messages: state.messages,
        internal_notes: state.metadata.internal_notes,
        tool_data: state.tool_data,
        docs_data: state.docs_data,
        intents: answeredAndOpen(state),
      },
    ]);
    return answer.raw;
  } catch (err) {
    const step = failed(t, 'validation_error', err);
    state.validate = {
      validation_response: null,
      overall_passed: false,
      validation_note_added: false,
      escalation_reason: step.escalation!.reason,
      next_action: 'escalate',
    };
    return step;
  }
}

async function validate(t: Turn): Promise<Step> {
  enter(t, 'validate');
  const blocked = guardFindings(t);
  const raw = blocked.length
    ? JSON.stringify({ overall_passed: false, checked_by: 'melvin', checks: blocked })
    : await askValidationService(t);
  if (typeof raw !== 'string') return raw;
  // The raw answer is always noted, even when it cannot be parsed: it is what the team needs to see why.
  const note = await postNote(t, `Validation result:\n${raw}`, 'note validation result');
  const { answer, problem } = readValidationAnswer(raw);
  const route = answer
    ? routeAfterValidation(answer.overall_passed)
    : { next: 'escalate' as const, escalation: escalation('validation_error', problem) };
  t.state.validate = {
    validation_response: answer ?? raw,
    overall_passed: answer?.overall_passed ?? false,
    validation_note_added: note.added,
    escalation_reason: route.escalation?.reason ?? null,
    next_action: route.next,
  };
  return { next: route.next, ...(route.escalation ? { escalation: route.escalation } : {}) };
}

/**
 * Sends the validated reply, unless a teammate took over meanwhile or the reply mode holds it back (approval waits for
 * a lead; shadow only notes it). A reply that could not be delivered goes to the team as a note.
 */
async function response(t: Turn): Promise<Step> {
  const { state } = t;
  if (state.metadata.conversation.ownership.owner === 'team') {
    // A teammate replied or was assigned while Melvin worked: theirs is the answer, Melvin's draft goes to them.
    await postNote(
      t,
      `ℹ️ A teammate took over while Melvin was answering, so Melvin did not send its reply.\n\nDrafted reply:\n${state.response ?? ''}`,
      'note reply withheld',
    );
    state.metadata.skipped_reason = 'a teammate took over during the turn: the reply was not sent';
    return { next: 'end' };
  }
  // Set at every fetch, from the conversation's attributes or the configuration.
  const { mode } = state.metadata.reply_mode!;
  if (mode === 'shadow') {
    await noteShadowDraft(t);
    state.metadata.skipped_reason = 'shadow mode: the draft was noted for the team, not sent';
    return { next: 'end' };
  }
  if (mode === 'approve') {
    const refused = await awaitDecision(t);
    if (refused) return { next: 'escalate', escalation: refused };
  }
  enter(t, 'response');
  const started = Date.now();
  const delivery = { delivery_attempted: true, status_updated: false };
  try {
    const posted = await post(t, 'sendReply', state.response ?? '', 'reply');
    state.response_delivery = {
      ...delivery,
      delivery_successful: true,
      delivery_error: null,
      delivery_time_ms: Date.now() - started,
      part_id: posted.part_id,
    };
  } catch (err) {
    state.error = describeFailure(err);
    state.response_delivery = {
      ...delivery,
      delivery_successful: false,
      delivery_error: state.error,
      delivery_time_ms: Date.now() - started,
      part_id: null,
    };
    // The user got nothing: the team gets the drafted reply so a person can send it.
    await postNote(
      t,
      `⚠️ Melvin could not deliver its reply: ${state.error}\n\nDrafted reply:\n${state.response ?? ''}`,
      'note failed reply',
    );
  }
  // Forced while the reply was going out: the reply stands, and the team is told to take over.
  const next = afterWrites(t);
  // A partial answer that reached the user: the team gets the questions it left open.
  if (next.escalation || !t.partial || !state.response_delivery?.delivery_successful) return next;
  return { next: 'escalate', escalation: t.partial };
}

/** After Response or Finalize: an operator's escalation that came meanwhile still escalates; else onwards. */
function afterWrites(t: Turn, next: NodeName = 'finalize'): Step {
  if (!t.state.metadata.forced_escalation || t.state.escalate) return { next };
  return { next: 'escalate', escalation: operatorEscalation(t) };
}

/** The hand-over message, sent once like a reply (a retry finds an accepted attempt); never cancelled. */
async function tellUser(t: Turn, kind: EscalationKind): Promise<UserTold | null> {
  const text = t.input.handoverMessages?.[kind]?.trim();
  if (!text) return null;
  try {
    const posted = await post(t, 'sendReply', text, 'tell the user a person will follow up');
    return { text, sent: true, error: null, part_id: posted.part_id };
  } catch (err) {
    log.warn('could not tell the user of the hand-over', { error: describeFailure(err) });
    return { text, sent: false, error: describeFailure(err), part_id: null };
  }
}

async function escalate(t: Turn): Promise<Step> {
  const { state } = t;
  const e = t.escalation!;
  enter(t, 'escalate', `Reason: ${e.reason}`);
  state.escalation_reason = e.reason;
  // When a teammate has already taken over, a person is with the user: nothing to tell them.
  const told = state.metadata.conversation.ownership.owner === 'team' ? null : await tellUser(t, e.kind);
  const note = await postNote(t, escalationNote(e, told, runMap(state, e.kind)), 'note escalation');
  state.escalate = {
    escalation_source: e.source,
    escalation_kind: e.kind,
    escalation_reason: e.reason,
    note_added: note.added,
    note_error: note.error,
    requested_by: e.requested_by,
    timestamp: new Date().toISOString(),
    user_told: told,
  };
  upsertSearchAttributes([{ key: searchAttributes.escalationSource, value: e.source }]);
  return { next: 'finalize' };
}

async function finalize(t: Turn): Promise<Step> {
  const { state, input } = t;
  enter(t, 'finalize');
  const conversationId = input.conversationId;
  const snoozeSeconds = input.snoozeSeconds ?? DEFAULT_SNOOZE_SECONDS;
  const status = melvinStatusFor({
    escalationKind: state.escalate?.escalation_kind ?? null,
    delivered: state.response_delivery?.delivery_successful ?? false,
  });
  const [statusSet, snoozed] = await Promise.allSettled([
    intercom.setStatus.executeWithOptions({ summary: `set Melvin Status ${status}` }, [{ conversationId, status }]),
    intercom.snooze.executeWithOptions({ summary: `snooze ${snoozeSeconds}s` }, [
      { conversationId, seconds: snoozeSeconds },
    ]),
  ]);
  const errors = [statusSet, snoozed].flatMap((r) => (r.status === 'rejected' ? [describeFailure(r.reason)] : []));
  state.finalize = {
    melvin_status: status,
    status_updated: statusSet.status === 'fulfilled',
    conversation_snoozed: snoozed.status === 'fulfilled',
    snooze_duration_seconds: snoozeSeconds,
    error: errors.length ? errors.join('; ') : null,
  };
  if (state.response_delivery) state.response_delivery.status_updated = statusSet.status === 'fulfilled';
  upsertSearchAttributes([{ key: searchAttributes.melvinStatus, value: status }]);
  return afterWrites(t, 'end');
}

function newApproval(t: Turn, mode: ApprovalData['mode']): ApprovalData {
  return {
    mode,
    draft: t.state.response ?? '',
    note_added: false,
    requested_at: new Date().toISOString(),
    outcome: mode === 'shadow' ? 'noted' : 'waiting',
    decided_by: null,
    decided_at: null,
    reason: null,
  };
}

/** Shadow mode: the draft goes on the conversation as a note, and nothing is sent. */
async function noteShadowDraft(t: Turn): Promise<void> {
  const approval = newApproval(t, 'shadow');
  approval.note_added = (
    await postNote(t, `👁 Shadow mode: Melvin would have replied:\n\n${approval.draft}`, 'note shadow draft')
  ).added;
  t.state.metadata.approval = approval;
}

/**
 * Approval mode: notes the draft and waits for a lead's decision (the `decideReply` update) until the timeout. Returns
 * null to send (the draft, or the lead's edit), else the escalation: a rejection, the timeout, a forced escalation.
 */
async function awaitDecision(t: Turn): Promise<Escalation | null> {
  const { state } = t;
  const approval = newApproval(t, 'approve');
  const timeoutSeconds = state.metadata.reply_mode!.approval_timeout_seconds;
  const waitText = durationText(timeoutSeconds);
  approval.note_added = (
    await postNote(
      t,
      `✋ Melvin's draft waits for a lead: approve, edit or reject it (decideReply). After ${waitText} without a ` +
        `decision the team takes over.\n\n${approval.draft}`,
      'note draft for approval',
    )
  ).added;
  // Set only now: the update's validator accepts a decision once the team can see the draft.
  state.metadata.approval = approval;
  showDetails(t, `Waiting up to ${waitText} for a lead to approve, edit or reject the draft.`);
  const decided = await condition(
    () => t.decision !== null || !!state.metadata.forced_escalation,
    timeoutSeconds * 1000,
  );
  const decision = t.decision;
  if (!decided || !decision) {
    approval.outcome = decided ? approval.outcome : 'timed_out';
    upsertSearchAttributes([{ key: searchAttributes.replyDecision, value: approval.outcome }]);
    return decided
      ? operatorEscalation(t)
      : escalation('operator', `No decision on Melvin's draft within ${waitText}`, 'approval timeout');
  }
  approval.decided_by = decision.by;
  approval.decided_at = new Date().toISOString();
  approval.outcome =
    decision.decision === 'approve' ? 'approved' : decision.decision === 'edit' ? 'edited' : 'rejected';
  upsertSearchAttributes([{ key: searchAttributes.replyDecision, value: approval.outcome }]);
  if (decision.decision === 'reject') {
    approval.reason = decision.reason;
    return escalation('operator', `Draft rejected: ${decision.reason}`, decision.by);
  }
  if (decision.decision === 'edit') state.response = decision.text;
  return null;
}
