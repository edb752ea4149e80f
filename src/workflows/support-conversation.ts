// The supportConversation workflow: seed 000's agent graph for one user turn, then the wait for the conversation's next
// message; orchestration and routing only.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  TimeoutFailure,
  condition,
  continueAsNew,
  isCancellation,
  log,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { PostInput, PostedPart } from '../activities/intercom';
import type { LoadedPrompts } from '../activities/prompts';
import type { LlmAnswer } from '../activities/llm';
import { checkReply, type ReplyCheck } from '../reply-checks';
import { ValidationResponse } from '../schemas';
import {
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  DEFAULT_DATA_BUDGET_BYTES,
  DEFAULT_MAX_HOPS,
  DEFAULT_SNOOZE_SECONDS,
  forceEscalationSignal,
  decideReplyUpdate,
  handBackSignal,
  newUserMessageSignal,
  teamActionSignal,
  progressQuery,
  searchAttributes,
  stateQuery,
  type ReplyDecision,
  type SupportConversationInput,
} from '../shared';
import type {
  AgentState,
  ApprovalData,
  ConversationOutcome,
  DataBudget,
  GatheredCall,
  EscalationKind,
  UserTold,
  Hop,
  NodeName,
  PlannedToolCall,
  ReceivedUserMessage,
  TeamAnswer,
  ToolResult,
} from '../state';
import { coverageContext, draftContext, planContext } from './contexts';
import {
  MAX_REMEMBERED_REPLY,
  freshResult,
  handBackToMelvin,
  rememberResults,
  handOverToTeam,
  markHandled,
  newConversationRecord,
  recordTeamAnswer,
  recordTurn,
  unansweredDeliveries,
} from './conversation-record';
import { intercom, llm, mcpList, prompts as promptActivities, tools, validation } from './policies';
import {
  awaitsReply,
  escalation,
  escalationNote,
  melvinStatusFor,
  replyDecisionProblem,
  routeAfterCoverage,
  routeAfterDraft,
  routeAfterValidation,
  type Escalation,
} from './routing';
import {
  docsDataKey,
  docsQueryOf,
  isDocsTool,
  scopeToolCall,
  serverToolName,
  summarizeGather,
  toolDataKey,
  toolListing,
} from './tool-calls';

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

/** Characters of a value's JSON: the measure of the turn's data budget. */
function jsonLength(value: unknown): number {
  return JSON.stringify(value)?.length ?? 0;
}

function durationText(seconds: number): string {
  if (seconds % 86400 === 0) return `${seconds / 86400} d`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** The most specific message in an activity failure chain, e.g. the Intercom or model error behind "Activity task failed". */
export function describeFailure(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return describeFailure(err.cause);
  if (err instanceof TimeoutFailure) return `timed out (${err.timeoutType})`;
  if (err instanceof ApplicationFailure) return err.message || err.type || 'failed';
  return err instanceof Error ? err.message : String(err);
}

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
    },
  };
}

export async function supportConversation(input: SupportConversationInput): Promise<ConversationOutcome> {
  const startedAt = Date.now();
  const state = newState(input, new Date(startedAt).toISOString());
  const conversationId = input.conversationId;
  const snoozeSeconds = input.snoozeSeconds ?? DEFAULT_SNOOZE_SECONDS;
  // Runs started before conversations outlived their turn carry no quiet period, and end after the turn as they did.
  const quietPeriodSeconds = input.quietPeriodSeconds ?? 0;
  const record = state.metadata.conversation;
  /** The user's message ids in the last fetch: once the turn is over, every one of them is answered or handed over. */
  let fetchedUserPartIds: string[] = [];
  /** Deliveries before this index are answered or handed over; the rest wait for the next turn. */
  let consumedDeliveries = 0;
  /** The turn's successful calls with their data, which later turns may reuse while fresh. */
  const gatheredThisTurn: GatheredCall[] = [];
  /** One budget for all the data a turn gathers; the state shows it and what it left out. */
  const budget: DataBudget = (state.metadata.data_budget = {
    budget_bytes: input.dataBudgetBytes ?? DEFAULT_DATA_BUDGET_BYTES,
    used_bytes: 0,
    dropped: [],
  });
  /** A teammate closed the conversation in Intercom: the workflow ends once the turn in progress is over. */
  let closedByTeam = false;
  /** Shadow mode: a teammate's answer that came while this run's turn was still going. */
  let teamAnswerDuringTurn: TeamAnswer | null = null;
  const teamActionsSeen = new Set<string>();
  /** Approval mode: the lead's decision, once the `decideReply` update has delivered it. */
  let replyDecision: ReplyDecision | null = null;
  /** Parts posted by this run are at or after this second: the bound of the fallback duplicate check. */
  const notBefore = Math.floor(startedAt / 1000);
  /**
   * The conversation's part ids as last fetched, plus every part this run posted since: a post's retry takes a part of
   * its type by Melvin outside this set for its own earlier attempt. Null until a fetch succeeds.
   */
  let knownPartIds: Set<string> | null = null;
  let loadedPrompts: LoadedPrompts | undefined;
  /** Until the reply starts going out, a forced escalation cancels the agent's in-flight LLM and tool calls. */
  const agentScope = new CancellationScope();
  let replyStarted = false;

  setHandler(stateQuery, () => state);
  setHandler(progressQuery, () => ({
    node: state.metadata.current_node,
    hop: state.hops.length,
    elapsed_ms: Date.now() - startedAt,
    phase: state.metadata.phase,
    turns: record.turn_count,
  }));
  setHandler(newUserMessageSignal, (message) => {
    const notificationId = String(message?.notificationId ?? '');
    // Intercom redelivers webhooks; a delivery already seen is the same message, not a new one.
    if (state.metadata.user_messages.some((m) => m.notification_id === notificationId)) return;
    // Whatever ingress replica sent it, a delivery for a part an earlier turn answered or handed over is no news.
    if (message?.partId && record.handled_part_ids.includes(String(message.partId))) {
      log.info('delivery for a message already handled: ignored', { part_id: String(message.partId) });
      return;
    }
    state.metadata.user_messages.push({
      notification_id: notificationId,
      part_id: message?.partId ?? null,
      received_at: new Date().toISOString(),
    });
  });
  setHandler(forceEscalationSignal, (request) => {
    if (state.metadata.forced_escalation) return;
    state.metadata.forced_escalation = {
      reason:
        typeof request?.reason === 'string' && request.reason.trim()
          ? request.reason.trim()
          : 'Escalation requested by an operator',
      requested_by: typeof request?.requestedBy === 'string' && request.requestedBy ? request.requestedBy : 'unknown',
      received_at: new Date().toISOString(),
    };
    log.info('forced escalation received', { reason: state.metadata.forced_escalation.reason });
    if (!replyStarted) agentScope.cancel();
  });
  setHandler(teamActionSignal, (event) => {
    const notificationId = String(event?.notificationId ?? '');
    if (teamActionsSeen.has(notificationId)) return;
    teamActionsSeen.add(notificationId);
    const now = new Date().toISOString();
    if (event?.action === 'closed') {
      closedByTeam = true;
      handOverToTeam(record, 'a teammate closed the conversation in Intercom', now);
    } else if (event?.action === 'assigned' && event.toMelvin) {
      handBackToMelvin(record, 'assigned to Melvin in Intercom', now);
    } else if (event?.action === 'assigned') {
      handOverToTeam(record, 'a teammate was assigned the conversation in Intercom', now);
    } else if (event?.action === 'replied') {
      handOverToTeam(record, 'a teammate replied in Intercom', now);
      if (typeof event.text === 'string' && event.text) {
        const answer = { text: event.text, by: typeof event.by === 'string' ? event.by : null, at: now };
        // During a turn the turn is not recorded yet: its close keeps the answer if the turn only noted a draft.
        if (state.metadata.phase === 'turn') teamAnswerDuringTurn = answer;
        else recordTeamAnswer(record, answer);
      }
    }
    log.info('team action received', { action: event?.action ?? null, owner: record.ownership.owner });
  });
  setHandler(
    decideReplyUpdate,
    (decision) => {
      replyDecision = decision;
      return { accepted: decision.decision };
    },
    {
      validator: (decision) => {
        if (state.metadata.approval?.outcome !== 'waiting' || replyDecision) {
          throw new Error(`no draft of conversation ${conversationId} is waiting for a decision`);
        }
        const problem = replyDecisionProblem(decision);
        if (problem) throw new Error(problem);
      },
    },
  );
  setHandler(handBackSignal, (request) => {
    if (record.ownership.owner !== 'team') return;
    const reason = typeof request?.reason === 'string' && request.reason.trim() ? request.reason.trim() : 'handed back';
    const by = typeof request?.requestedBy === 'string' && request.requestedBy ? request.requestedBy : 'unknown';
    handBackToMelvin(record, `${reason} (${by})`, new Date().toISOString());
    log.info('conversation handed back to Melvin', { requested_by: by });
  });

  upsertSearchAttributes([{ key: searchAttributes.conversationId, value: conversationId }]);
  // Workflow logs carry the workflow and run ids; message text never goes into a log line.
  log.info('turn started', { topic: input.trigger?.topic ?? null, max_hops: state.max_hops });

  /** What the UI's details said when the turn ended: the outcome, which stays shown while the run waits. */
  let outcomeDetail = '';

  function enter(node: NodeName, detail?: string): void {
    state.metadata.current_node = node;
    state.metadata.path.push(node);
    if (node === 'end') outcomeDetail = detail ?? '';
    showDetails(detail);
  }

  /**
   * The Temporal UI's current details: the node and hop, what is worth knowing about it, any MCP server that failed
   * (the run goes on without its tools, which whoever watches it should know), and the path so far.
   */
  function showDetails(detail?: string): void {
    const node = state.metadata.current_node;
    const hop = state.hops.length;
    const lines = [
      `**${NODE_TITLES[node]}**${hop > 0 && node !== 'end' ? ` (hop ${hop} of ${state.max_hops})` : ''}`,
      detail ?? '',
      ...state.metadata.tool_servers.flatMap((s) =>
        s.ok ? [] : [`MCP server "${s.name}" failed, so its tools are left out: ${s.error}`],
      ),
      `Path: ${state.metadata.path.join(' → ')}`,
    ];
    setCurrentDetails(lines.filter(Boolean).join('\n\n'));
  }

  function operatorEscalation(): Escalation {
    const forced = state.metadata.forced_escalation!;
    return escalation('operator', forced.reason, forced.requested_by);
  }

  /** A node's activity failed for good: the escalation its row names. A cancellation (forced escalation) passes on. */
  function failed(kind: EscalationKind, err: unknown): Escalation {
    if (isCancellation(err)) throw err;
    state.error = describeFailure(err);
    return escalation(kind, state.error);
  }

  /** Answers recorded in histories from before response-format modes lack the mode: they were strict outputs. */
  function recordModel(answer: LlmAnswer<unknown>): void {
    state.metadata.model = {
      name: answer.model,
      stand_in: answer.stand_in,
      response_format: answer.response_format ?? 'json_schema',
      format_fallback: answer.format_fallback ?? null,
    };
  }

  /**
   * Posts a reply or a note. Intercom writes are never cancelled: once asked for, a post must land, and exactly once;
   * the part it made joins the parts its successors' retries compare against.
   */
  async function post(kind: 'sendReply' | 'addNote', text: string, summary: string): Promise<PostedPart> {
    const input: PostInput = { conversationId, text, notBefore, knownPartIds: knownPartIds ? [...knownPartIds] : null };
    const posted = await CancellationScope.nonCancellable(() =>
      intercom[kind].executeWithOptions({ summary }, [input]),
    );
    if (posted.part_id) knownPartIds?.add(posted.part_id);
    return posted;
  }

  async function postNote(text: string, summary: string): Promise<{ added: boolean; error: string | null }> {
    try {
      await post('addNote', text, summary);
      return { added: true, error: null };
    } catch (err) {
      log.warn('could not add note', { error: describeFailure(err) });
      return { added: false, error: describeFailure(err) };
    }
  }

  async function fetchConversation(summary: string): Promise<void> {
    const seen = state.metadata.user_messages.length;
    const conversation = await intercom.fetchConversation.executeWithOptions({ summary }, [{ conversationId }]);
    state.messages = conversation.messages;
    // Fetches recorded before user part ids were read carry none: the deliveries' own part ids then fill the ledger.
    fetchedUserPartIds = conversation.user_part_ids ?? [];
    // Parts this run posted stay known even if they fell out of the 500 most recent. Fetches recorded before part ids
    // were read carry none, and leave the posts on the fallback check.
    knownPartIds = conversation.part_ids ? new Set([...conversation.part_ids, ...(knownPartIds ?? [])]) : null;
    // Fetches recorded before Melvin read `total_count` carry no count.
    state.metadata.omitted_parts = conversation.omitted_parts ?? 0;
    state.metadata.internal_notes = conversation.internal_notes;
    state.user_email = conversation.contact?.email ?? null;
    state.metadata.contact_id = conversation.contact?.id ?? null;
    state.metadata.user_name = conversation.contact?.name ?? null;
    state.melvin_admin_id = conversation.admin_id;
    // The conversation's own attributes choose how Melvin replies in it; the configuration decides the rest.
    const settings = conversation.reply_settings;
    if (settings?.problems.length)
      log.warn('unusable reply settings on the conversation', { problems: settings.problems });
    state.metadata.reply_mode = {
      mode: settings?.mode ?? input.replyMode ?? 'auto',
      approval_timeout_seconds:
        settings?.approval_timeout_seconds ?? input.approvalTimeoutSeconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS,
      set_by: settings?.mode ? 'conversation attribute' : 'configuration',
      problems: settings?.problems ?? [],
    };
    state.metadata.user_messages_fetched = seen;
    state.metadata.conversation_fetches += 1;
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

  async function initialize(): Promise<Escalation | null> {
    enter('initialize');
    try {
      const [, listing, loaded] = await Promise.all([
        fetchConversation('fetch conversation'),
        mcpList.listTools.executeWithOptions({ summary: 'list MCP tools' }, []),
        loadPrompts(),
      ]);
      const { tools: availableTools, servers } = toolListing(listing);
      state.available_tools = availableTools;
      state.metadata.tool_servers = servers;
      if (servers.some((s) => !s.ok)) showDetails();
      loadedPrompts = loaded;
      state.metadata.prompts = loaded.used;
    } catch (err) {
      return failed('initialization_error', err);
    }
    state.next_node = 'plan';
    return null;
  }

  async function plan(hop: Hop, hopNumber: number): Promise<Escalation | null> {
    enter('plan');
    try {
      const answer = await llm.plan.executeWithOptions({ summary: `plan hop ${hopNumber}` }, [
        { prompt: loadedPrompts!.plan, context: planContext(state, hopNumber) },
      ]);
      recordModel(answer);
      hop.plan = answer.output;
    } catch (err) {
      return failed('plan_error', err);
    }
    state.next_node = 'gather';
    return null;
  }

  async function runToolCall(call: PlannedToolCall, hopNumber: number): Promise<GatheredCall> {
    const started = Date.now();
    const scoped = scopeToolCall(call, state.available_tools, state.user_email);
    const base = {
      tool_name: call.tool_name,
      parameters: scoped.arguments,
      timestamp: new Date(started).toISOString(),
    };
    if (!scoped.ok) {
      return { ...base, success: false, data: null, error: scoped.error, execution_time_ms: 0, truncated: false };
    }
    // An earlier turn made this very call and its result is still fresh: the follow-up reuses it.
    const fresh = freshResult(record, call.tool_name, scoped.arguments, started);
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
        { server: scoped.tool.server, name: serverToolName(scoped.tool), arguments: scoped.arguments },
      ]);
      return {
        ...base,
        success: !outcome.is_error,
        data: outcome.data,
        error: outcome.is_error
          ? typeof outcome.data === 'string'
            ? outcome.data
            : JSON.stringify(outcome.data)
          : null,
        execution_time_ms: Date.now() - started,
        truncated: outcome.truncated,
      };
    } catch (err) {
      if (isCancellation(err)) throw err;
      return {
        ...base,
        success: false,
        data: null,
        error: describeFailure(err),
        execution_time_ms: Date.now() - started,
        truncated: false,
      };
    }
  }

  async function gather(hop: Hop, hopNumber: number): Promise<void> {
    const calls = hop.plan?.tool_calls ?? [];
    enter('gather', calls.length ? `Calls: ${calls.map((c) => c.tool_name).join(', ')}` : 'No tool calls planned.');
    const started = Date.now();
    // All calls run at once; one failing does not stop the others (partial success is data for Coverage).
    const outcomes = await Promise.all(calls.map((call) => runToolCall(call, hopNumber)));
    const results: ToolResult[] = outcomes.map((gathered) => {
      const { data: gatheredData, ...call } = gathered;
      const bytes = gatheredData === null || gatheredData === undefined ? 0 : jsonLength(gatheredData);
      // Past the turn's budget a result is left out, so no activity input or result nears Temporal's payload limit.
      const dropped = gathered.success && budget.used_bytes + bytes > budget.budget_bytes;
      if (gathered.success && !dropped) gatheredThisTurn.push(gathered);
      const outcome = dropped
        ? {
            ...call,
            success: false,
            error: `left out: the turn's gathered data reached its budget of ${Math.round(budget.budget_bytes / 1024)} KB`,
          }
        : call;
      const data = dropped ? null : gatheredData;
      if (!dropped) budget.used_bytes += bytes;
      const { success, error, truncated } = outcome;
      const stored = { hop: hopNumber, success, data, error, truncated };
      let key: string;
      if (isDocsTool(outcome.tool_name, state.available_tools)) {
        const query = docsQueryOf(outcome.parameters);
        key = docsDataKey(state.docs_data, query, hopNumber);
        state.docs_data[key] = { query, ...stored };
      } else {
        key = toolDataKey(state.tool_data, outcome.tool_name, hopNumber);
        state.tool_data[key] = { tool_name: outcome.tool_name, parameters: outcome.parameters, ...stored };
      }
      if (dropped) budget.dropped.push({ hop: hopNumber, tool_name: outcome.tool_name, stored_as: key, bytes });
      return { ...outcome, stored_as: key, data_bytes: dropped ? 0 : bytes, ...(dropped ? { dropped } : {}) };
    });
    hop.gather = summarizeGather(results, Date.now() - started);
    state.next_node = 'coverage';
  }

  async function coverage(hop: Hop, hopNumber: number): Promise<{ escalation: Escalation | null; done: boolean }> {
    enter('coverage');
    let answer: LlmAnswer<NonNullable<NonNullable<Hop['coverage']>['coverage_analysis']>>;
    try {
      answer = await llm.coverage.executeWithOptions({ summary: `coverage hop ${hopNumber}` }, [
        { prompt: loadedPrompts!.coverage, context: coverageContext(state, hopNumber) },
      ]);
    } catch (err) {
      const e = failed('coverage_error', err);
      hop.coverage = {
        coverage_analysis: null,
        data_sufficient: false,
        next_node: 'escalate',
        escalation_reason: e.reason,
      };
      return { escalation: e, done: true };
    }
    recordModel(answer);
    const analysis = answer.output;
    const route = routeAfterCoverage({
      dataSufficient: analysis.data_sufficient,
      hop: hopNumber,
      maxHops: state.max_hops,
    });
    hop.coverage = {
      coverage_analysis: analysis,
      data_sufficient: analysis.data_sufficient,
      next_node: route.next,
      escalation_reason: route.escalation?.reason ?? null,
    };
    state.next_node = route.next;
    return { escalation: route.escalation, done: route.next !== 'plan' };
  }

  /**
   * Messages that arrived during the run are fetched before Coverage and Draft: Coverage can then send the agent back
   * to Plan for what the new message asks, and the reply answers everything the user said.
   */
  async function refetchIfNewMessages(): Promise<void> {
    if (state.metadata.user_messages.length <= state.metadata.user_messages_fetched) return;
    try {
      await fetchConversation('re-fetch conversation for new messages');
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn('could not re-fetch the conversation; drafting from the messages already fetched', {
        error: describeFailure(err),
      });
    }
  }

  async function draft(): Promise<Escalation | null> {
    enter('draft');
    const started = Date.now();
    let answer: LlmAnswer<{ text: string; response_type: 'REPLY' | 'ROUTE_TO_TEAM' }>;
    try {
      answer = await llm.draft.executeWithOptions({ summary: 'draft reply' }, [
        { prompt: loadedPrompts!.draft, context: draftContext(state) },
      ]);
    } catch (err) {
      return failed('draft_error', err);
    }
    recordModel(answer);
    state.draft = {
      response: answer.output.text,
      response_type: answer.output.response_type,
      generation_time_ms: Date.now() - started,
      timestamp: new Date().toISOString(),
    };
    state.response = answer.output.text;
    const route = routeAfterDraft(answer.output.response_type);
    state.next_node = route.next;
    return route.escalation;
  }

  /** Melvin's own checks, before the validation service is asked: a reply that fails them never goes further. */
  function guardFindings(): ReplyCheck[] {
    const checks = checkReply(state.response ?? '', {
      userEmail: state.user_email,
      internalNotes: state.metadata.internal_notes,
      toolData: state.tool_data,
      prompts: loadedPrompts ? [loadedPrompts.plan, loadedPrompts.coverage, loadedPrompts.draft] : [],
    });
    return checks.some((c) => !c.passed) ? checks : [];
  }

  /** The validation service's raw answer, or the escalation when it cannot be had (row 7). */
  async function askValidationService(): Promise<string | Escalation> {
    try {
      const answer = await validation.validateDraft.executeWithOptions({ summary: 'validate draft' }, [
        {
          conversation_id: conversationId,
          response: state.response ?? '',
          user_email: state.user_email,
          user_name: state.metadata.user_name,
          messages: state.messages,
          internal_notes: state.metadata.internal_notes,
          tool_data: state.tool_data,
          docs_data: state.docs_data,
        },
      ]);
      return answer.raw;
    } catch (err) {
      const e = failed('validation_error', err);
      state.validate = {
        validation_response: null,
        overall_passed: false,
        validation_note_added: false,
        escalation_reason: e.reason,
        next_action: 'escalate',
      };
      return e;
    }
  }

  async function validate(): Promise<Escalation | null> {
    enter('validate');
    const blocked = guardFindings();
    const raw = blocked.length
      ? JSON.stringify({ overall_passed: false, checked_by: 'melvin', checks: blocked })
      : await askValidationService();
    if (typeof raw !== 'string') return raw;
    // The raw answer is always noted, even when it cannot be parsed: it is what the team needs to see why.
    const note = await postNote(`Validation result:\n${raw}`, 'note validation result');
    let parsed: ValidationResponse | undefined;
    let problem = '';
    try {
      const result = ValidationResponse.safeParse(JSON.parse(raw));
      if (result.success) parsed = result.data;
      else
        problem = `the validation response does not match the contract: ${result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`;
    } catch {
      problem = 'the validation response is not JSON';
    }
    const route = parsed
      ? routeAfterValidation(parsed.overall_passed)
      : { next: 'escalate' as const, escalation: escalation('validation_error', problem) };
    state.validate = {
      validation_response: parsed ?? raw,
      overall_passed: parsed?.overall_passed ?? false,
      validation_note_added: note.added,
      escalation_reason: route.escalation?.reason ?? null,
      next_action: route.next,
    };
    state.next_node = route.next;
    return route.escalation;
  }

  /** Initialize → [Plan → Gather → Coverage]×hops → Draft → Validate; returns the escalation, null to reply, or 'skip'. */
  async function runAgent(): Promise<Escalation | null | 'skip'> {
    const initFailure = await initialize();
    if (initFailure) return initFailure;
    if (!awaitsReply(state.messages)) {
      state.metadata.skipped_reason = 'the latest message in the conversation is not from the user: nothing to answer';
      return 'skip';
    }
    if (fetchedUserPartIds.length && fetchedUserPartIds.every((id) => record.handled_part_ids.includes(id))) {
      state.metadata.skipped_reason = 'every message of the user was answered or handed over by an earlier turn';
      return 'skip';
    }
    for (let hopNumber = 1; ; hopNumber++) {
      const hop: Hop = { plan: null, gather: null, coverage: null };
      state.hops.push(hop);
      upsertSearchAttributes([{ key: searchAttributes.hopCount, value: hopNumber }]);
      const planFailure = await plan(hop, hopNumber);
      if (planFailure) return planFailure;
      await gather(hop, hopNumber);
      await refetchIfNewMessages();
      const covered = await coverage(hop, hopNumber);
      if (covered.escalation) return covered.escalation;
      if (covered.done) break;
    }
    await refetchIfNewMessages();
    const draftOutcome = await draft();
    if (draftOutcome) return draftOutcome;
    return validate();
  }

  /** The hand-over message, sent once like a reply (a retry finds an accepted attempt); never cancelled. */
  async function tellUser(kind: EscalationKind): Promise<UserTold | null> {
    const text = input.handoverMessages?.[kind]?.trim();
    if (!text) return null;
    try {
      const posted = await post('sendReply', text, 'tell the user a person will follow up');
      return { text, sent: true, error: null, part_id: posted.part_id };
    } catch (err) {
      log.warn('could not tell the user of the hand-over', { error: describeFailure(err) });
      return { text, sent: false, error: describeFailure(err), part_id: null };
    }
  }

  async function escalate(e: Escalation): Promise<void> {
    enter('escalate', `Reason: ${e.reason}`);
    state.escalation_reason = e.reason;
    // When a teammate has already taken over, a person is with the user: nothing to tell them.
    const told = record.ownership.owner === 'team' ? null : await tellUser(e.kind);
    const note = await postNote(escalationNote(e, told), 'note escalation');
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
    state.next_node = 'finalize';
  }

  async function respond(): Promise<void> {
    enter('response');
    const started = Date.now();
    try {
      const posted = await post('sendReply', state.response ?? '', 'reply');
      state.response_delivery = {
        delivery_attempted: true,
        delivery_successful: true,
        delivery_error: null,
        delivery_time_ms: Date.now() - started,
        status_updated: false,
        part_id: posted.part_id,
      };
    } catch (err) {
      state.error = describeFailure(err);
      state.response_delivery = {
        delivery_attempted: true,
        delivery_successful: false,
        delivery_error: state.error,
        delivery_time_ms: Date.now() - started,
        status_updated: false,
        part_id: null,
      };
      // The user got nothing: the team gets the drafted reply so a person can send it.
      await postNote(
        `⚠️ Melvin could not deliver its reply: ${state.error}\n\nDrafted reply:\n${state.response ?? ''}`,
        'note failed reply',
      );
    }
    state.next_node = 'finalize';
  }

  async function finalize(): Promise<void> {
    enter('finalize');
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
    state.next_node = 'end';
  }

  /**
   * Approval and shadow modes, for a validated draft: shadow notes it and sends nothing; approve notes it and waits for a
   * lead's decision (the `decideReply` update) until the timeout. Returns the escalation (a rejection, the timeout, a
   * forced escalation), null to send (the draft, or the lead's edit), or `shadow`.
   */
  async function awaitDecision(mode: 'approve' | 'shadow'): Promise<Escalation | null | 'shadow'> {
    const draft = state.response ?? '';
    const approval: ApprovalData = {
      mode,
      draft,
      note_added: false,
      requested_at: new Date().toISOString(),
      outcome: mode === 'shadow' ? 'noted' : 'waiting',
      decided_by: null,
      decided_at: null,
      reason: null,
    };
    if (mode === 'shadow') {
      approval.note_added = (
        await postNote(`👁 Shadow mode: Melvin would have replied:\n\n${draft}`, 'note shadow draft')
      ).added;
      state.metadata.approval = approval;
      return 'shadow';
    }
    const approvalTimeoutSeconds =
      state.metadata.reply_mode?.approval_timeout_seconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS;
    const waitText = durationText(approvalTimeoutSeconds);
    approval.note_added = (
      await postNote(
        `✋ Melvin's draft waits for a lead: approve, edit or reject it (decideReply). After ${waitText} without a ` +
          `decision the team takes over.\n\n${draft}`,
        'note draft for approval',
      )
    ).added;
    // Set only now: the update's validator accepts a decision once the team can see the draft.
    state.metadata.approval = approval;
    showDetails(`Waiting up to ${waitText} for a lead to approve, edit or reject the draft.`);
    const decided = await condition(
      () => replyDecision !== null || !!state.metadata.forced_escalation,
      approvalTimeoutSeconds * 1000,
    );
    const decision = replyDecision as ReplyDecision | null;
    if (!decided || !decision) {
      approval.outcome = decided ? approval.outcome : 'timed_out';
      upsertSearchAttributes([{ key: searchAttributes.replyDecision, value: approval.outcome }]);
      return decided
        ? operatorEscalation()
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

  /** The turn: the agent, then Escalate or Response, then Finalize; or nothing, when there is nothing to answer. */
  async function runTurn(): Promise<void> {
    let outcome: Escalation | null | 'skip';
    try {
      outcome = state.metadata.forced_escalation ? operatorEscalation() : await agentScope.run(runAgent);
    } catch (err) {
      if (!(isCancellation(err) && state.metadata.forced_escalation)) throw err;
      outcome = null;
    }
    // An operator's escalation wins over whatever the agent was about to do, as long as no reply has gone out.
    if (state.metadata.forced_escalation) {
      outcome = operatorEscalation();
    } else if (outcome === 'skip') {
      // A redelivered webhook for a message already answered: leave the conversation as it is.
      state.next_node = 'end';
      upsertSearchAttributes([{ key: searchAttributes.melvinStatus, value: 'skipped' }]);
      enter('end', `Nothing to do: ${state.metadata.skipped_reason}`);
      log.info('turn skipped', { reason: state.metadata.skipped_reason });
      return;
    }
    replyStarted = true;
    if (!outcome && record.ownership.owner === 'team') {
      // A teammate replied or was assigned while Melvin worked: theirs is the answer, Melvin's draft goes to them.
      await postNote(
        `ℹ️ A teammate took over while Melvin was answering, so Melvin did not send its reply.\n\nDrafted reply:\n${state.response ?? ''}`,
        'note reply withheld',
      );
      state.metadata.skipped_reason = 'a teammate took over during the turn: the reply was not sent';
      state.next_node = 'end';
      upsertSearchAttributes([{ key: searchAttributes.melvinStatus, value: 'skipped' }]);
      enter('end', `Nothing sent: ${state.metadata.skipped_reason}`);
      return;
    }
    const replyMode = state.metadata.reply_mode?.mode ?? input.replyMode ?? 'auto';
    if (!outcome && replyMode !== 'auto') {
      const decided = await awaitDecision(replyMode);
      if (decided === 'shadow') {
        state.metadata.skipped_reason = 'shadow mode: the draft was noted for the team, not sent';
        state.next_node = 'end';
        upsertSearchAttributes([{ key: searchAttributes.melvinStatus, value: 'skipped' }]);
        enter('end', `Nothing sent: ${state.metadata.skipped_reason}`);
        return;
      }
      outcome = decided;
    }
    if (outcome) await escalate(outcome);
    else await respond();
    // Forced after the reply went out (or while it was going out): the reply stands, the team is told to take over.
    for (;;) {
      if (state.metadata.forced_escalation && !state.escalate) await escalate(operatorEscalation());
      await finalize();
      if (!state.metadata.forced_escalation || state.escalate) break;
    }

    enterEndWithOutcome();
    log.info('turn finished', {
      melvin_status: state.finalize!.melvin_status,
      escalation_source: state.escalate?.escalation_source ?? null,
      hops: state.hops.length,
      replied: state.response_delivery?.delivery_successful ?? false,
    });
  }

  /** The end of a turn in the UI's details: its Melvin Status, and the escalation's reason if it escalated. */
  function enterEndWithOutcome(): void {
    const reason = state.escalate ? ` — ${state.escalate.escalation_reason}` : '';
    enter('end', `Outcome: ${state.finalize!.melvin_status}${reason}`);
  }

  /**
   * Hands the conversation over once the turn's own course is over or cut short (an operator between turns, a cancelled
   * run): the escalation unless the turn already escalated, Finalize, and the turn recorded again with its new outcome.
   */
  async function escalateAfterTurn(e: Escalation): Promise<void> {
    if (!state.escalate) await escalate(e);
    await finalize();
    enterEndWithOutcome();
    closeTurn();
  }

  /** Adds the run's turn to the conversation record; any escalation or undelivered reply hands it to the team. */
  function closeTurn(): void {
    const handedOver = !!state.escalate || state.finalize?.melvin_status === 'MESSAGE_FAILED';
    // A reply answers what the last fetch held; a hand-over gives the team the whole conversation as it stands.
    consumedDeliveries = handedOver ? state.metadata.user_messages.length : state.metadata.user_messages_fetched;
    const delivered = state.metadata.user_messages.slice(0, consumedDeliveries).flatMap((d) => d.part_id ?? []);
    const partIds = [...new Set([...fetchedUserPartIds, ...delivered])];
    const turn = record.turns.find((t) => t.run_id === workflowInfo().runId);
    const replied = state.response_delivery?.delivery_successful ? (state.response ?? '') : null;
    recordTurn(record, {
      run_id: workflowInfo().runId,
      ended_at: new Date().toISOString(),
      melvin_status: state.finalize?.melvin_status ?? 'skipped',
      escalation_source: state.escalate?.escalation_source ?? null,
      part_ids: turn ? turn.part_ids : partIds.filter((id) => !record.handled_part_ids.includes(id)),
      asked: state.hops.at(-1)?.plan?.user_query ?? null,
      answered: replied === null ? null : replied.slice(0, MAX_REMEMBERED_REPLY),
      escalation_reason: state.escalate?.escalation_reason ?? null,
      ...(state.metadata.approval?.mode === 'shadow'
        ? { shadow_draft: state.metadata.approval.draft.slice(0, MAX_REMEMBERED_REPLY), team_answer: null }
        : {}),
    });
    if (teamAnswerDuringTurn) recordTeamAnswer(record, teamAnswerDuringTurn);
    rememberResults(record, gatheredThisTurn, input.toolResultTtl, Date.now());
    if (handedOver) {
      handOverToTeam(
        record,
        state.escalate?.escalation_reason ?? 'the reply could not be delivered',
        new Date().toISOString(),
      );
    }
  }

  function operatorEscalationPending(): boolean {
    return !!state.metadata.forced_escalation && !state.escalate && record.ownership.owner === 'melvin';
  }

  /** Messages while the team owns the conversation: handed over unanswered, and the team told once. */
  async function leaveToTeam(deliveries: ReceivedUserMessage[]): Promise<void> {
    consumedDeliveries = state.metadata.user_messages.length;
    if (!record.ownership.team_told_of_new_messages) {
      record.ownership.team_told_of_new_messages = true;
      await postNote(
        `💬 The user wrote again. The team owns this conversation since ${record.ownership.since} ` +
          `(${record.ownership.reason}), so Melvin does not answer until a lead hands it back (handBack).`,
        'note new message for the team',
      );
    }
    markHandled(
      record,
      deliveries.flatMap((d) => d.part_id ?? []),
    );
  }

  /**
   * Between turns: waits for a message to answer or an operator's escalation, until the quiet period passes. Returns
   * the deliveries the next turn answers, or none when the conversation's workflow ends.
   */
  async function waitForNextMessage(): Promise<ReceivedUserMessage[]> {
    state.metadata.phase = 'waiting';
    for (;;) {
      if (closedByTeam) return [];
      const unanswered = unansweredDeliveries(record, state.metadata.user_messages, consumedDeliveries);
      if (unanswered.length && record.ownership.owner === 'melvin') return unanswered;
      if (unanswered.length) {
        await leaveToTeam(unanswered);
        continue;
      }
      if (operatorEscalationPending()) {
        await escalateAfterTurn(operatorEscalation());
        continue;
      }
      if (quietPeriodSeconds <= 0) return [];
      showDetails(
        `${outcomeDetail}\n\nTurn over: waiting for the user's next message, for ${durationText(quietPeriodSeconds)} at most.`,
      );
      const woken = await condition(
        () =>
          unansweredDeliveries(record, state.metadata.user_messages, consumedDeliveries).length > 0 ||
          operatorEscalationPending() ||
          closedByTeam,
        quietPeriodSeconds * 1000,
      );
      if (!woken) return [];
    }
  }

  try {
    await runTurn();
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Cancelled from the Temporal UI or CLI during the turn: the conversation still gets its escalation note and Melvin
    // Status, so the team knows nobody is answering; then the run ends as cancelled.
    await CancellationScope.nonCancellable(() =>
      escalateAfterTurn(escalation('operator', 'The run was cancelled in Temporal before Melvin finished', 'temporal')),
    );
    throw err;
  }
  // The agent is over: an operator's escalation from now on is handled between turns, with nothing left to cancel.
  replyStarted = true;
  closeTurn();
  const next = await waitForNextMessage();
  const latest = next.at(-1);
  if (latest) {
    log.info('continuing as new for the next turn', { deliveries: next.length });
    // The next run keeps every setting this one was started with (hops, snooze, quiet period, hand-over texts, TTLs).
    await continueAsNew<typeof supportConversation>({
      ...input,
      trigger: {
        topic: 'conversation.user.replied',
        notificationId: latest.notification_id,
        receivedAt: latest.received_at,
      },
      quietPeriodSeconds,
      conversation: record,
      pending: next,
    });
  }
  log.info('conversation workflow ends', { turns: record.turn_count, quiet_period_s: quietPeriodSeconds });
  return {
    conversation_id: conversationId,
    ended_because: closedByTeam
      ? 'closed by the team'
      : quietPeriodSeconds > 0
        ? 'quiet period passed'
        : 'turn over (no quiet period)',
    turns: record.turn_count,
    owner: record.ownership.owner,
    last_turn: record.turns.at(-1) ?? null,
  };
}
