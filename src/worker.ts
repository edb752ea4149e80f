// The worker process: wires real clients (Intercom, MCP, OpenAI, LangSmith, validation) to the activities and runs them.
import { LangSmithPlugin } from '@temporalio/langsmith';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { IntercomClient } from 'intercom-client';
import { wrapOpenAI } from 'langsmith/wrappers';
import { createActivities } from './activities';
import { createOpenAiClient } from './activities/llm';
import { McpConnections } from './activities/mcp';
import { createLangSmithClient } from './activities/prompts';
import { ConfigError, loadWorkerConfig, temporalConnectionOptions, temporalDataConverter } from './config';
import { installWorkerRuntime, workerSettings } from './worker-telemetry';

async function main(): Promise<void> {
  const config = loadWorkerConfig();
  installWorkerRuntime({ logLevel: config.LOG_LEVEL, metricsAddress: config.WORKER_METRICS_ADDRESS });
  const connection = await NativeConnection.connect(temporalConnectionOptions(config));
  const mcp = new McpConnections(config.MCP_SERVERS);
  const langsmith = config.LANGSMITH_API_KEY
    ? createLangSmithClient({ apiKey: config.LANGSMITH_API_KEY, apiUrl: config.LANGSMITH_ENDPOINT })
    : undefined;
  // With tracing off nothing is wrapped and no plugin is loaded, so no trace request can leave the process.
  const tracing = config.LANGSMITH_TRACING === 'true';
  const openai = createOpenAiClient({ apiKey: config.OPENAI_API_KEY, baseURL: config.OPENAI_BASE_URL });
  try {
    const worker = await Worker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TASK_QUEUE,
      dataConverter: temporalDataConverter(config, { warn: (warning) => Runtime.instance().logger.warn(warning) }),
      workflowsPath: require.resolve('./workflows'),
      plugins: tracing
        ? [new LangSmithPlugin({ client: langsmith, projectName: config.LANGSMITH_PROJECT, addTemporalRuns: true })]
        : [],
      activities: createActivities({
        // SDK retries are off everywhere: Temporal's retry policies are the only retry layer.
        intercom: new IntercomClient({
          token: config.INTERCOM_API_KEY,
          baseUrl: config.INTERCOM_BASE_URL,
          maxRetries: 0,
        }),
        adminId: config.MELVIN_ADMIN_ID,
        mcp,
        mcpToolPolicy: config.MCP_TOOL_POLICY,
        openai: tracing ? wrapOpenAI(openai) : openai,
        model: config.MODEL_NAME,
        responseFormat: config.LLM_RESPONSE_FORMAT,
        langsmith,
        validation: { endpoint: config.VALIDATION_ENDPOINT, apiKey: config.VALIDATION_API_KEY },
      }),
    });
    Runtime.instance().logger.info('worker settings', { settings: workerSettings(worker.options) });
    await worker.run();
  } finally {
    await mcp.close();
    await connection.close();
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err instanceof ConfigError ? err.message : err);
    process.exit(1);
  });
}
