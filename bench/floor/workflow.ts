// The floor of a 1-hop turn on Temporal: a workflow of the same shape as Melvin's 1-hop turn (started by a signal,
// its local activities one after another, the validation check and the reply as activities, Finalize's two writes)
// with no work in any step, no payloads and none of Melvin's code; its overhead is what the SDK, the worker and the
// server cost a turn of that shape alone.
import { condition, defineSignal, proxyActivities, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type * as activities from './activities';

export const floorMessage = defineSignal('floorMessage');

const local = proxyLocalActivities<typeof activities>({ startToCloseTimeout: '10s' });
const remote = proxyActivities<typeof activities>({ startToCloseTimeout: '10s' });

export async function bareTurn(): Promise<void> {
  let received = false;
  setHandler(floorMessage, () => void (received = true));
  await condition(() => received);
  // Initialize's three reads: the conversation, the tool listing, the prompts.
  await Promise.all([local.step(), local.step(), local.step()]);
  // Plan, the tool call, Coverage, the retrieval of the team's examples, Draft.
  for (let i = 0; i < 5; i++) await local.step();
  await remote.step(); // the validation check
  await remote.step(); // the reply with its note
  await Promise.all([local.step(), local.step()]); // Finalize: Melvin Status and the snooze
}
