// The ingress process: serves the Intercom webhook, the operator API, the codec endpoint, the report page (with its
// analysis agent) and /healthz on INGRESS_PORT.
import http from 'node:http';
import { Client, Connection } from '@temporalio/client';
import OpenAI from 'openai';
import { ConfigError, analysisSettings, loadIngressConfig } from '../config/environment';
import { temporalConnectionOptions, temporalDataConverter } from '../config/temporal-connection';
import { turnOptions } from '../operations/conversations';
import { logEvent } from '../observability/log';
import { createIngressApp } from './app';
import { openIngressOutbox } from './webhook';
import { createIngressMetrics } from './metrics';

async function main(): Promise<void> {
  const config = loadIngressConfig();
  // With an outbox the ingress must start while Temporal is down, which is what the outbox is for: it connects at its
  // first call. Without one it connects now, so a wrong address or certificate stops the start at once.
  const connection = config.INGRESS_OUTBOX_DIR
    ? Connection.lazy(temporalConnectionOptions(config))
    : await Connection.connect(temporalConnectionOptions(config));
  const dataConverter = temporalDataConverter(config, { warn: (warning) => logEvent('warn', warning) });
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter });
  const metrics = createIngressMetrics();
  const analysis = analysisSettings(config);
  const turn = turnOptions(config.TASK_QUEUE, config);
  // The outbox's files are sealed with the same keys as Temporal's payloads, when there are keys.
  const codec = config.MELVIN_PAYLOAD_KEYS?.length ? dataConverter.payloadCodecs?.[0] : undefined;
  const outbox = config.INGRESS_OUTBOX_DIR
    ? await openIngressOutbox(config.INGRESS_OUTBOX_DIR, client, turn, metrics, codec)
    : undefined;
  if (outbox) logEvent('info', 'ingress outbox open', { dir: config.INGRESS_OUTBOX_DIR, ...outbox.backlog });
  const app = createIngressApp({
    outbox,
    client,
    metrics,
    clientSecret: config.INTERCOM_CLIENT_SECRET,
    melvinAdminId: config.MELVIN_ADMIN_ID,
    adminApiToken: config.ADMIN_API_TOKEN,
    temporalUiOrigins: config.TEMPORAL_UI_ORIGIN,
    turn,
    // One retry of the SDK's own: a lead waits on the answer, and no Temporal retry policy stands behind it.
    analysis: analysis
      ? {
          openai: new OpenAI({ baseURL: analysis.baseURL, apiKey: analysis.apiKey, maxRetries: 1, timeout: 60_000 }),
          model: analysis.model,
        }
      : undefined,
  });
  const server = app.listen(config.INGRESS_PORT, config.INGRESS_HOST, () => {
    logEvent('info', 'ingress listening', { url: `http://${config.INGRESS_HOST}:${config.INGRESS_PORT}` });
  });
  const [metricsHost, metricsPort] = config.INGRESS_METRICS_ADDRESS.split(':') as [string, string];
  const metricsServer = http
    .createServer((req, res) => {
      if (req.url !== '/metrics') return res.writeHead(404).end();
      void metrics.registry
        .metrics()
        .then((body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body));
    })
    .listen(Number(metricsPort), metricsHost, () => {
      logEvent('info', 'ingress metrics listening', { url: `http://${config.INGRESS_METRICS_ADDRESS}/metrics` });
    });
  const stop = () => {
    logEvent('info', 'ingress stopping');
    metricsServer.close();
    server.close(() => {
      // What the outbox has not forwarded stays in its journal for the next start.
      void (outbox?.close() ?? Promise.resolve()).then(() => connection.close()).finally(() => process.exit(0));
    });
    server.closeAllConnections();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
