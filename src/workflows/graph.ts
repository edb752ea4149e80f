// The turn's graph, read top-down: which node follows which (one file each under ./nodes), an operator's escalation
// pre-empting the agent, and the turn's end into the memo, the metrics and the log. Workflow code.
import { isCancellation, log, metricMeter, upsertMemo, upsertSearchAttributes } from '@temporalio/workflow';
import { TURN_SUMMARY_MEMO, searchAttributes } from '../contract/shared';
import type { NodeName } from '../contract/state';
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
import { TURN_SUMMARY_PATCH, since } from './versions/patches';
import { turnSummary } from './records/run-summary';
import type { Step, Turn } from './nodes/turn';

/** Where a run's turn starts: at the top, or, for an operator's escalation before anything else, at the hand-over. */
export type TurnStart = Extract<NodeName, 'initialize' | 'escalate' | 'finalize'>;

/**
 * The turn: Initialize; hops of Plan, Gather and Coverage until the data covers the question (or the hops run out);
 * Draft; Validate; Response; Finalize. An agent node that hands the conversation over throws `HandOver`, caught once
 * below: Escalate then Finalize. Finalize can send the turn to Escalate once more, for an operator's escalation that
 * came during its writes. Validate sends the turn back once when the user wrote meanwhile: to Coverage (to Draft in runs
 * recorded before LATE_MESSAGES_RULES). Each comment says where else the node before it may go.
 */
export async function runTurn(turn: Turn, from: TurnStart = 'initialize'): Promise<void> {
  let next: NodeName = from;
  try {
    if (next === 'initialize') next = await agent(turn, initialize, 'plan', 'end'); // end: nothing to answer
    while (next === 'plan' || next === 'coverage' || next === 'draft') {
      if (next === 'plan') next = await agent(turn, plan, 'gather');
      if (next === 'gather') next = await agent(turn, gather, 'coverage');
      if (next === 'coverage') next = await agent(turn, coverage, 'plan', 'draft'); // plan: another hop
      if (next === 'draft') next = await agent(turn, draft, 'validate');
      if (next === 'validate') next = await agent(turn, validate, 'response', 'coverage', 'draft');
    }
  } catch (err) {
    if (!(err instanceof HandOver)) throw err;
    next = 'escalate';
  }
  if (next === 'response') next = await node(turn, response); // end: withheld for the team, or shadow mode
  while (next === 'escalate' || next === 'finalize') {
    if (next === 'escalate') await node(turn, escalate); // on to Finalize
    next = await node(turn, finalize);
  }
  endTurn(turn);
}

/** An agent node sent the turn to Escalate: the turn's one exception, which `runTurn` catches. */
class HandOver extends Error {
  constructor() {
    super('the turn is handed over');
  }
}

type Node = (turn: Turn) => Promise<Step>;

/**
 * Runs an agent node in the agent's cancellation scope, where an operator's escalation wins over what the node was
 * about to do (and a node it cancelled hands over too). Throws `HandOver` when the turn goes to Escalate; any other
 * route must be one of `routes`.
 */
async function agent<R extends NodeName>(turn: Turn, run: Node, ...routes: R[]): Promise<R> {
  let step: Step;
  try {
    step = await turn.agentScope.run(() => run(turn));
  } catch (err) {
    if (!(isCancellation(err) && operatorEscalationWaiting(turn))) throw err;
    step = { next: 'escalate' };
  }
  if (operatorEscalationWaiting(turn)) step = { next: 'escalate', escalation: takeOperatorEscalation(turn) };
  // Past the agent's nodes the reply (or the hand-over) is going out: a forced escalation no longer cancels it.
  if (!AGENT_NODES.has(step.next)) turn.replyStarted = true;
  const next = record(turn, step);
  if (next === 'escalate') throw new HandOver();
  if (!(routes as NodeName[]).includes(next)) throw new Error(`${run.name} routed the turn to ${next}`);
  return next as R;
}

/** The agent's nodes: those an operator's escalation pre-empts. */
const AGENT_NODES = new Set<NodeName>(['initialize', 'plan', 'gather', 'coverage', 'draft', 'validate']);

/** Runs a node past the agent's (Response, Escalate, Finalize), outside its cancellation scope. */
async function node(turn: Turn, run: Node): Promise<NodeName> {
  return record(turn, await run(turn));
}

/** The node's decision into the turn: why it escalates, if it does, and the next node, which the `state` query shows. */
function record(turn: Turn, step: Step): NodeName {
  if (step.escalation) turn.escalation = step.escalation;
  turn.state.next_node = step.next;
  return step.next;
}

/**
 * The turn's outcome into its run's memo, where reports read it from visibility; `reopenedByTeam` says why the team took
 * the conversation over after the turn ended.
 */
export function recordTurnSummary(turn: Turn, reopenedByTeam: string | null = null): void {
  if (!since(TURN_SUMMARY_PATCH)) return;
  turn.endedAt ??= Date.now();
  upsertMemo({
    [TURN_SUMMARY_MEMO]: turnSummary(turn.state, { startedAt: turn.startedAt, endedAt: turn.endedAt }, reopenedByTeam),
  });
}

/** The end in the UI's details, the memo and the log: the outcome, or why nothing was sent. */
function endTurn(turn: Turn): void {
  const { state } = turn;
  if (!state.finalize) upsertSearchAttributes([{ key: searchAttributes.melvinStatus, value: 'skipped' }]);
  enter(turn, 'end', outcomeDetails(turn));
  recordTurnSummary(turn);
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
