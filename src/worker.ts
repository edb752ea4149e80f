// The worker process: wires real clients (Intercom, MCP, OpenAI, LangSmith, validation) to the activities and runs them.
import { LangSmithPlugin } from '@temporalio/langsmith';
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
  temporalConnectionOptions,
  temporalDataConverter,
  type ModelTierSettings,
  type WorkerConfig,
} from './config';
import { MAX_PLANNED_CALLS } from './schemas';
import { installWorkerRuntime, workerSettings } from './worker-telemetry';

async function main(): Promise<void> {
  const config = loadWorkerConfig();
  installWorkerRuntime({ logLevel: config.LOG_LEVEL, metricsAddress: config.WORKER_METRICS_ADDRESS });
  const connection = await NativeConnection.connect(temporalConnectionOptions(config));
  const clients = activityClients(config);
  const tracing = config.LANGSMITH_TRACING === 'true';
  try {
    const worker = await Worker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TASK_QUEUE,
      dataConverter: temporalDataConverter(config, { warn: (warning) => Runtime.instance().logger.warn(warning) }),
      workflowsPath: require.resolve('./workflows'),
      // Every tool call Gather schedules at once comes back with the workflow task's answer (where the server allows
      // eager activities, as Melvin's servers do): none waits for a round through matching.
      maxEagerActivityReservationsPerWorkflowTask: MAX_PLANNED_CALLS,
      ...(config.WORKER_MAX_CACHED_WORKFLOWS === undefined
        ? {}
        : { maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS }),
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
    await worker.run();
  } finally {
    await clients.mcp.close();
    await connection.close();
  }
}

/**
 * The real clients the activities are built from; the caller closes `mcp`. The bench's LangGraph peer builds its
 * activities from them too, so both systems call the services through the same code.
 */
export function activityClients(config: WorkerConfig): ActivityClients {
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
    validation: { endpoint: config.VALIDATION_ENDPOINT, apiKey: config.VALIDATION_API_KEY },
  };
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err instanceof ConfigError ? err.message : err);
    process.exit(1);
  });
}
