// Starts a real Temporal dev server for a test file, with Melvin's search attributes registered and Melvin's data
// converter on its client (plain text unless the test gives it keys), and the server settings Melvin runs with.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createDataConverter, type PayloadKey } from '../../src/encryption/payload-codec';
import { allSearchAttributes } from '../../src/contract/shared';
import { createLocalTemporal } from '../../harness/stack';
import { devServerDynamicConfigFlags } from '../../harness/temporal-dynamic-config';

export async function startTemporal(
  options: { payloadKeys?: readonly PayloadKey[] } = {},
): Promise<TestWorkflowEnvironment> {
  const cli = process.env.TEMPORAL_CLI_PATH;
  return createLocalTemporal({
    server: {
      executable: cli ? { type: 'existing-path', path: cli } : undefined,
      ip: '127.0.0.1',
      searchAttributes: allSearchAttributes,
      extraArgs: devServerDynamicConfigFlags(),
    },
    client: { dataConverter: createDataConverter(options.payloadKeys) },
  });
}
