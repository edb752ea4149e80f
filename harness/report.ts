// What an experiment reports: its figures, and the checks that must hold, printed as one table.

export interface Check {
  label: string;
  passed: boolean;
  detail?: string;
}

export interface Report {
  experiment: string;
  figures: [label: string, value: string | number][];
  checks: Check[];
}

export function check(label: string, passed: boolean, detail?: string): Check {
  return { label, passed, ...(detail ? { detail } : {}) };
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** One Markdown table: every figure, then every check with ✓ or ✗, experiment by experiment. */
export function table(reports: Report[]): string {
  const rows: string[][] = [['experiment', 'figure or check', 'value']];
  for (const report of reports) {
    for (const [label, value] of report.figures) rows.push([report.experiment, label, String(value)]);
    for (const c of report.checks)
      rows.push([report.experiment, `check: ${c.label}`, `${c.passed ? '✓' : '✗'}${c.detail ? ` ${c.detail}` : ''}`]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(rows[0]!), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.slice(1).map(line)].join('\n');
}
