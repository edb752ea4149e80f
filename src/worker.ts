// The worker process: wires real clients (Intercom, MCP, OpenAI, LangSmith, validation) to the activities and runs them.
import { LangSmithPlugin } from '@temporalio/langsmith';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { IntercomClient } from 'intercom-client';
import { wrapOpenAI } from 'langsmith/wrappers';
import { createActivities, type ActivityClients } from './activities';
import type OpenAI from 'openai';
import { createOpenAiClient, type LlmEndpoint } from './activities/llm';
import { McpConnections } from './activities/mcp';
import { createLangSmithClient } from './activities/prompts';
import {
  ConfigError,
  loadWorkerConfig,
  embeddingSettings,
  modelTierSettings,
  type ModelTierSettings,
  type WorkerConfig,
} from './config/environment';
import { temporalConnectionOptions, temporalDataConverter } from './config/temporal-connection';
import { startEmbeddedIndexDatabase, type EmbeddedIndexDatabase } from './resolved-index/embedded-process';
import { ensureIndexSchedule } from './resolved-index/schedule';
import { ResolvedIndexStore } from './resolved-index/store';
import { MAX_PLANNED_CALLS } from './contract/schemas';
import { workflowBundleOptions } from './bundling/workflow-bundle';
import { installWorkerRuntime, workerSettings } from './observability/worker-telemetry';

async function main(): Promise<void> {
  const config = loadWorkerConfig();
  installWorkerRuntime({ logLevel: config.LOG_LEVEL, metricsAddress: config.WORKER_METRICS_ADDRESS });
  const connection = await NativeConnection.connect(temporalConnectionOptions(config));
  const clients = activityClients(config);
  const tracing = config.LANGSMITH_TRACING === 'true';
  const bundle = workflowBundleOptions();
  try {
    const worker = await Worker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TASK_QUEUE,
      dataConverter: temporalDataConverter(config, { warn: (warning) => Runtime.instance().logger.warn(warning) }),
      workflowsPath: bundle.workflowsPath,
      bundlerOptions: { preloadModules: bundle.preloadModules },
      interceptors: { workflowModules: bundle.workflowInterceptorModules },
      ...workerTuning(config),
      plugins: tracing
        ? [
            new LangSmithPlugin({
              client: clients.langsmith,
              projectName: config.LANGSMITH_PROJECT,
              addTemporalRuns: true,
            }),
          ]
        : [],
      activities: createActivities(clients),
    });
    Runtime.instance().logger.info('worker settings', { settings: workerSettings(worker.options) });
    if (clients.resolvedIndex) {
      // Opened now, so the first draft does not wait for the embedded database's first start; a failure here is
      // retried by the first activity that needs the store.
      clients.resolvedIndex()?.catch((err: unknown) =>
        Runtime.instance().logger.warn('the resolved-conversation index could not be opened yet', {
          error: String(err),
        }),
      );
      await scheduleIndexing(config);
    }
    await worker.run();
  } finally {
    await clients.closeIndex();
    await clients.mcp.close();
    await connection.close();
  }
}

/** The worker's slots and cache, as configured; the bench's floor worker (bench/floor/) runs with the same. */
export function workerTuning(config: WorkerConfig) {
  return {
    // Every tool call Gather schedules at once comes back with the workflow task's answer (where the server allows
    // eager activities, as Melvin's servers do): none waits for a round through matching.
    maxEagerActivityReservationsPerWorkflowTask: MAX_PLANNED_CALLS,
    maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
    maxConcurrentLocalActivityExecutions: config.WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES,
  };
}

/**
 * The worker keeps the index's schedule: production runs workers, not `npm start`, and only the worker knows whether an
 * index is configured. Every replica creates or updates it at start; the schedule runs on this worker's task queue.
 */
async function scheduleIndexing(config: WorkerConfig): Promise<void> {
  const connection = await Connection.connect(temporalConnectionOptions(config));
  try {
    const client = new Client({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      dataConverter: temporalDataConverter(config),
    });
    const outcome = await ensureIndexSchedule(client, {
      taskQueue: config.TASK_QUEUE,
      intervalSeconds: config.INDEX_INTERVAL,
      lookbackDays: config.INDEX_LOOKBACK_DAYS,
    });
    Runtime.instance().logger.info(`resolved-conversation index schedule ${outcome}`, {
      every_s: config.INDEX_INTERVAL,
    });
  } finally {
    await connection.close();
  }
}

/**
 * The index's store, opened once on first use and shared by every activity; null when none is configured. With
 * INDEX_DATA_DIR the worker runs the embedded database itself (PGlite with pgvector, as a child process).
 */
function resolvedIndexStore(
  config: WorkerConfig,
): { open: () => Promise<ResolvedIndexStore>; close: () => Promise<void> } | null {
  const { INDEX_DATABASE_URL: url, INDEX_DATA_DIR: dataDir } = config;
  if (!url && !dataDir) return null;
  let embedded: Promise<EmbeddedIndexDatabase> | null = null;
  let opening: Promise<ResolvedIndexStore> | null = null;
  const connect = async () => {
    if (url) return ResolvedIndexStore.open({ url });
    embedded ??= startEmbeddedIndexDatabase({ dataDir: dataDir! });
    return ResolvedIndexStore.open({ url: (await embedded).url });
  };
  const open = () => {
    // A failed open is forgotten, so the activity's retry opens again.
    opening ??= connect().catch((err: unknown) => {
      opening = null;
      throw err;
    });
    return opening;
  };
  const close = async () => {
    await (opening ? (await opening.catch(() => null))?.close() : undefined);
    await (embedded ? (await embedded.catch(() => null))?.stop() : undefined);
  };
  return { open, close };
}

/**
 * The real clients the activities are built from; the caller closes `mcp` and the index (`closeIndex`). The bench's LangGraph peer builds its
 * activities from them too, so both systems call the services through the same code.
 */
export function activityClients(config: WorkerConfig): ActivityClients & { closeIndex: () => Promise<void> } {
  const index = resolvedIndexStore(config);
  const langsmith = config.LANGSMITH_API_KEY
    ? createLangSmithClient({ apiKey: config.LANGSMITH_API_KEY, apiUrl: config.LANGSMITH_ENDPOINT })
    : undefined;
  const tiers = modelTierSettings(config);
  // Tiers on the same endpoint with the same key share one client (and its connections).
  const openAiClients = new Map<string, OpenAI>();
  const openai = ({ baseURL, apiKey }: Pick<ModelTierSettings, 'baseURL' | 'apiKey'>): OpenAI => {
    const key = JSON.stringify([baseURL, apiKey]);
    let client = openAiClients.get(key);
    if (!client) {
      client = createOpenAiClient({ apiKey, baseURL });
      // With tracing off nothing is wrapped and no plugin is loaded, so no trace request can leave the process.
      if (config.LANGSMITH_TRACING === 'true') client = wrapOpenAI(client);
      openAiClients.set(key, client);
    }
    return client;
  };
  const endpoint = (tier: ModelTierSettings): LlmEndpoint => ({
    openai: openai(tier),
    model: tier.model,
    responseFormat: tier.responseFormat,
  });
  return {
    // SDK retries are off everywhere: Temporal's retry policies are the only retry layer.
    intercom: new IntercomClient({ token: config.INTERCOM_API_KEY, baseUrl: config.INTERCOM_BASE_URL, maxRetries: 0 }),
    adminId: config.MELVIN_ADMIN_ID,
    mcp: new McpConnections(config.MCP_SERVERS),
    mcpToolPolicy: config.MCP_TOOL_POLICY,
    models: { plan: endpoint(tiers.plan), draft: endpoint(tiers.draft) },
    embeddings: { openai: openai(embeddingSettings(config)), model: config.EMBEDDING_MODEL_NAME },
    langsmith,
    ...(index ? { resolvedIndex: index.open } : {}),
    closeIndex: async () => index?.close(),
    validation: { endpoint: config.VALIDATION_ENDPOINT, apiKey: config.VALIDATION_API_KEY },
  };
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err instanceof ConfigError ? err.message : err);
    process.exit(1);
  });
}
