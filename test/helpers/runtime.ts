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

export { waitFor } from '../../sandbox/wait';
