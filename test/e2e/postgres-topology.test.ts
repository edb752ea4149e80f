// The production topology without Docker: a Temporal server built from Go modules on PostgreSQL (schema set up by
// temporal-sql-tool), with the worker, the ingress and the sandbox as separate processes; every scenario passes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ScenarioRunner, scenarioFiles, type ScenarioResult } from '../../sandbox/scenario-runner';
import {
  postgresFromEnvironment,
  startPostgresTemporal,
  TEMPORAL_SERVER_VERSION,
} from '../../harness/postgres-temporal';
import { freeStackPorts, startStack, type Stack } from '../../harness/stack';
import { describeNeeding } from '../helpers/requirements';

const ROOT = path.join(__dirname, '..', '..');
describeNeeding(['PostgreSQL', 'Go'])('the production topology on PostgreSQL', () => {
  let stack: Stack;
  // The resolved-conversation index, embedded (this machine's PostgreSQL has no pgvector): scenarios with
  // `closed_by_team` need it.
  const indexDir = mkdtempSync(path.join(tmpdir(), 'melvin-index-'));

  beforeAll(async () => {
    const temporal = await startPostgresTemporal({
      postgres: postgresFromEnvironment(),
      log: (line) => process.stderr.write(`${line}\n`),
    });
    stack = await startStack({
      ports: await freeStackPorts(),
      temporal,
      workerEnv: { INDEX_DATA_DIR: indexDir },
    });
  }, 900_000);

  afterAll(async () => {
    await stack?.stop();
    rmSync(indexDir, { recursive: true, force: true });
  });

  test(`the Temporal server ${TEMPORAL_SERVER_VERSION} on PostgreSQL runs every scenario`, async () => {
    const system = await stack.temporal.client.workflowService.getSystemInfo({});
    expect(system.serverVersion).toBe(TEMPORAL_SERVER_VERSION);
    const runner = new ScenarioRunner({ controlUrl: stack.urls.sandboxControl, client: stack.temporal.client });
    const results: ScenarioResult[] = [];
    for (const file of scenarioFiles([path.join(ROOT, 'scenarios')])) results.push(await runner.run(file));
    const failed = results
      .filter((r) => !r.passed)
      .map((r) => ({ id: r.id, error: r.error, failed: r.expectations.filter((e) => !e.passed) }));
    expect(failed).toEqual([]);
    expect(results.length).toBeGreaterThanOrEqual(20);
  }, 900_000);
});
