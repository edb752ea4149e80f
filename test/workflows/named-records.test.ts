// What the talent names in words, resolved in tiers on a real Temporal dev server: exact and fuzzy in the workflow,
// then the embeddings endpoint and the plan tier's model, each a failure that costs only its own tier.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { NamedRecord } from '../../src/contract/state';
import { Scenario } from '../../sandbox/scenario';
import { keepHistory } from '../helpers/histories';
import type { Sandbox } from '../helpers/sandbox';
import { runTurnOnWorker, useTestbed } from '../helpers/turns';

let env: TestWorkflowEnvironment;
let sandbox: Sandbox;
let workflowBundle: WorkflowBundleWithSourceMap;
let nextConversation = 870;

useTestbed((testbed) => ({ env, sandbox, workflowBundle } = testbed));

/** Priya's three applications (two Barista jobs, in Portland and Austin, and a Line Cook job in Austin). */
const PRIYA = Scenario.parse(
  JSON.parse(
    readFileSync(path.join(__dirname, '../../scenarios/melvin/application-named-with-typo-and-city.json'), 'utf8'),
  ),
);

async function ask(question: string, history?: string) {
  const conversationId = String(nextConversation++);
  sandbox.seed({
    conversation: {
      ...PRIYA.conversation,
      id: conversationId,
      parts: [{ author: 'user', type: 'comment', body: question }],
    },
    talent: PRIYA.talent,
  });
  const { state, handle } = await runTurnOnWorker({ env, workflowBundle }, conversationId, sandbox.activities);
  if (history) await keepHistory(handle, history);
  const named = state.hops.flatMap((h) => h.named_records ?? []).at(-1) as NamedRecord;
  return { state, named, reply: sandbox.intercom.replies(conversationId).join('\n') };
}

const steps = () => sandbox.model.requests.map((r) => r.step);

test('a typo and a city are enough for the fuzzy tier: no embeddings and no model are asked', async () => {
  const { named, reply } = await ask('Any update on the barrista job in Austin TX?');
  expect(named).toMatchObject({ mention: 'barrista job in Austin TX', id: 'job-92', tier: 'fuzzy', candidates: [] });
  expect(reply).toContain('December 2');
  expect(reply).not.toContain('November 30');
  expect(sandbox.model.embeddingRequests).toHaveLength(0);
  expect(steps()).not.toContain('resolve');
});

test('words that name no title: the embeddings narrow the jobs to one, and the model confirms it', async () => {
  const { state, named, reply } = await ask('Any news about the coffee shop job in Austin?', 'named-record-by-meaning');
  expect(named).toMatchObject({ id: 'job-92', tier: 'llm', label: 'Barista, Austin, TX, open' });
  expect(reply).toContain('December 2');
  expect(sandbox.model.embeddingRequests).toHaveLength(1);
  // The model was asked about the one candidate the embeddings left, on the plan tier, with what the data holds of it.
  const resolve = sandbox.model.requests.find((r) => r.step === 'resolve')!;
  expect((resolve.context.candidates as { id: string }[]).map((c) => c.id)).toEqual(['job-92']);
  expect(state.metadata.usage_by_tier?.plan?.calls).toBe(3);
});

test('a similar job is not the job: the model says none, and the reply says it is missing', async () => {
  const { named, reply } = await ask('Any news about the sous chef job in Austin?');
  expect(named).toMatchObject({ id: null, tier: null, candidates: [{ id: 'job-93' }] });
  expect(named.llm_reasoning).toContain('names none');
  // Not answered with the Line Cook application as if it were the one asked about.
  expect(reply).toContain("I don't see an application for the Sous Chef job");
});

test('the embeddings endpoint down costs only its tier: the model picks among every job instead', async () => {
  sandbox.model.faults.set({ embeddings: Array(4).fill({ status: 503 }) });
  const { named, reply } = await ask('Any news about the coffee shop job in Austin?');
  expect(named.semantic_error).toContain('503');
  expect(named).toMatchObject({ id: 'job-92', tier: 'llm' });
  expect(reply).toContain('December 2');
});
