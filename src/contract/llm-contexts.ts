// What each LLM step is sent: the context of Plan, Coverage, Draft and the resolve step, built from the run's state.
import type {
  Intent,
  Message,
  NamedRecord,
  StageReading,
  StoredDocsData,
  StoredToolData,
  StyleExample,
  Tone,
  ToolDefinition,
} from './state';

export type ToolSummary = Pick<ToolDefinition, 'name' | 'description' | 'input_schema'>;

/** An earlier turn of the conversation, as the next turn's plan and draft see it. */
export interface EarlierTurn {
  asked: string | null;
  answered: string | null;
  escalated: string | null;
}

/**
 * The user's messages no reply has answered or handed over yet, oldest first: what the turn answers. The conversation's
 * other messages are what was said before; a message the user wrote while Melvin was replying sits before that reply.
 * Absent where the run could not tell (fetches recorded before Intercom part ids were read).
 */
type Unanswered = { unanswered_messages?: string[] };

export interface PlanContext extends Unanswered {
  hop: number;
  max_hops: number;
  messages: Message[];
  /** Set when Intercom left out this many earlier parts: `messages` holds the first message and the recent ones. */
  earlier_parts_omitted?: number;
  earlier_turns?: EarlierTurn[];
  available_tools: ToolSummary[];
  /** Arguments (paths like `talent.contactEmail` when nested) the workflow fills from the contact; never the model. */
  identity_arguments: string[];
  tool_data: Record<string, StoredToolData>;
  docs_data: Record<string, StoredDocsData>;
  previous_hops: { hop: number; user_query: string; tool_calls: string[]; missing_data: string[] }[];
}

export interface CoverageContext extends Unanswered {
  hop: number;
  max_hops: number;
  user_query: string;
  messages: Message[];
  /** Set when Intercom left out this many earlier parts: `messages` holds the first message and the recent ones. */
  earlier_parts_omitted?: number;
  /** What the user asks, one entry per intent the plan named: coverage judges each. */
  intents: Intent[];
  /** The records the user named, as resolution found them: the one meant, or the candidates left. */
  named_records?: NamedRecordContext[];
  tool_data: Record<string, StoredToolData>;
  docs_data: Record<string, StoredDocsData>;
}

export interface DraftContext extends Unanswered {
  messages: Message[];
  /** Set when Intercom left out this many earlier parts: `messages` holds the first message and the recent ones. */
  earlier_parts_omitted?: number;
  earlier_turns?: EarlierTurn[];
  user_name: string | null;
  /** Each intent and whether the data covers it; the reply answers the covered ones only. */
  intents: (Intent & { covered: boolean })[];
  /** The intents the data does not cover: the reply leaves them to the team and lists them in `open_intents`. */
  open_intents: string[];
  /** What the user already told or Melvin already knows: never ask for any of it. */
  known_context: string[];
  /** What is still missing, as coverage found it. */
  missing_context: string[];
  /** How the team answered similar questions before: for tone and form only, never a source of facts. */
  style_examples?: StyleExample[];
  /** The team's past replies nearest to the question, best first, masked of one talent's names: tone and form only. */
  team_examples?: { role: 'talent' | 'team'; text: string }[];
  /** The records the user named, as resolution found them: answer about the one meant; when none, ask which. */
  named_records?: NamedRecordContext[];
  /** How the user feels and how urgent it is, as Plan read it: the reply's tone follows. */
  tone?: Tone;
  /** Where the talent is in their journey and what told it: the prompt's guidance for that stage applies. */
  stage?: StageReading;
  tool_data: Record<string, StoredToolData>;
  docs_data: Record<string, StoredDocsData>;
  /** Set when Melvin's own checks held the last draft back: what it said, and what was wrong with it. */
  repair?: { previous_reply: string; problems: string[] };
}

/** A record the user named, for the model: what they wrote, the record it is (id null when not told apart), how. */
export type NamedRecordContext = Pick<
  NamedRecord,
  'kind' | 'mention' | 'record_kind' | 'id' | 'label' | 'tier' | 'candidates'
>;

/** What the resolve step reads: the mention, the records still in question, and the user's messages. */
export interface ResolveContext extends Unanswered {
  messages: Message[];
  kind: string;
  mention: string;
  candidates: { id: string; label: string; record: unknown }[];
}
