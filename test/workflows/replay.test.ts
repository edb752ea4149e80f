// The determinism gate: every committed history replays with the current workflow code, and a changed one is caught.
import { DeterminismViolationError } from '@temporalio/workflow';
import { CHANGED_WORKFLOWS, WORKFLOWS, committedHistories, replayAll } from '../../reliability/determinism';
import { quietRuntime } from '../helpers/runtime';

quietRuntime();

test('at least a 1-hop success and a 2-hop escalation are committed', () => {
  expect(committedHistories().map((h) => h.workflowId)).toEqual(
    expect.arrayContaining(['one-hop-success.json', 'two-hop-escalation.json']),
  );
});

test('every committed history replays with the current workflow code', async () => {
  const results = await replayAll(WORKFLOWS);
  expect(results.size).toBe(committedHistories().length);
  for (const [file, error] of results) expect({ file, error }).toEqual({ file, error: undefined });
});

test('a non-deterministic change to the workflow fails the replay', async () => {
  const results = await replayAll(CHANGED_WORKFLOWS);
  expect(results.size).toBeGreaterThan(0);
  for (const error of results.values()) expect(error).toBeInstanceOf(DeterminismViolationError);
});
