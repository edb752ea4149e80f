// The Response node: sends the validated reply, or holds it back for a teammate, shadow mode or a lead's approval.
import type { AgentState } from '../../contract/state';
import type { Step, Turn } from './turn';
import { awaitDecision, noteShadowDraft } from './approval';
import { setStatusOnly } from './finalize';
import { UNDELIVERED_MARK, WITHHELD_MARK } from '../../contract/notes';
import { talentWrote, unansweredMessages } from '../prompt-contexts/contexts';
import { KEPT_PROMISES_RULES, rulesSince } from '../versions/patches';
import {
  afterWrites,
  describeFailure,
  enter,
  markHandedOver,
  postNote,
  postReply,
  postWaitingValidationNote,
} from './helpers';

/**
 * Sends the validated reply, unless a teammate took over meanwhile or the reply mode holds it back (approval waits for
 * a lead; shadow only notes it). A reply that could not be delivered goes to the team as a note.
 */
export async function response(turn: Turn): Promise<Step> {
  try {
    return await respond(turn);
  } finally {
    // The validation note, posted beside the reply (see ./validate): the turn's record says whether it was added.
    await turn.validationNote;
    turn.validationNote = null;
    await postWaitingValidationNote(turn);
  }
}

async function respond(turn: Turn): Promise<Step> {
  const { state } = turn;
  // Set at every fetch, from the conversation's attributes or the configuration.
  const { mode } = state.metadata.reply_mode!;
  const teamOwns = state.metadata.conversation.ownership.owner === 'team';
  // The validation note goes out with the reply; when the reply does not go out now, it goes first, on its own.
  if (teamOwns || mode !== 'auto') await postWaitingValidationNote(turn);
  if (teamOwns) {
    // A teammate replied or was assigned while Melvin worked: theirs is the answer, Melvin's draft goes to them.
    return withhold(turn, 'a teammate took over during the turn: the reply was not sent');
  }
  if (mode === 'shadow') {
    await noteShadowDraft(turn);
    state.metadata.skipped_reason = 'shadow mode: the draft was noted for the team, not sent';
    return { next: 'end' };
  }
  if (mode === 'approve') {
    const decided = await awaitDecision(turn);
    if ('escalation' in decided) return { next: 'escalate', escalation: decided.escalation };
    if ('withhold' in decided) return withhold(turn, `${decided.withhold}: the reply was not sent`);
  }
  enter(turn, 'response');
  const started = Date.now();
  try {
    const posted = await postReply(turn, state.response ?? '');
    recordDelivery(state, started, posted);
  } catch (err) {
    recordDelivery(state, started, { error: describeFailure(err) });
    // The user got nothing: the team gets the drafted reply so a person can send it, after the draft's validation.
    await postWaitingValidationNote(turn);
    await postNote(turn, withMessages(turn, undeliveredNote(state)), 'note failed reply');
    markHandedOver(turn, true);
  }
  return afterReply(turn);
}

/** The reply stays with the team, who took the conversation over: Melvin's draft goes to them as a note. */
async function withhold(turn: Turn, why: string): Promise<Step> {
  await postNote(
    turn,
    withMessages(
      turn,
      `${WITHHELD_MARK} while Melvin was answering, so Melvin did not send its reply.\n\nDrafted reply:\n${turn.state.response ?? ''}`,
    ),
    'note reply withheld',
  );
  markHandedOver(turn, true);
  turn.state.metadata.skipped_reason = why;
  // Since KEPT_PROMISES_RULES Melvin Status says the team has it; no snooze, since a teammate is on it.
  if (!turn.legacy && rulesSince(KEPT_PROMISES_RULES)) await setStatusOnly(turn, 'ROUTE_TO_TEAM');
  return { next: 'end' };
}

/** A hand-over note with the messages it hands over named (since KEPT_PROMISES_RULES). */
function withMessages(turn: Turn, note: string): string {
  if (turn.legacy || !rulesSince(KEPT_PROMISES_RULES)) return note;
  const wrote = talentWrote(unansweredMessages(turn.state));
  return wrote.length ? `${note}\n\n${wrote.join('\n')}` : note;
}

/**
 * The reply's delivery into the state: the part it made, or why it did not go out. Pure, like `undeliveredNote` and
 * `afterReply`: the bench's LangGraph peer sends its replies with them too.
 */
export function recordDelivery(
  state: AgentState,
  started: number,
  outcome: { part_id: string | null } | { error: string },
): void {
  const error = 'error' in outcome ? outcome.error : null;
  if (error) state.error = error;
  state.response_delivery = {
    delivery_attempted: true,
    status_updated: false,
    delivery_successful: error === null,
    delivery_error: error,
    delivery_time_ms: Date.now() - started,
    part_id: 'error' in outcome ? null : outcome.part_id,
  };
}

/** The note that gives the team a reply that could not be delivered, so a person can send it. */
export function undeliveredNote(state: AgentState): string {
  return `${UNDELIVERED_MARK}: ${state.error}\n\nDrafted reply:\n${state.response ?? ''}`;
}

/** Where the turn goes once the reply is out (or not). */
export function afterReply(turn: Pick<Turn, 'state' | 'partial'> & Partial<Pick<Turn, 'legacy'>>): Step {
  const { state } = turn;
  // Forced while the reply was going out: the reply stands, and the team is told to take over.
  const next = afterWrites(turn);
  // A partial answer that reached the user: the team gets the questions it left open.
  if (next.escalation || !turn.partial || !state.response_delivery?.delivery_successful) return next;
  return { next: 'escalate', escalation: turn.partial };
}
