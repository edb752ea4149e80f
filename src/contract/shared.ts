// What crosses process boundaries: task queue, workflow ID format, signals, queries, search attributes and run input.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type {
  AgentState,
  ApprovalData,
  ConversationRecord,
  EscalationKind,
  EscalationSource,
  MelvinStatus,
  NodeName,
  ReceivedUserMessage,
  RunPhase,
} from './state';
import type { ReplyMode, Stage, Trigger } from './vocabulary';

export const DEFAULT_TASK_QUEUE = 'melvin';
export const WORKFLOW_TYPE = 'supportConversation';
export const DEFAULT_MAX_HOPS = 2;
export const DEFAULT_SNOOZE_SECONDS = 300;
/** How long a draft waits for a lead's decision in approval mode before the conversation goes to the team. */
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 30 * 60;
/** The data one turn may gather (tool and docs results together), in characters of JSON: far below 2 MB payloads. */
export const DEFAULT_DATA_BUDGET_BYTES = 256 * 1024;
/** What the user is told when Melvin hands the conversation to the team, unless configured otherwise. */
export const DEFAULT_HANDOVER_MESSAGE =
  "Thanks for your patience. I've passed this to our support team, and a person will follow up here.";
/**
 * What the user is told for a kind of hand-over that the default message does not fit: after a partial answer the
 * user already has part of their answer.
 */
export const DEFAULT_KIND_HANDOVER_MESSAGES: Partial<Record<EscalationKind, string>> = {
  partial_answer: 'A person from our support team will follow up here on the rest of your message.',
  attachment_only:
    "Thanks for the file. I can't open files here, so I've passed it to our support team, and a person will follow up.",
  talent_frustrated:
    "I'm sorry this has been so frustrating. I've passed your message to our support team, and a person will follow up here.",
};

/** When tone hands the conversation over: on strong frustration or anger, and on the talent's Nth complaint (0: never). */
export interface ToneHandover {
  strong: boolean;
  complaints: number;
}

/**
 * Strong frustration alone does not hand over by default: the talent-side evaluation asks that an angry talent whose
 * question the data answers gets the answer (see decisions.md); the third complaining turn does.
 */
export const DEFAULT_TONE_HANDOVER: ToneHandover = { strong: false, complaints: 3 };

/** How long after a write to Intercom failed for good it is first tried again. */
export const DEFAULT_WRITE_RETRY_SECONDS = 60;

/** How long a conversation's workflow waits for the user's next message before it ends: a week. */
export const DEFAULT_QUIET_PERIOD_SECONDS = 7 * 24 * 3600;

const WORKFLOW_ID_PREFIX = 'intercom-conversation-';

/** One workflow ID per conversation: every turn of a conversation is one search in the Temporal UI. */
export function workflowIdFor(conversationId: string): string {
  return `${WORKFLOW_ID_PREFIX}${conversationId}`;
}

/** The conversation a workflow ID names, or undefined for a workflow that is not a conversation's. */
export function conversationIdOf(workflowId: string): string | undefined {
  return workflowId.startsWith(WORKFLOW_ID_PREFIX) ? workflowId.slice(WORKFLOW_ID_PREFIX.length) : undefined;
}

export interface SupportConversationInput {
  conversationId: string;
  trigger?: Trigger;
  maxHops?: number;
  snoozeSeconds?: number;
  /**
   * How long to wait after a turn for the user's next message before the workflow ends; 0 (and absent, as in runs
   * from before conversations outlived their turns) ends it after the turn. The ingress and CLI pass the configured one.
   */
  quietPeriodSeconds?: number;
  /**
   * How long after a write to Intercom failed for good (a note, Melvin Status, the snooze) it is tried again, doubling
   * each time up to 32 times as long; absent: `DEFAULT_WRITE_RETRY_SECONDS`.
   */
  writeRetrySeconds?: number;
  /** What the conversation's earlier turns left, carried from run to run by continue-as-new. */
  conversation?: ConversationRecord;
  /** Deliveries the previous run received but did not answer: this run's turn answers them. */
  pending?: ReceivedUserMessage[];
  /**
   * `auto` sends a validated reply; `approve` notes it and waits for a lead's decision (`decideReply`); `shadow` notes it
   * and never sends. Absent: `auto`.
   */
  replyMode?: ReplyMode;
  /** Approval mode: how long a draft waits for a decision before the conversation goes to the team. */
  approvalTimeoutSeconds?: number;
  /** The turn's budget for gathered data; absent: `DEFAULT_DATA_BUDGET_BYTES`. */
  dataBudgetBytes?: number;
  /** How long a tool's result stays fresh for later turns of the conversation; absent: results are never reused. */
  toolResultTtl?: ToolResultTtl;
  /** Per escalation kind, what the user is told on a hand-over; a kind absent or empty tells the user nothing. */
  handoverMessages?: Partial<Record<EscalationKind, string>>;
  /** When how the talent feels hands the conversation over; absent: `DEFAULT_TONE_HANDOVER`. */
  toneHandover?: ToneHandover;
}

export interface NewUserMessage {
  notificationId: string;
  partId?: string;
  /**
   * The message's first words (and its files' names) as the webhook carried them, at most MESSAGE_PREVIEW_CHARS: what
   * a note to the team quotes when Intercom refuses to let Melvin read the conversation.
   */
  preview?: string;
}

/** The longest preview of a message a delivery carries: as much as a note to the team quotes of a message. */
export const MESSAGE_PREVIEW_CHARS = 300;

export interface ForceEscalation {
  reason: string;
  requestedBy: string;
}

/** A lead's decision on a draft waiting in approval mode: send it, send an edited text, or keep it from the user. */
export type ReplyDecision =
  | { decision: 'approve'; by: string }
  | { decision: 'edit'; text: string; by: string }
  | { decision: 'reject'; reason: string; by: string };

/** Seconds a tool's result stays fresh: the tool's own, else the default; 0 never reuses it. */
export interface ToolResultTtl {
  default_seconds: number;
  per_tool: Record<string, number>;
}

/** What a person on the team did in Intercom, as its webhooks tell the ingress. */
export interface TeamAction {
  notificationId: string;
  action: 'replied' | 'assigned' | 'closed';
  /** For `assigned`: the assignee is Melvin's own admin, which gives the conversation back to Melvin. */
  toMelvin?: boolean;
  /** For `replied`: the teammate's answer as plain text (the first 2000 characters) and who wrote it. */
  text?: string;
  by?: string;
  /**
   * When it happened in Intercom (the notification's `created_at`, ISO): a late delivery of something older than the
   * conversation's current owner changes nothing.
   */
  at?: string;
}

export interface HandBack {
  reason: string;
  requestedBy: string;
}

export interface Progress {
  node: NodeName;
  hop: number;
  elapsed_ms: number;
  /** `turn` while the run answers, `waiting` once its turn is over and it waits for the next message. */
  phase: RunPhase;
  /**
   * True only while the run waits for the next message with nothing in flight: after its turn, `waiting` still covers
   * the owner's read, the team's note and the hand-over that can follow the turn before the run settles.
   */
  idle: boolean;
  /**
   * The run's turn is over, and it waits only to write again what Intercom refused (a note, Melvin Status, the snooze)
   * or to read the conversation before it ends: it will not end before Intercom takes them.
   */
  waiting_for_intercom?: boolean;
  /** Turns the conversation has had, this run's included once it is over. */
  turns: number;
}

/** What an operator's accepted escalation or hand-back will do; a request that can have no effect is refused instead. */
export interface OperatorAnswer {
  accepted: true;
  effect: string;
}

export const newUserMessageSignal = defineSignal<[NewUserMessage]>('newUserMessage');
/**
 * A lead hands the conversation to the team now: the operator API and the CLI send this update, which the workflow
 * refuses, with the reason, when it can have no effect (the team owns the conversation already, or an escalation is
 * under way). The `forceEscalation` signal does the same from the Temporal UI; a signal cannot be refused, so the run
 * records a refused one in `metadata.operator_requests`.
 */
export const requestEscalationUpdate = defineUpdate<OperatorAnswer, [ForceEscalation]>('requestEscalation');
/** A lead gives a conversation the team owns back to Melvin; refused, with the reason, when Melvin answers it already. */
export const requestHandBackUpdate = defineUpdate<OperatorAnswer, [HandBack]>('requestHandBack');
export const forceEscalationSignal = defineSignal<[ForceEscalation]>('forceEscalation');
/** A lead gives a conversation the team owns back to Melvin: the user's next message is answered again. */
export const handBackSignal = defineSignal<[HandBack]>('handBack');
/** Approval mode: a lead's decision on the waiting draft; refused (with why) when no draft waits or it is malformed. */
export const decideReplyUpdate = defineUpdate<{ accepted: ReplyDecision['decision'] }, [ReplyDecision]>('decideReply');
/** A teammate replied, assigned or closed the conversation in Intercom: the team takes it over, or ends it. */
export const teamActionSignal = defineSignal<[TeamAction]>('teamAction');
export const stateQuery = defineQuery<AgentState>('state');
export const progressQuery = defineQuery<Progress>('progress');

/** Search attributes a support lead filters runs by; the dev server and the compose setup register these. */
export const searchAttributes = {
  conversationId: defineSearchAttributeKey('ConversationId', SearchAttributeType.KEYWORD),
  melvinStatus: defineSearchAttributeKey('MelvinStatus', SearchAttributeType.KEYWORD),
  escalationSource: defineSearchAttributeKey('EscalationSource', SearchAttributeType.KEYWORD),
  hopCount: defineSearchAttributeKey('HopCount', SearchAttributeType.INT),
  replyDecision: defineSearchAttributeKey('ReplyDecision', SearchAttributeType.KEYWORD),
  melvinStage: defineSearchAttributeKey('MelvinStage', SearchAttributeType.KEYWORD),
  suggestedAction: defineSearchAttributeKey('SuggestedAction', SearchAttributeType.KEYWORD),
} as const;

export const allSearchAttributes = Object.values(searchAttributes);

/** Bounds on what a turn summary keeps of its intents and path, so a memo stays small whatever the model wrote. */
export const MAX_MEMO_INTENTS = 8;
export const MAX_MEMO_INTENT_CHARS = 60;
export const MAX_MEMO_PATH = 40;

/**
 * An intent's name as a label to count by: lower case on one line, e-mail addresses and runs of five or more digits
 * (ids; a form number or a year stays) masked, since a model may name an intent "payment 4821377 for ana@x.io"; cut
 * to `MAX_MEMO_INTENT_CHARS`. The memo keeps labels, never the talent's words.
 */
export function intentLabel(name: string): string {
  const label = name
    .toLowerCase()
    .replace(/[^\s@]+@[^\s@]+/g, '[email]')
    .replace(/\d{5,}/g, '#')
    .replace(/\s+/g, ' ')
    .replace(/^[\s"'“”.,;:!?-]+|[\s"'“”.,;:!?-]+$/g, '');
  return label.length > MAX_MEMO_INTENT_CHARS ? `${label.slice(0, MAX_MEMO_INTENT_CHARS - 1)}…` : label;
}

/** Distinct labels of `names`, in order, at most `MAX_MEMO_INTENTS`. */
export function intentLabels(names: readonly string[]): string[] {
  return [...new Set(names.map(intentLabel).filter(Boolean))].slice(0, MAX_MEMO_INTENTS);
}

/** The memo key under which each run keeps its turn's summary: reports read the runs' outcomes from visibility alone. */
export const TURN_SUMMARY_MEMO = 'melvin_turn';

/**
 * What a finished turn leaves in its run's memo (`melvin_turn`), written when the turn ends and again if its outcome
 * changes afterwards (an operator's escalation, or the team taking the conversation over). No message text.
 */
export interface TurnSummary {
  /** Melvin Status, or `skipped` when the turn found nothing to answer. */
  status: MelvinStatus | 'skipped';
  escalation_source: EscalationSource | null;
  escalation_kind: EscalationKind | null;
  /** The escalation's reason, cut to 200 characters. */
  escalation_reason: string | null;
  /** When the turn escalated: an operator may hand it over long after it ended. */
  escalated_at: string | null;
  /** Whether an answer reached the user (the hand-over message does not count). */
  replied: boolean;
  hops: number;
  /** From the run's start (the message's delivery) to the turn's end, in ms. */
  turn_ms: number;
  ended_at: string;
  /** Approval or shadow mode: how the draft ended. */
  approval_outcome: ApprovalData['outcome'] | null;
  /** Every tool call the turn made (results reused from an earlier turn are not calls), and whether it succeeded. */
  tools: { name: string; ok: boolean }[];
  /** Tokens the model endpoint reported for the turn. */
  tokens: number;
  /** How many things the user asked (as Plan named them), and how many the reply left for the team. */
  intents: number;
  open_intents: number;
  /**
   * The same intents by Plan's short names ("payment status"), normalized and capped (`MAX_MEMO_INTENTS` names of at
   * most `MAX_MEMO_INTENT_CHARS` characters, digit runs and addresses masked): labels a lead can group by, not the
   * talent's words. `open_intent_names`: those the reply left for the team; `uncovered_intent_names`: those Coverage
   * last judged the data does not answer.
   */
  intent_names: string[];
  open_intent_names: string[];
  uncovered_intent_names: string[];
  /** The talent's stage in their journey when the turn ran (../workflows/routing/stage.ts); null when nothing told it. */
  stage: Stage | null;
  /** The nodes the turn visited, in order (at most `MAX_MEMO_PATH`): the report draws the period's paths from them. */
  path: NodeName[];
  /** Set when, after this turn, the team took the conversation over: why (a teammate replied, was assigned, …). */
  reopened_by_team: string | null;
}
