// Reads the runs a report covers from Temporal visibility alone: one listing with each run's memo and search attributes,
// never a query or a history (a query replays a closed run on a worker: far too slow for thousands of runs).
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { TURN_SUMMARY_MEMO, WORKFLOW_TYPE, conversationIdOf, searchAttributes } from '../contract/shared';
import { reportFigures, windowTurns, type Report, type RunRecord, type Since } from './figures';
import type { AnalysisData } from './analysis';
import type { TemporalUi } from './patterns';

/** Runs one report reads at most; past it the report says it is truncated rather than hold the ingress's memory. */
export const MAX_REPORT_RUNS = 100_000;
const PAGE_SIZE = 1000;

/**
 * Every run whose turn may have ended since `since`: a closed run closed after its turn ended, so it closed since then;
 * a run still open (its conversation waits days for the next message) may have ended its turn at any time, so every
 * open run is read and its summary's `ended_at` decides. `StartTime` would miss a closed run that started before the
 * window and ended its turn in it (a draft that waited for a lead).
 */
export function reportQuery(since: Date): string {
  return `WorkflowType = '${WORKFLOW_TYPE}' AND (ExecutionStatus = 'Running' OR CloseTime >= '${since.toISOString()}')`;
}

export function runRecord(info: WorkflowExecutionInfo): RunRecord {
  return {
    // Every run sets the attribute at its start; the workflow id says the same for a run that has not yet.
    conversationId:
      info.typedSearchAttributes.get(searchAttributes.conversationId) ??
      conversationIdOf(info.workflowId) ??
      info.workflowId,
    workflowId: info.workflowId,
    runId: info.runId,
    startTime: info.startTime,
    memo: info.memo?.[TURN_SUMMARY_MEMO],
  };
}

export async function listReportRuns(
  client: Client,
  since: Date,
  maxRuns = MAX_REPORT_RUNS,
): Promise<{ runs: RunRecord[]; truncated: boolean }> {
  const runs: RunRecord[] = [];
  for await (const info of client.workflow.list({ query: reportQuery(since), pageSize: PAGE_SIZE })) {
    if (runs.length >= maxRuns) return { runs, truncated: true };
    runs.push(runRecord(info));
  }
  return { runs, truncated: false };
}

/**
 * The report for the window ending now, as the CLI prints it and the ingress serves it; with `ui`, its example runs
 * link to the Temporal UI.
 */
export async function loadReport(client: Client, since: Since, now = new Date(), ui?: TemporalUi): Promise<Report> {
  return (await loadAnalysisData(client, since, now, ui)).report;
}

/** The report and the window's turns, which the analysis agent's tools read. */
export async function loadAnalysisData(
  client: Client,
  since: Since,
  now = new Date(),
  ui?: TemporalUi,
): Promise<AnalysisData> {
  const from = new Date(now.getTime() - since.ms);
  const { runs, truncated } = await listReportRuns(client, from);
  const report = reportFigures(runs, { since: from, until: now, label: since.text, truncated, ui });
  return { report, turns: windowTurns(runs, from), ui };
}
