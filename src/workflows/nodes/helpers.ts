// What the turn's nodes share: entering a node and the UI's details, failures as escalations, model usage, posts to
// Intercom, and fetching the conversation.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  TimeoutFailure,
  isCancellation,
  log,
  setCurrentDetails,
} from '@temporalio/workflow';
import type { FetchedConversation, PostInput, PostedPart } from '../../activities/intercom';
import type { LlmAnswer } from '../../activities/llm';
import { errorMessage } from '../../observability/error-message';
import type {
  AgentState,
  ConversationRecord,
  EscalationKind,
  LlmUsage,
  NodeName,
  OwnershipEvent,
  ReceivedUserMessage,
} from '../../contract/state';
import { handBackToMelvin, handOverToTeam, learnHandledBefore } from '../records/conversation-record';
import { intercom, intercomReads, replyWithNote, replyWithNotePolicy } from '../activity-options/retry-policies';
import {
  INTERCOM_FAULTS_RULES,
  KEPT_PROMISES_RULES,
  LAST_READ_RULES,
  NOTE_ON_ITS_OWN_RULES,
  OWNER_AT_FIRST_READ_RULES,
  rulesSince,
} from '../versions/patches';
import { noteOwed, oweNote } from '../records/owed-writes';
import { escalation, type Escalation } from '../routing/routing';
import { runMap, turnOutcomeDetails } from '../records/run-summary';
import type { Step, Turn } from './turn';
import { applyFetchedConversation } from '../records/turn-state';

/** What the UI's details call each node while the turn is at it. */
const NODE_TITLES: Record<NodeName, string> = {
  initialize: 'Initialize: fetching the conversation, tools and prompts',
  plan: 'Plan: choosing tools and documentation searches',
  gather: 'Gather: running the planned tool calls',
  coverage: 'Coverage: judging whether the data answers the question',
  draft: 'Draft: writing the reply',
  validate: 'Validate: checking the draft with the validation service',
  escalate: 'Escalate: handing the conversation to the team',
  response: 'Response: sending the reply',
  finalize: 'Finalize: setting Melvin Status and snoozing',
  end: 'Finished',
};

/** The turn arrives at `node`: its path records it and the UI's details show it. */
export function enter(turn: Turn, node: NodeName, detail?: string): void {
  recordArrival(turn.state, node);
  showDetails(turn, detail);
}

/** The state's record of the turn arriving at `node`: the node it is at, and its path. */
export function recordArrival(state: AgentState, node: NodeName): void {
  state.metadata.current_node = node;
  state.metadata.path.push(node);
}

/** What the UI's details say of a finished turn, also while the run waits for the next message. */
export function outcomeDetails(turn: Turn): string {
  return turnOutcomeDetails(turn.state).join('\n\n');
}

/**
 * The Temporal UI's current details: the node and hop, what is worth knowing about it, any MCP server that failed
 * (the run goes on without its tools, which whoever watches it should know), and the path so far.
 */
export function showDetails(turn: Turn, detail?: string): void {
  const { state } = turn;
  const node = state.metadata.current_node;
  const hop = state.hops.length;
  // Once the turn is over its outcome leads; while it runs, the node it is at.
  const lines = [
    node === 'end' ? '' : `**${NODE_TITLES[node]}**${hop > 0 ? ` (hop ${hop} of ${state.max_hops})` : ''}`,
    detail ?? '',
    ...state.metadata.tool_servers.flatMap((s) =>
      s.ok ? [] : [`MCP server "${s.name}" failed, so its tools are left out: ${s.error}`],
    ),
    `Path: ${state.metadata.path.join(' → ')}`,
    // Once the turn is over, the map of its path goes last: the panel shows its top first.
    node === 'end' ? `\`\`\`mermaid\n${runMap(state)}\n\`\`\`` : '',
  ];
  setCurrentDetails(lines.filter(Boolean).join('\n\n'));
}

/** The most specific message in an activity failure chain, e.g. the Intercom or model error behind "Activity task failed". */
export function describeFailure(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return describeFailure(err.cause);
  if (err instanceof TimeoutFailure) return `timed out (${err.timeoutType})`;
  if (err instanceof ApplicationFailure) return err.message || err.type || 'failed';
  return errorMessage(err);
}

/**
 * Whether an operator's escalation waits to be acted on. Runs recorded before every accepted escalation was acted on
 * acted on the first one only, whenever they met it.
 */
export function operatorEscalationWaiting(turn: Pick<Turn, 'state'> & Partial<Pick<Turn, 'legacy'>>): boolean {
  const forced = turn.state.metadata.forced_escalation;
  return turn.legacy ? !!forced : !!forced && !forced.handled;
}

/** The operator's escalation, which the turn now acts on: it will not be acted on again. */
export function takeOperatorEscalation(turn: Pick<Turn, 'state'>): Escalation {
  const forced = turn.state.metadata.forced_escalation!;
  forced.handled = true;
  return escalation('operator', forced.reason, forced.requested_by);
}

/**
 * Whether the turn works in shadow mode: the conversation's attribute as this run read it, else as an earlier run of
 * the workflow read it, else the configuration.
 */
export function inShadowMode(turn: Pick<Turn, 'state' | 'input'>): boolean {
  const { reply_mode, conversation } = turn.state.metadata;
  // A run that has not read the conversation (Intercom refuses it) goes by the mode its record last read, when it knows
  // one: its hand-overs then give the team what the conversation's mode gives it.
  const lastRead = rulesSince(LAST_READ_RULES) ? conversation.reply_mode_read : undefined;
  return (reply_mode?.mode ?? lastRead ?? turn.input.replyMode) === 'shadow';
}

/**
 * A hand-over note went out: the conversation as it stands now (the parts fetched, every delivery so far) goes to the
 * team; `handsOver` says whether the team owns it from now on (in shadow mode only an operator's escalation gives it).
 */
export function markHandedOver(
  turn: Pick<Turn, 'state' | 'fetchedUserPartIds' | 'handedOver'>,
  handsOver: boolean,
  namedUnread: ReceivedUserMessage[] = [],
): void {
  // Since KEPT_PROMISES_RULES the note names the messages of the last read, so it covers the deliveries that read
  // held, and those it named by their webhook's preview; one that came after is the next turn's, or the team's with a
  // note that names it.
  const { user_messages, user_messages_fetched } = turn.state.metadata;
  turn.handedOver = {
    partIds: [...turn.fetchedUserPartIds, ...namedUnread.flatMap((d) => d.part_id ?? [])],
    deliveries: rulesSince(KEPT_PROMISES_RULES) ? user_messages_fetched : user_messages.length,
    handsOver: handsOver || (turn.handedOver?.handsOver ?? false),
  };
}

/** A node's activity failed for good: the escalation its row names. A cancellation (forced escalation) passes on. */
export function handOverOnError(turn: Pick<Turn, 'state'>, kind: EscalationKind, err: unknown): Step {
  if (isCancellation(err)) throw err;
  turn.state.error = describeFailure(err);
  return { next: 'escalate', escalation: escalation(kind, turn.state.error) };
}

/**
 * Which model answered, and what the turn's model calls cost so far. Answers recorded in histories from before
 * response-format modes lack the mode (they were strict outputs), and those from before usage was read lack the usage.
 */
export function recordModel(turn: Pick<Turn, 'state'>, answer: LlmAnswer<unknown>): void {
  const { metadata } = turn.state;
  metadata.model = {
    name: answer.model,
    stand_in: answer.stand_in,
    response_format: answer.response_format ?? 'json_schema',
    format_fallback: answer.format_fallback ?? null,
  };
  const total = (metadata.usage ??= { calls: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  addUsage(total, answer);
  // Answers recorded before tiers say neither tier nor time: only the total counts them.
  if (!answer.tier) return;
  const byTier = (metadata.usage_by_tier ??= {});
  const tier = (byTier[answer.tier] ??= {
    model: answer.model,
    calls: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
    duration_ms: 0,
  });
  tier.model = answer.model;
  addUsage(tier, answer);
  tier.duration_ms += answer.duration_ms ?? 0;
}

function addUsage(total: LlmUsage, answer: LlmAnswer<unknown>): void {
  total.calls += answer.usage?.calls ?? 1;
  total.prompt_tokens += answer.usage?.prompt_tokens ?? 0;
  total.completion_tokens += answer.usage?.completion_tokens ?? 0;
  total.total_tokens += answer.usage?.total_tokens ?? 0;
}

/**
 * Posts a reply or a note. Intercom writes are never cancelled: once asked for, a post must land, and exactly once;
 * the part it made joins the parts its successors' retries compare against.
 */
export async function post(
  turn: Turn,
  kind: 'sendReply' | 'addNote',
  text: string,
  summary: string,
  extra: Partial<Pick<PostInput, 'mayBePosted' | 'checkNotBefore' | 'notBefore'>> = {},
): Promise<PostedPart> {
  const posted = await CancellationScope.nonCancellable(() =>
    intercom[kind].executeWithOptions({ summary }, [{ ...postInput(turn, text), ...extra }]),
  );
  if (posted.part_id) turn.knownPartIds?.add(posted.part_id);
  // Until the run has read what the workflows before it handled, its first part marks where its own begin.
  const unread = turn.state.metadata.conversation.ledger_unread;
  if (unread && !unread.own_from_part_id && posted.part_id) unread.own_from_part_id = posted.part_id;
  return posted;
}

function postInput(turn: Turn, text: string): PostInput {
  return {
    conversationId: turn.input.conversationId,
    text,
    notBefore: turn.notBefore,
    knownPartIds: turn.knownPartIds ? [...turn.knownPartIds] : null,
  };
}

/**
 * The policy that activity is scheduled with, told to it by runs before NOTE_ON_ITS_OWN_RULES: a note that failed was
 * then thrown while attempts were left, so the note's failures spent the reply's attempts.
 */
const REPLY_WITH_NOTE_RETRY = {
  maximumAttempts: replyWithNotePolicy.retry!.maximumAttempts!,
  nonRetryableErrorTypes: replyWithNotePolicy.retry!.nonRetryableErrorTypes!,
};

/**
 * The reply, with the validation note that waits for it (since LOCAL_AGENT_CALLS_RULES) in the same activity: the
 * turn then hears of both in one workflow task. The note's outcome goes into the state; a reply that fails leaves the
 * note waiting, for Response to post on its own. Since NOTE_ON_ITS_OWN_RULES the activity answers a note that failed
 * instead of throwing it, so only the reply's own failures spend the reply's attempts (a reply posted, then a failed
 * duplicate check on the last attempt, ended a turn MESSAGE_FAILED with the reply in the conversation); the note is
 * then posted again by an activity of its own, with attempts of its own.
 */
export async function postReply(turn: Turn, text: string): Promise<PostedPart> {
  const note = turn.validationNoteText;
  if (note === null) return post(turn, 'sendReply', text, 'reply');
  const alone = rulesSince(NOTE_ON_ITS_OWN_RULES);
  const posted = await CancellationScope.nonCancellable(() =>
    replyWithNote.sendReply.executeWithOptions({ summary: 'reply, and the validation note beside it' }, [
      { ...postInput(turn, text), note, ...(!alone && { retry: REPLY_WITH_NOTE_RETRY }) },
    ]),
  );
  turn.validationNoteText = null;
  const noted = posted.note && 'part_id' in posted.note ? posted.note : null;
  for (const part of [posted.part_id, noted?.part_id]) if (part) turn.knownPartIds?.add(part);
  turn.state.validate!.validation_note_added = noted !== null;
  if (posted.note && 'error' in posted.note) {
    log.warn('could not add note', { error: posted.note.error });
    if (alone) {
      const { checkNotBefore } = posted.note;
      const again = await postNote(turn, note, 'note validation result', { mayBePosted: true, checkNotBefore });
      turn.state.validate!.validation_note_added = again.added;
    }
  }
  return posted;
}

/** The validation note still waiting for a reply that Response will not send now, posted on its own. */
export async function postWaitingValidationNote(turn: Turn): Promise<void> {
  const text = turn.validationNoteText;
  if (text === null) return;
  turn.validationNoteText = null;
  turn.state.validate!.validation_note_added = (await postNote(turn, text, 'note validation result')).added;
}

/**
 * Posts a note for the team. Since KEPT_PROMISES_RULES a note that fails for good is owed, and written again between
 * turns (../between-turns.ts); while one is owed, a later note waits behind it, so the notes reach Intercom in order.
 */
export async function postNote(
  turn: Turn,
  text: string,
  summary: string,
  extra: Pick<PostInput, 'mayBePosted' | 'checkNotBefore'> = {},
): Promise<{ added: boolean; error: string | null }> {
  const record = turn.state.metadata.conversation;
  const owing = !turn.legacy && rulesSince(KEPT_PROMISES_RULES);
  const owe = (error: string) => oweNote(record, { text, summary, notBefore: turn.notBefore }, error);
  if (owing && noteOwed(record)) {
    const error = 'owed: it waits for an earlier note Intercom refused';
    owe(error);
    return { added: false, error };
  }
  try {
    await post(turn, 'addNote', text, summary, extra);
    return { added: true, error: null };
  } catch (err) {
    const error = describeFailure(err);
    log.warn('could not add note', { error });
    if (!owing) return { added: false, error };
    owe(error);
    return { added: false, error: `owed: ${error}` };
  }
}

export async function fetchConversation(turn: Turn, summary: string): Promise<void> {
  const seen = turn.state.metadata.user_messages.length;
  const reads = intercomReads();
  // Since INTERCOM_FAULTS_RULES the contact is read by a local activity of its own, with attempts of its own.
  const withoutContact = rulesSince(INTERCOM_FAULTS_RULES);
  const beforePartId = turn.state.metadata.conversation.ledger_unread?.own_from_part_id;
  const conversation = await reads.fetchConversation.executeWithOptions({ summary }, [
    {
      conversationId: turn.input.conversationId,
      ...(withoutContact && { withoutContact }),
      ...(beforePartId !== undefined && { beforePartId }),
    },
  ]);
  if (withoutContact && conversation.contact_id) {
    conversation.contact = await reads.fetchContact.executeWithOptions({ summary: 'fetch contact' }, [
      { contactId: conversation.contact_id },
    ]);
  }
  applyFetch(turn, conversation, seen);
  const answering = turn.ownerKnown();
  if (answering) await answering;
  const { problems } = turn.state.metadata.reply_mode!;
  if (problems.length) log.warn('unusable reply settings on the conversation', { problems });
}

/**
 * A fetched conversation into the turn; `seen` is how many deliveries the turn had received when it asked for it. Pure:
 * the bench's LangGraph peer applies its fetches with it too.
 */
export function applyFetch(
  turn: Pick<Turn, 'state' | 'input' | 'fetchedUserPartIds' | 'knownPartIds'> & { legacy?: boolean },
  conversation: FetchedConversation,
  seen: number,
): void {
  const { state } = turn;
  const firstOfWorkflow = state.metadata.conversation_fetches === 0 && !turn.input.conversation;
  applyFetchedConversation(state, conversation, turn.input);
  // Fetches recorded before user part ids were read carry none: the deliveries' own part ids then fill the ledger.
  turn.fetchedUserPartIds = conversation.user_part_ids ?? [];
  // Parts this run posted stay known even if they fell out of the 500 most recent. Fetches recorded before part ids
  // were read carry none, and leave the posts on the fallback check.
  turn.knownPartIds = conversation.part_ids ? new Set([...conversation.part_ids, ...(turn.knownPartIds ?? [])]) : null;
  const record = state.metadata.conversation;
  if (turn.legacy) {
    // Runs from before ownership was read from the conversation's course learned only its assignee.
    const assignee = conversation.admin_assignee_id;
    if (record.turn_count === 0 && !record.ownership.since && assignee && assignee !== conversation.admin_id) {
      handOverToTeam(record, `assigned to a teammate in Intercom (admin ${assignee})`, new Date().toISOString());
    }
  } else if (firstOfWorkflow) {
    learnFromIntercom(turn, conversation);
  } else if (record.ledger_unread && record.ownership.since === null && rulesSince(OWNER_AT_FIRST_READ_RULES)) {
    // A workflow whose first read works only in a later turn learns from it all a new workflow does, while it knows of
    // no change of owner itself: a lead's request it refused left the conversation as its course says.
    learnFromIntercom(turn, conversation);
  } else if (record.ledger_unread) {
    // A workflow whose first run never read the conversation, and which has changed or learned who owns it since (it
    // handed the conversation over, say), learns only what came before it: who owns it now is its own record's word,
    // which a note Intercom has not taken yet must not undo.
    learnHandledBefore(record, conversation.handled_before_part_ids);
  }
  state.metadata.user_messages_fetched = seen;
  state.metadata.conversation_fetches += 1;
}

/**
 * The latest change of owner in the conversation's course in Intercom: Melvin's hand-overs, a lead's hand-back, a
 * teammate's reply, assignment or close; in shadow mode, where the team answers anyway, only a lead's escalation or
 * hand-back.
 */
export function latestOwnerChange(events: OwnershipEvent[] | undefined, shadow: boolean): OwnershipEvent | undefined {
  return (events ?? []).filter((e) => !shadow || e.by === 'operator').at(-1);
}

/** The record's owner as a change in the course says, dated when it happened. */
export function takeOwnerChange(record: ConversationRecord, change: OwnershipEvent): void {
  const since = new Date(change.at * 1000).toISOString();
  if (change.owner === 'team') handOverToTeam(record, change.reason, since);
  else handBackToMelvin(record, change.reason, since);
}

/**
 * A conversation's new workflow (the last one ended after its quiet period, or the team closed the conversation)
 * learns from Intercom what the earlier ones left: the user's messages older than Melvin's newest part were answered or
 * handed over, and the conversation's course says who answers now. Without any change in the course, a teammate it is
 * assigned to holds it.
 */
function learnFromIntercom(turn: Pick<Turn, 'state' | 'input'>, conversation: FetchedConversation): void {
  const record = turn.state.metadata.conversation;
  learnHandledBefore(record, conversation.handled_before_part_ids ?? []);
  const shadow = inShadowMode(turn);
  const latest = latestOwnerChange(conversation.ownership_events, shadow);
  if (latest) takeOwnerChange(record, latest);
  else if (!shadow && conversation.admin_assignee_id && conversation.admin_assignee_id !== conversation.admin_id) {
    const assignee = conversation.admin_assignee_id;
    handOverToTeam(record, `assigned to a teammate in Intercom (admin ${assignee})`, new Date().toISOString());
  }
}

/**
 * Messages that arrived during the run are fetched before Coverage and Draft: Coverage can then send the agent back
 * to Plan for what the new message asks, and the reply answers everything the user said.
 */
export async function refetchIfNewMessages(turn: Turn): Promise<void> {
  if (turn.state.metadata.user_messages.length <= turn.state.metadata.user_messages_fetched) return;
  try {
    await fetchConversation(turn, 're-fetch conversation for new messages');
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('could not re-fetch the conversation; drafting from the messages already fetched', {
      error: describeFailure(err),
    });
  }
}

/**
 * After Response or Finalize: an operator's escalation that came meanwhile still escalates; else onwards. Runs from
 * before every accepted escalation was acted on skipped it when the turn had escalated already.
 */
export function afterWrites(
  turn: Pick<Turn, 'state'> & Partial<Pick<Turn, 'legacy'>>,
  next: NodeName = 'finalize',
): Step {
  if (!operatorEscalationWaiting(turn) || (turn.legacy && turn.state.escalate)) return { next };
  return { next: 'escalate', escalation: takeOperatorEscalation(turn) };
}
