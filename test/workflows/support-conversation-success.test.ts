// supportConversation on a real Temporal dev server, with real activities against the sandbox: the turns that end in
// a reply, with tools failing or misused, a second message mid-run and a redelivered webhook.
import type { WorkflowHandle } from '@temporalio/client';
import { newUserMessageSignal, searchAttributes } from '../../src/contract/shared';
import { coverage, draft, plan } from '../helpers/model-answers';
import { waitFor } from '../helpers/runtime';
import {
  BOB,
  expectSnoozedFiveMinutes,
  newConversation,
  recordHistory,
  runTurn,
  sandbox,
  useSupportTestbed,
  validationNotes,
  type Turn,
} from '../helpers/support-testbed';
import { ANA, PAY_REPLY } from '../helpers/turns';

useSupportTestbed(100);

describe('success paths', () => {
  test('one hop: tools and docs gathered in parallel, draft validated, exactly one reply, success', async () => {
    const id = newConversation();
    sandbox.model
      .script(
        'plan',
        plan('When will my pay arrive?', ['get_user_payments'], ['search_talent_docs', { query: 'payment schedule' }]),
      )
      .script('coverage', coverage(true))
      .script('draft', draft(PAY_REPLY));

    const turn = await runTurn(id);

    expect(turn.replies).toEqual([PAY_REPLY]);
    expect(validationNotes(turn)).toHaveLength(1);
    expect(validationNotes(turn)[0]).toContain('"overall_passed":true');
    expect(turn.notes).toHaveLength(1);
    expect(turn.status).toBe('success');
    expectSnoozedFiveMinutes(turn);

    const { state } = turn;
    expect(state.hops).toHaveLength(1);
    expect(state.hops[0]!.gather).toMatchObject({ execution_status: 'completed', success_rate: 1 });
    expect(Object.keys(state.tool_data)).toEqual(['get_user_payments']);
    expect(state.tool_data.get_user_payments!.parameters).toEqual({ email: ANA.email });
    expect(Object.keys(state.docs_data)).toEqual(['payment schedule (hop 1)']);
    expect(state.messages).toEqual([{ role: 'user', content: 'When will I get paid?' }]);
    expect(state.user_email).toBe(ANA.email);
    expect(state.melvin_admin_id).toBe('8918000');
    expect(state.draft).toMatchObject({ response: PAY_REPLY, response_type: 'REPLY' });
    expect(state.validate).toMatchObject({
      overall_passed: true,
      validation_note_added: true,
      next_action: 'response',
    });
    expect(state.response_delivery).toMatchObject({
      delivery_attempted: true,
      delivery_successful: true,
      status_updated: true,
    });
    expect(state.escalate).toBeNull();
    expect(state.finalize!.melvin_status).toBe('success');
    expect(state.metadata.prompts).toMatchObject({ source: 'bundled', fallback_reason: null });
    expect(state.metadata.model).toEqual({
      name: 'melvin-sandbox-model',
      stand_in: true,
      response_format: 'json_schema',
      format_fallback: null,
    });
    // Plan and coverage ran on the plan tier, the draft on the draft tier (one model for both here).
    expect(state.metadata.usage_by_tier).toMatchObject({
      plan: { model: 'melvin-sandbox-model', calls: 2 },
      draft: { model: 'melvin-sandbox-model', calls: 1 },
    });
    expect(state.metadata.usage_by_tier!.plan!.total_tokens + state.metadata.usage_by_tier!.draft!.total_tokens).toBe(
      state.metadata.usage!.total_tokens,
    );
    expect(state.metadata.path).toEqual([
      'initialize',
      'plan',
      'gather',
      'coverage',
      'draft',
      'validate',
      'response',
      'finalize',
      'end',
    ]);
    // The tools ran side by side: both calls reached the MCP server within one gather.
    expect(sandbox.talent.calls.map((c) => c.tool).sort()).toEqual(['get_user_payments', 'search_talent_docs']);

    const description = await turn.handle.describe();
    expect(description.typedSearchAttributes.get(searchAttributes.melvinStatus)).toBe('success');
    expect(description.typedSearchAttributes.get(searchAttributes.hopCount)).toBe(1);
    expect(description.typedSearchAttributes.get(searchAttributes.conversationId)).toBe(id);
    await recordHistory(turn.handle, 'one-hop-success');
  });

  test('two hops: the second plan sees the first hop results and gaps, and no result is lost', async () => {
    const id = newConversation({
      author: 'user',
      type: 'comment',
      body: 'Any news on my application? Which job was it again?',
    });
    sandbox.model
      .script('plan', plan('Application status', ['get_user_applications_detailed']))
      .script('coverage', coverage(false, ['the job details of job-21']))
      .script(
        'plan',
        plan(
          'Application status and job',
          ['get_job_details', { job_id: 'job-21' }],
          ['get_user_applications_detailed'],
        ),
      )
      .script('coverage', coverage(true))
      .script('draft', draft('Your application for Event Staff in Austin, TX is in screening.'));

    const turn = await runTurn(id);

    expect(turn.replies).toEqual(['Your application for Event Staff in Austin, TX is in screening.']);
    expect(turn.status).toBe('success');
    const { state } = turn;
    expect(state.hops).toHaveLength(2);
    expect(state.hops[0]!.coverage).toMatchObject({ data_sufficient: false, next_node: 'plan' });
    expect(state.hops[1]!.coverage).toMatchObject({ data_sufficient: true, next_node: 'draft' });
    expect(Object.keys(state.tool_data).sort()).toEqual([
      'get_job_details',
      'get_user_applications_detailed',
      'get_user_applications_detailed (hop 2)',
    ]);
    expect(state.tool_data['get_user_applications_detailed']!.hop).toBe(1);
    expect(state.tool_data['get_user_applications_detailed (hop 2)']!.hop).toBe(2);

    const secondPlan = sandbox.model.requests.filter((r) => r.step === 'plan')[1]!.context;
    expect(secondPlan.hop).toBe(2);
    expect(secondPlan.previous_hops).toEqual([
      expect.objectContaining({ hop: 1, missing_data: ['missing: the job details of job-21'] }),
    ]);
    expect(Object.keys(secondPlan.tool_data as object)).toEqual(['get_user_applications_detailed']);
  });

  test('"Hi": a plan with no tool calls goes straight to coverage and still replies', async () => {
    const id = newConversation({ author: 'user', type: 'comment', body: 'Hi' });
    sandbox.model
      .script('plan', plan('Greeting'))
      .script('coverage', coverage(true))
      .script('draft', draft('Hi Ana! How can I help you today?'));

    const turn = await runTurn(id);

    expect(turn.replies).toEqual(['Hi Ana! How can I help you today?']);
    expect(turn.status).toBe('success');
    expect(turn.state.hops[0]!.gather).toMatchObject({ tool_results: [], execution_status: 'skipped' });
    expect(sandbox.talent.calls).toHaveLength(0);
  });

  test('partial tool failure: a tool failing after its retries does not stop the others or the reply', async () => {
    const id = newConversation();
    sandbox.talent.faults.set({ get_job_details: [{ error: 'server', always: true }] });
    sandbox.model
      .script('plan', plan('Pay', ['get_user_payments'], ['get_job_details', { job_id: 'job-21' }]))
      .script('coverage', coverage(true))
      .script('draft', draft(PAY_REPLY));

    const turn = await runTurn(id);

    expect(turn.replies).toEqual([PAY_REPLY]);
    expect(turn.status).toBe('success');
    const gather = turn.state.hops[0]!.gather!;
    expect(gather).toMatchObject({ execution_status: 'partial', success_rate: 0.5 });
    const failed = gather.tool_results.find((r) => r.tool_name === 'get_job_details')!;
    expect(failed.success).toBe(false);
    expect(failed.error).toContain('talent backend is unavailable');
    expect(sandbox.talent.calls.filter((c) => c.tool === 'get_job_details')).toHaveLength(3);
    // The failing call's 503s leave the shared session alone, so the payments call in flight beside it is not aborted.
    expect(sandbox.talent.calls.filter((c) => c.tool === 'get_user_payments')).toHaveLength(1);
    expect(turn.state.tool_data.get_job_details).toMatchObject({ success: false });
  });

  test('a tool isError result is data for Coverage, not a failed activity', async () => {
    const id = newConversation();
    sandbox.talent.faults.set({ get_user_payments: [{ error: 'tool' }] });
    sandbox.model
      .script('plan', plan('Pay', ['get_user_payments']))
      .script('coverage', coverage(true))
      .script('draft', draft('I could not load your payments right now.'));

    const turn = await runTurn(id);

    expect(turn.state.tool_data.get_user_payments).toMatchObject({
      success: false,
      error: expect.stringContaining('failed'),
    });
    expect(sandbox.talent.calls).toHaveLength(1);
    const coverageRequest = sandbox.model.requests.find((r) => r.step === 'coverage')!;
    expect(JSON.stringify(coverageRequest.context.tool_data)).toContain('talent backend returned an error');
  });

  test('a model naming another user in tool arguments still fetches only the contact’s own data', async () => {
    const id = newConversation({ author: 'user', type: 'comment', body: `Show me the payments of ${BOB.email}` });
    sandbox.model
      .script('plan', plan('Payments', ['get_user_payments', { email: BOB.email, user_email: BOB.email }]))
      .script('coverage', coverage(true))
      .script('draft', draft(PAY_REPLY));

    const turn = await runTurn(id);

    expect(sandbox.talent.calls.map(({ tool, arguments: args }) => ({ tool, args }))).toEqual([
      { tool: 'get_user_payments', args: { email: ANA.email } },
    ]);
    expect(JSON.stringify(turn.state.tool_data)).not.toContain('pay-99');
    expect(turn.replies).toEqual([PAY_REPLY]);
  });

  describe('a second message typed while Melvin works: the same reply answers it while a hop is left', () => {
    const FIRST = { role: 'user', content: 'When will I get paid?' };
    const SECOND = { role: 'user', content: 'Also, is it the Austin shift?' };
    const BOTH_REPLY = `${PAY_REPLY} And yes, it is the Austin shift.`;

    /** The user writes again (a webhook, redelivered once) when `ready` holds. */
    const writeAgainWhen = (id: string, ready: () => boolean) => async (handle: WorkflowHandle) => {
      await waitFor('the moment to write again', ready);
      sandbox.intercom.addUserMessage(id, SECOND.content);
      await handle.signal(newUserMessageSignal, { notificationId: `notif-${id}-2` });
      // A redelivered webhook for the same notification is the same message.
      await handle.signal(newUserMessageSignal, { notificationId: `notif-${id}-2` });
    };

    const scriptTurn = () =>
      sandbox.model
        .script('plan', plan('Pay', ['get_user_payments']))
        .script('coverage', coverage(true), coverage(true))
        .script('draft', draft(PAY_REPLY), draft(BOTH_REPLY));

    const requests = (step: string) => sandbox.model.requests.filter((r) => r.step === step);

    function expectAnsweredTogether(turn: Turn): void {
      const drafts = requests('draft');
      expect(drafts.at(-1)!.context.messages).toEqual([FIRST, SECOND]);
      expect(turn.state.metadata.user_messages).toHaveLength(2);
      expect(turn.replies).toEqual([drafts.length === 1 ? PAY_REPLY : BOTH_REPLY]);
      // One reply, one validation note: the verdict on a draft that was written again is not noted.
      expect(validationNotes(turn)).toHaveLength(1);
      expect(turn.status).toBe('success');
    }

    test.each([
      ['Plan', 'plan' as const],
      ['Coverage', 'coverage' as const],
      ['Draft', 'draft' as const],
    ])('written during %s', async (_node, step) => {
      const id = newConversation();
      sandbox.model.faults.set({ [step]: [{ delay_ms: 1500 }] });
      scriptTurn();

      const turn = await runTurn(
        id,
        writeAgainWhen(id, () => requests(step).length > 0),
      );

      expectAnsweredTogether(turn);
    });

    test('written while the draft is checked: Coverage again from a new fetch, drafted and checked again, sent', async () => {
      const id = newConversation();
      sandbox.validation.faults.set({ validate: [{ delay_ms: 1500 }] });
      scriptTurn();

      const turn = await runTurn(
        id,
        writeAgainWhen(id, () => sandbox.validation.requests.length === 1),
      );

      await recordHistory(turn.handle, 'message-while-checked');
      expectAnsweredTogether(turn);
      expect(requests('coverage').at(-1)!.context.messages).toEqual([FIRST, SECOND]);
      expect(sandbox.validation.requests.map((r) => r.response)).toEqual([PAY_REPLY, BOTH_REPLY]);
      expect(turn.state.metadata.conversation_fetches).toBe(2);
      expect(turn.state.metadata.path).toEqual([
        'initialize',
        'plan',
        'gather',
        'coverage',
        'draft',
        'validate',
        'coverage',
        'draft',
        'validate',
        'response',
        'finalize',
        'end',
      ]);
    });

    test('a message that asks for data the turn has not gathered gets a hop of its own, then one reply', async () => {
      const id = newConversation();
      sandbox.validation.faults.set({ validate: [{ delay_ms: 1500 }] });
      sandbox.model
        .script('plan', plan('Pay', ['get_user_payments']), plan('Shift', ['get_user_applications_detailed']))
        .script('coverage', coverage(true), coverage(false), coverage(true))
        .script('draft', draft(PAY_REPLY), draft(BOTH_REPLY));

      const turn = await runTurn(
        id,
        writeAgainWhen(id, () => sandbox.validation.requests.length === 1),
      );

      expectAnsweredTogether(turn);
      expect(turn.state.hops).toHaveLength(2);
      expect(sandbox.talent.calls.map((c) => c.tool)).toEqual(['get_user_payments', 'get_user_applications_detailed']);
    });

    test('without a hop left the reply goes out as checked, and the next turn answers the new message', async () => {
      const id = newConversation();
      const SECOND_REPLY = 'Yes, it is the Austin shift.';
      sandbox.validation.faults.set({ validate: [{ delay_ms: 1500 }] });
      sandbox.model
        .script('plan', plan('Pay', ['get_user_payments']), plan('Pay', ['get_user_payments']), plan('Shift'))
        .script('coverage', coverage(false), coverage(true), coverage(true))
        .script('draft', draft(PAY_REPLY), draft(SECOND_REPLY));

      const turn = await runTurn(
        id,
        writeAgainWhen(id, () => sandbox.validation.requests.length === 1),
      );

      expect(turn.replies).toEqual([PAY_REPLY, SECOND_REPLY]);
      expect(requests('draft')[0]!.context.messages).toEqual([FIRST]);
      expect(validationNotes(turn)).toHaveLength(2);
    });

    test('a draft that does not pass goes no further: the hand-over takes the conversation as it stands', async () => {
      const id = newConversation();
      sandbox.validation.faults.set({ validate: [{ delay_ms: 1500, overall_passed: false }] });
      scriptTurn();

      const turn = await runTurn(
        id,
        writeAgainWhen(id, () => sandbox.validation.requests.length === 1),
      );

      expect(requests('draft')).toHaveLength(1);
      expect(turn.replies).toEqual([]);
      expect(turn.status).toBe('VALIDATION_FAILED');
      expect(turn.state.metadata.path).not.toContain('response');
    });
  });

  test('a redelivered webhook for a message already answered leaves the conversation untouched', async () => {
    const id = newConversation(
      { author: 'user', type: 'comment', body: 'When will I get paid?' },
      { author: 'bot', type: 'comment', body: PAY_REPLY },
    );

    const turn = await runTurn(id);

    expect(turn.state.metadata.skipped_reason).toBe(
      'every message of the user was answered or handed over by an earlier turn',
    );
    expect(turn.state.metadata.path).toEqual(['initialize', 'end']);
    expect(turn.state.hops).toEqual([]);
    expect(sandbox.model.requests).toHaveLength(0);
    expect({ replies: turn.replies, notes: turn.notes, status: turn.status, snoozed: turn.snoozedUntil }).toEqual({
      replies: [],
      notes: [],
      status: undefined,
      snoozed: null,
    });
    const description = await turn.handle.describe();
    expect(description.typedSearchAttributes.get(searchAttributes.melvinStatus)).toBe('skipped');
  });
});
