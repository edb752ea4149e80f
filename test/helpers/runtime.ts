// Quiets the Temporal SDK runtime's logs in tests (errors still show); import before any worker starts.
import { DefaultLogger, Runtime, makeTelemetryFilterString } from '@temporalio/worker';

let installed = false;

export function quietRuntime(): void {
  if (installed) return;
  installed = true;
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR', other: 'ERROR' }) } },
  });
}

/** Polls until `check` returns a truthy value; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
