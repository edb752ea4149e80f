// On a real Temporal server with the sandbox's own reasoning: the turn's stage from the talent's records, the draft's
// suggested next step for the team (Plan’s when the turn hands over before Draft), both as search attributes, the step
// in the reply’s note and the stage and step in a hand-over.
import { searchAttributes } from '../../src/contract/shared';
import type { ScenarioConversation } from '../../sandbox/scenario';
import { quietRuntime } from '../helpers/runtime';
import { withoutRunMaps } from '../helpers/sandbox';
import { runTurnOnWorker, startTestbed } from '../helpers/turns';

quietRuntime();

const NORA = { id: 'c-nora', email: 'nora.blake@example.com', name: 'Nora Blake' };
const TALENT = {
  users: [
    {
      email: NORA.email,
      name: NORA.name,
      applications: [
        {
          id: 'app-61',
          job_id: 'job-61',
          status: 'interview',
          updated_at: '2026-11-20',
          next_step: 'on-site interview on November 25 at 10am',
        },
      ],
      payments: [],
    },
  ],
  jobs: [{ id: 'job-61', title: 'Barista', location: 'Denver, CO', status: 'open', pay_rate: '$19/hour' }],
};

let testbed: Awaited<ReturnType<typeof startTestbed>>;
let nextConversation = 760;

beforeAll(async () => {
  testbed = await startTestbed();
}, 180_000);

afterAll(() => testbed?.close());

beforeEach(() => testbed.sandbox.reset());

async function turnAsking(body: string) {
  const id = String(nextConversation++);
  const parts: ScenarioConversation['parts'] = [{ author: 'user', type: 'comment', body }];
  testbed.sandbox.seed({ conversation: { id, contact: NORA, parts }, talent: TALENT });
  const { state, handle } = await runTurnOnWorker(testbed, id, testbed.sandbox.activities);
  const attributes = (await handle.describe()).typedSearchAttributes;
  return { state, attributes, notes: withoutRunMaps(testbed.sandbox.intercom.notes(id)) };
}

test('an interview the talent cannot make: stage interviewing from the records, the team is told to reschedule', async () => {
  const { state, attributes, notes } = await turnAsking(
    "I can't make my barista interview on November 25, I have an exam. Could we find another day?",
  );

  expect(state.metadata.stage).toEqual({ stage: 'interviewing', from: 'records', evidence: 'application interview' });
  expect(state.draft?.suggested_action?.action).toBe('reschedule_interview');
  expect(attributes.get(searchAttributes.melvinStage)).toBe('interviewing');
  expect(attributes.get(searchAttributes.suggestedAction)).toBe('reschedule_interview');
  // Draft was told the stage, to follow its guidance.
  const draftContext = testbed.sandbox.model.requests.find((r) => r.step === 'draft')?.context;
  expect(draftContext?.stage).toMatchObject({ stage: 'interviewing', from: 'records' });
  // The team reads the step beside the reply.
  expect(notes.find((n) => n.startsWith('Validation result:'))).toMatch(
    /\n+💡 Suggested next step for the team: reschedule the interview — .+$/,
  );
});

test('a question that needs nothing from the team: the stage is set, no step is proposed or noted', async () => {
  const { state, attributes, notes } = await turnAsking('What are the next steps for my barista application?');

  expect(state.metadata.stage?.stage).toBe('interviewing');
  expect(state.draft?.suggested_action).toBeUndefined();
  expect(attributes.get(searchAttributes.melvinStage)).toBe('interviewing');
  expect(attributes.get(searchAttributes.suggestedAction)).toBeUndefined();
  expect(notes.join('\n')).not.toContain('Suggested next step');
});

test('a hand-over before Draft still tells the team the stage, from the talent’s words when no record was gathered', async () => {
  const { state, attributes, notes } = await turnAsking('Can I talk to a real person about my interview please?');

  expect(state.escalate).not.toBeNull();
  const handOver = notes.find((n) => n.startsWith('🚨'));
  expect(handOver).toContain('Stage: interviewing (from the words: no gathered record speaks of it)');
  expect(attributes.get(searchAttributes.melvinStage)).toBe('interviewing');
});

test('a hand-over before Draft tells the team the step the talent’s words call for, read by Plan', async () => {
  const { state, attributes, notes } = await turnAsking(
    "I'm locked out of my account and the password reset email never arrives. Can you help?",
  );

  expect(state.draft).toBeNull();
  expect(state.escalate).not.toBeNull();
  expect(state.hops[0]?.plan?.suggested_action?.action).toBe('fix_account_access');
  const handOver = notes.find((n) => n.startsWith('🚨'));
  expect(handOver).toMatch(/💡 Suggested next step for the team: fix the talent’s account access — .+/);
  expect(attributes.get(searchAttributes.suggestedAction)).toBe('fix_account_access');
});
