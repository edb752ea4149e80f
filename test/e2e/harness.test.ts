// The rig the bench, the reliability suite and these tests share: a start that fails part way leaves nothing running.
import { Harness } from '../../harness/harness';
import { benchResponder } from '../../bench/responder';

test('a harness whose worker cannot start stops the Temporal server and the sandbox it had started', async () => {
  let temporalPid: number | undefined;
  const log = (line: string) => {
    // The server is up once the worker is being started: note its process then, to look for it afterwards.
    if (line.startsWith('[worker]')) temporalPid ??= harness.temporalPid;
  };
  const harness = new Harness({ responder: benchResponder({ hops: 1 }), workerNodeArgs: ['--no-such-flag'], log });
  await expect(harness.start()).rejects.toThrow(/worker exited/);
  expect(temporalPid).toBeDefined();
  expect(harness.temporalPid).toBeUndefined();
  expect(() => process.kill(temporalPid!, 0)).toThrow();
  await expect(fetch(harness.sandbox.urls.intercom)).rejects.toThrow();
}, 120_000);
