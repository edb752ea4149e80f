// The ingress's Prometheus metrics: deliveries by topic and outcome, how long each took to acknowledge, and the outbox's
// backlog.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Forwarded, Outbox, OutboxEntry } from './outbox';

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
  /** Outbox mode: synced to the outbox's journal, to be handed to Temporal by its forwarder. */
  | 'queued'
  /** Outbox mode: the journal could not be written (a full or read-only disk); answered 503. */
  | 'outbox_unwritable'
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

/** The outbox's backlog, read at each scrape: entries waiting and the age of the oldest. */
export function watchOutboxBacklog(metrics: IngressMetrics, outbox: Pick<Outbox, 'backlog'>): void {
  new Gauge({
    name: 'melvin_ingress_outbox_pending',
    help: 'Deliveries acknowledged and not yet handed to Temporal',
    registers: [metrics.registry],
    collect() {
      this.set(outbox.backlog.pending);
    },
  });
  new Gauge({
    name: 'melvin_ingress_outbox_oldest_seconds',
    help: 'How long the oldest delivery not yet handed to Temporal has waited (0 when none waits)',
    registers: [metrics.registry],
    collect() {
      this.set(outbox.backlog.oldestSeconds);
    },
  });
}

/** Counts the entries leaving the outbox, by kind and outcome: returns what the outbox calls for each. */
export function countOutboxForwards(
  metrics: IngressMetrics,
): (entry: OutboxEntry, outcome: Forwarded | 'rejected') => void {
  const forwarded = new Counter({
    name: 'melvin_ingress_outbox_forwarded_total',
    help: 'Deliveries the outbox handed to Temporal, by kind and outcome (rejected ones are in rejected.jsonl)',
    labelNames: ['kind', 'outcome'],
    registers: [metrics.registry],
  });
  return (entry, outcome) => forwarded.inc({ kind: entry.kind, outcome });
}
