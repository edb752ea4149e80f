// The ingress's Prometheus metrics: deliveries by topic and outcome, and how long each took to acknowledge.
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type DeliveryOutcome =
  | 'signalled'
  | 'duplicate'
  | 'ping'
  | 'ignored'
  | 'bad_signature'
  | 'bad_json'
  | 'invalid'
  | 'too_large'
  | 'temporal_unavailable'
  /** Temporal refused the delivery for a reason that a redelivery cannot fix: see the ingress's error log. */
  | 'temporal_rejected'
  | 'error';

export interface IngressMetrics {
  registry: Registry;
  deliveries: Counter<'topic' | 'outcome'>;
  ackSeconds: Histogram<'outcome'>;
}

export function createIngressMetrics(): IngressMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'melvin_ingress_' });
  return {
    registry,
    deliveries: new Counter({
      name: 'melvin_ingress_deliveries_total',
      help: 'Intercom webhook deliveries, by topic and outcome',
      labelNames: ['topic', 'outcome'],
      registers: [registry],
    }),
    ackSeconds: new Histogram({
      name: 'melvin_ingress_ack_seconds',
      help: 'Time from receiving a webhook delivery to answering it',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
  };
}
