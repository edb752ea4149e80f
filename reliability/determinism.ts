// The determinism gate: every committed history replays with the current workflow code, and a changed one is caught.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { createDataConverter, generatePayloadKey } from '../src/encryption/payload-codec';
import { workflowBundleOptions } from '../src/bundling/workflow-bundle';
import { check, type Report } from '../harness/report';

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
 * Every version of every history ever committed, read from git: a history recorded again in place must not hide that
 * the runs of the code it was first recorded with no longer replay (each is named with its file and commit). Empty
 * where the tree is not a git clone.
 */
export function everyCommittedVersion(): { workflowId: string; history: unknown }[] {
  const git = (args: string[]) =>
    spawnSync('git', args, { cwd: path.join(HISTORIES_DIR, '..', '..'), encoding: 'utf8', maxBuffer: 1 << 30 });
  const commits = git(['log', '--format=%H', '--', 'test/histories']);
  if (commits.status !== 0) return [];
  const seen = new Set<string>();
  const versions: { workflowId: string; history: unknown }[] = [];
  for (const commit of commits.stdout.split('\n').filter(Boolean)) {
    const files = git(['ls-tree', '--name-only', commit, 'test/histories/']).stdout.split('\n');
    for (const file of files.filter((f) => f.endsWith('.json'))) {
      const blob = git(['rev-parse', `${commit}:${file}`]).stdout.trim();
      if (seen.has(blob)) continue;
      seen.add(blob);
      const history = JSON.parse(git(['cat-file', 'blob', blob]).stdout) as unknown;
      versions.push({ workflowId: `${path.basename(file)} at ${commit.slice(0, 7)}`, history });
    }
  }
  return versions;
}

interface HistoryEvent {
  eventId: string;
  eventType: string;
  [attributes: string]: unknown;
}

const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/** A numeric event id (`scheduledEventId`, `workflowTaskCompletedEventId`, …) at or after `from`, moved by `by`. */
function shiftEventIds(value: unknown, from: number, by: number): unknown {
  if (Array.isArray(value)) return value.map((item) => shiftEventIds(item, from, by));
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, field]) =>
      (key === 'eventId' || key.endsWith('EventId')) && typeof field === 'string' && Number(field) >= from
        ? [key, String(Number(field) + by)]
        : [key, shiftEventIds(field, from, by)],
    ),
  );
}

function completedBy(event: HistoryEvent): string | undefined {
  for (const [key, attributes] of Object.entries(event)) {
    if (key.endsWith('Attributes') && attributes && typeof attributes === 'object') {
      return (attributes as { workflowTaskCompletedEventId?: string }).workflowTaskCompletedEventId;
    }
  }
  return undefined;
}

/**
 * The history a worker that stopped right after a workflow task's local activities would have left: the task completed
 * with their markers alone, and the commands its code issued after them completed by a workflow task of their own. One
 * such history for each place where markers and commands share a completion; a replay must accept every one.
 */
export function splitsAfterLocalActivities(history: unknown): unknown[] {
  const events = (history as { events: HistoryEvent[] }).events;
  const splits: unknown[] = [];
  events.forEach((completed, index) => {
    if (completed.eventType !== 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED') return;
    let next = index + 1;
    const isMarker = (e: HistoryEvent | undefined) =>
      (e?.markerRecordedEventAttributes as { markerName?: string } | undefined)?.markerName === LOCAL_ACTIVITY_MARKER;
    while (isMarker(events[next]) && completedBy(events[next]!) === completed.eventId) next += 1;
    const after = events[next];
    if (next === index + 1 || !after || completedBy(after) !== completed.eventId) return;
    // A new task (scheduled, started, completed, as the original's) between the markers and the commands after them.
    const from = Number(after.eventId);
    const attributes = completed.workflowTaskCompletedEventAttributes as {
      scheduledEventId: string;
      startedEventId: string;
    };
    const original = [attributes.scheduledEventId, attributes.startedEventId, completed.eventId].map((id) =>
      events.find((e) => e.eventId === id)!,
    );
    const [scheduled, started, done] = original.map((e, i) => ({
      ...e,
      eventId: String(from + i),
    })) as [HistoryEvent, HistoryEvent, HistoryEvent];
    started.workflowTaskStartedEventAttributes = {
      ...(started.workflowTaskStartedEventAttributes as object),
      scheduledEventId: scheduled.eventId,
    };
    done.workflowTaskCompletedEventAttributes = {
      ...attributes,
      scheduledEventId: scheduled.eventId,
      startedEventId: started.eventId,
    };
    const moved = events
      .slice(next)
      .map((e) => shiftEventIds(e, from, 3) as HistoryEvent)
      .map((e) => (completedBy(e) === completed.eventId ? asCommandOf(e, done.eventId) : e));
    splits.push({ ...(history as object), events: [...events.slice(0, next), scheduled, started, done, ...moved] });
  });
  return splits;
}

/** `event` as a command of the workflow task completed by `completedEventId`. */
function asCommandOf(event: HistoryEvent, completedEventId: string): HistoryEvent {
  return Object.fromEntries(
    Object.entries(event).map(([key, attributes]) =>
      key.endsWith('Attributes') && attributes && typeof attributes === 'object'
        ? [key, { ...attributes, workflowTaskCompletedEventId: completedEventId }]
        : [key, attributes],
    ),
  ) as HistoryEvent;
}

/** The patch ids a history's markers record. */
export function recordedPatches(history: unknown): string[] {
  return (history as { events: HistoryEvent[] }).events.flatMap((e) => {
    const marker = e.markerRecordedEventAttributes as
      { markerName: string; details?: { 'patch-data'?: { payloads: { data: string }[] } } } | undefined;
    const data = marker?.markerName === 'core_patch' ? marker.details?.['patch-data']?.payloads[0]?.data : undefined;
    return data ? [(JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { id: string }).id] : [];
  });
}

/**
 * Each history's replay error, if any, by file name. The worker replays as in production, through the encrypting data
 * converter: histories recorded in plain text must still read.
 */
export async function replayAll(
  workflowsPath: string,
  histories = committedHistories(),
): Promise<Map<string, Error | undefined>> {
  const results = new Map<string, Error | undefined>();
  const dataConverter = createDataConverter([generatePayloadKey('replay')]);
  const { preloadModules, workflowInterceptorModules } = workflowBundleOptions();
  const options = {
    workflowsPath,
    bundlerOptions: { preloadModules },
    interceptors: { workflowModules: workflowInterceptorModules },
    dataConverter,
  };
  for await (const result of Worker.runReplayHistories(options, histories)) {
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
