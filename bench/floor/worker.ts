// The floor's worker process, run by the bench beside Melvin's: the same runtime, connection, payload codec and worker
// options as src/worker.ts, polling a task queue of its own with the bare turn (./workflow) and its no-op activity.
import { NativeConnection, Worker } from '@temporalio/worker';
import { loadWorkerConfig } from '../../src/config/environment';
import { temporalConnectionOptions, temporalDataConverter } from '../../src/config/temporal-connection';
import { installWorkerRuntime } from '../../src/observability/worker-telemetry';
import { workerTuning } from '../../src/worker';
import * as activities from './activities';

export const FLOOR_TASK_QUEUE = 'bench-floor';
/** What the worker prints once it polls, which the bench waits for. */
export const FLOOR_READY = 'floor worker polling';

async function main(): Promise<void> {
  const config = loadWorkerConfig();
  // Melvin's runtime too: its JSON logger at the same level, and its Prometheus metrics (on a port of its own).
  installWorkerRuntime({ logLevel: config.LOG_LEVEL, metricsAddress: config.WORKER_METRICS_ADDRESS });
  const connection = await NativeConnection.connect(temporalConnectionOptions(config));
  try {
    const worker = await Worker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: FLOOR_TASK_QUEUE,
      dataConverter: temporalDataConverter(config),
      workflowsPath: require.resolve('./workflow'),
      ...workerTuning(config),
      activities,
    });
    console.log(FLOOR_READY);
    // Until SIGTERM: the SDK's runtime shuts its workers down on it.
    await worker.run();
  } finally {
    await connection.close();
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
