// The dev server's start is tried again only when it was slow to answer, and at most three times.
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { createLocalTemporal } from '../../harness/stack';

const SLOW =
  "ephemeral server at 127.0.0.1:45015 did not start within 5s. Make sure another download isn't stuck and delete the temp file.";

function environmentAfter(failures: Error[]): jest.SpyInstance {
  const spy = jest.spyOn(TestWorkflowEnvironment, 'createLocal');
  for (const failure of failures) spy.mockRejectedValueOnce(failure);
  return spy.mockResolvedValue({ started: true } as unknown as TestWorkflowEnvironment);
}

describe('createLocalTemporal', () => {
  let stderr: jest.SpyInstance;
  beforeEach(() => {
    stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  });
  afterEach(() => jest.restoreAllMocks());

  it.each([0, 1, 2])('starts after %i slow starts, saying so', async (slowStarts) => {
    const createLocal = environmentAfter(Array.from({ length: slowStarts }, () => new Error(SLOW)));
    await expect(createLocalTemporal({})).resolves.toEqual({ started: true });
    expect(createLocal).toHaveBeenCalledTimes(slowStarts + 1);
    expect(stderr).toHaveBeenCalledTimes(slowStarts);
  });

  it('gives up after the third slow start, with the SDK error', async () => {
    const createLocal = environmentAfter([new Error(SLOW), new Error(SLOW), new Error(SLOW)]);
    await expect(createLocalTemporal({})).rejects.toThrow('did not start within 5s');
    expect(createLocal).toHaveBeenCalledTimes(3);
  });

  it.each([
    'ephemeral server executable does not exist: /nowhere/temporal',
    'failed to start ephemeral server: permission denied',
    'failed to download ephemeral server executable: offline',
  ])('throws any other failure at once: %s', async (message) => {
    const createLocal = environmentAfter([new Error(message)]);
    await expect(createLocalTemporal({})).rejects.toThrow(message);
    expect(createLocal).toHaveBeenCalledTimes(1);
  });
});
