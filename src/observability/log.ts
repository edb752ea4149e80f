// Structured logs: one JSON object per line on stdout (errors on stderr), for every Melvin process.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

function serializable(value: unknown): unknown {
  if (value instanceof Error) {
    return { name: value.name, message: value.message, ...(value.cause ? { cause: serializable(value.cause) } : {}) };
  }
  return typeof value === 'bigint' ? value.toString() : value;
}

export function writeLogLine(level: string, line: Record<string, unknown>): void {
  const text = `${JSON.stringify(line, (_key, value: unknown) => serializable(value))}\n`;
  if (level === 'error') process.stderr.write(text);
  else process.stdout.write(text);
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Writes the line when `level` is at or above LOG_LEVEL (default info). */
export function logEvent(level: LogLevel, message: string, fields: Record<string, unknown> = {}): void {
  const threshold = RANK[(process.env.LOG_LEVEL?.toLowerCase() as LogLevel | undefined) ?? 'info'] ?? RANK.info;
  if (RANK[level] < threshold) return;
  writeLogLine(level, { time: new Date().toISOString(), level, message, ...fields });
}
