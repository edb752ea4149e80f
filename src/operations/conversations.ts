// Client-side operations on conversations, shared by the CLI and the ingress: start a turn, escalate, hand back,
// decide on a draft, wait for a turn, query, list.
import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { handoverMessages, type TurnConfig } from '../config/environment';
import type { AgentState, EscalationKind } from '../contract/state';
import {
  WORKFLOW_TYPE,
  decideReplyUpdate,
  MESSAGE_PREVIEW_CHARS,
  teamActionSignal,
  newUserMessageSignal,
  progressQuery,
  requestEscalationUpdate,
  requestHandBackUpdate,
  searchAttributes,
  stateQuery,
  workflowIdFor,
  type ForceEscalation,
  type HandBack,
  type OperatorAnswer,
  type ReplyDecision,
  type TeamAction,
  type ToneHandover,
  type ToolResultTtl,
  type SupportConversationInput,
} from '../contract/shared';
import type { ReplyMode, Trigger } from '../contract/vocabulary';

export interface TurnOptions {
  taskQueue: string;
  maxHops: number;
  snoozeSeconds: number;
  quietPeriodSeconds: number;
  /** Per escalation kind, what the user is told on a hand-over ("" or absent: nothing). */
  handoverMessages: Partial<Record<EscalationKind, string>>;
  /** How long tool results stay fresh for later turns; absent: never reused. */
  toolResultTtl?: ToolResultTtl;
  /** The turn's budget for gathered data; absent: the default. */
  dataBudgetBytes?: number;
  replyMode?: ReplyMode;
  approvalTimeoutSeconds?: number;
  toneHandover?: ToneHandover;
  /** How soon a write to Intercom that failed for good is tried again; absent: the workflow's default. */
  writeRetrySeconds?: number;
}

/** The turn options the ingress and the CLI pass, from their configuration. */
export function turnOptions(taskQueue: string, config: TurnConfig): TurnOptions {
  return {
    taskQueue,
    maxHops: config.MAX_HOPS,
    snoozeSeconds: config.SNOOZE_SECONDS,
    quietPeriodSeconds: config.QUIET_PERIOD_SECONDS,
    handoverMessages: handoverMessages(config),
    toolResultTtl: { default_seconds: config.TOOL_RESULT_TTL_SECONDS, per_tool: config.TOOL_RESULT_TTLS },
    dataBudgetBytes: config.TURN_DATA_BUDGET_KB * 1024,
    replyMode: config.REPLY_MODE,
    approvalTimeoutSeconds: config.APPROVAL_TIMEOUT_SECONDS,
    toneHandover: { strong: config.TONE_HANDOVER === 'strong', complaints: config.COMPLAINTS_BEFORE_HANDOVER },
  };
}

/** The Temporal UI's summary limit (bytes of UTF-8). */
const MAX_SUMMARY_BYTES = 200;

/**
 * The run's one-line summary in the Temporal UI's list: who wrote what, when the delivery carries the message, else the
 * conversation and the trigger. Cut to the UI's 200 bytes.
 */
export function runSummary(conversationId: string, trigger: Trigger, message?: UserMessageText): string {
  if (!message?.text.trim()) return `Conversation ${conversationId} · ${trigger.topic}`;
  const framed = (t: string) => `${message.author ?? 'The user'}: “${t}” · conversation ${conversationId}`;
  const room = MAX_SUMMARY_BYTES - Buffer.byteLength(framed(''));
  // No more characters than bytes fit; a webhook may carry a message of a megabyte.
  const text = message.text
    .slice(0, MAX_SUMMARY_BYTES * 2)
    .replace(/\s+/g, ' ')
    .trim();
  if (Buffer.byteLength(text) <= room) return framed(text);
  // Cut by whole characters, leaving room for the ellipsis (3 bytes).
  const chars = [...text].slice(0, Math.max(room, 0));
  while (chars.length && Buffer.byteLength(chars.join('')) + 3 > room) chars.pop();
  return framed(`${chars.join('')}…`);
}

/** The message a delivery is about, as its webhook carried it. */
export interface UserMessageText {
  author: string | null;
  text: string;
}

/** The run input and start options of a conversation's workflow, started by a delivery or an operator's request. */
function startOptions(conversationId: string, trigger: Trigger, options: TurnOptions, summary: string) {
  const input: SupportConversationInput = {
    conversationId,
    trigger,
    maxHops: options.maxHops,
    snoozeSeconds: options.snoozeSeconds,
    quietPeriodSeconds: options.quietPeriodSeconds,
    handoverMessages: options.handoverMessages,
    toolResultTtl: options.toolResultTtl,
    dataBudgetBytes: options.dataBudgetBytes,
    replyMode: options.replyMode,
    approvalTimeoutSeconds: options.approvalTimeoutSeconds,
    toneHandover: options.toneHandover,
    ...(options.writeRetrySeconds !== undefined && { writeRetrySeconds: options.writeRetrySeconds }),
  };
  return {
    workflowId: workflowIdFor(conversationId),
    taskQueue: options.taskQueue,
    args: [input] as [SupportConversationInput],
    workflowIdConflictPolicy: 'USE_EXISTING' as const,
    workflowIdReusePolicy: 'ALLOW_DUPLICATE' as const,
    typedSearchAttributes: [{ key: searchAttributes.conversationId, value: conversationId }],
    staticSummary: summary,
    staticDetails: `Intercom conversation ${conversationId}, notification ${trigger.notificationId}, received ${trigger.receivedAt}`,
  };
}

/**
 * Signal-with-start: a message for a conversation whose workflow is open joins it (USE_EXISTING), during a turn or
 * between turns, so duplicate deliveries never start a second workflow; otherwise a new workflow starts under the ID.
 */
export async function deliverUserMessage(
  client: Client,
  message: { conversationId: string; trigger: Trigger; partId?: string; message?: UserMessageText },
  options: TurnOptions,
): Promise<{ workflowId: string; runId: string }> {
  const summary = runSummary(message.conversationId, message.trigger, message.message);
  const handle = await client.workflow.signalWithStart(WORKFLOW_TYPE, {
    ...startOptions(message.conversationId, message.trigger, options, summary),
    signal: newUserMessageSignal,
    signalArgs: [
      {
        notificationId: message.trigger.notificationId,
        partId: message.partId,
        preview: message.message?.text.trim().slice(0, MESSAGE_PREVIEW_CHARS) || undefined,
      },
    ],
  });
  return { workflowId: handle.workflowId, runId: handle.signaledRunId };
}

/** The workflow refused a lead's request (a decision, an escalation, a hand-back) that could have no effect: why. */
export class RequestRefused extends Error {
  override name = 'RequestRefused';
}

/**
 * A lead's escalation or hand-back: an update the conversation's workflow accepts, saying what it will do, or refuses
 * with why (RequestRefused). When the conversation has no open workflow (its last one ended after its quiet period, or
 * was closed), one starts with the update (update-with-start): it reads who owns the conversation first, then judges
 * the request by the same rules as an open one.
 */
async function operatorRequest(
  client: Client,
  conversationId: string,
  request: ForceEscalation | HandBack,
  kind: 'escalate' | 'hand back',
  options: TurnOptions,
  via: string,
): Promise<OperatorAnswer> {
  const update = kind === 'escalate' ? requestEscalationUpdate : requestHandBackUpdate;
  const trigger = { topic: via, notificationId: `${via}-${randomUUID()}`, receivedAt: new Date().toISOString() };
  const summary = `Conversation ${conversationId} · ${kind} (${request.requestedBy})`;
  // An operation is used once: a request made again takes a new one.
  const newStart = () =>
    new WithStartWorkflowOperation(WORKFLOW_TYPE, {
      ...startOptions(conversationId, trigger, options, summary),
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
  let startWorkflowOperation = newStart();
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.workflow.executeUpdateWithStart(update, { args: [request], startWorkflowOperation });
    } catch (err) {
      // The client's own message is only "Workflow Update failed": the workflow's reason is its cause.
      if (err instanceof WorkflowUpdateFailedError) throw new RequestRefused(err.cause?.message ?? err.message);
      // The open workflow was completing as the request came: once it has, the request starts the next one.
      if (!closing(err) || attempt >= CLOSING_ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, CLOSING_WAIT_MS));
      startWorkflowOperation = newStart();
    }
  }
}

/** How often, and how far apart, a request that met a completing workflow is made again. */
const CLOSING_ATTEMPTS = 10;
const CLOSING_WAIT_MS = 200;

/** The server refused an update because its workflow is completing (Temporal answers RESOURCE_EXHAUSTED). */
function closing(err: unknown): boolean {
  for (let cause = err; cause instanceof Error; cause = cause.cause) {
    if (/workflow is closing/i.test(cause.message)) return true;
  }
  return false;
}

export function forceEscalation(
  client: Client,
  conversationId: string,
  request: ForceEscalation,
  options: TurnOptions,
  via = 'api',
): Promise<OperatorAnswer> {
  return operatorRequest(client, conversationId, request, 'escalate', options, via);
}

export function handBack(
  client: Client,
  conversationId: string,
  request: HandBack,
  options: TurnOptions,
  via = 'api',
): Promise<OperatorAnswer> {
  return operatorRequest(client, conversationId, request, 'hand back', options, via);
}

/**
 * Approval mode: a lead's decision on the draft waiting in the conversation. The workflow's validator refuses it (and
 * this throws RequestRefused with its reason) when no draft waits or the decision is malformed.
 */
export async function decideReply(
  client: Client,
  conversationId: string,
  decision: ReplyDecision,
): Promise<{ accepted: ReplyDecision['decision'] }> {
  try {
    return await client.workflow
      .getHandle(workflowIdFor(conversationId))
      .executeUpdate(decideReplyUpdate, { args: [decision] });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) throw new RequestRefused(err.cause?.message ?? err.message);
    throw err;
  }
}

export async function sendTeamAction(client: Client, conversationId: string, action: TeamAction): Promise<void> {
  await client.workflow.getHandle(workflowIdFor(conversationId)).signal(teamActionSignal, action);
}

/**
 * Waits until the conversation has had `turns` turns and its workflow waits, idle, for the next message (the note or
 * hand-over after a turn has gone out), or has ended; returns the latest run's state. Polls the `progress` query: a
 * conversation's workflow does not end with its turn.
 */
export async function turnOver(
  client: Client,
  conversationId: string,
  options: { turns?: number; timeoutMs?: number } = {},
): Promise<AgentState> {
  const handle = client.workflow.getHandle(workflowIdFor(conversationId));
  const deadline = Date.now() + (options.timeoutMs ?? 180_000);
  for (;;) {
    const description = await handle.describe();
    // A finished workflow still answers the query: a worker replays its last run to read the state.
    if (description.status.name === 'COMPLETED') return handle.query(stateQuery);
    if (description.status.name !== 'RUNNING' && description.status.name !== 'CONTINUED_AS_NEW') {
      throw new Error(`the workflow of conversation ${conversationId} is ${description.status.name}`);
    }
    // A query can meet a run that is just handing over to the next (continue-as-new): then it is asked again.
    const progress = await handle.query(progressQuery).catch(() => undefined);
    if (progress?.idle && progress.turns >= (options.turns ?? 1)) return handle.query(stateQuery);
    if (Date.now() > deadline) {
      throw new Error(`conversation ${conversationId} did not finish turn ${options.turns ?? 1} in time`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The state of the conversation's latest run, running or finished; undefined when the conversation has none. */
export async function conversationState(client: Client, conversationId: string): Promise<AgentState | undefined> {
  try {
    return await client.workflow.getHandle(workflowIdFor(conversationId)).query(stateQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

export function listQuery(filter: { status?: string; conversationId?: string }): string {
  const clauses = [`WorkflowType = '${WORKFLOW_TYPE}'`];
  const quote = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (filter.status) clauses.push(`MelvinStatus = ${quote(filter.status)}`);
  if (filter.conversationId) clauses.push(`ConversationId = ${quote(filter.conversationId)}`);
  return clauses.join(' AND ');
}

export async function listRuns(
  client: Client,
  filter: { status?: string; conversationId?: string; limit?: number },
): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const run of client.workflow.list({ query: listQuery(filter) })) {
    runs.push(run);
    if (runs.length >= (filter.limit ?? 50)) break;
  }
  return runs;
}
