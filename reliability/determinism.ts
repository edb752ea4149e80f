// The determinism gate: every committed history replays with the current workflow code, and a changed one is caught.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { createDataConverter, generatePayloadKey } from '../src/payload-codec';
import { check, type Report } from './report';

export const HISTORIES_DIR = path.join(__dirname, '..', 'test', 'histories');
export const WORKFLOWS = require.resolve('../src/workflows');
/** A copy of the workflow with one extra activity first: replaying any history with it must fail. */
export const CHANGED_WORKFLOWS = require.resolve('../test/fixtures/nondeterministic-workflows');

export function committedHistories(): { workflowId: string; history: unknown }[] {
  return readdirSync(HISTORIES_DIR)
    .filter((file) => file.endsWith('.json'))
    .map((file) => ({
      workflowId: file,
      history: JSON.parse(readFileSync(path.join(HISTORIES_DIR, file), 'utf8')) as unknown,
    }));
}

/**
 * Each history's replay error, if any, by file name. The worker replays as in production, through the encrypting data
 * converter: histories recorded in plain text must still read.
 */
export async function replayAll(workflowsPath: string): Promise<Map<string, Error | undefined>> {
  const results = new Map<string, Error | undefined>();
  const dataConverter = createDataConverter([generatePayloadKey('replay')]);
  for await (const result of Worker.runReplayHistories({ workflowsPath, dataConverter }, committedHistories())) {
    results.set(result.workflowId, result.error);
  }
  return results;
}

export async function determinism(): Promise<Report> {
  const current = await replayAll(WORKFLOWS);
  const changed = await replayAll(CHANGED_WORKFLOWS);
  const failing = [...current].filter(([, error]) => error).map(([file]) => file);
  const caught = [...changed.values()].filter((error) => error instanceof DeterminismViolationError).length;
  return {
    experiment: 'determinism',
    figures: [
      ['committed histories replayed', current.size],
      ['replays that failed with the current code', failing.length],
      ['replays with a changed workflow caught as non-deterministic', `${caught} / ${changed.size}`],
    ],
    checks: [
      check('every history replays with the current code', failing.length === 0, failing.join(', ')),
      check('a non-deterministic change is caught', changed.size > 0 && caught === changed.size),
    ],
  };
}
