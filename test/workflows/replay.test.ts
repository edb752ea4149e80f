// The determinism gate: every committed history replays with the current workflow code, and a changed one is caught.
import { DeterminismViolationError } from '@temporalio/workflow';
import {
  CHANGED_WORKFLOWS,
  WORKFLOWS,
  committedHistories,
  everyCommittedVersion,
  recordedPatches,
  replayAll,
  splitsAfterLocalActivities,
} from '../../reliability/determinism';
import { RULES } from '../../src/workflows/versions/patches';
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

test('every version of every history ever committed replays: one recorded again in place hides no break', async () => {
  const versions = everyCommittedVersion();
  // More versions than files: the histories of the early code were recorded again in place before this check existed.
  expect(versions.length).toBeGreaterThan(committedHistories().length);
  const results = await replayAll(WORKFLOWS, versions);
  for (const [file, error] of results) expect({ file, error }).toEqual({ file, error: undefined });
});

/**
 * The runs that record their markers first: `every-message-answered-or-handed-over` with the patches before it, or the
 * one marker of their rules (src/workflows/versions/patches.ts).
 */
const FIRST_MARKERS = new Set<string>(['every-message-answered-or-handed-over', ...RULES]);
const currentRuns = () =>
  committedHistories().filter(({ history }) => recordedPatches(history).some((p) => FIRST_MARKERS.has(p)));

/** Each history split wherever a worker stopped right after local activities could have split a workflow task. */
function splitHistories(histories: { workflowId: string; history: unknown }[]) {
  return histories.flatMap(({ workflowId, history }) =>
    splitsAfterLocalActivities(history).map((split, i) => ({
      workflowId: `${workflowId}, split ${i + 1}`,
      history: split,
    })),
  );
}

test('a worker stopped right after local activities leaves a history that replays', async () => {
  const runs = currentRuns();
  expect(runs.length).toBeGreaterThanOrEqual(5);
  const splits = splitHistories(runs);
  expect(splits.length).toBeGreaterThan(0);
  const results = await replayAll(WORKFLOWS, splits);
  for (const [file, error] of results) expect({ file, error: error?.message }).toEqual({ file, error: undefined });
});

// Runs from before recorded the turn summary's patch marker after Finalize's local activities: the same split breaks
// their replay, which is why the current runs record every marker first. This shows the check above can fail.
test('the same split of a run that records a patch marker after local activities fails its replay', async () => {
  const before = committedHistories().filter((h) => h.workflowId === 'one-hop-success.json');
  const results = await replayAll(WORKFLOWS, splitHistories(before));
  expect([...results.values()].some((error) => error instanceof DeterminismViolationError)).toBe(true);
});

test('a non-deterministic change to the workflow fails the replay', async () => {
  const results = await replayAll(CHANGED_WORKFLOWS);
  expect(results.size).toBeGreaterThan(0);
  for (const error of results.values()) expect(error).toBeInstanceOf(DeterminismViolationError);
});
