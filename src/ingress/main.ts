// The ingress process: serves the Intercom webhook, the operator API and /healthz on INGRESS_PORT.
import { Client, Connection } from '@temporalio/client';
import { ConfigError, loadIngressConfig } from '../config';
import { logEvent } from '../log';
import { createIngressApp } from './app';

async function main(): Promise<void> {
  const config = loadIngressConfig();
  const connection = await Connection.connect({
    address: config.TEMPORAL_ADDRESS,
    tls: config.TEMPORAL_API_KEY ? true : undefined,
    apiKey: config.TEMPORAL_API_KEY,
  });
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const app = createIngressApp({
    client,
    clientSecret: config.INTERCOM_CLIENT_SECRET,
    adminApiToken: config.ADMIN_API_TOKEN,
    turn: { taskQueue: config.TASK_QUEUE, maxHops: config.MAX_HOPS, snoozeSeconds: config.SNOOZE_SECONDS },
  });
  const server = app.listen(config.INGRESS_PORT, config.INGRESS_HOST, () => {
    logEvent('info', 'ingress listening', { url: `http://${config.INGRESS_HOST}:${config.INGRESS_PORT}` });
  });
  const stop = () => {
    logEvent('info', 'ingress stopping');
    server.close(() => {
      void connection.close().finally(() => process.exit(0));
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
