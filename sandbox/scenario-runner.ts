// Runs scenario files against a running Melvin: seeds the sandbox, delivers the signed webhook, applies signals at
// the named node, waits for the run and checks every expectation.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { z } from 'zod';
import { decideReply, turnOver } from '../src/operations/conversations';
import { forceEscalationSignal, progressQuery, stateQuery, workflowIdFor } from '../src/contract/shared';
import type { AgentState } from '../src/contract/state';
import type { GateSpec } from './gates';
import { Scenario, type ClosedConversation, type ScenarioDecision } from './scenario';
import { waitFor } from './wait';
import { withDecoyRecords } from './decoys';
import { errorMessage } from '../src/observability/error-message';
import { INDEX_SCHEDULE_ID } from '../src/resolved-index/schedule';

export interface ExpectationResult {
  expectation: string;
  passed: boolean;
  expected: unknown;
  actual: unknown;
}

export interface ScenarioResult {
  id: string | null;
  file: string;
  passed: boolean;
  /** Why the scenario could not run at all: an invalid file, a delivery the ingress refused, a signal never applied. */
  error: string | null;
  workflow_id: string | null;
  run_id: string | null;
  duration_ms: number;
  expectations: ExpectationResult[];
  /** Each turn as the talent saw it, in order, as far as the scenario got. */
  turns: TurnOutcome[];
}

/** One turn of a scenario as the talent saw it: what they wrote and what Melvin answered. */
export interface TurnOutcome {
  /** The talent's message the turn answered, as the run sent it (null: a turn of lead steps only). */
  user: string | null;
  /** Melvin's replies to it, the hand-over message not counted. */
  replies: string[];
  /** Whether the turn handed the conversation to the team (its run escalated). */
  handed_over: boolean;
  melvin_status: string | null;
  /** Whether the turn's model wrote a draft, and what Melvin's own guard made of it (absent in older records). */
  guard?: {
    drafted: boolean;
    /** What was wrong with a first draft the guard held back, for the model to write it again; null when none. */
    held_back: string[] | null;
    /** Whether the guard failed the last draft, so that the turn handed over. */
    blocked: boolean;
  };
}

export interface SandboxConversation {
  replies: string[];
  notes: string[];
  melvin_status: string | null;
  snoozed_until: number | null;
}

/** The conversation as the sandbox's control API shows it: with its parts, each with its id. */
interface ControlConversation extends SandboxConversation {
  parts: { id: string; part_type: string; melvin: boolean; seeded: boolean; text: string }[];
}

/** What Melvin's own guard did in a turn, from its run's state. */
function guardOutcome(state: AgentState): NonNullable<TurnOutcome['guard']> {
  const answer = state.validate?.validation_response as { checked_by?: unknown } | null | undefined;
  return {
    drafted: state.draft !== null,
    held_back: state.metadata.held_back_draft?.problems ?? null,
    blocked: state.validate?.overall_passed === false && answer?.checked_by === 'melvin',
  };
}

/** What the runner keeps of a turn to judge it once the scenario is over. */
interface PlayedTurn {
  /** How many parts the conversation had when the turn began: its window starts there. */
  start: number;
  /** The state of the run that handled it, and Melvin Status and the snooze as the turn left them. */
  state: AgentState;
  melvinStatus: string | null;
  snoozedUntil: number | null;
}

/** Where a signal is applied: the sandbox holds the first request after the named node until it has been sent. */
export const GATE_AFTER_NODE: Record<Scenario['signals'][number]['after_node'], GateSpec> = {
  initialize: { at: 'llm:plan' },
  plan: { after: 'llm:plan' },
  gather: { at: 'llm:coverage' },
  coverage: { after: 'llm:coverage' },
  draft: { after: 'llm:draft' },
  validate: { after: 'validation' },
  response: { after: 'intercom:reply' },
};

/** Every `.json` file named, or under a folder named (sub-folders included), in a stable order. */
export function scenarioFiles(targets: string[]): string[] {
  return targets.flatMap((target) => {
    if (!statSync(target).isDirectory()) return [target];
    return readdirSync(target)
      .sort()
      .flatMap((entry) => {
        const full = path.join(target, entry);
        if (statSync(full).isDirectory()) return scenarioFiles([full]);
        return entry.endsWith('.json') ? [full] : [];
      });
  });
}

/** A scenario file, checked, with two decoy records for its talent whose facts no reply may hold (./decoys). */
export function loadScenario(file: string): Scenario {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: not valid JSON: ${errorMessage(err)}`, { cause: err });
  }
  const parsed = Scenario.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => {
      const where = [...issue.path, ...('keys' in issue ? [issue.keys.join(', ')] : [])].join('.') || '(root)';
      return `${where}: ${issue.message}`;
    });
    throw new Error(`${file}: ${issues.join('; ')}`);
  }
  return withDecoyRecords(parsed.data);
}

const lower = (text: string) => text.toLowerCase();

/** The message the scenario's first turn answers: its last part from the user. */
export function lastUserPart(scenario: Scenario): string | null {
  return [...scenario.conversation.parts].reverse().find((p) => p.author === 'user')?.body ?? null;
}

/**
 * The hand-over kinds each Melvin Status stands for, by how their note's reason begins (the escalation table of the
 * design, written out here apart from Melvin's own, so the check does not take Melvin's word for it). An operator's
 * escalation gives their own words, with a `Requested by:` line.
 */
const HAND_OVER_REASONS: Record<string, string[]> = {
  ROUTE_TO_TEAM: ['User requested to talk to a human', 'Exceeded maximum hops', 'The user sent only files'],
  NO_SAFE_ANSWER: ['No safe answer'],
  SENSITIVE_REQUEST: ['Sensitive request'],
  partial: ['Partly answered'],
  FRUSTRATED: ['The talent is frustrated'],
  VALIDATION_FAILED: ['Validation failed'],
  RESPONSE_FAILED: ['Draft generation error'],
  error: ['Initialization failed', 'Coverage analysis failed', 'Validation error', 'Planning failed'],
};

/** The words of a message that say what it is about: three letters or more, none of the commonest. */
function contentWords(text: string): string[] {
  const common = new Set(['the', 'and', 'for', 'you', 'your', 'are', 'was', 'can', 'how', 'what', 'when', 'with']);
  return [...new Set(lower(text).match(/[\p{L}\p{N}]{3,}/gu) ?? [])].filter((w) => !common.has(w));
}

/**
 * The turn's hand-over note names its kind and what it leaves open: a `🚨 Escalation:` note whose reason is one of the
 * expected status's kinds, and an `Open for the team:` list quoting words of what the talent wrote (two of them, or
 * all when the message has fewer). A turn whose reply went out before the hand-over (a lead's escalation after it) left
 * nothing open.
 */
function handOverNote(
  status: string,
  notes: string[],
  turn: { userMessage: string | null; replied: boolean; read: boolean },
): { passed: boolean; found: string } {
  const note = notes.find((n) => n.startsWith('🚨 Escalation:'));
  if (!note) return { passed: false, found: 'no hand-over note' };
  const lines = note.split('\n');
  const reason = lines[0]!.slice('🚨 Escalation:'.length).trim();
  const operator = lines.some((l) => l.startsWith('Requested by:'));
  const kindNamed =
    (status === 'ROUTE_TO_TEAM' && operator) || HAND_OVER_REASONS[status]!.some((r) => reason.startsWith(r));
  const open = lines.indexOf('Open for the team:');
  const listed = open === -1 ? [] : lines.slice(open + 1).filter((l) => l.startsWith('- '));
  const asked = contentWords(turn.userMessage ?? '');
  // A conversation Melvin could not read cannot be quoted: the list says so instead.
  const named =
    !turn.read ||
    listed.some((line) => {
      const words = contentWords(line);
      return asked.filter((w) => words.includes(w)).length >= Math.min(2, asked.length);
    });
  // A lead's own escalation may come with nothing new from the talent, and after a reply nothing was left open.
  const passed = kindNamed && (operator || turn.replied || (listed.length > 0 && named));
  return { passed, found: passed ? reason : `${reason}; open for the team: ${listed.join(' ') || 'none listed'}` };
}

/**
 * Compares what happened with what the scenario expects; absent expectations are not checked. A turn that hands over
 * is also checked for its note (`hand_over_note`), with the talent's message of the turn when the runner knows it, and
 * whether the team owned the conversation when the turn began (the turn before handed over).
 */
export function evaluate(
  expect: Scenario['expect'],
  state: AgentState,
  conversation: SandboxConversation,
  turn: { userMessage: string | null; teamOwned: boolean } = { userMessage: null, teamOwned: false },
): ExpectationResult[] {
  const results: ExpectationResult[] = [];
  const check = (expectation: string, expected: unknown, actual: unknown, passed: boolean) =>
    results.push({ expectation, passed, expected, actual });
  // The hand-over message only says a person will follow up: `replied` and the reply checks are about answers.
  const told = state.escalate?.user_told;
  const handover = told?.sent ? conversation.replies.indexOf(told.text) : -1;
  const replies = conversation.replies.filter((_, index) => index !== handover);
  const reply = replies.join('\n');
  if (expect.melvin_status !== undefined) {
    check(
      'melvin_status',
      expect.melvin_status,
      conversation.melvin_status,
      conversation.melvin_status === expect.melvin_status,
    );
  }
  if (expect.replied !== undefined) {
    const count = replies.length;
    check(
      'replied',
      expect.replied ? 'exactly one reply' : 'no reply',
      `${count} repl${count === 1 ? 'y' : 'ies'}`,
      expect.replied ? count === 1 : count === 0,
    );
  }
  for (const text of expect.reply_includes ?? []) {
    check(`reply_includes "${text}"`, text, reply, lower(reply).includes(lower(text)));
  }
  for (const text of expect.reply_excludes ?? []) {
    check(`reply_excludes "${text}"`, text, reply, !lower(reply).includes(lower(text)));
  }
  const called = new Set(state.hops.flatMap((hop) => hop.gather?.tool_results.map((r) => r.tool_name) ?? []));
  for (const tool of expect.tools_called ?? []) check(`tools_called ${tool}`, tool, [...called], called.has(tool));
  if (expect.escalation_source !== undefined) {
    const source = state.escalate?.escalation_source ?? null;
    check('escalation_source', expect.escalation_source, source, source === expect.escalation_source);
  }
  for (const text of expect.note_includes ?? []) {
    check(
      `note_includes "${text}"`,
      text,
      conversation.notes,
      conversation.notes.some((n) => lower(n).includes(lower(text))),
    );
  }
  for (const text of expect.note_excludes ?? []) {
    check(
      `note_excludes "${text}"`,
      text,
      conversation.notes,
      !conversation.notes.some((n) => lower(n).includes(lower(text))),
    );
  }
  if (expect.max_hops !== undefined) {
    check('max_hops', `at most ${expect.max_hops}`, state.hops.length, state.hops.length <= expect.max_hops);
  }
  if (expect.approval_outcome !== undefined) {
    const outcome = state.metadata.approval?.outcome ?? null;
    check('approval_outcome', expect.approval_outcome, outcome, outcome === expect.approval_outcome);
  }
  if (expect.team_answer_includes) {
    const answers = state.metadata.conversation.turns.flatMap((t) => t.team_answer?.text ?? []);
    for (const text of expect.team_answer_includes) {
      check(
        `team_answer_includes "${text}"`,
        text,
        answers,
        answers.some((a) => lower(a).includes(lower(text))),
      );
    }
  }
  if (expect.snoozed !== undefined) {
    const snoozed = conversation.snoozed_until !== null && conversation.snoozed_until * 1000 > Date.now();
    check('snoozed', expect.snoozed, snoozed, snoozed === expect.snoozed);
  }
  const status = expect.melvin_status;
  // A turn while the team already owns the conversation hands nothing over again: the team has its note.
  const noted = conversation.notes.some((n) => n.startsWith('🚨 Escalation:'));
  if (status !== undefined && HAND_OVER_REASONS[status] && state.escalate && (noted || !turn.teamOwned)) {
    const { passed, found } = handOverNote(status, conversation.notes, {
      userMessage: turn.userMessage,
      replied: replies.length > 0,
      read: state.messages.length > 0,
    });
    check('hand_over_note', `the kind of ${status} and what is open`, found, passed);
  }
  return results;
}

const emptyResult = (file: string): ScenarioResult => ({
  id: null,
  file,
  passed: false,
  error: null,
  workflow_id: null,
  run_id: null,
  duration_ms: 0,
  expectations: [],
  turns: [],
});

const Delivery = z.looseObject({
  status: z.number().nullable(),
  response: z.unknown(),
});
const Started = z.looseObject({ workflowId: z.string(), runId: z.string() });
/** An ingress with an outbox answers once the delivery is on its disk; the run starts when it is forwarded. */
const Queued = z.looseObject({ queued: z.literal(true), conversationId: z.string() });
/** What playing the turns keeps: each turn's leads' answers, the part ids of turns played early, where each began. */
interface PlayContext {
  turnResults: Map<number, ExpectationResult[]>;
  played: Map<number, string | null>;
  starts: Map<number, number>;
}

/** What Melvin's operator API answered a lead's request, as the sandbox passes it on. */
const Lead = z.strictObject({ status: z.number(), response: z.unknown() });

export class ScenarioRunner {
  constructor(
    private readonly options: {
      /** The sandbox control API, e.g. http://127.0.0.1:8781/_sandbox. */
      controlUrl: string;
      client: Client;
      timeoutMs?: number;
    },
  ) {}

  private async control(method: 'GET' | 'POST', route: string, body?: unknown): Promise<unknown> {
    const response = await fetch(`${this.options.controlUrl}${route}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as unknown;
    if (!response.ok)
      throw new Error(`sandbox ${method} ${route} answered ${response.status}: ${JSON.stringify(json)}`);
    return json;
  }

  /** Loads a scenario file and runs it; a file that does not load is a failed result naming the problem. */
  async run(file: string): Promise<ScenarioResult> {
    let scenario: Scenario;
    try {
      scenario = loadScenario(file);
    } catch (err) {
      return { ...emptyResult(file), error: errorMessage(err) };
    }
    return (await this.runScenario(scenario, file)).result;
  }

  /** The conversation's run that started after `since`: the one an outbox's forward of the delivery started. */
  private async runStartedSince(conversationId: string, since: Date): Promise<{ workflowId: string; runId: string }> {
    const workflowId = workflowIdFor(conversationId);
    return waitFor(
      'the queued delivery’s run to start',
      async () => {
        const described = await this.options.client.workflow
          .getHandle(workflowId)
          .describe()
          .catch(() => undefined);
        return described && described.startTime >= since ? { workflowId, runId: described.runId } : undefined;
      },
      { timeoutMs: this.options.timeoutMs ?? 180_000, intervalMs: 50 },
    );
  }

  /**
   * Runs a scenario already loaded (an evaluation rewrites its conversation id per try); besides the result, the state
   * of the run that handled each turn, in order, as far as the scenario got.
   */
  async runScenario(scenario: Scenario, file: string): Promise<{ result: ScenarioResult; states: AgentState[] }> {
    const started = Date.now();
    const result: ScenarioResult = { ...emptyResult(file), id: scenario.id };
    const states: AgentState[] = [];
    const played = new Map<number, string | null>();
    /** What leads were answered in each turn's steps, judged with that turn. */
    const turnResults = new Map<number, ExpectationResult[]>();
    /** Where each turn began in the conversation (-1: the scenario's first turn). */
    const starts = new Map<number, number>();
    try {
      await this.endOpenConversation(scenario.conversation.id);
      await this.closeAndIndex(scenario.closed_by_team, scenario.id);
      await this.control('POST', '/scenarios', scenario);
      starts.set(-1, await this.partCount(scenario.conversation.id));
      const [first, ...rest] = scenario.signals;
      if (first) await this.control('POST', '/gate', GATE_AFTER_NODE[first.after_node]);
      // The second turn placed during the first is held for like a signal.
      const during = scenario.turns[0]?.during;
      if (during) await this.control('POST', '/gate', GATE_AFTER_NODE[during]);
      const deliveredAt = new Date();
      const delivery = Delivery.parse(await this.control('POST', `/conversations/${scenario.conversation.id}/deliver`));
      const started = Started.safeParse(delivery.response);
      const queued = Queued.safeParse(delivery.response);
      if (delivery.status !== 202 || !(started.success || queued.success)) {
        throw new Error(`the ingress did not start a run: ${delivery.status} ${JSON.stringify(delivery.response)}`);
      }
      const run = started.success ? started.data : await this.runStartedSince(scenario.conversation.id, deliveredAt);
      result.workflow_id = run.workflowId;
      result.run_id = run.runId;
      const handle = this.options.client.workflow.getHandle(run.workflowId);
      // The conversation's workflow waits for the next message after its turn: the turn's end is the outcome.
      const outcome = turnOver(this.options.client, scenario.conversation.id, {
        timeoutMs: this.options.timeoutMs ?? 180_000,
      });
      let ended = false;
      void outcome.then(
        () => (ended = true),
        () => (ended = true),
      );

      for (const [index, signal] of scenario.signals.entries()) {
        const reached = await waitFor(
          'the run to reach the signal’s node',
          async () => {
            const gate = (await this.control('GET', '/gate')) as { held: string | null };
            return gate.held ? 'held' : ended ? 'ended' : undefined;
          },
          { timeoutMs: this.options.timeoutMs ?? 180_000, intervalMs: 20 },
        );
        if (reached === 'ended') {
          throw new Error(`signal ${signal.name} after ${signal.after_node} was not applied: the run ended first`);
        }
        if (signal.name === 'forceEscalation') {
          await handle.signal(forceEscalationSignal, {
            reason: String(signal.args.reason ?? 'Escalated by a scenario'),
            requestedBy: String(signal.args.requestedBy ?? 'scenario-runner'),
          });
        } else {
          const body = String(signal.args.body ?? 'One more thing.');
          await this.control('POST', `/conversations/${scenario.conversation.id}/messages`, { body });
        }
        const next = rest[index];
        await this.control('POST', '/gate/release');
        if (next) await this.control('POST', '/gate', GATE_AFTER_NODE[next.after_node]);
      }

      if (during) {
        await this.untilHeld(async () => ended, `turn 2 during ${during}`);
        played.set(0, await this.playTurn(scenario, 0, { turnResults, played, starts }));
        await this.control('POST', '/gate/release');
      }
      if (scenario.decision) await this.decide(scenario.conversation.id, scenario.decision, () => ended);
      let state = await this.withTimeout(outcome, `the run of ${scenario.id}`);
      // An operator's escalation that came during the turn's last writes (Melvin Status and the snooze, local
      // activities) reaches the run once its turn is over, and is handled then: the outcome is read once recorded.
      if (scenario.signals.some((s) => s.name === 'forceEscalation') && !state.escalate) {
        state = await waitFor(
          `the operator's escalation of ${scenario.id} to be recorded`,
          async () => {
            const latest = await handle.query(stateQuery).catch(() => undefined);
            return latest?.escalate ? latest : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 100 },
        );
      }
      // The first turn's own run: by the time the outcome is read, a turn placed during it may have run after it.
      const own = await this.options.client.workflow
        .getHandle(run.workflowId, run.runId)
        .query(stateQuery)
        .catch(() => state);
      const turns = [await this.turnLeft(scenario.conversation.id, own, starts.get(-1)!)];
      turns.push(...(await this.laterTurns(scenario, { turnResults, played, starts })));
      states.push(...turns.map((t) => t.state));
      ({ expectations: result.expectations, outcomes: result.turns } = await this.judge(scenario, turns, turnResults));
      result.passed = result.expectations.every((e) => e.passed);
    } catch (err) {
      result.error = errorMessage(err);
      await this.control('POST', '/gate/release').catch(() => undefined);
    }
    result.duration_ms = Date.now() - started;
    return { result, states };
  }

  /**
   * The scenario's later turns in order, each handled by a turn of Melvin's, by handing its message over when the team
   * owns the conversation, or, for a turn of steps only, once the conversation has settled. A turn placed `during` the
   * one before was played while that one ran.
   */
  private async laterTurns(scenario: Scenario, ctx: PlayContext): Promise<PlayedTurn[]> {
    const id = scenario.conversation.id;
    const turns: PlayedTurn[] = [];
    for (const index of scenario.turns.keys()) {
      const partId = ctx.played.has(index) ? ctx.played.get(index)! : await this.playTurn(scenario, index, ctx);
      const state = partId
        ? await this.runThatHandled(id, await this.handled(id, partId), partId)
        : await this.settled(id);
      turns.push(await this.turnLeft(id, state, ctx.starts.get(index)!));
    }
    return turns;
  }

  /**
   * The state of the run whose turn handled the message (the conversation record names it), which a turn placed
   * during it may have followed already; the latest run's when the record does not name one (the message was left to
   * the team between turns).
   */
  private async runThatHandled(conversationId: string, latest: AgentState, partId: string): Promise<AgentState> {
    const turn = latest.metadata.conversation.turns.find((t) => t.part_ids.includes(partId));
    if (!turn) return latest;
    const handle = this.options.client.workflow.getHandle(workflowIdFor(conversationId), turn.run_id);
    return handle.query(stateQuery).catch(() => latest);
  }

  /** A turn once handled: its run's state, and Melvin Status and the snooze as it left them. */
  private async turnLeft(conversationId: string, state: AgentState, start: number): Promise<PlayedTurn> {
    const now = (await this.control('GET', `/conversations/${conversationId}`)) as ControlConversation;
    return { start, state, melvinStatus: now.melvin_status, snoozedUntil: now.snoozed_until };
  }

  /**
   * Judges every turn once the scenario is over, on the parts it added: those from its start to the next turn's, but
   * a reply goes with the turn whose run delivered it, wherever it landed (a message written while Melvin drafted comes
   * before the reply it did not get). Melvin Status and the snooze are judged as the turn left them.
   */
  private async judge(
    scenario: Scenario,
    turns: PlayedTurn[],
    turnResults: Map<number, ExpectationResult[]>,
  ): Promise<{ expectations: ExpectationResult[]; outcomes: TurnOutcome[] }> {
    const now = (await this.control('GET', `/conversations/${scenario.conversation.id}`)) as ControlConversation;
    const owner = new Map<string, number>();
    turns.forEach((turn, index) => {
      const { response_delivery: delivery, escalate } = turn.state;
      for (const partId of [delivery?.part_id, escalate?.user_told?.part_id]) {
        if (partId && !owner.has(partId)) owner.set(partId, index);
      }
    });
    const results: ExpectationResult[] = [];
    const outcomes: TurnOutcome[] = [];
    turns.forEach((turn, index) => {
      const end = turns[index + 1]?.start ?? now.parts.length;
      const mine = now.parts.filter((p, at) => {
        if (!p.melvin || p.seeded) return false;
        const deliveredBy = owner.get(p.id);
        return deliveredBy !== undefined ? deliveredBy === index : at >= turn.start && at < end;
      });
      const view: SandboxConversation = {
        replies: mine.filter((p) => p.part_type === 'comment').map((p) => p.text),
        notes: mine.filter((p) => p.part_type === 'note').map((p) => p.text),
        melvin_status: turn.melvinStatus,
        snoozed_until: turn.snoozedUntil,
      };
      const expect = index === 0 ? scenario.expect : scenario.turns[index - 1]!.expect;
      const told = turn.state.escalate?.user_told;
      outcomes.push({
        user: index === 0 ? lastUserPart(scenario) : (scenario.turns[index - 1]!.user ?? null),
        replies: view.replies.filter((text) => !(told?.sent && text === told.text)),
        handed_over: turn.state.escalate !== null && turn.state.escalate !== undefined,
        melvin_status: turn.melvinStatus,
        guard: guardOutcome(turn.state),
      });
      const judged = [
        ...(turnResults.get(index - 1) ?? []),
        ...evaluate(expect, turn.state, view, {
          userMessage: outcomes.at(-1)!.user,
          teamOwned: outcomes.at(-2)?.handed_over ?? false,
        }),
      ];
      results.push(
        ...judged.map((e) => (index === 0 ? e : { ...e, expectation: `turn ${index + 1}: ${e.expectation}` })),
      );
    });
    return { expectations: results, outcomes };
  }

  private async partCount(conversationId: string): Promise<number> {
    return ((await this.control('GET', `/conversations/${conversationId}`)) as ControlConversation).parts.length;
  }

  /**
   * Plays turn `index`: a teammate's reply, the steps (a lead's requests, each answer checked; an assignment), then
   * the user's message, whose part id it returns. When the next turn is placed during this one, it is played while
   * this one is held at its node.
   */
  private async playTurn(scenario: Scenario, index: number, ctx: PlayContext): Promise<string | null> {
    const id = scenario.conversation.id;
    const turn = scenario.turns[index]!;
    const results: ExpectationResult[] = [];
    ctx.turnResults.set(index, results);
    ctx.starts.set(index, await this.partCount(id));
    if (turn.teammate_replies) {
      await this.control('POST', `/conversations/${id}/teammate-replies`, { body: turn.teammate_replies });
    }
    for (const step of turn.steps) {
      if ('assign' in step) {
        await this.control('POST', `/conversations/${id}/assign`, { to: step.assign });
        continue;
      }
      const { answer: expected, ...action } = step;
      // A decision goes to a draft that waits for one: it waits until one does.
      if (action.action === 'approve' || action.action === 'edit' || action.action === 'reject') {
        await this.untilDraftWaits(id);
      }
      const { status, response } = Lead.parse(await this.control('POST', `/conversations/${id}/lead`, action));
      // A lead acts after seeing the last request's effect: an escalation's note, a hand-back's.
      if (action.action === 'escalate' || action.action === 'hand_back') await this.settled(id);
      const answer = status >= 200 && status < 300 ? 'accepted' : status === 409 ? 'refused' : `answered ${status}`;
      const what = `${action.action} "${'reason' in action ? action.reason : 'text' in action ? action.text : action.by}"`;
      results.push({
        expectation: `lead ${what}`,
        passed: expected ? answer === expected : answer === 'accepted' || answer === 'refused',
        expected: expected ?? 'accepted or refused',
        actual: { answer, response },
      });
    }
    const next = scenario.turns[index + 1];
    if (next?.during) await this.control('POST', '/gate', GATE_AFTER_NODE[next.during]);
    let partId: string | null = null;
    if (turn.user) {
      ({ part_id: partId } = (await this.control('POST', `/conversations/${id}/messages`, { body: turn.user })) as {
        part_id: string;
      });
    }
    if (next?.during) {
      const handled = async () => !!partId && (await this.isHandled(id, partId));
      await this.untilHeld(handled, `turn ${index + 3} during ${next.during}`);
      ctx.played.set(index + 1, await this.playTurn(scenario, index + 1, ctx));
      await this.control('POST', '/gate/release');
    }
    return partId;
  }

  /** Approval mode: once the draft waits for a lead, sends the scenario's decision as a lead would. */
  private async decide(conversationId: string, decision: ScenarioDecision, ended: () => boolean): Promise<void> {
    const handle = this.options.client.workflow.getHandle(workflowIdFor(conversationId));
    const reached = await waitFor(
      'the draft to wait for a decision',
      async () => {
        const state = await handle.query(stateQuery).catch(() => undefined);
        if (state?.metadata.approval?.outcome === 'waiting') return 'waiting';
        return ended() ? 'ended' : undefined;
      },
      { timeoutMs: this.options.timeoutMs ?? 180_000, intervalMs: 50 },
    );
    if (reached === 'ended') throw new Error(`the ${decision.decision} decision was not sent: no draft waited for one`);
    await decideReply(this.options.client, conversationId, decision);
  }

  /** Waits until the user's message is in the conversation's ledger and its workflow waits (or has ended). */
  private async handled(conversationId: string, partId: string): Promise<AgentState> {
    const handle = this.options.client.workflow.getHandle(workflowIdFor(conversationId));
    return waitFor(
      `message ${partId} of conversation ${conversationId} to be handled`,
      async () => {
        const state = await handle.query(stateQuery).catch(() => undefined);
        const done =
          state?.metadata.conversation.handled_part_ids.includes(partId) && state.metadata.phase === 'waiting';
        return done ? state : undefined;
      },
      { timeoutMs: this.options.timeoutMs ?? 180_000, intervalMs: 100 },
    );
  }

  private async isHandled(conversationId: string, partId: string): Promise<boolean> {
    const handle = this.options.client.workflow.getHandle(workflowIdFor(conversationId));
    const state = await handle.query(stateQuery).catch(() => undefined);
    return !!state?.metadata.conversation.handled_part_ids.includes(partId) && state.metadata.phase === 'waiting';
  }

  /**
   * Waits until nothing happens in the conversation: its workflow has ended, or it waits for a message with no task or
   * activity pending and its history unchanged for a moment (a lead's request is acted on after it was accepted).
   */
  private async settled(conversationId: string): Promise<AgentState> {
    const handle = this.options.client.workflow.getHandle(workflowIdFor(conversationId));
    let last = -1;
    await waitFor(
      `conversation ${conversationId} to settle`,
      async () => {
        const description = await handle.describe();
        if (description.status.name !== 'RUNNING') return true;
        const busy = !!description.raw.pendingActivities?.length || !!description.raw.pendingWorkflowTask;
        const progress = busy ? undefined : await handle.query(progressQuery).catch(() => undefined);
        const stable = !!progress?.idle && description.historyLength === last;
        last = busy ? -1 : description.historyLength;
        return stable || undefined;
      },
      { timeoutMs: this.options.timeoutMs ?? 180_000, intervalMs: 250 },
    );
    return handle.query(stateQuery);
  }

  /** Waits until the sandbox holds the request a placed turn waits for; fails if `passed` says the turn went by. */
  private async untilHeld(passed: () => Promise<boolean>, what: string): Promise<void> {
    const reached = await waitFor(
      `the run to reach ${what}`,
      async () => {
        const gate = (await this.control('GET', '/gate')) as { held: string | null };
        return gate.held ? 'held' : (await passed()) ? 'passed' : undefined;
      },
      { timeoutMs: this.options.timeoutMs ?? 180_000, intervalMs: 20 },
    );
    if (reached === 'passed') throw new Error(`${what} was not played: the turn before was over first`);
  }

  /** Waits until a draft of the conversation waits for a lead's decision (or gives up when none comes). */
  private async untilDraftWaits(conversationId: string): Promise<void> {
    const handle = this.options.client.workflow.getHandle(workflowIdFor(conversationId));
    await waitFor(
      `a draft of conversation ${conversationId} to wait for a decision`,
      async () => {
        const state = await handle.query(stateQuery).catch(() => undefined);
        return state?.metadata.approval?.outcome === 'waiting' || undefined;
      },
      { timeoutMs: this.options.timeoutMs ?? 180_000, intervalMs: 50 },
    ).catch(() => undefined);
  }

  /**
   * Conversations the team closes while Melvin runs (a scenario's `closed_by_team`, an evaluation's history): each is
   * seeded and closed in the sandbox's Intercom, then the index's Schedule is run once now (after any run under way)
   * and its workflow awaited, so a reply can draw on them. `closedFor` (kebab-case) names what they are closed for. A
   * scenario is seeded afterwards, so its faults are the ones in force.
   */
  async closeAndIndex(conversations: ClosedConversation[], closedFor: string): Promise<void> {
    if (!conversations.length) return;
    for (const conversation of conversations) {
      await this.endOpenConversation(conversation.id);
      await this.control('POST', '/scenarios', {
        id: `${closedFor}-closed-${conversation.id}`,
        description: `closed by the team before ${closedFor}`,
        conversation,
        expect: {},
      });
      await this.control('POST', `/conversations/${conversation.id}/close`);
    }
    const schedule = this.options.client.schedule.getHandle(INDEX_SCHEDULE_ID);
    const before = await schedule.describe().catch(() => {
      throw new Error(
        `closed_by_team needs the resolved-conversation index, and this stack's worker keeps none (no Schedule ${INDEX_SCHEDULE_ID}; set INDEX_DATA_DIR or INDEX_DATABASE_URL)`,
      );
    });
    const seen = new Set(before.info.recentActions.map((a) => a.action.workflow.workflowId));
    await schedule.trigger(ScheduleOverlapPolicy.BUFFER_ONE);
    const started = await waitFor(
      'the index run the scenario triggered',
      async () =>
        [...(await schedule.describe()).info.recentActions]
          .reverse()
          .find((a) => !seen.has(a.action.workflow.workflowId))?.action.workflow,
      { timeoutMs: this.options.timeoutMs ?? 180_000, intervalMs: 200 },
    );
    await this.withTimeout(
      this.options.client.workflow.getHandle(started.workflowId, started.firstExecutionRunId).result(),
      'the index run',
    );
  }

  /**
   * A scenario seeds its conversation afresh, so a workflow still open for that id from an earlier run of the scenario
   * (it waits days for the next message) would mix the two: it is terminated first.
   */
  private async endOpenConversation(conversationId: string): Promise<void> {
    const handle = this.options.client.workflow.getHandle(workflowIdFor(conversationId));
    const description = await handle.describe().catch(() => undefined);
    if (description?.status.name === 'RUNNING') await handle.terminate('a scenario seeds this conversation afresh');
  }

  private async withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
    const timeoutMs = this.options.timeoutMs ?? 180_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
    });
    try {
      return await Promise.race([promise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
