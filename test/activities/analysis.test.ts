// The report's analysis agent against the sandbox model over real HTTP: it answers from the tools' results, shows the
// figures it used, says so when the tools cannot answer, and turns a model's bad tool call into an error it can read.
import OpenAI from 'openai';
import { SANDBOX_MODEL_NAME, SandboxModel } from '../../sandbox/model/server';
import {
  ANALYSIS_TOOLS,
  AnalysisFailed,
  AnalysisRequest,
  askAnalysis,
  type AnalysisData,
} from '../../src/reports/analysis';
import { reportFigures, windowTurns, type RunRecord } from '../../src/reports/figures';
import { checkTools } from '../../sandbox/model/analyst';

const API_KEY = 'sk-analysis-test';
let model: SandboxModel;
let openai: OpenAI;

beforeAll(async () => {
  model = new SandboxModel({ apiKey: API_KEY });
  const url = await model.start(0);
  openai = new OpenAI({ baseURL: url, apiKey: API_KEY, maxRetries: 0 });
});
afterAll(() => model.stop());
beforeEach(() => model.clear());

const SINCE = new Date('2026-11-20T00:00:00.000Z');
const UNTIL = new Date('2026-11-23T00:00:00.000Z');
let n = 0;
function run(summary: Record<string, unknown>): RunRecord {
  n += 1;
  const endedAt = `2026-11-22T10:${String(n).padStart(2, '0')}:00.000Z`;
  return {
    conversationId: String(2000 + n),
    runId: `run-${n}`,
    startTime: new Date(Date.parse(endedAt) - 5000),
    memo: {
      status: 'success',
      replied: true,
      hops: 1,
      turn_ms: 1000,
      ended_at: endedAt,
      intent_names: ['payment status'],
      path: ['initialize', 'plan', 'gather', 'coverage', 'draft', 'validate', 'response', 'finalize'],
      ...summary,
    },
  };
}
const hopsExhausted = {
  status: 'ROUTE_TO_TEAM',
  replied: false,
  escalation_source: 'coverage',
  escalation_kind: 'hops_exhausted',
  escalation_reason: 'Exceeded maximum hops (2). Unable to gather sufficient data.',
  intent_names: ['form 8821 copy'],
  uncovered_intent_names: ['form 8821 copy'],
};
const runs = [
  run({}),
  run({}),
  run(hopsExhausted),
  run(hopsExhausted),
  run({ ...hopsExhausted, escalation_kind: 'operator', escalation_source: 'operator' }),
];
const data: AnalysisData = {
  report: reportFigures(runs, { since: SINCE, until: UNTIL, label: '3d' }),
  turns: windowTurns(runs, SINCE),
};

test('"what is causing escalations?" is answered from escalation_causes, with the figures it used', async () => {
  const answer = await askAnalysis({
    openai,
    model: SANDBOX_MODEL_NAME,
    question: 'What is causing escalations?',
    data,
  });
  expect(answer.figures.map((f) => [f.tool, f.arguments])).toEqual([['escalation_causes', { by: 'kind' }]]);
  const result = answer.figures[0]!.result as { escalated_turns: number; causes: { cause: string; turns: number }[] };
  expect(result.escalated_turns).toBe(3);
  expect(result.causes.map((c) => [c.cause, c.turns])).toEqual([
    ['hops_exhausted', 2],
    ['operator', 1],
  ]);
  // The answer quotes the tool's figures, so it cannot have come from anywhere else.
  expect(answer.answer).toContain('hops_exhausted (turns: 2)');
  expect(answer.rounds).toBe(2);
  // Over the wire: the tools went out strict, the tool result went back as a `tool` message answering the call.
  const [first, second] = model.requests;
  expect(first!.tools).toEqual(ANALYSIS_TOOLS);
  const toolMessage = second!.messages.find((m) => m.role === 'tool') as unknown as {
    tool_call_id: string;
    content: string;
  };
  expect(JSON.parse(toolMessage.content)).toEqual(answer.figures[0]!.result);
});

test('a question about the help center reads uncovered_questions; one by intent reads the intents', async () => {
  const uncovered = await askAnalysis({
    openai,
    model: SANDBOX_MODEL_NAME,
    question: 'Which questions does the help center not cover?',
    data,
  });
  expect(uncovered.figures.map((f) => f.tool)).toEqual(['uncovered_questions']);
  expect(uncovered.answer).toContain('form 8821 copy');
  const intents = await askAnalysis({ openai, model: SANDBOX_MODEL_NAME, question: 'Which intents fail most?', data });
  expect(intents.figures.map((f) => f.tool)).toEqual(['intent_outcomes']);
  expect(intents.answer).toContain('payment status');
});

test('a question the tools cannot answer says so, and shows no figures', async () => {
  const answer = await askAnalysis({
    openai,
    model: SANDBOX_MODEL_NAME,
    question: 'What will the weather be tomorrow?',
    data,
  });
  expect(answer.figures).toEqual([]);
  expect(answer.answer).toMatch(/cannot answer/);
  expect(answer.rounds).toBe(1);
});

/** A model whose first answer is the given tool call, and which then answers as the sandbox model does. */
function firstCalling(name: string, args: string): OpenAI {
  let calls = 0;
  return {
    chat: {
      completions: {
        create: async (body: Parameters<OpenAI['chat']['completions']['create']>[0]) => {
          calls += 1;
          if (calls > 1) return openai.chat.completions.create(body);
          const call = { id: 'call_1', type: 'function', function: { name, arguments: args } };
          return { choices: [{ message: { role: 'assistant', content: null, refusal: null, tool_calls: [call] } }] };
        },
      },
    },
  } as unknown as OpenAI;
}

test('the model’s bad tool arguments come back to it as an error naming what was wrong, not as a crash', async () => {
  // A model that calls escalation_causes with a dimension that does not exist, then answers from the error.
  const answer = await askAnalysis({
    openai: firstCalling('escalation_causes', '{"by":"weather"}'),
    model: SANDBOX_MODEL_NAME,
    question: 'What causes escalations?',
    data,
  });
  expect(answer.figures[0]!.result).toEqual({
    error: expect.stringMatching(/^invalid arguments: by: Invalid option/),
  });
  expect(answer.answer).toContain('escalation_causes could not answer: invalid arguments');
});

test('a tool name that is only an inherited property of an object is no tool: the model reads an error', async () => {
  // `constructor`, `toString`, `__proto__`… are `in` every object; each must be answered like any unknown name.
  const inherited = Object.getOwnPropertyNames(Object.prototype);
  expect(inherited).toEqual(expect.arrayContaining(['constructor', 'toString', '__proto__', 'hasOwnProperty']));
  for (const name of [...inherited, 'no_such_tool']) {
    const answer = await askAnalysis({
      openai: firstCalling(name, '{}'),
      model: SANDBOX_MODEL_NAME,
      question: 'What causes escalations?',
      data,
    });
    expect(answer.figures[0]).toEqual({
      tool: name,
      arguments: {},
      result: { error: expect.stringMatching(new RegExp(`^no tool "${name.replace(/\W/g, '\\$&')}"; the tools are `)) },
    });
  }
});

test('an endpoint that fails is an error of the analysis, with the endpoint’s status', async () => {
  model.faults.set({ analyze: [{ status: 500 }] });
  await expect(
    askAnalysis({ openai, model: SANDBOX_MODEL_NAME, question: 'What causes escalations?', data }),
  ).rejects.toThrow(/500/);
  const looping = {
    chat: {
      completions: {
        create: async () => ({
          choices: [
            {
              message: {
                role: 'assistant',
                content: null,
                tool_calls: [{ id: 'c', type: 'function', function: { name: 'overview', arguments: '{}' } }],
              },
            },
          ],
        }),
      },
    },
  } as unknown as OpenAI;
  await expect(
    askAnalysis({ openai: looping, model: 'm', question: 'What causes escalations?', data, maxRounds: 2 }),
  ).rejects.toThrow(AnalysisFailed);
});

test('the question is checked: missing, too short or too long is refused with where and why', () => {
  const issues = (body: unknown) => {
    const parsed = AnalysisRequest.safeParse(body);
    return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };
  expect(issues({})).toEqual(['question: a question is required, e.g. "what is causing escalations?"']);
  expect(issues({ question: ' a ' })).toEqual(['question: the question is too short']);
  expect(issues({ question: 'x'.repeat(501) })).toEqual(['question: the question must be at most 500 characters']);
  expect(issues({ question: 'why?', since: '7w' })[0]).toMatch(/^since: /);
  expect(issues({ question: 'why?', extra: 1 })[0]).toMatch(/Unrecognized key/);
});

test('the agent’s tools pass OpenAI’s strict function-schema rules', () => {
  expect(checkTools(ANALYSIS_TOOLS)).toEqual({ tools: expect.any(Array) });
});
