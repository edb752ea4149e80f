// Replays the histories a model test recorded: each that does not replay is written to test-output/model-failures/, and
// its error is returned with the part that names the history event the replay could not match.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createDataConverter, generatePayloadKey } from '../../src/encryption/payload-codec';

export const FAILURES = path.join(__dirname, '..', '..', 'test-output', 'model-failures');

/** A run's history, named for whoever reads a replay's failure. */
export type Recorded = { workflowId: string; history: unknown };

/**
 * The SDK's message opens with a paragraph on nondeterminism in general; the event it could not match (its id and
 * type) comes after it, where a cut at a fixed length lost it once (a failure in CI that could not be told apart).
 */
export function replayErrorText(message: string): string {
  const detail = message.search(/\[TMPRL\d+\]/);
  return detail < 0 ? message.slice(0, 400) : message.slice(detail, detail + 400);
}

/** Why each of `histories` did not replay on `bundle`: none when all replayed. */
export async function replayErrors(bundle: WorkflowBundleWithSourceMap, histories: Recorded[]): Promise<string[]> {
  const errors: string[] = [];
  const dataConverter = createDataConverter([generatePayloadKey('replay')]);
  for await (const result of Worker.runReplayHistories({ workflowBundle: bundle, dataConverter }, histories)) {
    if (!result.error) continue;
    const file = path.join(FAILURES, `replay ${result.workflowId.replace(/[^\w-]+/g, '-')}.json`);
    errors.push(`${result.workflowId}: ${replayErrorText(result.error.message)} (history: ${file})`);
    mkdirSync(FAILURES, { recursive: true });
    const { history } = histories.find((h) => h.workflowId === result.workflowId)!;
    writeFileSync(file, JSON.stringify(history));
  }
  return errors;
}
