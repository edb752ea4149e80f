// `npm start`: the whole of Melvin on this machine with no configuration, until Ctrl-C.
import path from 'node:path';
import { SANDBOX_MODEL_NAME } from '../sandbox/model/server';
import { SANDBOX_SECRETS } from '../sandbox/services';
import { devDataDir, devPayloadKeysFile, ensureDevPayloadKeys } from '../src/config/dev-payload-keys';
import { codecEndpointUrl } from '../src/ingress/codec-routes';
import { ModelEnvironment, keyWithEndpoint, workerModelEnvironment } from '../harness/model-environment';
import { portsFromEnv, startDevServer, startStack } from '../harness/stack';
import { findTemporalCli } from '../harness/temporal-cli';

/** The model variables `npm start` was given, checked before anything starts; a wrong one stops it, named. */
function modelEnvironment(): ModelEnvironment {
  const parsed = ModelEnvironment.refine(keyWithEndpoint.check, {
    path: keyWithEndpoint.path,
    message: keyWithEndpoint.message,
  }).safeParse(process.env);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  throw new Error(`The model settings are wrong: ${problems.join('; ')}`);
}

async function main(): Promise<void> {
  const model = modelEnvironment();
  const ports = portsFromEnv();
  const temporalCli = await findTemporalCli();
  console.log('Starting the Temporal dev server, the sandbox, the worker and the ingress…');
  const dataDir = devDataDir();
  const payloadKeys = ensureDevPayloadKeys(dataDir);
  const codecEndpoint = codecEndpointUrl(`http://127.0.0.1:${ports.ingress}`, SANDBOX_SECRETS.adminApiToken);
  const temporal = await startDevServer({
    port: ports.temporal,
    uiPort: ports.temporalUi,
    dataDir,
    cli: temporalCli,
    payloadKeys,
    uiCodecEndpoint: codecEndpoint,
  });
  const stack = await startStack({
    ports,
    temporal,
    echo: (line) => console.log(line),
    workerLogLevel: process.env.LOG_LEVEL ?? 'WARN',
    // The resolved-conversation index in the embedded PostgreSQL (PGlite with pgvector) beside the dev server's
    // history, unless a PostgreSQL of your own is named.
    workerEnv: {
      ...(process.env.INDEX_DATABASE_URL
        ? { INDEX_DATABASE_URL: process.env.INDEX_DATABASE_URL }
        : { INDEX_DATA_DIR: path.join(dataDir, 'resolved-index') }),
      // `OPENAI_BASE_URL=… OPENAI_API_KEY=… npm start`: the inbox runs on that model instead of the sandbox's.
      ...(model.OPENAI_BASE_URL && workerModelEnvironment(model)),
    },
  });
  console.log(`
Melvin is running.

  Inbox (talk to Melvin):   ${stack.urls.inbox}
  Temporal UI:              ${stack.urls.temporalUi}
  Temporal frontend:        ${stack.urls.temporal}
  Webhook (ingress):        ${stack.urls.webhook}
  Operator API:             ${stack.urls.ingress}/conversations/<id>/escalate (bearer ${SANDBOX_SECRETS.adminApiToken})
  Reports (support leads):  ${stack.urls.ingress}/report#token=${encodeURIComponent(SANDBOX_SECRETS.adminApiToken)}
  Codec (for the UI):       ${codecEndpoint}
  Metrics:                  ${stack.urls.workerMetrics} (worker), ${stack.urls.ingressMetrics} (ingress)
  Sandbox control API:      ${stack.urls.sandboxControl}

Send a message: open the inbox, pick a talent, type a question ("When will I get paid?") and press
"Start conversation"; Melvin's reply and its Melvin Status appear within seconds. Or run the scenarios:
  npm run scenario -- scenarios

${modelLine(model)} Workflow history is kept in .data/temporal.db
(MELVIN_DATA_DIR moves it), its payloads encrypted with the development key ${payloadKeys[0]!.id} in
${devPayloadKeysFile(dataDir)}: the Temporal UI shows them through the codec endpoint above, and
npm run melvin on this machine reads them with no configuration.
Press Ctrl-C to stop.
`);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    console.log('Stopping…');
    void stack.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

/** Which model answers: the endpoint the environment named, or the sandbox's stand-in. */
function modelLine(model: ModelEnvironment): string {
  if (model.OPENAI_BASE_URL)
    return `The model is ${model.MODEL_NAME} at ${model.OPENAI_BASE_URL} (from OPENAI_BASE_URL).`;
  return (
    `The model is the sandbox stand-in "${SANDBOX_MODEL_NAME}" (deterministic rules, no LLM); set OPENAI_BASE_URL,\n` +
    'OPENAI_API_KEY and MODEL_NAME to run on a real one.'
  );
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
