// The four sandbox services in one process (Intercom emulator with its inbox, talent MCP server, sandbox model,
// validation service), their gates, and the control API the scenario runner drives them through.
import express from 'express';
import { z } from 'zod';
import { Gates } from './gates';
import { IntercomEmulator } from './intercom/emulator';
import { NewMessage, inboxRouter, type OperatorApi } from './intercom/inbox';
import { renderPlaintext } from './intercom/plaintext';
import { AdversaryPlan } from './model/adversary';
import { BaselineAgent } from './model/baselines';
import { sandboxReasoning } from './model/reasoning';
import {
  ModelEndpoint,
  SANDBOX_EMBEDDING_MODEL_NAME,
  SANDBOX_MODEL_NAME,
  SANDBOX_SMALL_MODEL_NAME,
  SandboxModel,
  type Responder,
} from './model/server';
import { LeadAction, Scenario, TalentData, Doc, ResolvedConversation, type HttpFault, type McpFault } from './scenario';
import { loadKnowledgeBase } from './talent-mcp/knowledge-base';
import { ANY_TOOL_CALL, TalentMcpService } from './talent-mcp/http';
import { TalentStore } from './talent-mcp/server';
import { ValidationService } from './validation/server';

/** Fixed credentials of the sandbox: it runs on loopback only, and these are what the worker and ingress are given. */
export const SANDBOX_SECRETS = {
  intercomToken: 'sandbox-intercom-token',
  adminId: '8918000',
  openAiKey: 'sandbox-openai-key',
  validationKey: 'sandbox-validation-key',
  webhookSecret: 'sandbox-webhook-secret',
  adminApiToken: 'sandbox-admin-api-token',
} as const;

/** The worker's and the ingress's environment for this sandbox: production variables with sandbox URLs and keys. */
export function sandboxEnvironment(
  urls: Pick<SandboxServices['urls'], 'intercom' | 'mcp' | 'model' | 'validation'>,
  temporalAddress: string,
): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    TASK_QUEUE: 'melvin',
    INTERCOM_API_KEY: SANDBOX_SECRETS.intercomToken,
    INTERCOM_BASE_URL: urls.intercom,
    INTERCOM_CLIENT_SECRET: SANDBOX_SECRETS.webhookSecret,
    ADMIN_API_TOKEN: SANDBOX_SECRETS.adminApiToken,
    MELVIN_ADMIN_ID: SANDBOX_SECRETS.adminId,
    MCP_SERVERS: `talent=${urls.mcp}`,
    OPENAI_API_KEY: SANDBOX_SECRETS.openAiKey,
    OPENAI_BASE_URL: urls.model,
    MODEL_NAME: SANDBOX_MODEL_NAME,
    // Plan and coverage on a model of their own, as a team would run them on a smaller one: the two tiers are seen.
    PLAN_MODEL_NAME: SANDBOX_SMALL_MODEL_NAME,
    EMBEDDING_MODEL_NAME: SANDBOX_EMBEDDING_MODEL_NAME,
    VALIDATION_ENDPOINT: urls.validation,
    VALIDATION_API_KEY: SANDBOX_SECRETS.validationKey,
  };
}

export interface SandboxPorts {
  intercom: number;
  mcp: number;
  model: number;
  validation: number;
}

export interface SandboxServices {
  intercom: IntercomEmulator;
  talent: TalentStore;
  /** The talent store's Streamable HTTP server, which an outage test can stop and start again. */
  mcpService: TalentMcpService;
  model: SandboxModel;
  validation: ValidationService;
  gates: Gates;
  urls: { intercom: string; inbox: string; control: string; mcp: string; model: string; validation: string };
  /** Seeds one scenario: its conversation, talent data, docs and faults (replacing the previous scenario's faults). */
  applyScenario(scenario: Scenario): void;
  /**
   * Takes back the talent data, docs and resolved conversations the scenario seeded for this conversation id (what
   * they replaced comes back); false when nothing was seeded for it.
   */
  withdrawScenario(conversationId: string): boolean;
  /** Every LLM and MCP call waits a time drawn from `seed` in [min_ms, max_ms] from now on (0 and 0: none). */
  setLatency(jitter: LatencyJitter): void;
  /** Fails a share of every service's calls with transient faults from now on (a rate of 0 stops it); see below. */
  setRandomFaults(plan: RandomFaults): RandomFaultStatus;
  randomFaults(): RandomFaultStatus;
  stop(): Promise<void>;
}

/** A random fault plan for a whole evaluation run: the share of calls to fail, and the seed of the draws. */
export const RandomFaults = z.strictObject({
  rate: z.number().min(0).max(1),
  seed: z.number().int().min(0).max(4_294_967_295),
});
export type RandomFaults = z.infer<typeof RandomFaults>;

/** Simulated latency of the LLM and MCP calls, e.g. an evaluation's jitter between tries. */
export const LatencyJitter = z
  .strictObject({
    min_ms: z.number().int().min(0).max(60_000),
    max_ms: z.number().int().min(0).max(60_000),
    seed: z.number().int().min(0).max(4_294_967_295),
  })
  .refine((j) => j.min_ms <= j.max_ms, { message: 'min_ms must not exceed max_ms', path: ['min_ms'] });
export type LatencyJitter = z.infer<typeof LatencyJitter>;

/** The plan in force, and how many calls each service failed at random since it was set. */
export const RandomFaultStatus = RandomFaults.extend({
  drawn: z.strictObject({ intercom: z.number(), mcp: z.number(), llm: z.number(), validation: z.number() }),
});
export type RandomFaultStatus = z.infer<typeof RandomFaultStatus>;

/**
 * The faults a random plan draws from: transient failures Melvin's retry policies are built to outlast, so a try that
 * meets them must still end as it would without them. Intercom answers 5xx, or 429 with its rate-limit reset a second
 * ahead; the model endpoint 503; the talent MCP server fails the transport of a tool call; validation answers 503.
 * Writes answered with an error after being applied, and timeouts, are left to the scenarios that plan them.
 */
const TRANSIENT_HTTP: HttpFault[] = [{ status: 500 }, { status: 503 }, { status: 429, retry_after_s: 1 }];
const TRANSIENT_FAULTS: {
  intercom: Record<string, HttpFault[]>;
  llm: Record<string, HttpFault[]>;
  mcp: Record<string, McpFault[]>;
  validation: Record<string, HttpFault[]>;
} = {
  intercom: Object.fromEntries(
    ['fetch', 'contact', 'reply', 'note', 'update', 'snooze'].map((operation) => [operation, TRANSIENT_HTTP]),
  ),
  llm: { plan: [{ status: 503 }], coverage: [{ status: 503 }], draft: [{ status: 503 }] },
  mcp: { [ANY_TOOL_CALL]: [{ error: 'server' }] },
  validation: { validate: [{ status: 503 }] },
};

const SeedFile = z.strictObject({
  talent: TalentData.optional(),
  docs: z.array(Doc).optional(),
  /** The team's resolved conversations: given (even empty), the talent server offers their search. */
  resolved_conversations: z.array(ResolvedConversation).optional(),
});
export type SeedData = z.infer<typeof SeedFile>;

export async function startSandboxServices(
  options: {
    ports?: Partial<SandboxPorts>;
    /** The ingress webhook URL the emulator delivers `notification_event`s to. */
    webhookUrl?: string;
    seed?: SeedData;
    /** Replaces the sandbox's own reasoning, e.g. with a test's scripted answers only. */
    responder?: Responder;
    /** The kind of OpenAI-compatible endpoint the sandbox model behaves like (default: strict, as OpenAI). */
    modelEndpoint?: ModelEndpoint;
  } = {},
): Promise<SandboxServices> {
  const gates = new Gates();
  const talent = new TalentStore({ knowledgeBase: loadKnowledgeBase(), ...SeedFile.parse(options.seed ?? {}) });
  const model = new SandboxModel({
    apiKey: SANDBOX_SECRETS.openAiKey,
    responder: options.responder ?? sandboxReasoning,
    gates,
    endpoint: options.modelEndpoint,
  });
  const validation = new ValidationService({ apiKey: SANDBOX_SECRETS.validationKey, gates });
  const intercom = new IntercomEmulator({
    token: SANDBOX_SECRETS.intercomToken,
    adminId: SANDBOX_SECRETS.adminId,
    webhook: options.webhookUrl ? { url: options.webhookUrl, secret: SANDBOX_SECRETS.webhookSecret } : undefined,
    gates,
  });
  // The inbox's approve, edit and reject buttons call Melvin's operator API beside the webhook, as a lead's tool would.
  const operatorApi = options.webhookUrl
    ? { url: new URL(options.webhookUrl).origin, token: SANDBOX_SECRETS.adminApiToken }
    : undefined;
  intercom.mount(inboxRouter(intercom, () => talent.data.users, operatorApi));
  intercom.mount(controlRouter(() => services, operatorApi));
  const mcpService = new TalentMcpService(talent, gates);
  let randomPlan: RandomFaults = { rate: 0, seed: 0 };
  /** How to take back what each conversation's scenario seeded, by conversation id. */
  const withdrawals = new Map<string, () => void>();
  const [intercomUrl, mcpUrl, modelUrl, validationUrl] = await Promise.all([
    intercom.start(options.ports?.intercom),
    mcpService.start(options.ports?.mcp),
    model.start(options.ports?.model),
    validation.start(options.ports?.validation),
  ]);
  const services: SandboxServices = {
    intercom,
    talent,
    mcpService,
    model,
    validation,
    gates,
    urls: {
      intercom: intercomUrl,
      inbox: `${intercomUrl}/inbox`,
      control: `${intercomUrl}/_sandbox`,
      mcp: mcpUrl,
      model: modelUrl,
      validation: validationUrl,
    },
    applyScenario(scenario) {
      intercom.seed(scenario.conversation);
      withdrawals.get(scenario.conversation.id)?.();
      const withdraw = talent.seed({
        talent: scenario.talent,
        docs: scenario.docs,
        resolved_conversations: scenario.resolved_conversations,
      });
      withdrawals.set(scenario.conversation.id, withdraw);
      const faults = scenario.faults ?? {};
      // A random plan belongs to the whole run (an evaluation seeds scenario after scenario under it): it stays.
      const keepRandom = { keepRandom: true };
      intercom.faults.set(faults.intercom, keepRandom);
      talent.faults.set(faults.mcp, keepRandom);
      model.faults.set(faults.llm, keepRandom);
      validation.faults.set(faults.validation ? { validate: [faults.validation] } : {}, keepRandom);
      gates.release();
    },
    withdrawScenario(conversationId) {
      const withdraw = withdrawals.get(conversationId);
      withdrawals.delete(conversationId);
      withdraw?.();
      return withdraw !== undefined;
    },
    setLatency({ min_ms, max_ms, seed }) {
      const range: [number, number] | undefined = max_ms > 0 ? [min_ms, max_ms] : undefined;
      // Seeded apart, so one service's calls do not shift the other's draws.
      model.latency.set(range, seed);
      talent.latency.set(range, seed + 1);
    },
    setRandomFaults(plan) {
      const { rate, seed } = RandomFaults.parse(plan);
      const queues = [intercom.faults, talent.faults, model.faults, validation.faults] as const;
      if (rate === 0) for (const faults of queues) faults.clearRandom();
      else {
        // One generator per service, seeded apart, so one service's calls do not shift another's draws.
        intercom.faults.setRandom(rate, TRANSIENT_FAULTS.intercom, seed);
        talent.faults.setRandom(rate, TRANSIENT_FAULTS.mcp, seed + 1);
        model.faults.setRandom(rate, TRANSIENT_FAULTS.llm, seed + 2);
        validation.faults.setRandom(rate, TRANSIENT_FAULTS.validation, seed + 3);
      }
      randomPlan = { rate, seed };
      return services.randomFaults();
    },
    randomFaults() {
      return {
        ...randomPlan,
        drawn: {
          intercom: intercom.faults.randomDrawn,
          mcp: talent.faults.randomDrawn,
          llm: model.faults.randomDrawn,
          validation: validation.faults.randomDrawn,
        },
      };
    },
    async stop() {
      gates.release();
      await Promise.all([intercom.stop(), mcpService.stop(), model.stop(), validation.stop()]);
    },
  };
  return services;
}

/** A user's message as the control API takes it: text, files (each named), or both. */
const UserMessage = z
  .strictObject({
    body: z.string().trim().max(4_000_000).default(''),
    files: z
      .array(z.strictObject({ name: z.string().min(1).max(200), content_type: z.string().min(1).max(100).optional() }))
      .max(10)
      .default([]),
  })
  .refine((m) => m.body !== '' || m.files.length > 0, { message: 'a message needs a body or files' });
const Assignment = z.strictObject({ to: z.enum(['melvin', 'teammate', 'nobody']) });

const ModelAgent = z.strictObject({ agent: z.union([z.literal('melvin'), BaselineAgent]) });

const ValidationMode = z.strictObject({
  mode: z.enum(['checking', 'lenient']),
  conversation_id: z
    .string()
    .regex(/^\d{1,19}$/, 'an Intercom conversation id: digits')
    .optional(),
});

const PlantsQuery = z.strictObject({ since: z.iso.datetime().optional() });

const GateRequest = z.strictObject({ at: z.string().min(1).optional(), after: z.string().min(1).optional() });

/** The control API under /_sandbox: what the scenario runner uses to seed, deliver, hold, inspect and act as a lead. */
function controlRouter(services: () => SandboxServices, operatorApi: OperatorApi | undefined): express.Router {
  const router = express.Router();
  router.use('/_sandbox', express.json({ limit: '20mb' }));
  const badRequest = (res: express.Response, error: z.ZodError) =>
    res.status(400).json({ error: z.prettifyError(error), issues: error.issues });

  router.post('/_sandbox/scenarios', (req, res) => {
    const parsed = Scenario.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    try {
      services().applyScenario(parsed.data);
    } catch (err) {
      // An attribute the workspace does not define, or of the wrong type: Intercom would refuse it too.
      return res.status(400).json({ error: err instanceof Error ? err.message : String(err) });
    }
    res.json({ seeded: parsed.data.id, conversation_id: parsed.data.conversation.id });
  });

  /** Takes back what the scenario of this conversation seeded into the talent store (its conversation stays). */
  router.delete('/_sandbox/scenarios/:conversationId', (req, res) => {
    const withdrawn = services().withdrawScenario(req.params.conversationId);
    if (!withdrawn)
      return res.status(404).json({ error: `no scenario seeded for conversation ${req.params.conversationId}` });
    res.json({ withdrawn: req.params.conversationId });
  });

  /** `{ min_ms, max_ms, seed }`: every LLM and MCP call waits a seeded random time in that range from now on. */
  router.post('/_sandbox/latency', (req, res) => {
    const parsed = LatencyJitter.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    services().setLatency(parsed.data);
    res.json(parsed.data);
  });

  router.post('/_sandbox/conversations/:id/deliver', async (req, res) => {
    const { intercom } = services();
    if (!intercom.conversations.has(req.params.id))
      return res.status(404).json({ error: `no conversation ${req.params.id}` });
    res.json(await intercom.emit('conversation.user.created', req.params.id));
  });

  /** The user writes (text, files or both) and Intercom's webhook goes out: the answer names the new part. */
  router.post('/_sandbox/conversations/:id/messages', async (req, res) => {
    const { intercom } = services();
    const parsed = UserMessage.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    if (!intercom.conversations.has(req.params.id))
      return res.status(404).json({ error: `no conversation ${req.params.id}` });
    const { part, delivery } = await intercom.userReplies(req.params.id, parsed.data.body, parsed.data.files);
    res.json({ ...delivery, part_id: part.id });
  });

  /** A teammate answers in the inbox and Intercom's webhook goes out. */
  router.post('/_sandbox/conversations/:id/teammate-replies', async (req, res) => {
    const { intercom } = services();
    const parsed = NewMessage.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    if (!intercom.conversations.has(req.params.id))
      return res.status(404).json({ error: `no conversation ${req.params.id}` });
    const { part, delivery } = await intercom.teammateReplies(req.params.id, parsed.data.body);
    res.json({ ...delivery, part_id: part.id });
  });

  /** A teammate assigns the conversation (to Melvin, a teammate or nobody) or closes it; Intercom's webhook goes out. */
  router.post('/_sandbox/conversations/:id/assign', async (req, res) => {
    const { intercom } = services();
    const parsed = Assignment.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    if (!intercom.conversations.has(req.params.id))
      return res.status(404).json({ error: `no conversation ${req.params.id}` });
    const { part, delivery } = await intercom.assign(req.params.id, parsed.data.to);
    res.json({ ...delivery, part_id: part.id });
  });
  router.post('/_sandbox/conversations/:id/close', async (req, res) => {
    const { intercom } = services();
    if (!intercom.conversations.has(req.params.id))
      return res.status(404).json({ error: `no conversation ${req.params.id}` });
    const { part, delivery } = await intercom.close(req.params.id);
    res.json({ ...delivery, part_id: part.id });
  });

  /**
   * A lead acts on the conversation through Melvin's operator API (escalate, hand back, decide on a draft), as the inbox
   * or a lead's script would; the answer is Melvin's, status and body as they came.
   */
  router.post('/_sandbox/conversations/:id/lead', async (req, res) => {
    const parsed = LeadAction.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    if (!operatorApi) return res.status(503).json({ error: 'this sandbox has no Melvin operator API to send to' });
    const { action, by, ...rest } = parsed.data;
    const route = action === 'escalate' ? 'escalate' : action === 'hand_back' ? 'hand-back' : 'decision';
    const body = route === 'decision' ? { decision: action, ...rest } : rest;
    const response = await fetch(`${operatorApi.url}/conversations/${encodeURIComponent(req.params.id)}/${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${operatorApi.token}` },
      body: JSON.stringify({ ...body, requestedBy: by }),
      signal: AbortSignal.timeout(30_000),
    });
    res.json({ status: response.status, response: (await response.json().catch(() => null)) as unknown });
  });

  router.get('/_sandbox/conversations/:id', (req, res) => {
    const { intercom } = services();
    const conversation = intercom.conversations.get(req.params.id);
    if (!conversation) return res.status(404).json({ error: `no conversation ${req.params.id}` });
    res.json({
      id: conversation.id,
      replies: intercom.replies(conversation.id),
      notes: intercom.notes(conversation.id),
      melvin_status: intercom.melvinStatus(conversation.id) ?? null,
      snoozed_until: conversation.snoozed_until,
      parts: conversation.conversation_parts.conversation_parts.map((p) => ({
        id: p.id,
        part_type: p.part_type,
        author_type: p.author.type,
        melvin: p.author.id === SANDBOX_SECRETS.adminId,
        seeded: intercom.isSeeded(p.id),
        text: renderPlaintext(p.body ?? ''),
      })),
    });
  });

  router.get('/_sandbox/model', (_req, res) => {
    res.json(services().model.endpoint);
  });

  router.post('/_sandbox/model', (req, res) => {
    const parsed = ModelEndpoint.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    res.json(services().model.configure(parsed.data).endpoint);
  });

  /** `{ seed, rates }`: the model answers wrongly on purpose at these rates from now on (`rates: {}`: honest again). */
  router.post('/_sandbox/model/adversary', (req, res) => {
    const parsed = AdversaryPlan.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    services().model.setAdversary(parsed.data);
    res.json({ adversary: parsed.data });
  });

  /** `{ agent }`: `melvin` drafts with the model's own reasoning; a baseline agent's drafts instead (./model/baselines). */
  router.post('/_sandbox/model/agent', (req, res) => {
    const parsed = ModelAgent.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    services().model.baseline = parsed.data.agent === 'melvin' ? null : parsed.data.agent;
    res.json(parsed.data);
  });

  /**
   * `{ mode, conversation_id? }`: `lenient` passes every draft (its checks still listed), `checking` judges them again;
   * for one conversation when it is named, else for all.
   */
  router.post('/_sandbox/validation/mode', (req, res) => {
    const parsed = ValidationMode.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    const { mode, conversation_id: id } = parsed.data;
    const validation = services().validation;
    if (id === undefined) validation.mode = mode;
    else if (mode === 'lenient') validation.lenientConversations.add(id);
    else validation.lenientConversations.delete(id);
    res.json(parsed.data);
  });

  /** What the adversary planted, since a time (ISO) when given: each with whose conversation the request showed. */
  router.get('/_sandbox/model/plants', (req, res) => {
    const parsed = PlantsQuery.safeParse(req.query);
    if (!parsed.success) return badRequest(res, parsed.error);
    const { since } = parsed.data;
    const plants = services().model.adversary?.plants ?? [];
    res.json({ plants: plants.filter((p) => since === undefined || p.at >= since) });
  });

  router.get('/_sandbox/faults/random', (_req, res) => {
    res.json(services().randomFaults());
  });

  /** `{ rate, seed }`: from now on a share `rate` of every service's calls fails with a transient fault (0 stops it). */
  router.post('/_sandbox/faults/random', (req, res) => {
    const parsed = RandomFaults.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    res.json(services().setRandomFaults(parsed.data));
  });

  router.get('/_sandbox/gate', (_req, res) => {
    res.json(services().gates.status());
  });

  router.post('/_sandbox/gate', (req, res) => {
    const parsed = GateRequest.safeParse(req.body);
    if (!parsed.success) return badRequest(res, parsed.error);
    try {
      services().gates.arm(parsed.data);
    } catch (err) {
      return res.status(400).json({ error: err instanceof Error ? err.message : String(err) });
    }
    res.json(services().gates.status());
  });

  router.post('/_sandbox/gate/release', (_req, res) => {
    services().gates.release();
    res.json(services().gates.status());
  });

  return router;
}
