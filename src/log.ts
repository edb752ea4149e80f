// Structured logs for Melvin's own processes: one JSON object per line on stdout (errors on stderr).

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export function logEvent(level: LogLevel, message: string, fields: Record<string, unknown> = {}): void {
  const line = JSON.stringify({ time: new Date().toISOString(), level, message, ...fields });
  if (level === 'error') process.stderr.write(`${line}\n`);
  else process.stdout.write(`${line}\n`);
}
