// The worker's runtime telemetry: JSON log lines that name the conversation, and the SDK's Prometheus metrics.
import { DefaultLogger, Runtime, type LogEntry, type LogLevel } from '@temporalio/worker';
import { writeLogLine } from './log';
import { conversationIdOf } from './shared';

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
