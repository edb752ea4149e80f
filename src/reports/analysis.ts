// The analysis agent for support leads: answers a question in words from the runs' records with tools (an OpenAI
// chat-completions tool-calling loop), never from memory, and returns the tool results it used beside its answer.
import type OpenAI from 'openai';
import type {
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { z } from 'zod';
import { issuesOf } from '../contract/schemas';
import { Since, type Report } from './figures';
import { CAUSE_DIMENSIONS, causeOf, type RunExample, type TemporalUi, type WindowTurn, runUrl } from './patterns';

/** What a lead asks: the question, and the window of runs it is about. */
export const AnalysisRequest = z.strictObject({
  question: z
    .string({ error: 'a question is required, e.g. "what is causing escalations?"' })
    .trim()
    .min(3, 'the question is too short')
    .max(500, 'the question must be at most 500 characters'),
  since: Since.prefault('7d'),
});
export type AnalysisRequest = z.output<typeof AnalysisRequest>;

/** One tool call the agent made: what it asked and what it got, shown to the lead as the figures behind the answer. */
export interface AnalysisFigure {
  tool: string;
  arguments: unknown;
  result: unknown;
}

export interface AnalysisAnswer {
  question: string;
  window: Report['window'];
  answer: string;
  /** Every tool result the answer could draw on, in the order the agent asked for them. */
  figures: AnalysisFigure[];
  model: string;
  /** Model calls the loop made. */
  rounds: number;
}

/** The runs a question is answered from: the report's figures, and the window's turns for `runs`. */
export interface AnalysisData {
  report: Report;
  turns: WindowTurn[];
  ui?: TemporalUi;
}

export class AnalysisFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AnalysisFailed';
  }
}

/** Model calls one question may take: enough for two rounds of tools and the answer, not an endless loop. */
export const MAX_ROUNDS = 4;
const MAX_ROWS = 15;
const MAX_RUNS = 20;

/**
 * The prompt opens with `Task: analyze.`, as Melvin's own steps open with theirs, so a stand-in endpoint (the sandbox
 * model) can tell the request apart; a real model reads it as the task's name.
 */
export const ANALYSIS_SYSTEM_PROMPT = `Task: analyze.
You are the analyst of Melvin, a support agent that answers talents in Intercom and hands conversations to a human team.
A support lead asks about Melvin's runs in a window of time. Answer only from the results of the tools you call in this
conversation: never from memory, general knowledge or guesses. Call the tools you need first. Quote the figures you use
(counts and rates) and name the run ids of examples when they help. If the tools cannot answer the question, say so
plainly and say what they can answer. Be brief: a few sentences or a short list.`;

const nullable = (type: string, description: string, extra: Record<string, unknown> = {}) => ({
  type: [type, 'null'],
  description,
  ...extra,
});

/**
 * The tools, as strict function schemas (every property required, null for "any"): their arguments are checked again
 * with zod before a tool runs, since a model may send anything.
 */
const TOOLS = {
  overview: {
    description:
      'Headline figures of the window: turns, resolved and escalated turns with their rates, turn time, tokens.',
    parameters: z.strictObject({}),
    schema: { type: 'object', properties: {}, required: [], additionalProperties: false },
  },
  escalation_causes: {
    description:
      'Causes of escalation (turns handed to the team) along one dimension, most frequent first, with example runs: ' +
      'kind (why it escalated), source (the step that escalated), intent (the questions handed over), stage (where ' +
      'the talent is in their journey), tool (the first tool that failed, else the last called).',
    parameters: z.strictObject({ by: z.enum(CAUSE_DIMENSIONS) }),
    schema: {
      type: 'object',
      properties: { by: { type: 'string', enum: [...CAUSE_DIMENSIONS], description: 'The dimension to group by' } },
      required: ['by'],
      additionalProperties: false,
    },
  },
  intent_outcomes: {
    description:
      'Each intent talents asked about (short names such as "payment status"): turns, answered, handed over, not ' +
      'answered and the success rate, most asked first.',
    parameters: z.strictObject({}),
    schema: { type: 'object', properties: {}, required: [], additionalProperties: false },
  },
  uncovered_questions: {
    description:
      'Questions the data and help center do not cover: intents handed to the team because nothing answered them, ' +
      'ranked by how often, with example runs.',
    parameters: z.strictObject({ limit: z.number().int().min(1).max(50).nullable() }),
    schema: {
      type: 'object',
      properties: { limit: nullable('integer', 'At most this many questions; null for 15') },
      required: ['limit'],
      additionalProperties: false,
    },
  },
  runs: {
    description:
      'Runs of the window matching every filter given (null: any), newest first, with links: Melvin Status, ' +
      'escalation kind, an intent asked, the stage.',
    parameters: z.strictObject({
      status: z.string().max(100).nullable(),
      escalation_kind: z.string().max(100).nullable(),
      intent: z.string().max(100).nullable(),
      stage: z.string().max(100).nullable(),
      limit: z.number().int().min(1).max(MAX_RUNS).nullable(),
    }),
    schema: {
      type: 'object',
      properties: {
        status: nullable('string', 'A Melvin Status, e.g. ROUTE_TO_TEAM, partial, success'),
        escalation_kind: nullable('string', 'An escalation kind, e.g. hops_exhausted'),
        intent: nullable('string', 'An intent name, e.g. payment status'),
        stage: nullable('string', 'A stage, e.g. awaiting_payment'),
        limit: nullable('integer', `At most this many runs (up to ${MAX_RUNS}); null for 10`),
      },
      required: ['status', 'escalation_kind', 'intent', 'stage', 'limit'],
      additionalProperties: false,
    },
  },
} as const;
type ToolName = keyof typeof TOOLS;

export const ANALYSIS_TOOLS: ChatCompletionTool[] = Object.entries(TOOLS).map(([name, tool]) => ({
  type: 'function',
  function: { name, description: tool.description, parameters: tool.schema, strict: true },
}));

const trimExamples = (examples: RunExample[]) => examples.slice(0, 2);

/** Runs a tool over the data; what it returns goes to the model as JSON and to the lead as a figure. */
function runTool(name: ToolName, args: unknown, data: AnalysisData): unknown {
  const { report } = data;
  const p = report.patterns;
  switch (name) {
    case 'overview':
      return {
        window: report.window,
        turns: report.turns,
        resolved: report.resolved,
        resolution_rate: report.resolution_rate,
        escalated: report.escalated,
        escalation_rate: report.escalation_rate,
        turn_ms: report.turn_ms,
        tokens: report.tokens,
        runs_read: report.runs.listed,
        truncated: report.runs.truncated,
      };
    case 'escalation_causes': {
      const { by } = TOOLS.escalation_causes.parameters.parse(args);
      return {
        by,
        escalated_turns: p.escalated,
        turns: p.turns,
        causes: p.causes[by].slice(0, MAX_ROWS).map((c) => ({ ...c, examples: trimExamples(c.examples) })),
      };
    }
    case 'intent_outcomes':
      return {
        turns: p.turns,
        turns_with_intent_names: p.turns_with_intent_names,
        intents: p.intents.slice(0, MAX_ROWS),
      };
    case 'uncovered_questions': {
      const { limit } = TOOLS.uncovered_questions.parameters.parse(args);
      return {
        questions: p.uncovered.slice(0, limit ?? MAX_ROWS).map((u) => ({ ...u, examples: trimExamples(u.examples) })),
      };
    }
    case 'runs': {
      const filter = TOOLS.runs.parameters.parse(args);
      const matching = data.turns
        .filter((t) => filter.status === null || t.summary.status === filter.status)
        .filter((t) => filter.escalation_kind === null || t.summary.escalation_kind === filter.escalation_kind)
        .filter((t) => filter.intent === null || t.summary.intent_names.includes(filter.intent.trim().toLowerCase()))
        .filter((t) => filter.stage === null || t.summary.stage === filter.stage)
        .sort((a, b) => b.endedAt - a.endedAt);
      return {
        matching: matching.length,
        runs: matching.slice(0, filter.limit ?? 10).map((t) => ({
          conversation_id: t.conversationId,
          run_id: t.runId,
          ended_at: t.summary.ended_at,
          status: t.summary.status,
          escalation_kind: t.summary.escalation_kind,
          intents: t.summary.intent_names,
          open_intents: t.summary.open_intent_names,
          stage: t.summary.stage,
          tool: causeOf(t.summary, 'tool'),
          url: data.ui ? runUrl(data.ui, t.workflowId, t.runId) : null,
        })),
      };
    }
  }
}

/** A tool call's result, or an error the model can read and correct: a bad argument is the model's to fix. */
function callTool(call: ChatCompletionMessageToolCall, data: AnalysisData): AnalysisFigure {
  if (call.type !== 'function') return { tool: call.type, arguments: null, result: { error: 'not a function tool' } };
  const name = call.function.name;
  let args: unknown;
  try {
    args = JSON.parse(call.function.arguments || '{}');
  } catch {
    return { tool: name, arguments: call.function.arguments, result: { error: 'the arguments are not JSON' } };
  }
  // Own names only: `constructor` or `toString` is `in` every object, and is no tool.
  if (!Object.hasOwn(TOOLS, name)) {
    return {
      tool: name,
      arguments: args,
      result: { error: `no tool "${name}"; the tools are ${Object.keys(TOOLS).join(', ')}` },
    };
  }
  const parsed = TOOLS[name as ToolName].parameters.safeParse(args);
  if (!parsed.success) {
    const issues = issuesOf(parsed.error).map((i) => `${i.path}: ${i.message}`);
    return { tool: name, arguments: args, result: { error: `invalid arguments: ${issues.join('; ')}` } };
  }
  return { tool: name, arguments: parsed.data, result: runTool(name as ToolName, parsed.data, data) };
}

/**
 * Asks the model, runs the tools it calls, and hands the results back until it answers. The answer is only as good as
 * the model; the figures it used come back with it, so the lead can check it against them.
 */
export async function askAnalysis(options: {
  openai: OpenAI;
  model: string;
  question: string;
  data: AnalysisData;
  maxRounds?: number;
}): Promise<AnalysisAnswer> {
  const { openai, model, question, data } = options;
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: ANALYSIS_SYSTEM_PROMPT },
    {
      role: 'user',
      content: `The window: turns that ended from ${data.report.window.since} to ${data.report.window.until} (last ${data.report.window.label}).\n\n${question}`,
    },
  ];
  const figures: AnalysisFigure[] = [];
  const maxRounds = options.maxRounds ?? MAX_ROUNDS;
  for (let round = 1; round <= maxRounds; round++) {
    const completion = await openai.chat.completions.create({
      model,
      messages,
      tools: ANALYSIS_TOOLS,
      // The last round may not call tools: the model must answer from what it has.
      tool_choice: round === maxRounds ? 'none' : 'auto',
    });
    const message = completion.choices[0]?.message;
    if (!message) throw new AnalysisFailed('the model returned no choice');
    const calls = message.tool_calls ?? [];
    if (calls.length === 0) {
      const answer = message.content?.trim() || message.refusal?.trim();
      if (!answer) throw new AnalysisFailed('the model returned neither an answer nor a tool call');
      return { question, window: data.report.window, answer, figures, model, rounds: round };
    }
    messages.push({ role: 'assistant', content: message.content, tool_calls: calls });
    for (const call of calls) {
      const figure = callTool(call, data);
      figures.push(figure);
      messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(figure.result) });
    }
  }
  throw new AnalysisFailed(`the model did not answer within ${maxRounds} calls`);
}
