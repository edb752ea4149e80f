// Runs once before the tests: finds or builds the Temporal CLI, and probes what the end-to-end tests need from the
// machine, so those that cannot run here are skipped with the reason (or fail with it under CI=true).
import { findTemporalCli } from '../scripts/temporal-cli';
import { probeRequirements } from './helpers/requirements';

export default async function globalSetup(): Promise<void> {
  const cli = await findTemporalCli((line) => process.stderr.write(`${line}\n`));
  if (cli) process.env.TEMPORAL_CLI_PATH = cli;
  const missing = Object.entries(await probeRequirements());
  for (const [need, reason] of missing) process.stderr.write(`\nNot on this machine: ${need} (${reason})\n`);
}
