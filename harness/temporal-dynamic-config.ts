// The Temporal server settings Melvin runs with on every server it starts or deploys: the dev server (as flags), the
// PostgreSQL topology and the compose deployment (as a dynamic config file, deploy/temporal/dynamicconfig.yaml).

/**
 * Each key is a server dynamic config key; its value holds for every namespace and task queue.
 *
 * - `history.transferProcessorMaxPollRPS`: every activity and workflow task a turn dispatches first passes through its
 *   history shard's transfer queue, whose reader the server limits to 20 reads a second per shard by default. A turn
 *   dispatches about twenty tasks one after another, so on a server with few shards (the dev server has one) each
 *   waited ~40 ms for the limiter once its burst was spent: most of a turn's overhead (docs/performance.md). The reader
 *   still reads only when told of new tasks, so a higher limit costs nothing while idle.
 * - `system.enableActivityEagerExecution`: an activity the workflow schedules on its own task queue comes back in the
 *   answer to the workflow task that scheduled it, when the worker has a free slot, instead of a round through
 *   matching. The activity's events and retries are the same; only the dispatch is shorter.
 * - `limit.maxIDLength`: the SQL stores keep ids in 255-character columns.
 */
export const TEMPORAL_DYNAMIC_CONFIG: Record<string, number | boolean> = {
  'history.transferProcessorMaxPollRPS': 1000,
  'system.enableActivityEagerExecution': true,
  'limit.maxIDLength': 255,
};

/** `temporal server start-dev` flags for the settings. */
export function devServerDynamicConfigFlags(): string[] {
  return Object.entries(TEMPORAL_DYNAMIC_CONFIG).flatMap(([key, value]) => [
    '--dynamic-config-value',
    `${key}=${JSON.stringify(value)}`,
  ]);
}

/** The settings as a dynamic config file's content (an object to write as YAML or JSON, which is YAML too). */
export function dynamicConfigFile(): Record<string, { value: number | boolean; constraints: object }[]> {
  return Object.fromEntries(
    Object.entries(TEMPORAL_DYNAMIC_CONFIG).map(([key, value]) => [key, [{ value, constraints: {} }]]),
  );
}
