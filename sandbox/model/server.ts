// The sandbox model: an OpenAI-compatible chat-completions server answering Melvin's plan, coverage and draft steps.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { z } from 'zod';
import { STAND_IN_FINGERPRINT, type LlmStep } from '../../src/contract/schemas';
import { FaultQueues, Latency, sendHttpFault, sleep } from '../faults';
import type { Gates } from '../gates';
import { HttpService } from '../http';
import type { HttpFault } from '../scenario';
import { Adversary, type AdversaryPlan, type Corrupted } from './adversary';
import { baselineDraft, type BaselineAgent } from './baselines';
import { SANDBOX_EMBEDDING_MODEL_NAME, answerEmbeddings } from './embeddings';
import { analystAnswer, checkToolTurns, checkTools } from './analyst';
import { sandboxJudge } from './judge';
import {
  checkJsonModeMessages,
  checkJsonSchemaFormat,
  refusal,
  type OpenAiErrorBody,
  type Refusal,
} from './strict-schema';

export { SANDBOX_EMBEDDING_MODEL_NAME } from './embeddings';
export const SANDBOX_MODEL_NAME = 'melvin-sandbox-model';
/** A second model the sandbox serves, so the sandbox stack can run its plan tier on a model of its own. */
export const SANDBOX_SMALL_MODEL_NAME = 'melvin-sandbox-model-small';

/**
 * Which kind of OpenAI-compatible endpoint the sandbox model behaves like. `strict`: OpenAI itself (strict Structured
 * Outputs checked as OpenAI checks them, JSON mode with its rule, plain JSON text without a format). `json_object`: an
 * endpoint with JSON mode only (refuses `json_schema` the way DeepSeek does). `text`: an endpoint without response
 * formats, answering in prose, the JSON inside ``` fences (`textStyle: 'fenced'`) or between sentences (`'prose'`).
 */
export const ModelEndpoint = z.strictObject({
  endpoint: z.enum(['strict', 'json_object', 'text']),
  textStyle: z.enum(['fenced', 'prose']).default('fenced'),
});
export type ModelEndpoint = z.infer<typeof ModelEndpoint>;
export type ModelEndpointKind = ModelEndpoint['endpoint'];
const OPENAI: ModelEndpoint = { endpoint: 'strict', textStyle: 'fenced' };

/** A completion's message as sent: its content (null with a refusal, as OpenAI sends one) and why it ended. */
interface Answer {
  content: string | null;
  refusal?: string;
  finish_reason?: 'stop' | 'length';
}

/** One scripted answer: a JSON output to serialize as the endpoint would, or raw content exactly as given. */
export type ScriptedAnswer = { output: unknown } | { content: string };

/** Computes an answer from what the request carried (its data document, and every message); the sandbox's own
 * reasoning, or a test's. */
export type Responder = (step: LlmStep, context: Record<string, unknown>, messages: ChatMessage[]) => unknown;

export interface ChatMessage {
  role: string;
  content: string;
}

/**
 * Melvin's steps, an evaluation's judge asking whether a reply meets a scenario's rubric, or the report's analysis
 * agent calling tools (`analyze`).
 */
export type CompletionStep = LlmStep | 'judge' | 'analyze';

export interface RecordedCompletion {
  step: CompletionStep;
  /** The model the request asked for. */
  model: string;
  /** The data document Melvin sent between its delimiters, parsed. */
  context: Record<string, unknown>;
  messages: ChatMessage[];
  /** The request's `response_format`, or null when it sent none. */
  response_format: { type?: unknown; json_schema?: unknown } | null;
  authorization: string | undefined;
  /** The simulated latency this request waited. */
  latency_ms?: number;
  /** The 400 the endpoint answered instead of a completion, when it refused the request. */
  refused?: OpenAiErrorBody;
  /** The request's function tools, for the analysis agent's requests. */
  tools?: unknown;
}

const STEPS: CompletionStep[] = ['plan', 'coverage', 'draft', 'resolve', 'judge', 'analyze'];

/** Which of Melvin's steps (or the judge) a request is, from the `Task: <step>.` line its data message starts with. */
function stepOf(body: unknown): CompletionStep | undefined {
  const messages = (body as { messages?: unknown })?.messages;
  if (!Array.isArray(messages)) return undefined;
  for (const message of messages as { content?: unknown }[]) {
    const match = typeof message?.content === 'string' ? /^Task: (\w+)\./.exec(message.content) : null;
    const step = STEPS.find((s) => s === match?.[1]);
    if (step) return step;
  }
  return undefined;
}

/**
 * Tokens as OpenAI reports them, estimated without a tokenizer: about four characters of English or JSON per token, plus
 * OpenAI's few tokens of framing per message. A real endpoint counts exactly; the sandbox's figures are for comparing
 * runs, not for billing.
 */
function usageOf(messages: ChatMessage[], content: string) {
  const tokens = (text: string) => Math.ceil(text.length / 4);
  const prompt_tokens = messages.reduce((sum, m) => sum + 3 + tokens(String(m.content ?? '')), 3);
  const completion_tokens = tokens(content);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** Pulls the JSON document out of `<conversation_data>…</conversation_data>` in the request's data message. */
export function dataDocument(messages: ChatMessage[]): Record<string, unknown> {
  for (const message of messages) {
    const match = /<conversation_data>\n([\s\S]*)\n<\/conversation_data>/.exec(message.content);
    if (match) return JSON.parse(match[1]!) as Record<string, unknown>;
  }
  return {};
}

function openAiError(status: number, message: string, code: string | null = status === 401 ? 'invalid_api_key' : null) {
  const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code } };
}

/** The endpoint kind's answer to a request's `response_format`: the 400 it refuses it with, or null to go on. */
function refuseFormat(
  endpoint: ModelEndpointKind,
  format: RecordedCompletion['response_format'],
  messages: ChatMessage[],
): Refusal | null {
  const type = format?.type;
  if (format === null || type === 'text') return null;
  if (endpoint === 'text') {
    return refusal(
      `Invalid parameter: 'response_format' of type '${String(type)}' is not supported with this model.`,
      'response_format',
      null,
    );
  }
  if (type === 'json_object') return checkJsonModeMessages(messages);
  if (type === 'json_schema') {
    if (endpoint === 'json_object')
      return refusal('This response_format type is unavailable now', null, 'invalid_request_error');
    return checkJsonSchemaFormat(format.json_schema);
  }
  return refusal(
    `Invalid value: '${String(type)}'. Supported values are: 'text', 'json_object', and 'json_schema'.`,
    'response_format.type',
    'invalid_value',
  );
}

/** How an endpoint of the kind writes a JSON answer: as it is, or inside the prose of a model without formats. */
function render(settings: ModelEndpoint, output: unknown): string {
  if (settings.endpoint !== 'text') return JSON.stringify(output);
  const pretty = JSON.stringify(output, null, 2);
  if (settings.textStyle === 'fenced') return `Here is the answer as JSON:\n\n\`\`\`json\n${pretty}\n\`\`\``;
  // Braces in the sentence before the object, so a reader that grabs the first `{` gets it wrong.
  return `Sure. I read the {conversation_data} block and worked out the answer:\n${pretty}\nLet me know if anything is unclear.`;
}

export class SandboxModel extends HttpService {
  readonly faults = new FaultQueues<HttpFault>();
  readonly requests: RecordedCompletion[] = [];
  /** The bodies of the embeddings requests it answered. */
  readonly embeddingRequests: Record<string, unknown>[] = [];
  readonly latency = new Latency();
  private readonly scripts = new Map<LlmStep, ScriptedAnswer[]>();
  private settings: ModelEndpoint;
  /** While set, answers some plan and draft requests wrongly on purpose, and records what it planted. */
  adversary: Adversary | null = null;
  /** While set, Melvin's drafts are a baseline agent's (./baselines), for an evaluation to fail them. */
  baseline: BaselineAgent | null = null;

  constructor(
    readonly options: {
      apiKey: string;
      responder?: Responder;
      gates?: Gates;
      endpoint?: ModelEndpoint;
      /** The model ids it serves (as OpenAI, it refuses any other); the two sandbox models when not given. */
      models?: string[];
    },
  ) {
    super('sandbox model', '/v1');
    this.settings = options.endpoint ?? OPENAI;
  }

  private get models(): string[] {
    return this.options.models ?? [SANDBOX_MODEL_NAME, SANDBOX_SMALL_MODEL_NAME];
  }

  /** The kind of endpoint the model behaves like now. */
  get endpoint(): ModelEndpoint {
    return this.settings;
  }

  /** Makes the model behave like another kind of endpoint from the next request on. */
  configure(settings: z.input<typeof ModelEndpoint>): this {
    this.settings = ModelEndpoint.parse(settings);
    return this;
  }

  /** Queues answers for a step; each request takes the next one, then falls back to the responder. */
  script(step: LlmStep, ...answers: ScriptedAnswer[]): this {
    this.scripts.set(step, [...(this.scripts.get(step) ?? []), ...answers]);
    return this;
  }

  /** Makes the model wrong on purpose at the plan's rates from the next request on (null: honest again). */
  setAdversary(plan: AdversaryPlan | null): void {
    this.adversary = plan ? new Adversary(plan) : null;
  }

  /** Forgets scripts, faults and requests, and behaves again like the endpoint it was started as, honest and itself. */
  clear(): void {
    this.scripts.clear();
    this.requests.length = 0;
    this.embeddingRequests.length = 0;
    this.faults.set({});
    this.settings = this.options.endpoint ?? OPENAI;
    this.adversary = null;
    this.baseline = null;
  }

  private answer(step: CompletionStep, context: Record<string, unknown>, messages: ChatMessage[]): Answer {
    // The judge is the evaluation's, not Melvin's: the stand-in answers it by its rules whatever the responder.
    if (step === 'judge') return { content: render(this.settings, sandboxJudge(context)) };
    if (step === 'analyze') throw new Error('the analysis agent’s requests carry tools');
    const scripted = this.scripts.get(step)?.shift();
    if (scripted) return { content: 'content' in scripted ? scripted.content : render(this.settings, scripted.output) };
    if (!this.options.responder) throw new Error(`no answer scripted for ${step} and no responder`);
    if (step === 'draft' && this.baseline)
      return { content: render(this.settings, baselineDraft(this.baseline, context)) };
    const honest = this.options.responder(step, context, messages);
    const wrong = this.adversary?.corrupt(step, context, messages, honest);
    return wrong ? this.asAnswer(wrong) : { content: render(this.settings, honest) };
  }

  /** A wrong answer as the endpoint sends it: JSON rendered as the endpoint would, or content and refusals as they are. */
  private asAnswer(wrong: Corrupted): Answer {
    if ('refusal' in wrong) return { content: null, refusal: wrong.refusal };
    if ('output' in wrong) return { content: render(this.settings, wrong.output) };
    return { content: wrong.content, finish_reason: wrong.finish_reason };
  }

  override app(): express.Express {
    const app = express();
    app.use(express.json({ limit: '10mb' }));
    app.use((req, res, next) => {
      if (req.header('authorization') !== `Bearer ${this.options.apiKey}`) {
        return res.status(401).json(openAiError(401, 'Incorrect API key provided'));
      }
      next();
    });
    const gates = this.options.gates;
    if (gates)
      app.use(gates.middleware((req) => (req.path === '/v1/chat/completions' ? `llm:${stepOf(req.body)}` : undefined)));
    app.get('/v1/models', (_req, res) => {
      res.json({
        object: 'list',
        data: [...this.models, SANDBOX_EMBEDDING_MODEL_NAME].map((id) => ({
          id,
          object: 'model',
          created: 0,
          owned_by: 'melvin-sandbox',
        })),
      });
    });
    app.post('/v1/embeddings', async (req, res) => {
      const model = (req.body as { model?: unknown }).model;
      if (typeof model === 'string' && model !== '' && model !== SANDBOX_EMBEDDING_MODEL_NAME) {
        const message = `The model \`${model}\` does not exist or you do not have access to it.`;
        return res.status(404).json(openAiError(404, message, 'model_not_found'));
      }
      const outcome = answerEmbeddings(req.body);
      if (outcome.status === 400) {
        return res.status(400).json({ error: { ...openAiError(400, outcome.message).error, param: outcome.param } });
      }
      this.embeddingRequests.push(req.body as Record<string, unknown>);
      await this.latency.wait();
      const fault = this.faults.take('embeddings');
      if (fault?.delay_ms) await sleep(fault.delay_ms);
      if (res.destroyed) return;
      if (fault?.status !== undefined)
        return sendHttpFault(res, fault, (status) => openAiError(status, `sandbox fault: ${status}`));
      res.json(outcome.body);
    });
    app.post('/v1/chat/completions', async (req, res) => {
      const body = req.body as {
        model?: unknown;
        messages?: ChatMessage[];
        response_format?: RecordedCompletion['response_format'];
        tools?: unknown;
      };
      // OpenAI checks the model before anything else the request carries.
      if (typeof body.model !== 'string' || body.model === '') {
        return res.status(400).json(openAiError(400, 'you must provide a model parameter'));
      }
      if (!this.models.includes(body.model)) {
        const message = `The model \`${body.model}\` does not exist or you do not have access to it.`;
        return res.status(404).json(openAiError(404, message, 'model_not_found'));
      }
      const model = body.model;
      const step = stepOf(req.body);
      if (!step || !Array.isArray(body.messages)) {
        return res
          .status(400)
          .json(
            openAiError(
              400,
              'expected messages, one of them starting "Task: plan.", "Task: coverage.", "Task: draft." or "Task: judge."',
            ),
          );
      }
      if (step === 'analyze' || body.tools !== undefined) return this.answerWithTools(req, res, step, model);
      const context = dataDocument(body.messages);
      const recorded: RecordedCompletion = {
        step,
        context,
        model,
        messages: body.messages,
        response_format: body.response_format ?? null,
        authorization: req.header('authorization'),
      };
      this.requests.push(recorded);
      const refused = refuseFormat(this.settings.endpoint, recorded.response_format, body.messages);
      if (refused) {
        recorded.refused = refused.body;
        return res.status(refused.status).json(refused.body);
      }
      recorded.latency_ms = await this.latency.wait();
      const fault = this.faults.take(step);
      if (fault?.delay_ms) await sleep(fault.delay_ms);
      if (res.destroyed) return;
      if (fault?.status !== undefined)
        return sendHttpFault(res, fault, (status) => openAiError(status, `sandbox fault: ${status}`));
      let answer: Answer;
      try {
        answer = this.answer(step, context, body.messages);
      } catch (err) {
        return res.status(500).json(openAiError(500, err instanceof Error ? err.message : String(err)));
      }
      const { content, refusal = null, finish_reason = 'stop' } = answer;
      res.json(
        chatCompletion(
          model,
          { role: 'assistant', content, refusal },
          finish_reason,
          usageOf(body.messages, content ?? refusal ?? ''),
        ),
      );
    });
    return app;
  }

  /**
   * A request with function tools: `tools` and the tool-call turns checked as OpenAI checks them, then the stand-in
   * analyst's tool calls (`finish_reason: tool_calls`) or its answer from the tools' results. Only the analysis agent's
   * `Task: analyze.` requests are answered; Melvin's steps never send tools.
   */
  private async answerWithTools(req: express.Request, res: express.Response, step: CompletionStep, model: string) {
    const body = req.body as { messages: ChatMessage[]; tools?: unknown };
    const recorded: RecordedCompletion = {
      step,
      context: {},
      model,
      messages: body.messages,
      response_format: null,
      authorization: req.header('authorization'),
      tools: body.tools,
    };
    this.requests.push(recorded);
    const checked = body.tools === undefined ? { tools: [] } : checkTools(body.tools);
    const refused = 'status' in checked ? checked : checkToolTurns(body.messages);
    if (refused) {
      recorded.refused = refused.body;
      return res.status(refused.status).json(refused.body);
    }
    if (step !== 'analyze' || 'status' in checked) {
      return res
        .status(400)
        .json(openAiError(400, 'the sandbox model answers tools only for "Task: analyze." requests'));
    }
    recorded.latency_ms = await this.latency.wait();
    const fault = this.faults.take(step);
    if (fault?.delay_ms) await sleep(fault.delay_ms);
    if (res.destroyed) return;
    if (fault?.status !== undefined)
      return sendHttpFault(res, fault, (status) => openAiError(status, `sandbox fault: ${status}`));
    const answer = analystAnswer(
      body.messages,
      checked.tools,
      () => `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    );
    res.json(
      chatCompletion(
        model,
        {
          role: 'assistant',
          content: answer.content,
          refusal: null,
          ...(answer.tool_calls && { tool_calls: answer.tool_calls }),
        },
        answer.tool_calls ? 'tool_calls' : 'stop',
        usageOf(body.messages, answer.content ?? JSON.stringify(answer.tool_calls)),
      ),
    );
  }
}

/** A chat completion with one choice, as OpenAI shapes it: the step answers and the analyst's tool calls alike. */
function chatCompletion(model: string, message: Record<string, unknown>, finishReason: string, usage: unknown) {
  return {
    id: `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    system_fingerprint: STAND_IN_FINGERPRINT,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
    usage,
  };
}
