// The peer's nodes: Melvin's turn nodes (src/workflows/nodes/) as LangGraph node bodies. Each does what Melvin's node of
// the same name does, through Melvin's own pure functions, with its side effects as LangGraph tasks (./activities).
// Left out, as Temporal-only: the UI's details, search attributes, metrics, and what signals bring during a turn.
import type { PostedPart } from '../../src/activities/intercom';
import type { LlmAnswer } from '../../src/activities/llm';
import type { DraftOutput } from '../../src/contract/schemas';
import { DEFAULT_SNOOZE_SECONDS } from '../../src/contract/shared';
import type { CoverageAnalysis, EscalationKind, Hop, NodeName, UserTold } from '../../src/contract/state';
import { coverageContext, draftContext, planContext } from '../../src/workflows/prompt-contexts/contexts';
import { coverageFailed, routeCoverage } from '../../src/workflows/nodes/coverage';
import { retrieveStyleExamples, routeDraft } from '../../src/workflows/nodes/draft';
import { gatherHop, type CallTool } from '../../src/workflows/nodes/gather';
import {
  afterWrites,
  applyFetch,
  describeFailure,
  handOverOnError,
  recordArrival,
  recordModel,
} from '../../src/workflows/nodes/helpers';
import { recordEscalation } from '../../src/workflows/nodes/escalate';
import { finalStatus, recordFinalize } from '../../src/workflows/nodes/finalize';
import { applyToolsAndPrompts, planUnlessNothingToAnswer } from '../../src/workflows/nodes/initialize';
import { afterReply, recordDelivery, undeliveredNote } from '../../src/workflows/nodes/response';
import { routeValidation, validationFailed, validationRequest } from '../../src/workflows/nodes/validate';
import { guardChecks, guardVerdict } from '../../src/workflows/prompt-contexts/reply-guard';
import { escalationNote } from '../../src/workflows/routing/routing';
import { runMap } from '../../src/workflows/records/run-summary';
import type { Step, Turn } from '../../src/workflows/nodes/turn';
import { tasks } from './activities';

/** What Melvin's `Turn` holds that the peer keeps too; LangGraph checkpoints it after every node. */
export type PeerTurn = Pick<
  Turn,
  | 'input'
  | 'state'
  | 'budget'
  | 'notBefore'
  | 'prompts'
  | 'knownPartIds'
  | 'fetchedUserPartIds'
  | 'gathered'
  | 'escalation'
  | 'partial'
> & {
  /** The validation note of a reply that passed, posted by Response beside the reply, as Melvin's turn does. */
  noteBesideReply?: string | null;
};

export type PeerNode = Exclude<NodeName, 'end'>;

const callTool: CallTool = (input) => tasks.callTool(input);

async function initialize(turn: PeerTurn): Promise<Step> {
  recordArrival(turn.state, 'initialize');
  try {
    const seen = turn.state.metadata.user_messages.length;
    const [conversation, listing, loaded] = await Promise.all([
      tasks.fetchConversation({ conversationId: turn.input.conversationId }),
      tasks.listTools(),
      tasks.loadPrompts().catch((err: unknown) => tasks.loadBundledPrompts({ fallbackReason: describeFailure(err) })),
    ]);
    applyFetch(turn, conversation, seen);
    applyToolsAndPrompts(turn, listing, loaded);
  } catch (err) {
    return handOverOnError(turn, 'initialization_error', err);
  }
  return planUnlessNothingToAnswer(turn);
}

async function plan(turn: PeerTurn): Promise<Step> {
  const { state } = turn;
  const hop: Hop = { plan: null, gather: null, coverage: null };
  state.hops.push(hop);
  recordArrival(state, 'plan');
  try {
    const answer = await tasks.plan({ prompt: turn.prompts!.plan, context: planContext(state, state.hops.length) });
    recordModel(turn, answer);
    hop.plan = answer.output;
  } catch (err) {
    return handOverOnError(turn, 'plan_error', err);
  }
  return { next: 'gather' };
}

async function gather(turn: PeerTurn): Promise<Step> {
  recordArrival(turn.state, 'gather');
  await gatherHop(turn, callTool);
  return { next: 'coverage' };
}

/** No message can arrive during a peer's turn (it has no signals), so Coverage never re-fetches the conversation. */
async function coverage(turn: PeerTurn): Promise<Step> {
  const { state } = turn;
  recordArrival(state, 'coverage');
  let answer: LlmAnswer<CoverageAnalysis>;
  try {
    answer = await tasks.coverage({
      prompt: turn.prompts!.coverage,
      context: coverageContext(state, state.hops.length),
    });
  } catch (err) {
    return coverageFailed(turn, err);
  }
  recordModel(turn, answer);
  return routeCoverage(turn, answer.output);
}

async function draft(turn: PeerTurn): Promise<Step> {
  const { state } = turn;
  recordArrival(state, 'draft');
  const started = Date.now();
  state.metadata.style_examples = await retrieveStyleExamples(turn, callTool);
  let answer: LlmAnswer<DraftOutput>;
  try {
    answer = await tasks.draft({ prompt: turn.prompts!.draft, context: draftContext(state) });
  } catch (err) {
    return handOverOnError(turn, 'draft_error', err);
  }
  recordModel(turn, answer);
  return routeDraft(turn, answer.output, started);
}

/**
 * The peer has no runs from before the guard's rules (only Temporal's histories do): ids match as tokens, and facts are
 * checked against the turn's sources. The bench's drafts are grounded, so the peer needs no second draft.
 */
async function validate(turn: PeerTurn): Promise<Step> {
  recordArrival(turn.state, 'validate');
  let raw = guardVerdict(guardChecks(turn.state, turn.prompts, { idsAsSubstrings: false, grounded: true }));
  if (raw === null) {
    try {
      raw = (await tasks.validateDraft(validationRequest(turn))).raw;
    } catch (err) {
      return validationFailed(turn, err);
    }
  }
  const step = routeValidation(turn, raw, false);
  const text = `Validation result:\n${raw}`;
  if (step.next === 'response') turn.noteBesideReply = text;
  else turn.state.validate!.validation_note_added = (await postNote(turn, text)).added;
  return step;
}

/**
 * Sends the validated reply. Only the `auto` reply mode: approval waits for a lead's update and shadow mode for a
 * teammate's answer, both signals the peer has not. For the same reason the team cannot take over during its turn.
 */
async function response(turn: PeerTurn): Promise<Step> {
  const { state } = turn;
  const mode = state.metadata.reply_mode?.mode ?? 'auto';
  if (mode !== 'auto') throw new Error(`the peer sends replies in the auto reply mode only, not "${mode}"`);
  recordArrival(state, 'response');
  const started = Date.now();
  const note = turn.noteBesideReply;
  turn.noteBesideReply = null;
  const noted = note ? postNote(turn, note).then((n) => (state.validate!.validation_note_added = n.added)) : null;
  try {
    recordDelivery(state, started, await post(turn, 'sendReply', state.response ?? ''));
  } catch (err) {
    recordDelivery(state, started, { error: describeFailure(err) });
    await postNote(turn, undeliveredNote(state));
  }
  await noted;
  return afterReply(turn);
}

async function escalate(turn: PeerTurn): Promise<Step> {
  const { state } = turn;
  const e = turn.escalation!;
  recordArrival(state, 'escalate');
  state.escalation_reason = e.reason;
  const told = state.metadata.conversation.ownership.owner === 'team' ? null : await tellUser(turn, e.kind);
  const note = await postNote(turn, escalationNote(e, told, runMap(state, e.kind)));
  recordEscalation(state, e, told, note);
  return { next: 'finalize' };
}

async function finalize(turn: PeerTurn): Promise<Step> {
  const { state, input } = turn;
  recordArrival(state, 'finalize');
  const conversationId = input.conversationId;
  const snoozeSeconds = input.snoozeSeconds ?? DEFAULT_SNOOZE_SECONDS;
  const status = finalStatus(state);
  const [statusSet, snoozed] = await Promise.allSettled([
    tasks.setStatus({ conversationId, status }),
    tasks.snooze({ conversationId, seconds: snoozeSeconds }),
  ]);
  recordFinalize(state, status, snoozeSeconds, statusSet, snoozed);
  return afterWrites(turn, 'end');
}

/** The turn's nodes, as Melvin's runTurn in src/workflows/graph.ts. */
export const NODES: Record<PeerNode, (turn: PeerTurn) => Promise<Step>> = {
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

/** A reply or note, posted once: a retried attempt finds the part an earlier one made, as in Melvin. */
async function post(turn: PeerTurn, kind: 'sendReply' | 'addNote', text: string): Promise<PostedPart> {
  const posted = await tasks[kind]({
    conversationId: turn.input.conversationId,
    text,
    notBefore: turn.notBefore,
    knownPartIds: turn.knownPartIds ? [...turn.knownPartIds] : null,
  });
  if (posted.part_id) turn.knownPartIds?.add(posted.part_id);
  return posted;
}

async function postNote(turn: PeerTurn, text: string): Promise<{ added: boolean; error: string | null }> {
  try {
    await post(turn, 'addNote', text);
    return { added: true, error: null };
  } catch (err) {
    return { added: false, error: describeFailure(err) };
  }
}

/** The hand-over message, when the configuration has one for this kind of escalation. */
async function tellUser(turn: PeerTurn, kind: EscalationKind): Promise<UserTold | null> {
  const text = turn.input.handoverMessages?.[kind]?.trim();
  if (!text) return null;
  try {
    const posted = await post(turn, 'sendReply', text);
    return { text, sent: true, error: null, part_id: posted.part_id };
  } catch (err) {
    return { text, sent: false, error: describeFailure(err), part_id: null };
  }
}
