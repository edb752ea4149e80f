// Configuration: environment variables read once at start-up and checked with zod, failing with the variable's name.
import type { DataConverter } from '@temporalio/common';
import { z } from 'zod';
import type { McpServerConfig } from './activities/mcp';
import { PayloadKeys, createDataConverter, type PayloadKey } from './payload-codec';
import {
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  DEFAULT_DATA_BUDGET_BYTES,
  DEFAULT_HANDOVER_MESSAGE,
  DEFAULT_KIND_HANDOVER_MESSAGES,
  DEFAULT_MAX_HOPS,
  DEFAULT_QUIET_PERIOD_SECONDS,
  DEFAULT_SNOOZE_SECONDS,
  DEFAULT_TASK_QUEUE,
  REPLY_MODES,
} from './shared';
import type { EscalationKind } from './state';
import { ESCALATION_TABLE } from './workflows/routing';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** An empty variable counts as unset, so `FOO=` in an env file falls back to the default rather than failing oddly. */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema);
const required = (what: string) => optional(z.string({ error: `required: ${what}` }).min(1));
const url = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const hostPort = z.string().regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port, e.g. 0.0.0.0:9464');

/**
 * `MCP_SERVERS` lists servers separated by `;`, each `name=target`: a target starting with http(s):// is a Streamable
 * HTTP endpoint, anything else a command (split on spaces) started over stdio.
 */
export function parseMcpServers(value: string): McpServerConfig[] {
  const entries = value
    .split(';')
    .map((e) => e.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new Error('lists no server');
  const servers = entries.map((entry, index): McpServerConfig => {
    const match = /^([A-Za-z0-9_-]+)=(.+)$/.exec(entry);
    const name = match?.[1] ?? `mcp${index + 1}`;
    const target = (match?.[2] ?? entry).trim();
    if (/^https?:\/\//.test(target)) {
      if (!url.safeParse(target).success) throw new Error(`server "${name}": "${target}" is not a valid URL`);
      return { name, url: target };
    }
    const [command, ...args] = target.split(/\s+/);
    return { name, command: command!, args };
  });
  const names = servers.map((s) => s.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate) throw new Error(`server name "${duplicate}" is used twice`);
  return servers;
}

const TemporalEnv = z.object({
  TEMPORAL_ADDRESS: optional(z.string().min(1).default('127.0.0.1:7233')),
  TEMPORAL_NAMESPACE: optional(z.string().min(1).default('default')),
  /** Temporal Cloud API key; when set the connection uses TLS. */
  TEMPORAL_API_KEY: optional(z.string().min(1).optional()),
  TASK_QUEUE: optional(z.string().min(1).default(DEFAULT_TASK_QUEUE)),
  /** `id:base64key,…` (32-byte keys): the first encrypts payloads, each decrypts those that name its id. */
  MELVIN_PAYLOAD_KEYS: optional(PayloadKeys.optional()),
  /** `required` refuses to start without MELVIN_PAYLOAD_KEYS, so a production deployment cannot store plain text. */
  MELVIN_PAYLOAD_ENCRYPTION: optional(z.enum(['optional', 'required']).default('optional')),
});

/** Checked on every process's configuration: zod cannot extend an object schema that already carries a refinement. */
function requirePayloadKeys(env: z.infer<typeof TemporalEnv>, ctx: z.RefinementCtx): void {
  if (env.MELVIN_PAYLOAD_ENCRYPTION === 'required' && !env.MELVIN_PAYLOAD_KEYS) {
    ctx.addIssue({
      code: 'custom',
      path: ['MELVIN_PAYLOAD_KEYS'],
      message:
        'required while MELVIN_PAYLOAD_ENCRYPTION=required: <id>:<base64 of 32 bytes>, e.g. k1:$(openssl rand -base64 32)',
    });
  }
}

/** The bot admin Melvin posts as: the worker posts with it, the ingress tells Melvin's own events from the team's. */
const melvinAdminId = optional(z.string().regex(/^\d+$/, 'must be a numeric Intercom admin id').default('8918000'));

/** A variable holding a JSON object, parsed and checked against `schema`; what is wrong is named. */
function jsonOf<T>(schema: z.ZodType<T>, shape: string) {
  return (value: string, ctx: z.RefinementCtx<string>): T => {
    let json: unknown;
    try {
      json = JSON.parse(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: `must be a JSON object of ${shape}` });
      return z.NEVER;
    }
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) {
      const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
      ctx.addIssue({ code: 'custom', message: `${where}${issue.message}` });
    }
    return z.NEVER;
  };
}

const ESCALATION_KINDS = Object.keys(ESCALATION_TABLE) as [EscalationKind, ...EscalationKind[]];
const HandoverTexts = z.partialRecord(z.enum(ESCALATION_KINDS), z.string().trim().max(1000));

const TurnEnv = z.object({
  MAX_HOPS: optional(z.coerce.number().int().min(1).max(5).default(DEFAULT_MAX_HOPS)),
  SNOOZE_SECONDS: optional(
    z.coerce
      .number()
      .int()
      .min(0)
      .max(7 * 24 * 3600)
      .default(DEFAULT_SNOOZE_SECONDS),
  ),
  /** How long a conversation's workflow waits for the next user message after a turn; 0 ends it after each turn. */
  QUIET_PERIOD_SECONDS: optional(
    z.coerce
      .number()
      .int()
      .min(0)
      .max(90 * 24 * 3600)
      .default(DEFAULT_QUIET_PERIOD_SECONDS),
  ),
  /** `auto` sends validated replies; `approve` waits for a lead's decision on each; `shadow` only notes them. */
  REPLY_MODE: optional(z.enum(REPLY_MODES).default('auto')),
  /** Approval mode: how long a draft waits for a decision before the team takes the conversation. */
  APPROVAL_TIMEOUT_SECONDS: optional(
    z.coerce
      .number()
      .int()
      .min(10)
      .max(7 * 24 * 3600)
      .default(DEFAULT_APPROVAL_TIMEOUT_SECONDS),
  ),
  /** The data one turn may gather, tool and docs results together; what is over it is left out and recorded. */
  TURN_DATA_BUDGET_KB: optional(
    z.coerce
      .number()
      .int()
      .min(32)
      .max(1024)
      .default(DEFAULT_DATA_BUDGET_BYTES / 1024),
  ),
  /** How long a tool's result stays fresh for the conversation's later turns; 0 never reuses one. */
  TOOL_RESULT_TTL_SECONDS: optional(
    z.coerce
      .number()
      .int()
      .min(0)
      .max(24 * 3600)
      .default(600),
  ),
  /** JSON: per tool name, seconds that replace TOOL_RESULT_TTL_SECONDS (e.g. `{"get_user_payments":60}`). */
  TOOL_RESULT_TTLS: optional(
    z
      .string()
      .default('{}')
      .transform(
        jsonOf(
          z.record(
            z.string(),
            z
              .number()
              .int()
              .min(0)
              .max(24 * 3600),
          ),
          'tool name → seconds',
        ),
      ),
  ),
  /** What the user is told on a hand-over. Not `optional`: set empty, it means "tell the user nothing". */
  HANDOVER_MESSAGE: z.string().trim().max(1000).default(DEFAULT_HANDOVER_MESSAGE),
  /** JSON: per escalation kind, a text that replaces HANDOVER_MESSAGE; `""` tells the user nothing for that kind. */
  HANDOVER_MESSAGES: optional(z.string().default('{}').transform(jsonOf(HandoverTexts, 'escalation kind → text'))),
});

const WorkerEnv = TemporalEnv.extend({
  INTERCOM_API_KEY: required('the Intercom access token'),
  INTERCOM_BASE_URL: optional(url.default('https://api.intercom.io')),
  MELVIN_ADMIN_ID: melvinAdminId,
  MCP_SERVERS: required('at least one MCP server').transform((value, ctx) => {
    try {
      return parseMcpServers(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
      return z.NEVER;
    }
  }),
  OPENAI_API_KEY: required('the API key of the OpenAI-compatible endpoint'),
  OPENAI_BASE_URL: optional(url.default('https://api.openai.com/v1')),
  MODEL_NAME: optional(z.string().min(1).default('gpt-4o-mini')),
  /** How plan, coverage and draft ask for JSON: `auto` steps down from strict structured outputs when refused. */
  LLM_RESPONSE_FORMAT: optional(z.enum(['auto', 'json_schema', 'json_object', 'none']).default('auto')),
  VALIDATION_ENDPOINT: optional(url),
  VALIDATION_API_KEY: required('the validation service API key'),
  LANGSMITH_API_KEY: optional(z.string().min(1).optional()),
  LANGSMITH_ENDPOINT: optional(url.default('https://api.smith.langchain.com')),
  LOG_LEVEL: optional(z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']).default('INFO')),
  /** Where the worker serves the Temporal SDK's Prometheus metrics. */
  WORKER_METRICS_ADDRESS: optional(hostPort.default('127.0.0.1:9464')),
  LANGSMITH_TRACING: optional(z.enum(['true', 'false']).default('false')),
  LANGSMITH_PROJECT: optional(z.string().min(1).default('melvin')),
}).superRefine((env, ctx) => {
  requirePayloadKeys(env, ctx);
  if (env.LANGSMITH_TRACING === 'true' && !env.LANGSMITH_API_KEY) {
    ctx.addIssue({ code: 'custom', path: ['LANGSMITH_TRACING'], message: 'tracing needs LANGSMITH_API_KEY' });
  }
});

const IngressEnv = TemporalEnv.extend(TurnEnv.shape)
  .extend({
    INTERCOM_CLIENT_SECRET: required('the Intercom app client secret that signs webhooks'),
    MELVIN_ADMIN_ID: melvinAdminId,
    ADMIN_API_TOKEN: optional(z.string().min(16, 'must be at least 16 characters').optional()),
    INGRESS_HOST: optional(z.string().min(1).default('127.0.0.1')),
    INGRESS_PORT: optional(z.coerce.number().int().min(0).max(65535).default(8780)),
    /** Where the ingress serves its Prometheus metrics: apart from the public webhook port. */
    INGRESS_METRICS_ADDRESS: optional(hostPort.default('127.0.0.1:9465')),
    /** Origins (comma-separated) whose Temporal UI may call the codec endpoint from the browser. */
    TEMPORAL_UI_ORIGIN: optional(
      z
        .string()
        .default('http://localhost:8233,http://127.0.0.1:8233')
        .transform((value) => value.split(',').map((origin) => origin.trim().replace(/\/$/, '')))
        .pipe(
          z.array(
            z.url({ protocol: /^https?$/, error: 'each origin must be an http(s) URL, e.g. http://localhost:8233' }),
          ),
        ),
    ),
  })
  .superRefine(requirePayloadKeys);

function load<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => {
    const missing = issue.code === 'invalid_type' && issue.input === undefined && !issue.message.startsWith('required');
    return `  ${issue.path.join('.')}: ${missing ? 'required' : issue.message}`;
  });
  throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
}

/** Every variable a Melvin process reads, for the deployment files' checks. */
export const CONFIGURATION_VARIABLES = [
  ...new Set([...Object.keys(TurnEnv.shape), ...Object.keys(WorkerEnv.shape), ...Object.keys(IngressEnv.shape)]),
].sort();

export type TemporalConfig = z.infer<typeof TemporalEnv>;
export type TurnConfig = z.infer<typeof TurnEnv>;
export type WorkerConfig = z.infer<typeof WorkerEnv>;
export type IngressConfig = z.infer<typeof IngressEnv>;

export const loadTemporalConfig = (env: NodeJS.ProcessEnv = process.env): TemporalConfig =>
  load(TemporalEnv.superRefine(requirePayloadKeys), env);
export const loadTurnConfig = (env: NodeJS.ProcessEnv = process.env): TurnConfig => load(TurnEnv, env);

/**
 * Each escalation kind's hand-over text: its own from HANDOVER_MESSAGES, else the kind's default while HANDOVER_MESSAGE
 * is left as it is (a partial answer's), else HANDOVER_MESSAGE ("" sends none).
 */
export function handoverMessages(config: TurnConfig): Record<EscalationKind, string> {
  const kindDefault = (kind: EscalationKind) =>
    config.HANDOVER_MESSAGE === DEFAULT_HANDOVER_MESSAGE ? DEFAULT_KIND_HANDOVER_MESSAGES[kind] : undefined;
  return Object.fromEntries(
    ESCALATION_KINDS.map((kind) => [
      kind,
      config.HANDOVER_MESSAGES[kind] ?? kindDefault(kind) ?? config.HANDOVER_MESSAGE,
    ]),
  ) as Record<EscalationKind, string>;
}
export const loadWorkerConfig = (env: NodeJS.ProcessEnv = process.env): WorkerConfig => load(WorkerEnv, env);
export const loadIngressConfig = (env: NodeJS.ProcessEnv = process.env): IngressConfig => load(IngressEnv, env);

/** How every Melvin process connects to Temporal: an API key (Temporal Cloud) switches TLS on. */
export function temporalConnectionOptions(config: Pick<TemporalConfig, 'TEMPORAL_ADDRESS' | 'TEMPORAL_API_KEY'>) {
  return {
    address: config.TEMPORAL_ADDRESS,
    tls: config.TEMPORAL_API_KEY ? true : undefined,
    apiKey: config.TEMPORAL_API_KEY,
  };
}

/**
 * The data converter of every Melvin process that talks to Temporal: payloads encrypted with MELVIN_PAYLOAD_KEYS, and
 * `readOnlyKeys` decrypting besides. Without keys `warn` hears that nothing is encrypted: personal data then sits in
 * Temporal in plain text.
 */
export function temporalDataConverter(
  config: Pick<TemporalConfig, 'MELVIN_PAYLOAD_KEYS'>,
  options: { warn?: (warning: string) => void; readOnlyKeys?: readonly PayloadKey[] } = {},
): DataConverter {
  if (!config.MELVIN_PAYLOAD_KEYS) {
    options.warn?.(
      'payload encryption is off: MELVIN_PAYLOAD_KEYS is unset, so conversations are stored in plain text',
    );
  }
  return createDataConverter(config.MELVIN_PAYLOAD_KEYS, options.readOnlyKeys);
}
