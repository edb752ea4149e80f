// Reads how long a rate-limited server asked us to wait, from `Retry-After` or Intercom's `X-RateLimit-Reset`.

/** Headers as fetch's `Headers` or as a plain record, whichever the SDK in question exposes. */
export type HeaderSource = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

/** Milliseconds to wait, or undefined when the server gave no usable hint. Capped so a bad header cannot stall a run. */
export function retryAfterMs(
  headers: HeaderSource | undefined,
  now: number = Date.now(),
  capMs = 120_000,
): number | undefined {
  if (!headers) return undefined;
  const retryAfter = header(headers, 'retry-after')?.trim();
  let ms: number | undefined;
  if (retryAfter) {
    const seconds = Number(retryAfter);
    ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(retryAfter) - now;
  } else {
    const reset = Number(header(headers, 'x-ratelimit-reset'));
    if (Number.isFinite(reset) && reset > 0) ms = reset * 1000 - now;
  }
  if (ms === undefined || Number.isNaN(ms)) return undefined;
  return Math.min(Math.max(ms, 0), capMs);
}
