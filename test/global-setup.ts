// Runs once before the tests: finds or builds the Temporal CLI and hands its path to every test worker.
import { findTemporalCli } from '../scripts/temporal-cli';

export default async function globalSetup(): Promise<void> {
  const cli = await findTemporalCli((line) => process.stderr.write(`${line}\n`));
  if (cli) process.env.TEMPORAL_CLI_PATH = cli;
}
