// Runs every scenario of an evaluation k times against a running stack: each try its own conversation, one of the
// scenario's wordings and sandbox state of its own (taken back when it ends), tries that seed the same keys never at
// once, each try's tokens and time, the reply checks and the judge's verdict.
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { ScenarioRunner, type ExpectationResult, type TurnOutcome } from '../sandbox/scenario-runner';
import type { Scenario, ScenarioLabels } from '../sandbox/scenario';
import type { JudgeRequest } from '../sandbox/model/judge';
import type { ModelTier } from '../src/contract/schemas';
import { INDEX_SOURCE, type AgentState, type LlmUsage, type TierUsage } from '../src/contract/state';
import { suggestedStep } from '../src/workflows/routing/stage';
import { complains } from '../src/workflows/routing/tone';
import type { Judge, Judgement } from './judge';
import { checkReplies, loadHelpCenter, type ReplyCheck } from './reply-checks';
import { errorMessage } from '../src/observability/error-message';
import { seededRandom } from '../sandbox/faults';
import { PlantList, plantOutcome, plantedIn, type PlantOutcome, type ValidationSetting } from './safety-net';

export interface LoadedScenario {
  file: string;
  scenario: Scenario;
}

export interface TryRecord {
  scenario: string;
  file: string;
  /** 1 … k. */
  try: number;
  conversation_id: string;
  passed: boolean;
  error: string | null;
  duration_ms: number;
  /** What the model endpoint reported for the try's LLM calls, summed over its turns (the judge's not included). */
  usage: LlmUsage;
  /** The same for each model tier, with the model that answered on it and the time its calls took. */
  usage_by_tier: Partial<Record<ModelTier, TierUsage>>;
  /** The model that answered, as the runs recorded it (the first turn's). */
  model: { name: string; stand_in: boolean; response_format: string } | null;
  expectations: ExpectationResult[];
  /** Each turn as the talent saw it: what they wrote (the drawn wording) and Melvin's replies. */
  turns: TurnOutcome[];
  /** The checks every reply gets whatever the scenario expects (eval/reply-checks.ts). */
  reply_checks: ReplyCheck[];
  /** Whether the sandbox's validation service checked the try's drafts or passed them all (absent in older results). */
  validation?: ValidationSetting;
  /** What the adversarial model planted in the try, and whether each reached the talent; absent when it was off. */
  plants?: PlantOutcome[];
  judgement: Judgement | null;
  /** The scenario's labels, and what the first turn's plan read, for the labelled figures (eval/labelled.ts). */
  labels?: ScenarioLabels;
  tone_read?: { complains: boolean; urgency: string } | null;
  /** The first turn's stage and the step it proposed for the team, its draft's or else its plan's (null: none). */
  stage_read?: string | null;
  action_read?: string | null;
  /**
   * The team's past conversations the first turn's retrieval from the index ranked, best first, each once; null when
   * the turn retrieved nothing from the index (it handed over before Draft, or the examples came from elsewhere).
   */
  examples_read?: string[] | null;
}

/** Tries get conversation ids of their own: the scenario's id times 100 plus the try's number (tries ≤ 99). */
export const MAX_TRIES = 99;

export function tryConversationId(conversationId: string, attempt: number): string {
  const id = (BigInt(conversationId) * 100n + BigInt(attempt)).toString();
  if (id.length > 19) throw new Error(`conversation id ${conversationId} is too long to number its tries`);
  return id;
}

/**
 * The scenario as one try runs it: its conversation's id is the try's own, and the talent's words are one of the
 * scenario's wordings (the message itself or a paraphrase). The tries of a scenario take its wordings in turn from an
 * offset the run's seed draws, so k tries at least as many as the wordings use each of them, and another seed starts
 * elsewhere.
 */
export function forTry(scenario: Scenario, attempt: number, seed = 0): Scenario {
  const reworded = (original: string | undefined, paraphrases: string[] | undefined, salt: string) => {
    if (original === undefined || !paraphrases?.length) return original;
    const wordings = [original, ...paraphrases];
    return wordings[(drawIndex(seed, `${scenario.id}/${salt}`, wordings.length) + attempt - 1) % wordings.length];
  };
  const { parts, paraphrases, ...conversation } = scenario.conversation;
  const last = parts.map((p) => p.author).lastIndexOf('user');
  return {
    ...scenario,
    conversation: {
      ...conversation,
      id: tryConversationId(scenario.conversation.id, attempt),
      parts: parts.map((part, index) =>
        index === last ? { ...part, body: reworded(part.body, paraphrases, 'first')! } : part,
      ),
    },
    turns: scenario.turns.map(({ paraphrases: turnParaphrases, ...turn }, index) => ({
      ...turn,
      user: reworded(turn.user, turnParaphrases, `turn ${index}`),
    })),
  };
}

/** A number in [0, n) drawn from the run's seed and a name: the same seed and name always draw the same. */
function drawIndex(seed: number, name: string, n: number): number {
  let hash = seed >>> 0;
  for (const char of name) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  return Math.floor(seededRandom(hash)() * n);
}

/**
 * What a scenario seeds into the sandbox's talent store and Intercom, keyed as they key it: users by email, jobs by
 * id, contacts by id; and whether it seeds the help center or the team's history, which every try searches.
 */
function seededKeys(scenario: Scenario): { keys: Set<string>; searched: boolean } {
  const keys = new Set<string>();
  for (const user of scenario.talent.users) keys.add(`user:${user.email.toLowerCase()}`);
  for (const job of scenario.talent.jobs) keys.add(`job:${job.id}`);
  keys.add(`contact:${scenario.conversation.contact.id}`);
  const searched = [scenario.docs, scenario.resolved_conversations, scenario.closed_by_team].some((l) => l.length > 0);
  return { keys, searched };
}

/**
 * Two tries that must not run at once: they seed a key in common (each try takes back what it seeded when it ends,
 * which would pull it from under the other), or one seeds what every try searches (docs, resolved conversations).
 */
export function seedConflict(a: Scenario, b: Scenario): boolean {
  const [mine, theirs] = [seededKeys(a), seededKeys(b)];
  return mine.searched || theirs.searched || [...mine.keys].some((key) => theirs.keys.has(key));
}

/**
 * Why a scenario cannot be one of an evaluation's: planned faults, signals and a lead's decision hold or fail the
 * sandbox's shared services at a point of one run, which tries running side by side would also meet.
 */
export function unfitForEvaluation(scenario: Scenario): string | null {
  const reasons = [
    scenario.faults && 'planned faults',
    scenario.signals.length > 0 && 'signals',
    scenario.decision && "a lead's decision",
  ].filter(Boolean);
  if (reasons.length) return `${reasons.join(', ')} (an evaluation draws its faults at random)`;
  if (scenario.resolved_conversations.length) {
    return "resolved_conversations (an evaluation keeps the team's history in Intercom and the index: list them as closed_by_team)";
  }
  const vague = [scenario.expect, ...scenario.turns.map((t) => t.expect)].flatMap((expect, index) => {
    const where = index === 0 ? 'expect' : `turns[${index - 1}].expect`;
    return unpinned(expect).map((what) => `${where} ${what}`);
  });
  return vague.length ? `expectations that do not pin the outcome: ${vague.join('; ')}` : null;
}

/**
 * What an evaluation's expectation leaves open: every turn states Melvin Status and whether there is exactly one reply
 * or none, and a turn that replies names the facts its reply must carry, so no reply, or a reply about something
 * else, cannot pass.
 */
function unpinned(expect: Scenario['expect']): string[] {
  return [
    expect.melvin_status === undefined && 'states no melvin_status',
    expect.replied === undefined && 'states no "replied" (exactly one reply, or none)',
    expect.replied === true &&
      !expect.reply_includes?.length &&
      'replies without reply_includes (the facts it carries)',
  ].filter((what): what is string => typeof what === 'string');
}

/** Runs `task` on each item, at most `concurrency` at once and never two that conflict; resolves when all are done. */
export async function runPool<T>(
  items: T[],
  concurrency: number,
  conflict: (a: T, b: T) => boolean,
  task: (item: T) => Promise<void>,
): Promise<void> {
  const pending = [...items];
  const running = new Set<T>();
  await new Promise<void>((resolve, reject) => {
    const next = () => {
      if (pending.length === 0 && running.size === 0) return resolve();
      while (running.size < concurrency) {
        const index = pending.findIndex((item) => ![...running].some((other) => conflict(item, other)));
        if (index === -1) return;
        const [item] = pending.splice(index, 1) as [T];
        running.add(item);
        task(item).then(() => {
          running.delete(item);
          next();
        }, reject);
      }
    };
    next();
  });
}

/** What the first turn's plan read of the talent's tone; null when no plan read any (a run that never planned). */
function toneRead(state: AgentState | undefined): TryRecord['tone_read'] {
  const tone = state?.hops.find((h) => h.plan?.tone)?.plan?.tone;
  return tone ? { complains: complains(tone), urgency: tone.urgency } : null;
}

/** The conversations the turn's retrieval from the index ranked, best first, each once (see TryRecord). */
function examplesRead(state: AgentState | undefined): string[] | null {
  const found = state?.metadata.style_examples;
  if (found?.tool !== INDEX_SOURCE || !found.retrieved) return null;
  return [...new Set(found.retrieved.map((r) => r.conversation_id))];
}

const noUsage = (): LlmUsage => ({ calls: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });

function addUsage(total: LlmUsage, usage: LlmUsage): void {
  total.calls += usage.calls;
  total.prompt_tokens += usage.prompt_tokens;
  total.completion_tokens += usage.completion_tokens;
  total.total_tokens += usage.total_tokens;
}

function sumUsage(states: AgentState[]): LlmUsage {
  const total = noUsage();
  for (const s of states) if (s.metadata.usage) addUsage(total, s.metadata.usage);
  return total;
}

function sumTierUsage(states: AgentState[]): Partial<Record<ModelTier, TierUsage>> {
  const total: Partial<Record<ModelTier, TierUsage>> = {};
  for (const s of states) {
    for (const [tier, usage] of Object.entries(s.metadata.usage_by_tier ?? {}) as [ModelTier, TierUsage][]) {
      const sum = (total[tier] ??= { ...noUsage(), model: usage.model, duration_ms: 0 });
      sum.model = usage.model;
      addUsage(sum, usage);
      sum.duration_ms += usage.duration_ms;
    }
  }
  return total;
}

export interface TriesOptions {
  controlUrl: string;
  client: Client;
  k: number;
  concurrency: number;
  timeoutMs?: number;
  /** Asked about each try of a scenario with a rubric; absent, rubrics are not checked. */
  judge?: Judge;
  /** Told about each try as it ends, e.g. to print progress. */
  onTry?: (record: TryRecord, done: number, total: number) => void;
  /** The run's seed: which wording each try of a scenario starts from (see forTry). */
  seed?: number;
  /**
   * How the sandbox's validation service answers each try: checking its drafts, passing them all, or `both`, one and
   * the other in turn (odd tries checking, even ones lenient). Default: checking.
   */
  validation?: ValidationSetting | 'both';
  /** Whether the sandbox model plants wrong outputs: each try's plants are then read and judged. */
  adversary?: boolean;
}

/** The validation setting of a try: the run's, or for `both` checking on odd tries and lenient on even ones. */
export function validationOf(setting: TriesOptions['validation'], attempt: number): ValidationSetting {
  if (setting === 'both') return attempt % 2 === 1 ? 'checking' : 'lenient';
  return setting ?? 'checking';
}

async function control(controlUrl: string, method: string, route: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${controlUrl}${route}`, {
    method,
    ...(body !== undefined && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`the sandbox answered ${method} ${route} with ${response.status}`);
  return response.json();
}

/** What the adversarial model planted for the try's talent since the try began, each judged against its replies. */
async function plantsOf(
  controlUrl: string,
  scenario: Scenario,
  since: string,
  turns: TurnOutcome[],
): Promise<PlantOutcome[]> {
  const { plants } = PlantList.parse(await control(controlUrl, 'GET', `/model/plants?since=${since}`));
  const talent = scenario.conversation.contact;
  return plants.filter((plant) => plantedIn(plant, talent, turns)).map((plant) => plantOutcome(plant, turns));
}

/** Takes back what a try seeded into the sandbox's talent store; a try that never seeded has nothing to take back. */
async function withdraw(controlUrl: string, conversationId: string): Promise<void> {
  const response = await fetch(`${controlUrl}/scenarios/${conversationId}`, { method: 'DELETE' });
  if (!response.ok && response.status !== 404) {
    throw new Error(`the sandbox could not take back conversation ${conversationId}'s seed: ${response.status}`);
  }
}

/** Every scenario k times; the records in scenario order, then try order. */
export async function runTries(scenarios: LoadedScenario[], options: TriesOptions): Promise<TryRecord[]> {
  const runner = new ScenarioRunner({
    controlUrl: options.controlUrl,
    client: options.client,
    timeoutMs: options.timeoutMs,
  });
  const helpCenter = loadHelpCenter();
  // Round by round (every scenario's first try, then every second), so slow scenarios do not bunch up at the end.
  const tries = Array.from({ length: options.k }, (_, round) =>
    scenarios.map((loaded) => ({ loaded, attempt: round + 1 })),
  ).flat();
  const records: TryRecord[] = [];
  await runPool(
    tries,
    options.concurrency,
    (a, b) => seedConflict(a.loaded.scenario, b.loaded.scenario),
    async ({ loaded, attempt }) => {
      const scenario = forTry(loaded.scenario, attempt, options.seed);
      const validation = validationOf(options.validation, attempt);
      await control(options.controlUrl, 'POST', '/validation/mode', {
        mode: validation,
        conversation_id: scenario.conversation.id,
      });
      const since = new Date().toISOString();
      const { result, states } = await runner.runScenario(scenario, loaded.file);
      const first = states[0]?.metadata.model ?? null;
      const record: TryRecord = {
        scenario: loaded.scenario.id,
        file: loaded.file,
        try: attempt,
        conversation_id: scenario.conversation.id,
        passed: result.passed,
        error: result.error,
        duration_ms: result.duration_ms,
        usage: sumUsage(states),
        usage_by_tier: sumTierUsage(states),
        model: first && { name: first.name, stand_in: first.stand_in, response_format: first.response_format },
        expectations: result.expectations,
        turns: result.turns,
        reply_checks: checkReplies(scenario, result.turns, helpCenter),
        validation,
        ...(options.adversary && { plants: await plantsOf(options.controlUrl, scenario, since, result.turns) }),
        judgement: null,
        ...(scenario.labels && {
          labels: scenario.labels,
          tone_read: toneRead(states[0]),
          stage_read: states[0]?.metadata.stage?.stage ?? null,
          action_read: states[0] ? (suggestedStep(states[0])?.action ?? null) : null,
          examples_read: examplesRead(states[0]),
        }),
      };
      if (options.judge && scenario.rubric && result.error === null) {
        await judgeTry(record, scenario, options.judge, options.controlUrl);
      }
      // Nothing a try seeded is seen by the next: its users, jobs, docs and resolved conversations go with it.
      await withdraw(options.controlUrl, scenario.conversation.id);
      records.push(record);
      options.onTry?.(record, records.length, tries.length);
    },
  );
  const order = new Map(scenarios.map((s, index) => [s.scenario.id, index]));
  return records.sort((a, b) => order.get(a.scenario)! - order.get(b.scenario)! || a.try - b.try);
}

/** What the sandbox's control API shows of a conversation, as far as a transcript needs it. */
const InspectedConversation = z.looseObject({
  replies: z.array(z.string()),
  parts: z.array(z.looseObject({ part_type: z.string(), author_type: z.string(), text: z.string() })),
});

/**
 * The conversation as the user saw it, oldest first, from the sandbox's view of it: the first message (Intercom keeps it
 * apart from the parts), then every comment. Melvin's are the ones the sandbox counts as its replies.
 */
async function transcriptOf(scenario: Scenario, controlUrl: string): Promise<JudgeRequest['transcript']> {
  const response = await fetch(`${controlUrl}/conversations/${scenario.conversation.id}`);
  if (!response.ok) throw new Error(`the sandbox has no conversation ${scenario.conversation.id}`);
  const conversation = InspectedConversation.parse(await response.json());
  const replies = new Set(conversation.replies);
  const first = scenario.conversation.parts[0]!;
  return [
    { from: first.author === 'user' || first.author === 'lead' ? 'user' : 'team', text: first.body },
    ...conversation.parts
      .filter((p) => p.part_type !== 'note')
      .map((p) => ({
        from: replies.has(p.text)
          ? ('melvin' as const)
          : p.author_type === 'user'
            ? ('user' as const)
            : ('team' as const),
        text: p.text,
      })),
  ];
}

/** Asks the judge about the conversation as the user saw it; its verdict is one more expectation of the try. */
async function judgeTry(record: TryRecord, scenario: Scenario, judge: Judge, controlUrl: string): Promise<void> {
  const rubric = scenario.rubric!;
  let expectation: ExpectationResult;
  try {
    const judgement = await judge.judge({ rubric, transcript: await transcriptOf(scenario, controlUrl) });
    record.judgement = judgement;
    expectation = { expectation: 'judge', passed: judgement.passed, expected: rubric, actual: judgement.reasoning };
  } catch (err) {
    // A judge that cannot answer is a failed check of this try, not a failed evaluation.
    const reason = errorMessage(err);
    expectation = { expectation: 'judge', passed: false, expected: rubric, actual: `the judge failed: ${reason}` };
  }
  record.expectations.push(expectation);
  record.passed = record.expectations.every((e) => e.passed);
}
