// The sandbox model: an OpenAI-compatible chat-completions server answering Melvin's plan/coverage/draft schemas.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { STAND_IN_FINGERPRINT, type LlmStep } from '../../src/schemas';
import { FaultQueues, Latency, sendHttpFault, sleep } from '../faults';
import type { Gates } from '../gates';
import { HttpService } from '../http';
import type { HttpFault } from '../scenario';

export const SANDBOX_MODEL_NAME = 'melvin-sandbox-model';

/** One scripted answer: a JSON output to serialize, or raw content exactly as given (e.g. invalid JSON). */
export type ScriptedAnswer = { output: unknown } | { content: string };

/** Computes an answer from what the request carried (its data document, and every message); the sandbox's own
 * reasoning, or a test's. */
export type Responder = (step: LlmStep, context: Record<string, unknown>, messages: ChatMessage[]) => unknown;

export interface ChatMessage {
  role: string;
  content: string;
}

export interface RecordedCompletion {
  step: LlmStep;
  /** The data document Melvin sent between its delimiters, parsed. */
  context: Record<string, unknown>;
  messages: ChatMessage[];
  authorization: string | undefined;
  /** The simulated latency this request waited. */
  latency_ms?: number;
}

const STEPS: LlmStep[] = ['plan', 'coverage', 'draft'];

/** Which of Melvin's steps a request is, from the name of its `json_schema` response format. */
function stepOf(body: unknown): LlmStep | undefined {
  const name = (body as { response_format?: { json_schema?: { name?: string } } })?.response_format?.json_schema?.name;
  return STEPS.find((step) => step === name);
}

/** Pulls the JSON document out of `<conversation_data>…</conversation_data>` in the request's data message. */
export function dataDocument(messages: ChatMessage[]): Record<string, unknown> {
  for (const message of messages) {
    const match = /<conversation_data>\n([\s\S]*)\n<\/conversation_data>/.exec(message.content);
    if (match) return JSON.parse(match[1]!) as Record<string, unknown>;
  }
  return {};
}

function openAiError(status: number, message: string) {
  const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code: status === 401 ? 'invalid_api_key' : null } };
}

export class SandboxModel extends HttpService {
  readonly faults = new FaultQueues<HttpFault>();
  readonly requests: RecordedCompletion[] = [];
  readonly latency = new Latency();
  private readonly scripts = new Map<LlmStep, ScriptedAnswer[]>();

  constructor(readonly options: { apiKey: string; responder?: Responder; gates?: Gates }) {
    super('sandbox model', '/v1');
  }

  /** Queues answers for a step; each request takes the next one, then falls back to the responder. */
  script(step: LlmStep, ...answers: ScriptedAnswer[]): this {
    this.scripts.set(step, [...(this.scripts.get(step) ?? []), ...answers]);
    return this;
  }

  clear(): void {
    this.scripts.clear();
    this.requests.length = 0;
    this.faults.set({});
  }

  private answer(step: LlmStep, context: Record<string, unknown>, messages: ChatMessage[]): string {
    const scripted = this.scripts.get(step)?.shift();
    if (scripted) return 'content' in scripted ? scripted.content : JSON.stringify(scripted.output);
    if (!this.options.responder) throw new Error(`no answer scripted for ${step} and no responder`);
    return JSON.stringify(this.options.responder(step, context, messages));
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
        data: [{ id: SANDBOX_MODEL_NAME, object: 'model', created: 0, owned_by: 'melvin-sandbox' }],
      });
    });
    app.post('/v1/chat/completions', async (req, res) => {
      const body = req.body as { messages?: ChatMessage[] };
      const step = stepOf(req.body);
      if (!step || !Array.isArray(body.messages)) {
        return res
          .status(400)
          .json(openAiError(400, 'expected messages and a json_schema response_format named plan, coverage or draft'));
      }
      const context = dataDocument(body.messages);
      const recorded: RecordedCompletion = {
        step,
        context,
        messages: body.messages,
        authorization: req.header('authorization'),
      };
      this.requests.push(recorded);
      recorded.latency_ms = await this.latency.wait();
      const fault = this.faults.take(step);
      if (fault?.delay_ms) await sleep(fault.delay_ms);
      if (res.destroyed) return;
      if (fault?.status !== undefined)
        return sendHttpFault(res, fault, (status) => openAiError(status, `sandbox fault: ${status}`));
      let content: string;
      try {
        content = this.answer(step, context, body.messages);
      } catch (err) {
        return res.status(500).json(openAiError(500, err instanceof Error ? err.message : String(err)));
      }
      res.json({
        id: `chatcmpl-${randomUUID()}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: SANDBOX_MODEL_NAME,
        system_fingerprint: STAND_IN_FINGERPRINT,
        choices: [
          { index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      });
    });
    return app;
  }
}
