// Whole turns on a real Temporal dev server through each kind of model endpoint the sandbox model can be: JSON mode
// only, plain text, and OpenAI strict mode refusing a schema Melvin should never send.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import {
  createLlmActivities,
  createOpenAiClient,
  oneModelForAllTiers,
  type LlmOptions,
} from '../../src/activities/llm';
import { DraftOutput } from '../../src/contract/schemas';
import type { AgentState } from '../../src/contract/state';
import { SANDBOX_MODEL_NAME, type ModelEndpoint } from '../../sandbox/model/server';
import { OPENAI_KEY, type Sandbox, withoutRunMaps } from '../helpers/sandbox';
import { ANA, ANA_TALENT, runTurnOnWorker, useTestbed } from '../helpers/turns';

let env: TestWorkflowEnvironment;
let sandbox: Sandbox;
let workflowBundle: WorkflowBundleWithSourceMap;
let nextConversation = 800;

useTestbed((testbed) => ({ env, sandbox, workflowBundle } = testbed));

interface Turn {
  state: AgentState;
  replies: string[];
  notes: string[];
  status: unknown;
}

/**
 * Runs one turn of a new conversation asking when Ana gets paid, answered by the sandbox model's own reasoning as the
 * given kind of endpoint. A fresh worker gets fresh LLM activities, so it learns the endpoint's formats from scratch.
 */
async function runTurn(endpoint: ModelEndpoint, llm: LlmOptions = {}): Promise<Turn> {
  const conversationId = String(nextConversation++);
  sandbox.seed({
    conversation: {
      id: conversationId,
      contact: ANA,
      parts: [{ author: 'user', type: 'comment', body: 'When will I get paid?' }],
    },
    talent: ANA_TALENT,
  });
  sandbox.model.configure(endpoint);
  const openai = createOpenAiClient({ apiKey: OPENAI_KEY, baseURL: sandbox.urls.model });
  const { state } = await runTurnOnWorker({ env, workflowBundle }, conversationId, {
    ...sandbox.activities,
    ...createLlmActivities(oneModelForAllTiers({ openai, model: SANDBOX_MODEL_NAME }), llm),
  });
  return {
    state,
    replies: sandbox.intercom.replies(conversationId),
    notes: withoutRunMaps(sandbox.intercom.notes(conversationId)),
    status: sandbox.intercom.melvinStatus(conversationId),
  };
}

const formatsSent = () =>
  sandbox.model.requests.map((r) => (r.response_format === null ? 'none' : r.response_format.type));

test('a turn completes through a JSON-mode-only endpoint, recording json_object and why', async () => {
  const turn = await runTurn({ endpoint: 'json_object', textStyle: 'fenced' });

  expect(turn.status).toBe('success');
  expect(turn.replies).toHaveLength(1);
  expect(turn.replies[0]).toContain('November 27');
  expect(turn.state.metadata.model).toEqual({
    name: 'melvin-sandbox-model',
    stand_in: true,
    response_format: 'json_object',
    format_fallback: 'json_schema refused (400 This response_format type is unavailable now)',
  });
  // Refused once, at the first plan request; every later request starts in JSON mode.
  expect(formatsSent()).toEqual(['json_schema', 'json_object', 'json_object', 'json_object']);
});

test.each(['fenced', 'prose'] as const)(
  'a turn completes through a plain-text endpoint answering in %s text, recording none and why',
  async (textStyle) => {
    const turn = await runTurn({ endpoint: 'text', textStyle });

    expect(turn.status).toBe('success');
    expect(turn.replies).toHaveLength(1);
    expect(turn.replies[0]).toContain('November 27');
    expect(turn.state.metadata.model).toMatchObject({ response_format: 'none' });
    expect(turn.state.metadata.model?.format_fallback).toMatch(
      /^json_schema refused \(400 .*'json_schema' is not supported.*\); json_object refused \(400 .*'json_object' is not supported.*\)$/,
    );
    expect(formatsSent()).toEqual(['json_schema', 'json_object', 'none', 'none', 'none']);
  },
);

test('a draft schema with a default fails the turn as the real API would: draft escalation, RESPONSE_FAILED, no retry', async () => {
  const draftWithDefault = DraftOutput.extend({
    response_type: z.enum(['REPLY', 'ROUTE_TO_TEAM']).default('REPLY'),
  });
  const turn = await runTurn({ endpoint: 'strict', textStyle: 'fenced' }, { schemas: { draft: draftWithDefault } });

  expect(turn.replies).toEqual([]);
  expect(turn.status).toBe('RESPONSE_FAILED');
  expect(turn.state.escalate).toMatchObject({ escalation_source: 'draft', escalation_kind: 'draft_error' });
  expect(turn.state.escalate?.escalation_reason).toContain(
    "Invalid schema for response_format 'draft': In context=('properties', 'response_type'), 'default' is not permitted.",
  );
  expect(turn.notes).toEqual([
    expect.stringMatching(/^🚨 Escalation: Draft generation error: .*'default' is not permitted/),
  ]);
  // One draft request: no Temporal retry, and no weaker format tried for a schema the endpoint refused.
  const drafts = sandbox.model.requests.filter((r) => r.step === 'draft');
  expect(drafts).toHaveLength(1);
  expect(drafts[0]!.refused?.error.code).toBe('invalid_json_schema');
  // Plan and coverage used Melvin's own schemas, which strict mode took.
  expect(turn.state.metadata.model).toMatchObject({ response_format: 'json_schema', format_fallback: null });
});
