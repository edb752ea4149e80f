// What the supportConversation workflow tests share: a testbed per test file, Ana's and Bob's data, one turn run on a
// fresh worker and read back from Intercom, history recording, and the expectations several files make.
import type { WorkflowHandle } from '@temporalio/client';
import type { AgentState } from '../../src/contract/state';
import type { ScenarioConversation } from '../../sandbox/scenario';
import { keepHistory } from './histories';
import { withoutRunMaps, type Sandbox } from './sandbox';
import { ANA, ANA_TALENT, runTurnOnWorker, useTestbed, type Testbed } from './turns';

export const BOB = { id: 'c-bob', email: 'bob.stone@example.com', name: 'Bob Stone' };
/** Ana's data, and Bob's, whose payment no reply to Ana may show. */
const TALENT = {
  ...ANA_TALENT,
  users: [
    ...ANA_TALENT.users,
    {
      email: BOB.email,
      name: BOB.name,
      applications: [],
      payments: [
        { id: 'pay-99', job_id: 'job-21', amount: 990, currency: 'USD', status: 'paid', paid_at: '2026-10-02' },
      ],
    },
  ],
};
const DOCS = [
  {
    title: 'Payment schedule',
    body: 'Completed shifts are paid in the weekly Friday payout run. Payments show as processing until the payout date.',
  },
];

let testbed: Testbed;
/** The calling test file's sandbox, set once its testbed has started (a live binding, read inside tests). */
export let sandbox: Sandbox;
let nextConversation = 0;

/** Gives the calling test file a testbed of its own (`useTestbed`); its conversation ids start at `firstConversation`. */
export function useSupportTestbed(firstConversation: number): void {
  nextConversation = firstConversation;
  useTestbed((started) => {
    testbed = started;
    sandbox = started.sandbox;
  });
}

export function newConversation(...parts: ScenarioConversation['parts']): string {
  const id = String(nextConversation++);
  sandbox.seed({
    conversation: {
      id,
      contact: ANA,
      parts: parts.length ? parts : [{ author: 'user', type: 'comment', body: 'When will I get paid?' }],
    },
    talent: TALENT,
    docs: DOCS,
  });
  return id;
}

export interface Turn {
  state: AgentState;
  handle: WorkflowHandle;
  replies: string[];
  notes: string[];
  status: unknown;
  snoozedUntil: number | null;
}

/** Runs the conversation's turn on a fresh worker with the sandbox's activities, and reads what Intercom ended with. */
export async function runTurn(
  conversationId: string,
  during?: (handle: WorkflowHandle) => Promise<void>,
): Promise<Turn> {
  const { state, handle } = await runTurnOnWorker(testbed, conversationId, sandbox.activities, during);
  return {
    state,
    handle,
    replies: sandbox.intercom.replies(conversationId),
    notes: withoutRunMaps(sandbox.intercom.notes(conversationId)),
    status: sandbox.intercom.melvinStatus(conversationId),
    snoozedUntil: sandbox.intercom.snoozedUntil(conversationId),
  };
}

/** With RECORD_HISTORIES set, keeps the run's history for the determinism gate (./histories). */
export const recordHistory = keepHistory;

export function expectSnoozedFiveMinutes(turn: Turn): void {
  const now = Math.floor(Date.now() / 1000);
  expect(turn.snoozedUntil).toBeGreaterThan(now + 300 - 60);
  expect(turn.snoozedUntil).toBeLessThanOrEqual(now + 300);
  expect(turn.state.finalize).toMatchObject({
    conversation_snoozed: true,
    snooze_duration_seconds: 300,
    status_updated: true,
  });
}

export function validationNotes(turn: Turn): string[] {
  return turn.notes.filter((n) => n.startsWith('Validation result:'));
}
