// Tone on a real Temporal dev server: Plan reads how the talent feels, Draft acknowledges a complaint, and strong anger
// (when a team configures it) hands the conversation to a person with its own escalation kind and Melvin Status.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DEFAULT_KIND_HANDOVER_MESSAGES } from '../../src/contract/shared';
import type { Sandbox } from '../helpers/sandbox';
import { ANA, ANA_TALENT, runTurnOnWorker, useTestbed } from '../helpers/turns';

let env: TestWorkflowEnvironment;
let sandbox: Sandbox;
let workflowBundle: WorkflowBundleWithSourceMap;
let nextConversation = 890;

useTestbed((testbed) => ({ env, sandbox, workflowBundle } = testbed));

async function ask(body: string, options = {}) {
  const conversationId = String(nextConversation++);
  sandbox.seed({
    conversation: { id: conversationId, contact: ANA, parts: [{ author: 'user', type: 'comment', body }] },
    talent: ANA_TALENT,
  });
  const { state } = await runTurnOnWorker({ env, workflowBundle }, conversationId, sandbox.activities, undefined, {
    handoverMessages: DEFAULT_KIND_HANDOVER_MESSAGES,
    ...options,
  });
  return {
    state,
    replies: sandbox.intercom.replies(conversationId),
    notes: sandbox.intercom.notes(conversationId),
    status: sandbox.intercom.melvinStatus(conversationId),
  };
}

const ANGRY = 'This is ridiculous. When will I get paid??';

test('by default an angry talent whose question the data answers gets the answer, with the complaint acknowledged', async () => {
  const { state, replies, status } = await ask(ANGRY);
  expect(state.hops[0]!.plan!.tone!.emotions).toContainEqual({
    emotion: 'angry',
    intensity: 'strong',
    phrase: 'ridiculous',
  });
  expect(status).toBe('success');
  expect(replies).toHaveLength(1);
  expect(replies[0]).toContain('sorry');
  // The draft saw the tone.
  const draft = sandbox.model.requests.find((r) => r.step === 'draft')!;
  expect(draft.context.tone).toMatchObject({ emotions: [{ emotion: 'angry' }] });
});

test('with strong-tone hand-over configured, a person answers: FRUSTRATED, from Plan, the words in the note', async () => {
  const { state, replies, notes, status } = await ask(ANGRY, { toneHandover: { strong: true, complaints: 3 } });
  expect(status).toBe('FRUSTRATED');
  expect(state.escalate).toMatchObject({ escalation_source: 'plan' });
  expect(state.metadata.path).toEqual(['initialize', 'plan', 'escalate', 'finalize', 'end']);
  expect(notes.join('\n')).toContain('The talent is frustrated (strongly angry: “ridiculous”)');
  expect(replies).toEqual([DEFAULT_KIND_HANDOVER_MESSAGES.talent_frustrated]);
});
