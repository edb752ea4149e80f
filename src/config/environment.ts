// Configuration: environment variables read once at start-up and checked with zod, failing with the variable's name.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { McpServerConfig } from '../activities/mcp';
import { DEFAULT_MCP_TOOL_POLICY, McpToolPolicy } from '../guards/mcp-tool-policy';
import { SERVER_SEPARATOR } from '../guards/tool-arguments';
import { PayloadKeys } from '../encryption/payload-codec';
import {
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  DEFAULT_DATA_BUDGET_BYTES,
  DEFAULT_HANDOVER_MESSAGE,
  DEFAULT_KIND_HANDOVER_MESSAGES,
  DEFAULT_MAX_HOPS,
  DEFAULT_QUIET_PERIOD_SECONDS,
  DEFAULT_SNOOZE_SECONDS,
  DEFAULT_TASK_QUEUE,
  DEFAULT_TONE_HANDOVER,
} from '../contract/shared';
import { REPLY_MODES } from '../contract/vocabulary';
import type { ModelTier } from '../contract/schemas';
import { ESCALATION_KINDS, type EscalationKind } from '../contract/state';
import { errorMessage } from '../observability/error-message';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** The worker's sticky cache by default: see WORKER_MAX_CACHED_WORKFLOWS. */
export const DEFAULT_CACHED_RUNS = 250;
/** The local activities a worker runs at once by default, the SDK's own: see WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES. */
export const DEFAULT_LOCAL_ACTIVITY_SLOTS = 100;
/** An empty variable counts as unset, so `FOO=` in an env file falls back to the default rather than failing oddly. */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema);
const required = (what: string) => optional(z.string({ error: `required: ${what}` }).min(1));
const url = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const responseFormat = z.enum(['auto', 'json_schema', 'json_object', 'none']);
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
  const joined = names.find((n) => n.includes(SERVER_SEPARATOR));
  if (joined)
    throw new Error(`server "${joined}": a name cannot hold "${SERVER_SEPARATOR}", which joins server and tool`);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate) throw new Error(`server name "${duplicate}" is used twice`);
  return servers;
}

/** A PEM file a variable names, read at start-up: a wrong path or a file of the wrong kind fails there, named. */
interface PemFile {
  file: string;
  pem: Buffer;
}

function pemFile(kind: 'certificate' | 'private key') {
  return optional(
    z
      .string()
      .transform((file, ctx): PemFile => {
        let pem: Buffer;
        try {
          pem = readFileSync(file);
        } catch (err) {
          ctx.addIssue({
            code: 'custom',
            message: `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`,
          });
          return z.NEVER;
        }
        try {
          if (kind === 'certificate') new X509Certificate(pem);
          else createPrivateKey(pem);
        } catch {
          ctx.addIssue({ code: 'custom', message: `${file} holds no PEM ${kind}` });
          return z.NEVER;
        }
        return { file, pem };
      })
      .optional(),
  );
}

const TemporalEnv = z.object({
  TEMPORAL_ADDRESS: optional(z.string().min(1).default('127.0.0.1:7233')),
  TEMPORAL_NAMESPACE: optional(z.string().min(1).default('default')),
  /** Temporal Cloud API key; when set the connection uses TLS (TEMPORAL_TLS=false beside it is refused). */
  TEMPORAL_API_KEY: optional(z.string().min(1).optional()),
  /** TLS with the system's CAs and no client certificate; any TEMPORAL_TLS_* file or name below switches it on too. */
  TEMPORAL_TLS: optional(z.enum(['true', 'false']).optional()),
  /** The CA that signed the server's certificate, when the system does not trust it (a private CA). */
  TEMPORAL_TLS_CA: pemFile('certificate'),
  /** mTLS: the client certificate Melvin presents, and its key. */
  TEMPORAL_TLS_CERT: pemFile('certificate'),
  TEMPORAL_TLS_KEY: pemFile('private key'),
  /** The name the server's certificate must carry, when TEMPORAL_ADDRESS is not it (an IP, a load balancer). */
  TEMPORAL_TLS_SERVER_NAME: optional(z.string().min(1).optional()),
  TASK_QUEUE: optional(z.string().min(1).default(DEFAULT_TASK_QUEUE)),
  /** `id:base64key,…` (32-byte keys): the first encrypts payloads, each decrypts those that name its id. */
  MELVIN_PAYLOAD_KEYS: optional(PayloadKeys.optional()),
  /** `required` refuses to start without MELVIN_PAYLOAD_KEYS, so a production deployment cannot store plain text. */
  MELVIN_PAYLOAD_ENCRYPTION: optional(z.enum(['optional', 'required']).default('optional')),
  /**
   * `on`: payloads of 1 KiB or more are compressed before they are encrypted. `off` for the first rollout over workers
   * of a version that cannot read them (docs/security.md, compression); every version since reads both.
   */
  MELVIN_PAYLOAD_COMPRESSION: optional(z.enum(['on', 'off']).default('on')),
});

export const TLS_SETTINGS = [
  'TEMPORAL_TLS_CA',
  'TEMPORAL_TLS_CERT',
  'TEMPORAL_TLS_KEY',
  'TEMPORAL_TLS_SERVER_NAME',
] as const;

/** The TLS variables as a whole: a client certificate comes with its own key, and TLS settings need TLS on. */
function checkTemporalTls(env: z.infer<typeof TemporalEnv>, ctx: z.RefinementCtx): void {
  const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  const { TEMPORAL_TLS_CERT: cert, TEMPORAL_TLS_KEY: key } = env;
  if (cert && !key) issue('TEMPORAL_TLS_KEY', 'required with TEMPORAL_TLS_CERT: the client certificate’s private key');
  if (key && !cert) issue('TEMPORAL_TLS_CERT', 'required with TEMPORAL_TLS_KEY: the certificate the key belongs to');
  if (cert && key && !new X509Certificate(cert.pem).checkPrivateKey(createPrivateKey(key.pem))) {
    issue('TEMPORAL_TLS_KEY', `${key.file} is not the private key of the certificate in ${cert.file}`);
  }
  // An API key sent without TLS travels in clear text to whoever is on the path.
  const set = [...TLS_SETTINGS, 'TEMPORAL_API_KEY' as const].filter((name) => env[name] !== undefined);
  if (env.TEMPORAL_TLS === 'false' && set.length) {
    issue('TEMPORAL_TLS', `is false, but ${set.join(', ')} ${set.length > 1 ? 'are' : 'is'} set: they need TLS`);
  }
}

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

/**
 * A variable holding a JSON object, parsed and checked against `schema`; what is wrong is named, with where in the
 * JSON, and in which file when the JSON came from one.
 */
function jsonOf<T>(schema: z.ZodType<T>, shape: string, file?: string) {
  const source = file ? `${file}: ` : '';
  return (value: string, ctx: Pick<z.RefinementCtx<string>, 'addIssue'>): T => {
    let json: unknown;
    try {
      json = JSON.parse(value);
    } catch (err) {
      const why = file ? ` (${errorMessage(err)})` : '';
      ctx.addIssue({ code: 'custom', message: `${source}must be a JSON object of ${shape}${why}` });
      return z.NEVER;
    }
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) {
      const where = issue.path.length ? `${issue.path.map(String).join('.')}: ` : '';
      ctx.addIssue({ code: 'custom', message: `${source}${where}${issue.message}` });
    }
    return z.NEVER;
  };
}

/** MCP_TOOL_POLICY: the file of the MCP tool policy; unset, the built-in policy for the sandbox's talent server. */
const mcpToolPolicy = optional(z.string().optional()).transform((file, ctx): McpToolPolicy => {
  if (!file) return DEFAULT_MCP_TOOL_POLICY;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `cannot read ${file}: ${errorMessage(err)}` });
    return z.NEVER;
  }
  return jsonOf(McpToolPolicy, 'server name → { tools: tool name → { identity, write } }', file)(text, ctx);
});

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
  /** `strong` hands a conversation over when Plan reads strong frustration or anger; `off` (the default) does not. */
  TONE_HANDOVER: optional(z.enum(['strong', 'off']).default(DEFAULT_TONE_HANDOVER.strong ? 'strong' : 'off')),
  /** The talent's Nth complaining turn in a conversation hands it over; 0 never does. */
  COMPLAINTS_BEFORE_HANDOVER: optional(
    z.coerce.number().int().min(0).max(20).default(DEFAULT_TONE_HANDOVER.complaints),
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
      ctx.addIssue({ code: 'custom', message: errorMessage(err) });
      return z.NEVER;
    }
  }),
  MCP_TOOL_POLICY: mcpToolPolicy,
  OPENAI_API_KEY: required('the API key of the OpenAI-compatible endpoint'),
  OPENAI_BASE_URL: optional(url.default('https://api.openai.com/v1')),
  MODEL_NAME: optional(z.string().min(1).default('gpt-4o-mini')),
  /** How plan, coverage and draft ask for JSON: `auto` steps down from strict structured outputs when refused. */
  LLM_RESPONSE_FORMAT: optional(responseFormat.default('auto')),
  // Each model tier may replace any of the four settings above; what it leaves unset is the shared setting.
  PLAN_MODEL_NAME: optional(z.string().min(1).optional()),
  PLAN_OPENAI_BASE_URL: optional(url.optional()),
  PLAN_OPENAI_API_KEY: optional(z.string().min(1).optional()),
  PLAN_LLM_RESPONSE_FORMAT: optional(responseFormat.optional()),
  DRAFT_MODEL_NAME: optional(z.string().min(1).optional()),
  DRAFT_OPENAI_BASE_URL: optional(url.optional()),
  DRAFT_OPENAI_API_KEY: optional(z.string().min(1).optional()),
  DRAFT_LLM_RESPONSE_FORMAT: optional(responseFormat.optional()),
  /** The embeddings model (and, optionally, its own endpoint and key) for the semantic tier of entity resolution. */
  EMBEDDING_MODEL_NAME: optional(z.string().min(1).default('text-embedding-3-small')),
  EMBEDDING_OPENAI_BASE_URL: optional(url.optional()),
  EMBEDDING_OPENAI_API_KEY: optional(z.string().min(1).optional()),
  /** The resolved-conversation index in PostgreSQL with pgvector (`postgres://…`); or INDEX_DATA_DIR; neither: off. */
  INDEX_DATABASE_URL: optional(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// connection string')
      .optional(),
  ),
  /** The resolved-conversation index in an embedded PostgreSQL (PGlite with pgvector) kept in this directory. */
  INDEX_DATA_DIR: optional(z.string().min(1).optional()),
  /** Seconds between the index schedule's runs. */
  INDEX_INTERVAL: optional(
    z.coerce
      .number()
      .int()
      .min(1)
      .max(7 * 86_400)
      .default(3600),
  ),
  /** How far back (days) the index's first run looks for closed conversations. */
  INDEX_LOOKBACK_DAYS: optional(z.coerce.number().int().min(0).max(3650).default(90)),
  VALIDATION_ENDPOINT: optional(url),
  VALIDATION_API_KEY: required('the validation service API key'),
  LANGSMITH_API_KEY: optional(z.string().min(1).optional()),
  LANGSMITH_ENDPOINT: optional(url.default('https://api.smith.langchain.com')),
  LOG_LEVEL: optional(z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']).default('INFO')),
  /** Where the worker serves the Temporal SDK's Prometheus metrics. */
  WORKER_METRICS_ADDRESS: optional(hostPort.default('127.0.0.1:9464')),
  /**
   * How many conversations' runs the worker keeps in memory (the SDK's sticky cache, least recently used out first). A
   * run evicted from it replays its history, one turn long, on its next message. The default holds every turn a worker
   * can have in flight (its activity and local-activity slots, 100 each) and the latest idle runs; a conversation idle
   * beyond that costs the worker no memory (docs/decisions.md). At least 1: sdk-core keeps a run with local activities
   * running cached, and with no cache at all it fails them.
   */
  WORKER_MAX_CACHED_WORKFLOWS: optional(
    z.coerce
      .number()
      .int()
      .min(1, 'at least 1: a run must stay cached while its local activities run (docs/decisions.md)')
      .default(DEFAULT_CACHED_RUNS),
  ),
  /**
   * How many local activities the worker runs at once. Melvin's model calls are local activities, so this bounds the
   * turns a worker can have waiting on their model: with a model of seconds a call it is what runs out first, long
   * before the worker's CPU (the capacity plan in docs/performance.md).
   */
  WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: optional(
    z.coerce.number().int().min(1).default(DEFAULT_LOCAL_ACTIVITY_SLOTS),
  ),
  LANGSMITH_TRACING: optional(z.enum(['true', 'false']).default('false')),
  LANGSMITH_PROJECT: optional(z.string().min(1).default('melvin')),
}).superRefine((env, ctx) => {
  checkTemporalTls(env, ctx);
  requirePayloadKeys(env, ctx);
  if (env.INDEX_DATABASE_URL && env.INDEX_DATA_DIR) {
    ctx.addIssue({
      code: 'custom',
      path: ['INDEX_DATA_DIR'],
      message: 'set INDEX_DATABASE_URL or INDEX_DATA_DIR, not both',
    });
  }
  if (env.LANGSMITH_TRACING === 'true' && !env.LANGSMITH_API_KEY) {
    ctx.addIssue({ code: 'custom', path: ['LANGSMITH_TRACING'], message: 'tracing needs LANGSMITH_API_KEY' });
  }
  // A policy of its own naming a server MCP_SERVERS lacks is most likely a typo, which would withhold that server's
  // every tool. The built-in policy names the sandbox's server, and withholds what other servers offer.
  if (env.MCP_TOOL_POLICY === DEFAULT_MCP_TOOL_POLICY) return;
  const configured = env.MCP_SERVERS.map((s) => s.name);
  for (const name of Object.keys(env.MCP_TOOL_POLICY.servers)) {
    if (!configured.includes(name)) {
      ctx.addIssue({
        code: 'custom',
        path: ['MCP_TOOL_POLICY'],
        message: `servers.${name}: no server of that name in MCP_SERVERS (${configured.join(', ')})`,
      });
    }
  }
});

/**
 * The report's analysis agent (the ingress's `/report/ask` and `melvin report --ask`): its own model tier, `ANALYSIS_*`,
 * each setting falling back to the shared one. Optional: without a key the ingress serves the report without it.
 */
const AnalysisEnv = z.object({
  OPENAI_API_KEY: optional(z.string().min(1).optional()),
  OPENAI_BASE_URL: optional(url.default('https://api.openai.com/v1')),
  MODEL_NAME: optional(z.string().min(1).default('gpt-4o-mini')),
  ANALYSIS_MODEL_NAME: optional(z.string().min(1).optional()),
  ANALYSIS_OPENAI_BASE_URL: optional(url.optional()),
  ANALYSIS_OPENAI_API_KEY: optional(z.string().min(1).optional()),
});
export type AnalysisConfig = z.infer<typeof AnalysisEnv>;

/** The analysis tier's endpoint and model, or null when no API key is set for it. */
export function analysisSettings(config: AnalysisConfig): Omit<ModelTierSettings, 'responseFormat'> | null {
  const apiKey = config.ANALYSIS_OPENAI_API_KEY ?? config.OPENAI_API_KEY;
  if (!apiKey) return null;
  return {
    baseURL: config.ANALYSIS_OPENAI_BASE_URL ?? config.OPENAI_BASE_URL,
    apiKey,
    model: config.ANALYSIS_MODEL_NAME ?? config.MODEL_NAME,
  };
}

const IngressEnv = TemporalEnv.extend(TurnEnv.shape)
  .extend(AnalysisEnv.shape)
  .extend({
    INTERCOM_CLIENT_SECRET: required('the Intercom app client secret that signs webhooks'),
    MELVIN_ADMIN_ID: melvinAdminId,
    ADMIN_API_TOKEN: optional(z.string().min(16, 'must be at least 16 characters').optional()),
    INGRESS_HOST: optional(z.string().min(1).default('127.0.0.1')),
    INGRESS_PORT: optional(z.coerce.number().int().min(0).max(65535).default(8780)),
    /** Where the ingress serves its Prometheus metrics: apart from the public webhook port. */
    INGRESS_METRICS_ADDRESS: optional(hostPort.default('127.0.0.1:9465')),
    /**
     * A directory on a persistent volume for the ingress's outbox: set, a delivery is acknowledged once it is synced
     * there and handed to Temporal afterwards; unset, once Temporal has it.
     */
    INGRESS_OUTBOX_DIR: optional(z.string().min(1).optional()),
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
  .superRefine((env, ctx) => {
    checkTemporalTls(env, ctx);
    requirePayloadKeys(env, ctx);
  });

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
  load(TemporalEnv.superRefine(checkTemporalTls).superRefine(requirePayloadKeys), env);
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
/** One model tier's endpoint, model and response format: its own settings where given, the shared ones elsewhere. */
export interface ModelTierSettings {
  baseURL: string;
  apiKey: string;
  model: string;
  responseFormat: z.infer<typeof responseFormat>;
}

export function modelTierSettings(config: WorkerConfig): Record<ModelTier, ModelTierSettings> {
  const tier = (prefix: 'PLAN' | 'DRAFT'): ModelTierSettings => ({
    baseURL: config[`${prefix}_OPENAI_BASE_URL`] ?? config.OPENAI_BASE_URL,
    apiKey: config[`${prefix}_OPENAI_API_KEY`] ?? config.OPENAI_API_KEY,
    model: config[`${prefix}_MODEL_NAME`] ?? config.MODEL_NAME,
    responseFormat: config[`${prefix}_LLM_RESPONSE_FORMAT`] ?? config.LLM_RESPONSE_FORMAT,
  });
  return { plan: tier('PLAN'), draft: tier('DRAFT') };
}

/** The embeddings endpoint: its own settings where given, the shared endpoint and key elsewhere. */
export function embeddingSettings(config: WorkerConfig): Omit<ModelTierSettings, 'responseFormat'> {
  return {
    baseURL: config.EMBEDDING_OPENAI_BASE_URL ?? config.OPENAI_BASE_URL,
    apiKey: config.EMBEDDING_OPENAI_API_KEY ?? config.OPENAI_API_KEY,
    model: config.EMBEDDING_MODEL_NAME,
  };
}

export const loadAnalysisConfig = (env: NodeJS.ProcessEnv = process.env): AnalysisConfig => load(AnalysisEnv, env);
export const loadWorkerConfig = (env: NodeJS.ProcessEnv = process.env): WorkerConfig => load(WorkerEnv, env);
export const loadIngressConfig = (env: NodeJS.ProcessEnv = process.env): IngressConfig => load(IngressEnv, env);
