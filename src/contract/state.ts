// The run's state: the workflow's result and the answer of its `state` query, with the field names operators and
// dashboards read (plan_data, tool_data, coverage_data, …).
import type { CoverageOutput, DraftOutput, DraftRoute, ModelTier, SuggestedAction } from './schemas';
import type { ReplyMode, Stage, TONE_EMOTIONS, Trigger } from './vocabulary';

export type NodeName =
  'initialize' | 'plan' | 'gather' | 'coverage' | 'draft' | 'validate' | 'escalate' | 'response' | 'finalize' | 'end';

export type Role = 'user' | 'assistant';

export interface Message {
  role: Role;
  content: string;
}

export interface ToolDefinition {
  /** The name the model sees: the server's own name, or `<server>__<tool>` when several servers offer that name. */
  name: string;
  /**
   * The server's own name for the tool, which a call sends. Absent in listings recorded before tools of several servers
   * were told apart; there it is `name`.
   */
  server_tool_name?: string;
  description: string;
  input_schema: Record<string, unknown>;
  /** Which configured MCP server offers the tool. */
  server: string;
  /**
   * What the MCP tool policy granted the tool when it was listed. Absent in listings recorded before the policy: there
   * the identity arguments are the top-level names of `IDENTITY_ARGUMENTS`, set from the contact's email.
   */
  grant?: ToolGrant;
}

/** Where an identity argument's value comes from: the conversation's contact, never the model. */
export type IdentitySource = 'contact_email' | 'contact_id';

/** An argument that says whose data a call is about, at any depth of the tool's arguments. */
export interface IdentityArgument {
  /** Property names from the top of the arguments, e.g. `['talent', 'contactEmail']`. */
  path: string[];
  from: IdentitySource;
}

/** What the MCP tool policy lets an offered tool do. */
export interface ToolGrant {
  /** Set from the contact at every call, whatever the model wrote. */
  identity: IdentityArgument[];
  /** True when the server does not mark the tool read-only and the policy allows it to write. */
  writes: boolean;
}

/** A tool a server listed that the MCP tool policy keeps from the model, and why. */
export interface WithheldTool {
  server: string;
  /** The server's own name for the tool. */
  name: string;
  reason: string;
}

/** How listing one configured MCP server's tools went at the start of the run. */
export interface ToolServerStatus {
  name: string;
  ok: boolean;
  /** The tools offered: those the server listed that the MCP tool policy did not withhold. */
  tool_count: number;
  error: string | null;
}

export interface PlannedToolCall {
  tool_name: string;
  parameters: Record<string, unknown>;
  reasoning: string;
}

/** One thing the user asks: a message may ask several and each is judged on its own. */
export interface Intent {
  intent: string;
  question: string;
}

/** Something the user named (a job, a payment, a date): what Melvin knows and must never ask for again. */
export interface EntityMention {
  kind: string;
  mention: string;
}

/** How the user feels and how urgent it is (Plan's reading, seed 003), each cue with the words behind it. */
export interface Tone {
  emotions: { emotion: (typeof TONE_EMOTIONS)[number]; intensity: 'mild' | 'strong'; phrase: string }[];
  urgency: 'low' | 'normal' | 'high';
  urgency_phrases: string[];
}

export interface PlanData {
  user_query: string;
  /** Absent in plans recorded before tone was read. */
  tone?: Tone;
  /** Where the user's words place them in their journey; absent in plans recorded before stages were read. */
  stage?: Stage | 'unknown';
  /**
   * The team's next step the user's words call for (a draft, which also sees the records, has the last word); absent in
   * plans recorded before plans proposed one.
   */
  suggested_action?: SuggestedAction | null;
  /** When the user's words call for a person whatever the data says; absent in plans recorded before it was read. */
  person_needed?: { kind: 'asked_for_person' | 'sensitive_request'; why: string } | null;
  /** Absent in plans recorded before intents were named: the whole question was one intent. */
  intents?: Intent[];
  entities?: EntityMention[];
  reasoning: string;
  tool_calls: PlannedToolCall[];
}

/** One planned call as Gather ran it, with its data: what `tool_data` or `docs_data` keeps, and later turns may reuse. */
export interface GatheredCall {
  tool_name: string;
  /** The arguments actually sent, after the workflow set the user's identity. */
  parameters: Record<string, unknown>;
  success: boolean;
  data: unknown;
  error: string | null;
  execution_time_ms: number;
  timestamp: string;
  truncated: boolean;
  /** Set when the result was reused from an earlier turn, fetched at this time, instead of calling the tool again. */
  reused_from?: string | null;
  /** How references the model wrote in words (a job title for `job_id`, say) were resolved to the user's records. */
  resolved?: EntityResolution[];
}

/** A call as a hop records it: its data lives once, in `tool_data` or `docs_data` under `stored_as`. */
export interface ToolResult extends Omit<GatheredCall, 'data'> {
  /** The key under which the result is kept in `tool_data` or `docs_data`. */
  stored_as: string;
  /** Characters of the result's JSON that the turn keeps (0 when none, or when it was dropped). */
  data_bytes: number;
  /** Left out because the turn's data budget was spent: Coverage sees it as a failed call. */
  dropped?: boolean;
}

/**
 * A reference argument resolved in tiers: `exact` when it names an id, `fuzzy` when it matched one of the
 * user's own records by its words; a reference that resolves to nothing is never sent to the tool.
 */
export interface EntityResolution {
  argument: string;
  mention: string;
  id: string;
  tier: 'exact' | 'fuzzy';
  /** For `fuzzy`: the share of the mention's words the record matched, 0 to 1. */
  score: number;
  /** What the record is, in words (e.g. "Barista, Portland, OR"). */
  label: string;
}

export type GatherStatus = 'completed' | 'partial' | 'failed' | 'skipped';

export interface GatherData {
  tool_results: ToolResult[];
  total_execution_time_ms: number;
  success_rate: number;
  execution_status: GatherStatus;
}

/** Coverage's answer as its schema defines it; `intents` is absent in analyses recorded before intents were judged. */
export type CoverageAnalysis = Omit<CoverageOutput, 'intents'> & Partial<Pick<CoverageOutput, 'intents'>>;

export interface CoverageData {
  coverage_analysis: CoverageAnalysis | null;
  data_sufficient: boolean;
  next_node: NodeName;
  escalation_reason: string | null;
}

export interface Hop {
  plan: PlanData | null;
  gather: GatherData | null;
  /** The records the plan's entities name, resolved after Gather against the user's records gathered so far. */
  named_records?: NamedRecord[];
  coverage: CoverageData | null;
}

/**
 * A record the user named in words ("the barrista job in Austin TX"), resolved in tiers against their own records:
 * `exact` (its id, or every word of its label), `fuzzy` (its words, typos allowed, clearly best), `semantic` (the
 * embeddings endpoint's similarity, clearly best), `llm` (the plan tier's model, asked to pick only between the
 * candidates left, from what the user wrote). When no tier tells the records apart, `id` is null and `candidates`
 * says which were left.
 */
export interface NamedRecord {
  /** The entity's kind as the plan gave it (job, application, payment, shift, …). */
  kind: string;
  mention: string;
  /** The kind of record it was resolved among: a job named for an application or payment is the job's. */
  record_kind: string;
  id: string | null;
  label: string;
  tier: 'exact' | 'fuzzy' | 'semantic' | 'llm' | null;
  /** How well the record matched in its tier, 0 to 1. */
  score: number;
  candidates: { id: string; label: string }[];
  /** Why the semantic tier could not be asked (its call failed): the candidates stayed as the other tiers left them. */
  semantic_error?: string;
  /** The resolve step's answer when the model was asked to pick between the candidates left. */
  llm_reasoning?: string;
  /** Why the resolve step could not be asked (its call failed): the record stayed open. */
  llm_error?: string;
}

export interface StoredToolData {
  tool_name: string;
  parameters: Record<string, unknown>;
  hop: number;
  success: boolean;
  data: unknown;
  error: string | null;
  truncated: boolean;
}

export interface StoredDocsData {
  query: string;
  hop: number;
  success: boolean;
  data: unknown;
  error: string | null;
  truncated: boolean;
}

export type ResponseType = DraftOutput['response_type'];

export interface DraftData {
  response: string;
  response_type: ResponseType;
  /** The intents the reply leaves for the team (a partial answer); absent in drafts recorded before intents. */
  open_intents?: string[];
  /** A route to the team: its kind and the model's explanation; absent with a reply and in drafts recorded before. */
  route?: DraftRoute;
  /** The team's next step the draft proposes, told in the team's note; absent when there is none. */
  suggested_action?: SuggestedAction;
  generation_time_ms: number;
  timestamp: string;
}

export interface ValidateData {
  /** The parsed validation JSON, or the raw text when it could not be parsed. */
  validation_response: unknown;
  overall_passed: boolean;
  validation_note_added: boolean;
  escalation_reason: string | null;
  next_action: NodeName;
}

export type EscalationSource = 'coverage' | 'draft' | 'validate' | 'initialization' | 'plan' | 'operator';

/** Why a run escalated: one value per row of the escalation table, which fixes source, reason and status. */
export const ESCALATION_KINDS = [
  'hops_exhausted',
  'user_requested_human',
  'validation_failed',
  'draft_error',
  'initialization_error',
  'coverage_error',
  'validation_error',
  'operator',
  'plan_error',
  'partial_answer',
  'attachment_only',
  'no_safe_answer',
  'sensitive_request',
  'talent_frustrated',
] as const;
export type EscalationKind = (typeof ESCALATION_KINDS)[number];

/** A draft that waited for a lead in approval mode, or was only noted in shadow mode, and how that ended. */
export interface ApprovalData {
  mode: 'approve' | 'shadow';
  draft: string;
  note_added: boolean;
  requested_at: string;
  /**
   * `waiting` until a decision or the timeout; shadow drafts are `noted`; `withdrawn` when the draft stopped waiting
   * because an operator escalated or a teammate took the conversation over (`reason` says which).
   */
  outcome: 'waiting' | 'approved' | 'edited' | 'rejected' | 'timed_out' | 'noted' | 'withdrawn';
  decided_by: string | null;
  decided_at: string | null;
  reason: string | null;
}

/** The short message that tells the user a person will follow up, sent once on a hand-over. */
export interface UserTold {
  text: string;
  sent: boolean;
  error: string | null;
  part_id: string | null;
}

export interface EscalateData {
  escalation_source: EscalationSource;
  escalation_kind: EscalationKind;
  escalation_reason: string;
  note_added: boolean;
  note_error: string | null;
  requested_by: string | null;
  timestamp: string;
  /** The hand-over message to the user; null when none is configured for this kind (or the run predates them). */
  user_told?: UserTold | null;
}

export interface ResponseDelivery {
  delivery_attempted: boolean;
  delivery_successful: boolean;
  delivery_error: string | null;
  delivery_time_ms: number;
  status_updated: boolean;
  /** The Intercom part id of the reply, when Intercom returned one. */
  part_id: string | null;
}

/**
 * Finalize's status; `partial`: the reply answered some of the user's questions and the team has the rest;
 * `NO_SAFE_ANSWER` and `SENSITIVE_REQUEST`: the draft routed to the team because it had no safe reply, or because a
 * person must handle the request (`ROUTE_TO_TEAM`: the user asked for one, or a lead or the hops sent it).
 */
export type MelvinStatus =
  | 'success'
  | 'partial'
  | 'ROUTE_TO_TEAM'
  | 'NO_SAFE_ANSWER'
  | 'SENSITIVE_REQUEST'
  | 'FRUSTRATED'
  | 'VALIDATION_FAILED'
  | 'RESPONSE_FAILED'
  | 'error'
  | 'MESSAGE_FAILED';

export interface FinalizeData {
  melvin_status: MelvinStatus;
  status_updated: boolean;
  conversation_snoozed: boolean;
  snooze_duration_seconds: number;
  error: string | null;
}

export interface PromptsUsed {
  source: 'langsmith' | 'bundled';
  /** Prompt name → version (a LangSmith commit hash, or `bundled`). */
  versions: Record<string, string>;
  fallback_reason: string | null;
}

export interface ReceivedUserMessage {
  notification_id: string;
  part_id: string | null;
  received_at: string;
  /** The message's first words as its webhook carried them: what a note quotes when Intercom cannot be read. */
  preview?: string;
}

/** What one finished turn left in the conversation record. */
export interface TurnRecord {
  run_id: string;
  ended_at: string;
  /** Finalize's status, or `skipped` when the turn found nothing to answer. */
  melvin_status: MelvinStatus | 'skipped';
  escalation_source: EscalationSource | null;
  /** The user parts this turn answered or handed over. */
  part_ids: string[];
  /** What the turn's plan took the question to be, the reply the user got, and why it escalated: the next turns' memory. */
  asked?: string | null;
  answered?: string | null;
  /** The user complained in this turn (Plan read frustration or anger): three such turns hand the conversation over. */
  complained?: boolean;
  escalation_reason?: string | null;
  /** Shadow mode: the draft Melvin noted instead of sending, and what a teammate then answered, for a lead to compare. */
  shadow_draft?: string | null;
  team_answer?: TeamAnswer | null;
}

/** A teammate's reply in Intercom, as its webhook carried it (the first 2000 characters). */
export interface TeamAnswer {
  text: string;
  by: string | null;
  at: string;
}

/** A tool or docs result a later turn may reuse instead of calling again, until it expires. */
export interface FreshResult {
  tool_name: string;
  parameters: Record<string, unknown>;
  data: unknown;
  truncated: boolean;
  fetched_at: string;
  expires_at: string;
}

/**
 * A part of the conversation in Intercom that changed who answers the user: how a conversation's new workflow learns
 * what its earlier workflows and the team decided.
 */
export interface OwnershipEvent {
  owner: Ownership['owner'];
  /** Epoch seconds of the part. */
  at: number;
  /** Who changed it: Melvin handing over, an operator (an escalation they asked for, a hand-back), or a teammate. */
  by: 'melvin' | 'operator' | 'teammate';
  reason: string;
}

/** Who answers the user: Melvin, or the team from a hand-over until a lead hands the conversation back. */
export interface Ownership {
  owner: 'melvin' | 'team';
  since: string | null;
  reason: string | null;
  /** Whether the team has had its note that the user wrote again while it owns the conversation. */
  team_told_of_new_messages: boolean;
}

/** What a conversation's turns carry from run to run (continue-as-new); bounded, so every run's history stays small. */
export interface ConversationRecord {
  /** The latest turns, oldest first (at most `MAX_TURNS_KEPT`); `turn_count` counts them all. */
  turns: TurnRecord[];
  turn_count: number;
  /** The ledger: user part ids already answered or handed over, newest last (at most `MAX_LEDGER_IDS`). */
  handled_part_ids: string[];
  ownership: Ownership;
  /** Results still fresh (each tool's TTL), reused by later turns; at most `MAX_FRESH_BYTES` of JSON. */
  fresh_results?: FreshResult[];
  /**
   * Writes to Intercom that failed for good and are still owed, oldest first: the workflow writes them again between
   * turns, and does not end while one is owed (./workflows/owed-writes.ts).
   */
  owed_writes?: OwedWrite[];
  /** The notification ids of the teammates' actions already taken, newest last (at most `MAX_TEAM_ACTIONS_SEEN`). */
  team_actions_seen?: string[];
  /**
   * Present until the workflow has read what the workflows before it answered or handed over (its first read may fail),
   * with the first part it posted meanwhile: Melvin's parts from that one on are its own, not theirs.
   */
  ledger_unread?: { own_from_part_id?: string };
  /**
   * The reply mode the conversation's attribute set at the last read (null: none, the configuration's): a run that
   * cannot read the conversation goes by it (absent in records from before it was kept).
   */
  reply_mode_read?: ReplyMode | null;
  /**
   * How long the last outcome snoozed the conversation (null: it left it open for a teammate who is on it): a note
   * that lands after it snoozes the conversation again (absent in records from before it was kept).
   */
  last_snooze_seconds?: number | null;
}

/**
 * A write to Intercom the workflow owes: a note (in the order the notes were written: the conversation's course in
 * Intercom says who owns it), Melvin Status or the snooze (only the latest of each counts).
 */
export type OwedWrite = { owed_since: string; error: string } & (
  | {
      kind: 'note';
      text: string;
      summary: string;
      /** Epoch seconds from which an attempt Intercom took without answering would show. */
      not_before: number;
    }
  | { kind: 'status'; status: MelvinStatus }
  | { kind: 'snooze'; seconds: number }
);

export type RunPhase = 'turn' | 'waiting';

export interface RunMetadata {
  trigger: Trigger | null;
  contact_id: string | null;
  user_name: string | null;
  /** Internal notes of the conversation: never shown to the model, sent to validation so a reply cannot leak them. */
  internal_notes: string[];
  prompts: PromptsUsed | null;
  /**
   * The model that answered, whether it is the sandbox stand-in rather than a real LLM, how its answers were asked
   * for (strict structured outputs, JSON mode, or no response format) and why, when the endpoint refused a stricter one.
   */
  model: {
    name: string;
    stand_in: boolean;
    response_format: 'json_schema' | 'json_object' | 'none';
    format_fallback: string | null;
  } | null;
  /** Every node the run passed through, in order. */
  path: NodeName[];
  current_node: NodeName;
  user_messages: ReceivedUserMessage[];
  /** Parts of the conversation Intercom did not return (it returns the 500 most recent): earlier messages not seen. */
  omitted_parts: number;
  /** How many of `user_messages` the last conversation fetch already included. */
  user_messages_fetched: number;
  conversation_fetches: number;
  /**
   * The latest operator's escalation the run accepted; `handled` once the run acted on it (absent in runs from before
   * every accepted escalation was acted on).
   */
  forced_escalation: { reason: string; requested_by: string; received_at: string; handled?: boolean } | null;
  /** Every escalation and hand-back a lead asked of this run, and whether it was accepted or why not. */
  operator_requests?: OperatorRequest[];
  /** The Intercom part of each of `messages` (null where none), from the last fetch; absent in runs before it was read. */
  message_part_ids?: (string | null)[];
  /** The user's messages in the last fetch that hold only files, which Melvin cannot read. */
  attachment_only_part_ids?: string[];
  /** Why the run ended without acting, e.g. a redelivered webhook for a message Melvin or the team already answered. */
  skipped_reason: string | null;
  /** Each configured MCP server and whether its tools could be listed; a server that failed offers no tools this run. */
  tool_servers: ToolServerStatus[];
  /** Tools the servers listed that the MCP tool policy kept from the model, with why; absent in runs before the policy. */
  withheld_tools?: WithheldTool[];
  /** Whether the run is answering its turn or, the turn over, waiting for the next message. */
  phase: RunPhase;
  /** The conversation's record as this run will carry it on: earlier turns, this one once over, ledger and owner. */
  conversation: ConversationRecord;
  /** How this turn replies: the conversation's Intercom attributes when set, else the configured `REPLY_MODE`. */
  reply_mode?: ReplyModeUsed;
  /** Approval or shadow mode: the draft the team saw, and the decision on it. */
  approval?: ApprovalData | null;
  /** The turn's budget for gathered data (`tool_data` and `docs_data` together), and what it left out. */
  data_budget?: DataBudget;
  /** What the model endpoint reported the turn's LLM calls cost, summed (repair requests included). */
  usage?: LlmUsage;
  /** The same, for each model tier that answered, with the model that did and how long its calls took. */
  usage_by_tier?: Partial<Record<ModelTier, TierUsage>>;
  /** The team's past answers to similar questions that Draft was shown for its tone, never as facts. */
  style_examples?: StyleExamples | null;
  /** Where the talent is in their journey, and what told it (../workflows/routing/stage.ts); null when nothing did. */
  stage?: StageReading | null;
  /** A draft Melvin's own guard held back this turn, and why: the model wrote the reply once more, told so. */
  held_back_draft?: HeldBackDraft | null;
}

/** A draft that failed Melvin's own guard, and the failed checks' findings, as the model and the team are told them. */
export interface HeldBackDraft {
  draft: string;
  problems: string[];
}

/** A lead's escalation or hand-back, as the run received it and what became of it. */
export interface OperatorRequest {
  action: 'escalate' | 'hand_back';
  reason: string;
  requested_by: string;
  received_at: string;
  /** Accepted requests are acted on (a note, Melvin Status, the owner); refused ones change nothing, for `detail`. */
  outcome: 'accepted' | 'refused';
  detail: string;
}

/** What `StyleExamples.tool` says when the examples came from the resolved-conversation index. */
export const INDEX_SOURCE = 'resolved-conversation-index';

/** Past conversations a teammate resolved, retrieved by similarity to the question, as the draft's style examples. */
export interface StyleExamples {
  tool: string;
  query: string;
  examples: StyleExample[];
  /** Why none could be had (the call failed, or its result was not a list of examples): Draft went on without. */
  error: string | null;
  /** From the resolved-conversation index: the top messages by seed 002's ranking (`examples` are its pairs). */
  retrieved?: RetrievedExample[];
}

export interface RetrievedExample {
  role: 'talent' | 'team';
  text: string;
  score: number;
  conversation_id: string;
  part_id: string;
}

export interface StyleExample {
  question: string;
  answer: string;
}

/** Tokens as the model endpoint reports them (`usage` of each chat completion), and how many calls made them. */
export interface LlmUsage {
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface TierUsage extends LlmUsage {
  model: string;
  duration_ms: number;
}

export interface ReplyModeUsed {
  mode: ReplyMode;
  approval_timeout_seconds: number;
  /** Where the mode came from: the conversation's `Melvin Reply Mode` attribute, or the worker's configuration. */
  set_by: 'conversation attribute' | 'configuration';
  /** Attributes set to values Melvin cannot use (the configured setting applied instead). */
  problems: string[];
}

export interface DataBudget {
  budget_bytes: number;
  used_bytes: number;
  dropped: { hop: number; tool_name: string; stored_as: string; bytes: number }[];
}

export interface AgentState {
  conversation_id: string;
  messages: Message[];
  user_email: string | null;
  melvin_admin_id: string | null;
  timestamp: string;
  available_tools: ToolDefinition[];
  tool_data: Record<string, StoredToolData>;
  docs_data: Record<string, StoredDocsData>;
  hops: Hop[];
  max_hops: number;
  draft: DraftData | null;
  validate: ValidateData | null;
  escalate: EscalateData | null;
  response_delivery: ResponseDelivery | null;
  finalize: FinalizeData | null;
  next_node: NodeName;
  escalation_reason: string | null;
  response: string | null;
  error: string | null;
  metadata: RunMetadata;
}

/**
 * The workflow's result, kept small: how the conversation's workflow ended and its last turn. The whole state of the
 * last run stays readable through the `state` query.
 */
export interface ConversationOutcome {
  conversation_id: string;
  /** Runs started without a quiet period answer one turn and end; others end when the quiet period passes or on close. */
  ended_because: 'turn over (no quiet period)' | 'quiet period passed' | 'closed by the team';
  turns: number;
  owner: Ownership['owner'];
  last_turn: TurnRecord | null;
}

/** The turn's stage: from the talent's records when they tell it, else from their words as Plan read them. */
export interface StageReading {
  stage: Stage;
  from: 'records' | 'words';
  /** What told it: the records' kinds and statuses ("application hired"), or that the words did. */
  evidence: string;
}

/** A message that shows no emotion and no urgency. */
export const NEUTRAL_TONE: Tone = { emotions: [], urgency: 'normal', urgency_phrases: [] };
