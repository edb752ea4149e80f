// Local activities' execution intervals, from the worker's own log: their history markers carry no real timing.
import { waitFor } from '../sandbox/wait';

/** What the SDK logs (at DEBUG) when an activity finishes (completed, failed or cancelled), as a JSON log line. */
interface ActivityCompleted {
  time: string;
  message: string;
  isLocal?: boolean;
  activityType?: string;
  workflowId?: string;
  durationMs?: number;
}

/** How many runs' attempts are kept; a phase asks for a run's right after its turn, so a few would do. */
const KEPT_WORKFLOWS = 1_000;

/** One attempt of a local activity: its type, and when it ran (epoch ms). */
export interface LocalAttempt {
  type: string;
  from: number;
  to: number;
}

/**
 * Collects, per workflow, each local activity attempt the worker ran: the SDK's line when an attempt ends says which,
 * when and how long it took. (A local activity's marker holds workflow time, not when it ran.)
 */
export class LocalActivityLog {
  private readonly byWorkflow = new Map<string, LocalAttempt[]>();

  /** Takes one line of the worker's output, as the harness echoes it (`[worker] {json}`). */
  readonly collect = (line: string): void => {
    if (!line.includes('"isLocal":true') || !line.includes('"durationMs"')) return;
    const entry = JSON.parse(line.slice(line.indexOf('{'))) as ActivityCompleted;
    if (!entry.workflowId || entry.durationMs === undefined) return;
    const end = Date.parse(entry.time);
    const attempts = this.byWorkflow.get(entry.workflowId) ?? [];
    attempts.push({ type: entry.activityType ?? '', from: end - entry.durationMs, to: end });
    this.byWorkflow.set(entry.workflowId, attempts);
    // Phases that never ask (saturation, memory) would otherwise keep every run's lines: keep the latest runs only.
    if (this.byWorkflow.size > KEPT_WORKFLOWS) this.byWorkflow.delete(this.byWorkflow.keys().next().value!);
  };

  /** The workflow's attempts, once all `count` of its local activities are logged (the pipe may lag the result). */
  async attempts(workflowId: string, count: number): Promise<LocalAttempt[]> {
    const logged = () => this.byWorkflow.get(workflowId) ?? [];
    if (logged().length < count) {
      await waitFor(`the worker to log ${count} local activities of ${workflowId}`, () => logged().length >= count, {
        timeoutMs: 5_000,
        intervalMs: 5,
      });
    }
    const intervals = logged();
    this.byWorkflow.delete(workflowId);
    return intervals;
  }
}
