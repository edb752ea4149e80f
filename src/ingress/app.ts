// The ingress's HTTP app: the Intercom webhook (./webhook), the operator API (./operator-routes), the codec endpoint for
// the Temporal UI (./codec-routes), the support leads' report (./report-routes), health, and the answers to the rest.
import express, { type NextFunction, type Request, type Response } from 'express';
import { logEvent } from '../observability/log';
import { errorMessage } from '../observability/error-message';
import { codecRoutes } from './codec-routes';
import { createIngressMetrics, type IngressMetrics } from './metrics';
import { operatorCheck, operatorRoutes, type OperatorOptions } from './operator-routes';
import { reportRoutes, type ReportOptions } from './report-routes';
import { MAX_BODY_BYTES, webhookRoutes, type WebhookOptions } from './webhook';

export interface IngressOptions extends WebhookOptions, OperatorOptions, ReportOptions {
  metrics?: IngressMetrics;
}

export function createIngressApp(options: IngressOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  const operatorAllowed = operatorCheck(options.adminApiToken);
  app.use(webhookRoutes(options, options.metrics ?? createIngressMetrics()));
  app.use(operatorRoutes(options, operatorAllowed));
  app.use(
    codecRoutes({
      codecs: options.client.options.loadedDataConverter.payloadCodecs,
      adminApiToken: options.adminApiToken,
      allowedOrigins: options.temporalUiOrigins ?? [],
      operatorAllowed,
    }),
  );
  app.use(reportRoutes(options, operatorAllowed));

  const outboxHealth = () => (options.outbox ? { outbox: options.outbox.backlog } : {});
  app.get('/healthz', async (_req, res) => {
    try {
      await options.client.withDeadline(Date.now() + 2_000, () =>
        options.client.connection.workflowService.getSystemInfo({}),
      );
      res.json({ status: 'ok', temporal: 'serving', ...outboxHealth() });
    } catch (err) {
      // With an outbox the webhook still takes deliveries (what waits for Temporal is in `outbox`), so it stays
      // healthy: a proxy or orchestrator routing by health would otherwise stop deliveries during the very outage the
      // outbox is there to absorb. Without one, deliveries are refused until Temporal answers.
      if (options.outbox) res.json({ status: 'degraded', temporal: errorMessage(err), ...outboxHealth() });
      else res.status(503).json({ status: 'unavailable', temporal: errorMessage(err) });
    }
  });

  app.use((_req, res) => {
    res.status(404).json({ error: 'not found' });
  });
  app.use(
    (
      err: Error & { status?: number; type?: string; limit?: number },
      _req: Request,
      res: Response,
      _next: NextFunction,
    ) => {
      if (err.type === 'entity.too.large') {
        res.locals.outcome = 'too_large';
        logEvent('error', 'webhook refused: body too large', { limit: err.limit ?? MAX_BODY_BYTES });
        return res.status(413).json({ error: `the body is larger than ${err.limit ?? MAX_BODY_BYTES} bytes` });
      }
      const status = err.status && err.status >= 400 && err.status < 500 ? err.status : 500;
      if (status === 500) logEvent('error', 'ingress error', { error: err.message });
      res.status(status).json({ error: status === 500 ? 'internal error' : err.message });
    },
  );
  return app;
}
