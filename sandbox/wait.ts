// Polling for the sandbox's tools, scripts and tests: wait until something holds, or fail saying what never happened.

export const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a truthy value, which it resolves with; fails naming `what` after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<Exclude<T, null | undefined | false>> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const value = await check();
    if (value) return value as Exclude<T, null | undefined | false>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(options.intervalMs ?? 50);
  }
}
