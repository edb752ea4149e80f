// Keeps a run's history for the determinism gate (test/workflows/replay.test.ts) when RECORD_HISTORIES is set. Histories
// are never re-recorded in place: each is kept under its name and the day it was recorded (and the value of
// RECORD_HISTORIES when it is not `1`, for a second change the same day), beside those of older code, so the runs of
// every version of the workflow keep replaying (the gate also replays every version ever committed).
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';

export const HISTORIES = path.join(__dirname, '..', 'histories');

export async function keepHistory(handle: WorkflowHandle, name: string): Promise<void> {
  const tag = process.env.RECORD_HISTORIES;
  if (!tag) return;
  const day = new Date().toISOString().slice(0, 10);
  const file = path.join(HISTORIES, `${name}-${day}${tag === '1' ? '' : `-${tag}`}.json`);
  if (existsSync(file)) return;
  writeFileSync(file, `${historyToJSON(await handle.fetchHistory())}\n`);
}
