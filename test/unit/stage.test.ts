// Stage and suggested action: the turn's stage from records first and words second, and what the sandbox's model
// reads and proposes, with cases unlike one another and properties over generated records.
import fc from 'fast-check';
import { STAGES, type Stage, type SuggestedActionName } from '../../src/contract/vocabulary';
import type { DraftOutput, PlanOutput } from '../../src/contract/schemas';
import type { AgentState, NamedRecord } from '../../src/contract/state';
import { newState } from '../../src/workflows/records/turn-state';
import {
  recordStage,
  settledStage,
  stageLine,
  suggestedStep,
  suggestedStepLine,
  turnStage,
} from '../../src/workflows/routing/stage';
import { sandboxReasoning } from '../../sandbox/model/reasoning';

type Words = PlanOutput['stage'] | undefined;

/** A turn whose plan read `words`, and whose Gather returned `data` from one tool. */
function stateWith(words: Words, data: Record<string, unknown>, named: Partial<NamedRecord>[] = []): AgentState {
  const state = newState({ conversationId: '7' }, '2026-11-27T00:00:00.000Z');
  state.hops.push({
    plan: { user_query: 'q', reasoning: '', tool_calls: [], ...(words ? { stage: words } : {}) },
    gather: null,
    coverage: null,
    named_records: named.map((n) => ({
      kind: 'job',
      mention: 'm',
      record_kind: 'job',
      id: null,
      label: '',
      tier: 'exact',
      score: 1,
      candidates: [],
      ...n,
    })),
  });
  state.tool_data = {
    t1: { tool_name: 'talent__records', parameters: {}, hop: 1, success: true, data, error: null, truncated: false },
  };
  return state;
}

const application = (id: string, status: string, jobId = `job-${id}`) => ({ id, status, job_id: jobId });
const payment = (id: string, status: string, jobId = 'job-1') => ({ id, status, job_id: jobId, amount: 100 });

describe('the stage comes from the records first, the words second', () => {
  test.each<[string, Words, Record<string, unknown>, Stage | null, 'records' | 'words' | null]>([
    [
      'pay asked, a payment processing',
      'awaiting_payment',
      { payments: [payment('p1', 'processing')] },
      'awaiting_payment',
      'records',
    ],
    [
      '"I have not been paid" but the payment is paid',
      'awaiting_payment',
      { payments: [payment('p1', 'paid')] },
      'paid',
      'records',
    ],
    [
      'an interview in the data, words say nothing',
      'unknown',
      { applications: [application('a1', 'interview_scheduled')] },
      'interviewing',
      'records',
    ],
    [
      'words of an offer, the application says hired',
      'offered',
      { applications: [application('a1', 'Hired')] },
      'hired',
      'records',
    ],
    [
      'shifts asked, only an application hired',
      'working',
      { applications: [application('a1', 'hired')] },
      'working',
      'words',
    ],
    ['looking for work, no records', 'exploring', {}, 'exploring', 'words'],
    ['nothing said, nothing gathered', 'unknown', {}, null, null],
    [
      'a plan from before stages, a payment pending',
      undefined,
      { payments: [payment('p1', 'pending')] },
      'awaiting_payment',
      'records',
    ],
    ['only job postings, whose status is theirs', 'unknown', { jobs: [{ id: 'job-1', status: 'filled' }] }, null, null],
    ['only a rejected application', 'unknown', { applications: [application('a1', 'rejected')] }, null, null],
  ])('%s', (_case, words, data, stage, from) => {
    const reading = turnStage(stateWith(words, data));
    expect(reading?.stage ?? null).toBe(stage);
    expect(reading?.from ?? null).toBe(from);
  });

  describe('a record closed half a year before the latest is the talent’s past, not where they are', () => {
    const dated = (record: Record<string, unknown>, date: string) => ({ ...record, updated_at: date });
    test.each<[string, Words, Record<string, unknown>, Stage | null]>([
      [
        'last year’s paid payment, this month’s processing one, words say nothing',
        'unknown',
        { payments: [dated(payment('p0', 'paid'), '2025-10-02'), dated(payment('p1', 'processing'), '2026-11-20')] },
        'awaiting_payment',
      ],
      [
        'an old paid payment and a recent hired application',
        'unknown',
        {
          payments: [dated(payment('p0', 'paid'), '2025-03-02')],
          applications: [dated(application('a1', 'hired'), '2026-11-01')],
        },
        'hired',
      ],
      [
        'an old offer and a new screening',
        undefined,
        {
          applications: [
            dated(application('a0', 'offer_extended'), '2024-12-30'),
            dated(application('a1', 'screening'), '2026-11-01'),
          ],
        },
        'screening',
      ],
      [
        'only old records: they are all there is',
        'unknown',
        { payments: [dated(payment('p0', 'paid'), '2024-01-02')] },
        'paid',
      ],
    ])('%s', (_case, words, data, stage) => {
      expect(turnStage(stateWith(words, data))?.stage ?? null).toBe(stage);
    });

    test('records within half a year of each other are all current: the furthest wins', () => {
      const data = {
        payments: [dated(payment('p0', 'paid'), '2026-08-01'), dated(payment('p1', 'processing'), '2026-11-20')],
      };
      expect(turnStage(stateWith('unknown', data))?.stage).toBe('paid');
    });
  });

  test('the record the talent named speaks before their other records', () => {
    const data = { applications: [application('a1', 'hired', 'job-1'), application('a2', 'screening', 'job-2')] };
    expect(turnStage(stateWith('unknown', data))?.stage).toBe('hired');
    const named = stateWith('unknown', data, [{ id: 'job-2', record_kind: 'job' }]);
    expect(turnStage(named)).toEqual({ stage: 'screening', from: 'records', evidence: 'application screening' });
  });

  test('of several records of the kind the words speak of, the one the words name wins, else the furthest', () => {
    const data = { payments: [payment('p1', 'paid'), payment('p2', 'processing')] };
    expect(turnStage(stateWith('awaiting_payment', data))?.stage).toBe('awaiting_payment');
    expect(turnStage(stateWith('unknown', data))?.stage).toBe('paid');
  });

  test('a status reads by its first word whatever its case or separator; a job never places the talent', () => {
    expect(recordStage({ kind: 'application', status: 'Phone Screen' })).toBeNull();
    expect(recordStage({ kind: 'application', status: 'screening-call' })).toBe('screening');
    expect(recordStage({ kind: 'payout', status: 'In Transit' })).toBe('awaiting_payment');
    expect(recordStage({ kind: 'payment', status: 'hired' })).toBeNull();
    expect(recordStage({ kind: 'job', status: 'hired' })).toBeNull();
  });

  const statuses = [
    'submitted',
    'screening',
    'interview',
    'offer',
    'hired',
    'rejected',
    'paid',
    'processing',
    'failed',
  ];
  const records = fc.array(
    fc.record({ kind: fc.constantFrom('applications', 'payments', 'jobs'), status: fc.constantFrom(...statuses) }),
    { maxLength: 6 },
  );
  const words = fc.constantFrom<Words>(undefined, 'unknown', ...STAGES);

  test('property: a stage from the records is one a record holds; the words decide only where no record of their kind is', () => {
    fc.assert(
      fc.property(records, words, (recs, spoken) => {
        const data: Record<string, unknown[]> = {};
        recs.forEach((r, i) => (data[r.kind] ??= []).push({ id: `r${i}`, status: r.status }));
        const state = stateWith(spoken, data);
        const reading = turnStage(state);
        const held = recs.flatMap((r) => {
          const stage = recordStage({ kind: r.kind.replace(/s$/, ''), status: r.status });
          return stage ? [stage] : [];
        });
        if (reading?.from === 'records') expect(held).toContain(reading.stage);
        if (reading?.from === 'words') expect(reading.stage).toBe(spoken);
        if (!reading) expect(held.length === 0 && (spoken === undefined || spoken === 'unknown')).toBe(true);
        if (held.length && (spoken === undefined || spoken === 'unknown')) expect(reading?.from).toBe('records');
      }),
    );
  });

  test('the stage is read once a turn, and told to the team with what told it', () => {
    const state = stateWith('awaiting_payment', { payments: [payment('p1', 'processing')] });
    expect(state.metadata.stage).toBeUndefined();
    expect(stageLine(settledStage(state))).toBe('Stage: awaiting payment (from the records: payment processing)');
    state.tool_data = {};
    expect(settledStage(state)?.stage).toBe('awaiting_payment');
  });
});

const planStage = (text: string) =>
  (sandboxReasoning('plan', { messages: [{ role: 'user', content: text }] }) as PlanOutput).stage;
const suggested = (text: string, toolData: Record<string, unknown> = {}) =>
  (sandboxReasoning('draft', { messages: [{ role: 'user', content: text }], tool_data: toolData }) as DraftOutput)
    .suggested_action?.action ?? null;

describe("the sandbox model's reading of the words", () => {
  test.each<[string, PlanOutput['stage']]>([
    ['When will I get paid for last week?', 'awaiting_payment'],
    ['I got paid but the amount looks low', 'paid'],
    ['How do I clock in at the venue?', 'working'],
    ['What should I bring on my first day?', 'hired'],
    ['Is there any news about my interview on Friday?', 'interviewing'],
    ['How do I apply for the barista job?', 'exploring'],
    ['What is the dress code policy?', 'unknown'],
  ])('%s → %s', (text, stage) => expect(planStage(text)).toBe(stage));
});

describe('the suggested next step for the team', () => {
  test.each<[string, string | null]>([
    ["I can't make my interview on Thursday, can we find another time?", 'reschedule_interview'],
    ['Could I reschedule the interview to next week?', 'reschedule_interview'],
    ["I can't make my barista interview on the 25th, could we find another day?", 'reschedule_interview'],
    ['I changed my bank account last week, will my pay go to the new one?', 'verify_payout_details'],
    ["I'm locked out of my account and the password reset email never came", 'fix_account_access'],
    ['I was underpaid for Saturday, I worked 8 hours not 6', 'ask_business_about_pay'],
    ['Why was my application rejected? Could you reconsider?', 'review_application'],
    ["I've just switched to a new bank, does my pay follow?", 'verify_payout_details'],
    ['My last payout went to the wrong account', 'verify_payout_details'],
    ['My last payment only counts 6 of the 8 hours I worked', 'ask_business_about_pay'],
    // Must not: a question the data answers needs no step from the team.
    ['When is my interview?', null],
    ["When is my interview? I don't want to miss it", null],
    ['When will my payment arrive?', null],
    ['How do I change my bank details?', null],
  ])('%s → %s', (text, action) => expect(suggested(text)).toBe(action));

  test('a failed payment asked about calls for the payout details to be verified; a paid one does not', () => {
    const payments = (status: string) => ({
      p: { tool_name: 'talent__get_user_payments', success: true, data: { payments: [payment('p1', status)] } },
    });
    expect(suggested('Where is my payment?', payments('failed'))).toBe('verify_payout_details');
    expect(suggested('Where is my payment?', payments('paid'))).toBeNull();
  });

  test('the step goes in the team note with why, and nothing is said when there is none', () => {
    const state = newState({ conversationId: '7' }, '2026-11-27T00:00:00.000Z');
    expect(suggestedStepLine(state)).toBeNull();
    state.draft = {
      response: 'r',
      response_type: 'REPLY',
      suggested_action: { action: 'reschedule_interview', why: 'They are away that day.' },
      generation_time_ms: 1,
      timestamp: '2026-11-27T00:00:00.000Z',
    };
    expect(suggestedStepLine(state)).toBe(
      '💡 Suggested next step for the team: reschedule the interview — They are away that day.',
    );
  });

  test("the draft's step stands, its none too; without a draft, the latest plan's step from the words", () => {
    const step = (action: SuggestedActionName) => ({ action, why: 'w' });
    const state = stateWith('unknown', {});
    state.hops[0]!.plan!.suggested_action = step('fix_account_access');
    state.hops.push({ ...state.hops[0]!, plan: { ...state.hops[0]!.plan!, suggested_action: null } });
    // The latest plan read none, the first one a step: the latest reading stands.
    expect(suggestedStep(state)).toBeNull();
    state.hops[1]!.plan!.suggested_action = step('reschedule_interview');
    expect(suggestedStep(state)?.action).toBe('reschedule_interview');
    // A plan recorded before plans proposed steps proposes none.
    delete state.hops[1]!.plan!.suggested_action;
    expect(suggestedStep(state)).toBeNull();
    const draft = { response: 'r', response_type: 'REPLY' as const, generation_time_ms: 1, timestamp: 't' };
    state.draft = { ...draft, suggested_action: step('verify_payout_details') };
    expect(suggestedStep(state)?.action).toBe('verify_payout_details');
    state.draft = draft;
    state.hops[1]!.plan!.suggested_action = step('reschedule_interview');
    expect(suggestedStep(state)).toBeNull();
  });

  test("the sandbox's plan reads the step from the words alone, as its draft does before the records", () => {
    const planned = (text: string) =>
      (sandboxReasoning('plan', { messages: [{ role: 'user', content: text }] }) as PlanOutput).suggested_action
        ?.action ?? null;
    expect(planned("I'm locked out of my account and the reset email never came")).toBe('fix_account_access');
    expect(planned("I can't make my interview on Thursday, can we move it?")).toBe('reschedule_interview');
    expect(planned('When will my payment arrive?')).toBeNull();
  });
});
