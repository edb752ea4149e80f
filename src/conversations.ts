// Client-side operations on conversation runs, shared by the CLI and the ingress: start a turn, escalate, query, list.
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { AgentState } from './state';
import {
  WORKFLOW_TYPE,
  forceEscalationSignal,
  newUserMessageSignal,
  searchAttributes,
  stateQuery,
  workflowIdFor,
  type ForceEscalation,
  type SupportConversationInput,
  type Trigger,
} from './shared';

export interface TurnOptions {
  taskQueue: string;
  maxHops: number;
  snoozeSeconds: number;
}

/**
 * Signal-with-start: a message for a conversation whose run is in progress joins that run (USE_EXISTING), so duplicate
 * deliveries and quick follow-ups never start a second run; otherwise a new run starts under the same workflow ID.
 */
export async function deliverUserMessage(
  client: Client,
  message: { conversationId: string; trigger: Trigger; partId?: string },
  options: TurnOptions,
): Promise<{ workflowId: string; runId: string }> {
  const workflowId = workflowIdFor(message.conversationId);
  const input: SupportConversationInput = {
    conversationId: message.conversationId,
    trigger: message.trigger,
    maxHops: options.maxHops,
    snoozeSeconds: options.snoozeSeconds,
  };
  const handle = await client.workflow.signalWithStart(WORKFLOW_TYPE, {
    workflowId,
    taskQueue: options.taskQueue,
    args: [input],
    signal: newUserMessageSignal,
    signalArgs: [{ notificationId: message.trigger.notificationId, partId: message.partId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: [{ key: searchAttributes.conversationId, value: message.conversationId }],
    staticSummary: `Conversation ${message.conversationId} · ${message.trigger.topic}`,
    staticDetails: `Intercom conversation ${message.conversationId}, notification ${message.trigger.notificationId}, received ${message.trigger.receivedAt}`,
  });
  return { workflowId, runId: handle.signaledRunId };
}

export async function forceEscalation(client: Client, conversationId: string, request: ForceEscalation): Promise<void> {
  await client.workflow.getHandle(workflowIdFor(conversationId)).signal(forceEscalationSignal, request);
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
