// Starts a real Temporal dev server for a test file, with Melvin's search attributes registered.
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { allSearchAttributes } from '../../src/shared';

export async function startTemporal(): Promise<TestWorkflowEnvironment> {
  const cli = process.env.TEMPORAL_CLI_PATH;
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: cli ? { type: 'existing-path', path: cli } : undefined,
      ip: '127.0.0.1',
      searchAttributes: allSearchAttributes,
    },
  });
}
