// Runs once after the tests: lists the tests skipped for what this machine lacks, so a green run never hides them.
import { skippedSummary } from './helpers/requirements';

export default function globalTeardown(): void {
  const summary = skippedSummary();
  if (summary) process.stderr.write(`\n${summary}`);
}
