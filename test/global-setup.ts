// Runs once before the tests: finds or builds the Temporal CLI, probes what the end-to-end tests need from the machine
// (those that cannot run here are skipped with the reason, or fail with it under CI=true), and prepares the tools this
// run's files use, so that a machine with empty caches builds them here rather than inside a test's timeout.
import { findTemporalCli } from '../harness/temporal-cli';
import { prepareMachineTools } from './helpers/machine-tools';
import { probeRequirements } from './helpers/requirements';

/** What the setup reads of jest's global config: Jest 30's path patterns of the run (`jest test/e2e`). */
interface RunConfig {
  testPathPatterns?: { patterns?: string[] };
}

export default async function globalSetup(globalConfig: RunConfig): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const missing = await probeRequirements();
  for (const [need, reason] of Object.entries(missing)) log(`\nNot on this machine: ${need} (${reason})`);
  const [cli] = await Promise.all([
    findTemporalCli(log),
    prepareMachineTools(globalConfig.testPathPatterns?.patterns ?? [], missing, log),
  ]);
  if (cli) process.env.TEMPORAL_CLI_PATH = cli;
}
