// The determinism gate: every committed history replays with the current workflow code, and a changed one is caught.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { DeterminismViolationError } from '@temporalio/workflow';
import { Worker } from '@temporalio/worker';
import { quietRuntime } from './helpers/runtime';

quietRuntime();

const HISTORIES_DIR = path.join(__dirname, 'histories');

function committedHistories() {
  return readdirSync(HISTORIES_DIR)
    .filter((file) => file.endsWith('.json'))
    .map((file) => ({
      workflowId: file,
      history: JSON.parse(readFileSync(path.join(HISTORIES_DIR, file), 'utf8')) as unknown,
    }));
}

async function replayAll(workflowsPath: string): Promise<Map<string, Error | undefined>> {
  const results = new Map<string, Error | undefined>();
  for await (const result of Worker.runReplayHistories({ workflowsPath }, committedHistories())) {
    results.set(result.workflowId, result.error);
  }
  return results;
}

test('at least a 1-hop success and a 2-hop escalation are committed', () => {
  expect(committedHistories().map((h) => h.workflowId)).toEqual(
    expect.arrayContaining(['one-hop-success.json', 'two-hop-escalation.json']),
  );
});

test('every committed history replays with the current workflow code', async () => {
  const results = await replayAll(require.resolve('../src/workflows'));
  expect(results.size).toBe(committedHistories().length);
  for (const [file, error] of results) expect({ file, error }).toEqual({ file, error: undefined });
});

test('a non-deterministic change to the workflow fails the replay', async () => {
  const results = await replayAll(require.resolve('./fixtures/nondeterministic-workflows'));
  expect(results.size).toBeGreaterThan(0);
  for (const error of results.values()) expect(error).toBeInstanceOf(DeterminismViolationError);
});
