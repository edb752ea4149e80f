// One user turn as a graph: the `Turn` its nodes share, the table of nodes (one file each under ./nodes), and the loop
// that runs the node each one names next until the turn ends. Workflow code: every side effect is an activity.
import {
  CancellationScope,
  isCancellation,
  log,
  metricMeter,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { LoadedPrompts } from '../activities/prompts';
import {
  TURN_SUMMARY_MEMO,
  searchAttributes,
  type ReplyDecision,
  type SupportConversationInput,
} from '../contract/shared';
import type { AgentState, DataBudget, GatheredCall, NodeName } from '../contract/state';
import type { TurnCoverage } from './conversation-record';
import type { Escalation } from './routing';
import { turnSummary } from './run-summary';
import { coverage } from './nodes/coverage';
import { draft } from './nodes/draft';
import { escalate } from './nodes/escalate';
import { finalize } from './nodes/finalize';
import { gather } from './nodes/gather';
import { enter, operatorEscalationWaiting, outcomeDetails, takeOperatorEscalation } from './nodes/helpers';
import { initialize } from './nodes/initialize';
import { plan } from './nodes/plan';
import { response } from './nodes/response';
import { validate } from './nodes/validate';
import { TURN_SUMMARY_PATCH, since } from './patches';

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
    legacy: false,
  };
}

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
        if (!(isCancellation(err) && operatorEscalationWaiting(t))) throw err;
        step = { next: 'escalate' };
      }
      if (operatorEscalationWaiting(t)) step = { next: 'escalate', escalation: takeOperatorEscalation(t) };
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
 * The turn's outcome into its run's memo, where reports read it from visibility; `reopenedByTeam` says why the team took
 * the conversation over after the turn ended.
 */
export function recordTurnSummary(t: Turn, reopenedByTeam: string | null = null): void {
  if (!since(TURN_SUMMARY_PATCH)) return;
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
