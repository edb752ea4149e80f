// What crosses process boundaries: task queue, workflow ID format, signals, queries, search attributes and run input.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { AgentState, NodeName } from './state';

export const DEFAULT_TASK_QUEUE = 'melvin';
export const WORKFLOW_TYPE = 'supportConversation';
export const DEFAULT_MAX_HOPS = 2;
export const DEFAULT_SNOOZE_SECONDS = 300;

/** One workflow ID per conversation: every turn of a conversation is one search in the Temporal UI. */
export function workflowIdFor(conversationId: string): string {
  return `intercom-conversation-${conversationId}`;
}

export interface Trigger {
  /** Webhook topic, or `cli` / `api` when an operator started the turn. */
  topic: string;
  notificationId: string;
  receivedAt: string;
}

export interface SupportConversationInput {
  conversationId: string;
  trigger?: Trigger;
  maxHops?: number;
  snoozeSeconds?: number;
}

export interface NewUserMessage {
  notificationId: string;
  partId?: string;
}

export interface ForceEscalation {
  reason: string;
  requestedBy: string;
}

export interface Progress {
  node: NodeName;
  hop: number;
  elapsed_ms: number;
}

export const newUserMessageSignal = defineSignal<[NewUserMessage]>('newUserMessage');
export const forceEscalationSignal = defineSignal<[ForceEscalation]>('forceEscalation');
export const stateQuery = defineQuery<AgentState>('state');
export const progressQuery = defineQuery<Progress>('progress');

/** Search attributes a support lead filters runs by; the dev server and the compose setup register these. */
export const searchAttributes = {
  conversationId: defineSearchAttributeKey('ConversationId', SearchAttributeType.KEYWORD),
  melvinStatus: defineSearchAttributeKey('MelvinStatus', SearchAttributeType.KEYWORD),
  escalationSource: defineSearchAttributeKey('EscalationSource', SearchAttributeType.KEYWORD),
  hopCount: defineSearchAttributeKey('HopCount', SearchAttributeType.INT),
} as const;

export const allSearchAttributes = Object.values(searchAttributes);
