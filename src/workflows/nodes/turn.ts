// What one user turn's nodes share: the `Turn` (the run's state and what the run keeps beside it) and the `Step` each
// node returns. The graph that runs the nodes is ../graph.ts.
import { CancellationScope } from '@temporalio/workflow';
import type { LoadedPrompts } from '../../activities/prompts';
import type { ReplyDecision, SupportConversationInput } from '../../contract/shared';
import type { AgentState, DataBudget, GatheredCall, NodeName } from '../../contract/state';
import type { TurnCoverage } from '../records/conversation-record';
import type { Escalation } from '../routing/routing';

/** What a node decides: where the turn goes next and, when it goes to Escalate, why. */
export interface Step {
  next: NodeName;
  escalation?: Escalation;
}

/** What the nodes of one run's turn share: its state, and what the run keeps beside the state. */
export interface Turn {
  input: SupportConversationInput;
  state: AgentState;
  /**
   * Runs recorded before every message was answered or handed over (the patch `every-message-answered-or-handed-over`)
   * keep the rules they were recorded with, so they replay: the latest message decided whether a turn had anything to
   * answer, an escalation was acted on once per run, and cancellations and approvals ended as they did.
   */
  legacy: boolean;
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
  /** The validation note while it is being posted beside the reply: Response waits for it before the turn goes on. */
  validationNote: Promise<void> | null;
  /**
   * Since LOCAL_AGENT_CALLS_RULES, the validation note of a draft that passed waits here for the reply: it goes out with
   * it in one activity, or on its own before whatever Response does instead.
   */
  validationNoteText: string | null;
  /** What Draft saw: the user parts of its fetch and how many deliveries that fetch held. A reply answers those. */
  draftSaw: Omit<TurnCoverage, 'handsOver'> | null;
  /** Set when Validate sent the turn back to Coverage for messages that came meanwhile: it does so once a turn. */
  reconsidered: boolean;
  /** Set when a hand-over note went out: the conversation as it stood then goes to the team. */
  handedOver: TurnCoverage | null;
  /** Set when Validate held a draft back for Draft to write again, told why; Draft clears it. Once a turn. */
  repairing: boolean;
  /**
   * Called where the turn's course knows who owns the conversation: its first read applied, a hand-over begun, the turn
   * over. A lead's request that came before the read waits for it (ConversationControls): a point of the turn's own
   * course, so a replay meets it at the same place (a condition on the read's result did not: the local activities'
   * results come to a replay in other activations). What it returns, when anything, the turn awaits before it goes on:
   * the requests that waited are answered first.
   */
  ownerKnown: () => Promise<void> | undefined;
  /** Whether a teammate closed the conversation in Intercom since the run began (its webhook came). */
  teamClosed: () => boolean;
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
    validationNote: null,
    validationNoteText: null,
    draftSaw: null,
    reconsidered: false,
    handedOver: null,
    repairing: false,
    ownerKnown: () => undefined,
    teamClosed: () => false,
    legacy: false,
  };
}
