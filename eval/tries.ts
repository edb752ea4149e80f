// Runs every scenario of an evaluation k times against a running stack: each try its own conversation, tries of
// scenarios that seed the same talent differently never at once, each try's tokens and time, and the judge's verdict.
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { ScenarioRunner, type ExpectationResult } from '../sandbox/scenario-runner';
import type { Scenario } from '../sandbox/scenario';
import type { JudgeRequest } from '../sandbox/model/judge';
import type { AgentState, LlmUsage } from '../src/state';
import type { Judge, Judgement } from './judge';
import { errorMessage } from '../src/error-message';

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
  /** The model that answered, as the runs recorded it (the first turn's). */
  model: { name: string; stand_in: boolean; response_format: string } | null;
  expectations: ExpectationResult[];
  judgement: Judgement | null;
}

/** Tries get conversation ids of their own: the scenario's id times 100 plus the try's number (tries ≤ 99). */
export const MAX_TRIES = 99;

export function tryConversationId(conversationId: string, attempt: number): string {
  const id = (BigInt(conversationId) * 100n + BigInt(attempt)).toString();
  if (id.length > 19) throw new Error(`conversation id ${conversationId} is too long to number its tries`);
  return id;
}

/** The scenario as one try runs it: the same in every way but its conversation's id. */
export function forTry(scenario: Scenario, attempt: number): Scenario {
  return {
    ...scenario,
    conversation: { ...scenario.conversation, id: tryConversationId(scenario.conversation.id, attempt) },
  };
}

/**
 * What a scenario seeds into the sandbox's shared stores, keyed as the stores key it: users by email, jobs by id,
 * contacts by id, help-center docs by title, resolved conversations by question. Two scenarios that seed one key
 * differently must not run at once.
 */
function seededKeys(scenario: Scenario): Map<string, string> {
  const keys = new Map<string, string>();
  for (const user of scenario.talent.users) keys.set(`user:${user.email.toLowerCase()}`, JSON.stringify(user));
  for (const job of scenario.talent.jobs) keys.set(`job:${job.id}`, JSON.stringify(job));
  for (const doc of scenario.docs) keys.set(`doc:${doc.title}`, doc.body);
  for (const past of scenario.resolved_conversations) keys.set(`resolved:${past.question}`, past.answer);
  const { contact } = scenario.conversation;
  keys.set(`contact:${contact.id}`, JSON.stringify(contact));
  return keys;
}

export function seedConflict(a: Scenario, b: Scenario): boolean {
  const other = seededKeys(b);
  return [...seededKeys(a)].some(([key, value]) => other.has(key) && other.get(key) !== value);
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
  return reasons.length ? `${reasons.join(', ')} (an evaluation draws its faults at random)` : null;
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

function sumUsage(states: AgentState[]): LlmUsage {
  const total: LlmUsage = { calls: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  for (const usage of states.map((s) => s.metadata.usage)) {
    if (!usage) continue;
    total.calls += usage.calls;
    total.prompt_tokens += usage.prompt_tokens;
    total.completion_tokens += usage.completion_tokens;
    total.total_tokens += usage.total_tokens;
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
}

/** Every scenario k times; the records in scenario order, then try order. */
export async function runTries(scenarios: LoadedScenario[], options: TriesOptions): Promise<TryRecord[]> {
  const runner = new ScenarioRunner({
    controlUrl: options.controlUrl,
    client: options.client,
    timeoutMs: options.timeoutMs,
  });
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
      const scenario = forTry(loaded.scenario, attempt);
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
        model: first && { name: first.name, stand_in: first.stand_in, response_format: first.response_format },
        expectations: result.expectations,
        judgement: null,
      };
      if (options.judge && scenario.rubric && result.error === null) {
        await judgeTry(record, scenario, options.judge, options.controlUrl);
      }
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
