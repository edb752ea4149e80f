// Runs one activity function as Temporal would (with its Context), optionally as a given retry attempt.
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';

/** Activity failures are what these tests provoke; only errors are worth printing. */
const logger = new DefaultLogger('ERROR');

export function runActivity<A extends unknown[], R>(fn: (...args: A) => Promise<R>, ...args: A): Promise<R> {
  return new MockActivityEnvironment({}, { logger }).run<A, R, typeof fn>(fn, ...args);
}

export function runAttempt<A extends unknown[], R>(
  attempt: number,
  fn: (...args: A) => Promise<R>,
  ...args: A
): Promise<R> {
  return new MockActivityEnvironment({ attempt }, { logger }).run<A, R, typeof fn>(fn, ...args);
}

/** The error an activity call fails with; fails the test when the call succeeds. */
export async function failureOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the activity to fail');
}
