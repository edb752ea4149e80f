// The worker's runtime telemetry: JSON log lines that name the conversation, and the SDK's Prometheus metrics.
import v8 from 'node:v8';
import { DefaultLogger, Runtime, type LogEntry, type LogLevel, type Worker } from '@temporalio/worker';
import { writeLogLine } from './log';
import { conversationIdOf } from '../contract/shared';

/**
 * The SDK's workflow and activity logs carry `workflowId` and `runId`; the conversation id is read off the workflow
 * ID, so every line of a run can be found by conversation.
 */
export function jsonTemporalLogger(level: LogLevel): DefaultLogger {
  return new DefaultLogger(level, (entry: LogEntry) => {
    const meta = (entry.meta ?? {}) as Record<string, unknown>;
    const workflowId = typeof meta.workflowId === 'string' ? meta.workflowId : undefined;
    const conversationId = workflowId ? conversationIdOf(workflowId) : undefined;
    const levelName = entry.level.toLowerCase();
    writeLogLine(levelName, {
      time: new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString(),
      level: levelName,
      message: entry.message,
      ...(conversationId ? { conversation_id: conversationId } : {}),
      ...meta,
    });
  });
}

/** Installs the process-wide runtime once, before any connection: JSON logs, and metrics at `metricsAddress`. */
export function installWorkerRuntime(options: { logLevel: LogLevel; metricsAddress: string }): void {
  Runtime.install({
    logger: jsonTemporalLogger(options.logLevel),
    telemetryOptions: { metrics: { prometheus: { bindAddress: options.metricsAddress } } },
  });
}

type Options = Worker['options'];
type Slots = Options['tuner']['workflowTaskSlotSupplier'];
type Pollers = Options['workflowTaskPollerBehavior'];

const slots = (s: Slots) =>
  s.type === 'fixed-size' ? s.numSlots : s.type === 'resource-based' ? `${s.minimumSlots}–${s.maximumSlots}` : s.type;
const pollers = (p: Pollers) => (p.type === 'simple-maximum' ? p.maximum : `${p.minimum}–${p.maximum}`);

/**
 * The capacity settings the worker runs with, logged once at start: Melvin sets the sticky cache and the local-activity
 * slots, and leaves the rest at the SDK's defaults, which the SDK works out for the machine, so only the running worker
 * can say what they all are.
 */
export function workerSettings(options: Options): Record<string, number | string> {
  return {
    workflow_task_slots: slots(options.tuner.workflowTaskSlotSupplier),
    activity_task_slots: slots(options.tuner.activityTaskSlotSupplier),
    local_activity_slots: slots(options.tuner.localActivityTaskSlotSupplier),
    workflow_task_pollers: pollers(options.workflowTaskPollerBehavior),
    activity_task_pollers: pollers(options.activityTaskPollerBehavior),
    max_cached_workflows: options.maxCachedWorkflows,
    heap_limit_mib: Math.round(v8.getHeapStatistics().heap_size_limit / 2 ** 20),
  };
}
