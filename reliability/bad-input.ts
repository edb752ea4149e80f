// Bad input, generated: property-based fuzzing of the ingress, malformed model outputs, and MCP results of the wrong
// shape. Nothing crashes, each bad input gets the right 4xx and starts no run, and duplicates collapse to one run.
import { createHmac } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import fc from 'fast-check';
import { createLlmActivities, createOpenAiClient, oneModelForAllTiers } from '../src/activities/llm';
import { MAX_BODY_BYTES } from '../src/ingress/webhook';
import { stateQuery, workflowIdFor } from '../src/contract/shared';
import { SANDBOX_MODEL_NAME } from '../sandbox/model/server';
import { SANDBOX_SECRETS } from '../sandbox/services';
import { Harness } from '../harness/harness';
import { check, type Report } from '../harness/report';

type Case =
  | { kind: 'valid'; message: string; duplicates: number; followUp: 'none' | 'before' | 'after' }
  | { kind: 'signature'; variant: 'missing' | 'wrong-secret' | 'malformed' | 'truncated-body' }
  | { kind: 'oversized'; extraBytes: number }
  | { kind: 'not-json'; text: string }
  | { kind: 'wrong-types'; field: 'topic' | 'id' | 'data' | 'item-id' | 'type'; value: unknown }
  | { kind: 'unknown-topic'; topic: string };

const KNOWN_TOPICS = ['ping', 'conversation.user.created', 'conversation.user.replied'];

const ordinaryCase: fc.Arbitrary<Case> = fc.oneof(
  fc.record({
    kind: fc.constant('valid' as const),
    // Unicode-heavy, and sometimes huge: a pasted document of megabytes is a message like any other.
    message: fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 200 }),
      fc.string({ unit: 'binary', maxLength: 2000 }),
      fc.constant('🙂'.repeat(100_000)),
      fc.constant('A clause of the contract. '.repeat(120_000)),
    ),
    duplicates: fc.integer({ min: 1, max: 3 }),
    // A follow-up message for the same conversation, delivered after the first one or (reordered) before it.
    followUp: fc.constantFrom('none' as const, 'before' as const, 'after' as const),
  }),
  fc.record({
    kind: fc.constant('signature' as const),
    variant: fc.constantFrom(
      'missing' as const,
      'wrong-secret' as const,
      'malformed' as const,
      'truncated-body' as const,
    ),
  }),
  fc.record({ kind: fc.constant('not-json' as const), text: fc.string({ maxLength: 300 }).filter((t) => !isJson(t)) }),
  fc
    .constantFrom('topic' as const, 'id' as const, 'data' as const, 'item-id' as const, 'type' as const)
    .chain((field) =>
      fc.record({
        kind: fc.constant('wrong-types' as const),
        field: fc.constant(field),
        // A number is a fine conversation id (Intercom's are numeric strings), so it is a wrong type everywhere else only.
        value: fc.oneof(
          ...(field === 'item-id' ? [] : [fc.integer()]),
          fc.constant(null),
          fc.array(fc.string(), { maxLength: 2 }),
          fc.boolean(),
        ),
      }),
    ),
  fc.record({
    kind: fc.constant('unknown-topic' as const),
    topic: fc.string({ minLength: 1, maxLength: 60 }).filter((t) => !KNOWN_TOPICS.includes(t)),
  }),
);

/** Past the ingress's limit: about one case in sixteen, each body being 32 MB. */
const caseArbitrary: fc.Arbitrary<Case> = fc.oneof(
  { weight: 15, arbitrary: ordinaryCase },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('oversized' as const),
      extraBytes: fc.integer({ min: 1, max: 512 * 1024 }),
    }),
  },
);

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const sign = (body: Buffer | string, secret: string = SANDBOX_SECRETS.webhookSecret) =>
  `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`;

function notification(conversationId: string, message: string, topic = 'conversation.user.created') {
  return {
    type: 'notification_event',
    id: `notif-${conversationId}`,
    topic,
    app_id: 'fuzz',
    created_at: 1_795_300_000,
    data: {
      type: 'notification_event_data',
      item: {
        type: 'conversation',
        id: conversationId,
        conversation_parts: { conversation_parts: [{ id: 'p1', body: message }] },
      },
    },
  };
}

/** The request a case sends, and the statuses the ingress may rightly answer. */
function request(
  c: Case,
  conversationId: string,
): { body: string; signature: string | null; allowed: number[]; startsRun: boolean } {
  const valid = JSON.stringify(notification(conversationId, c.kind === 'valid' ? c.message : 'hello'));
  switch (c.kind) {
    case 'valid':
      return { body: valid, signature: sign(valid), allowed: [202], startsRun: true };
    case 'signature': {
      const body = c.variant === 'truncated-body' ? valid.slice(0, valid.length - 7) : valid;
      const signature = {
        missing: null,
        'wrong-secret': sign(valid, 'not-the-secret'),
        malformed: 'sha1=zz',
        'truncated-body': sign(valid),
      }[c.variant];
      return { body, signature, allowed: [401], startsRun: false };
    }
    case 'oversized': {
      const body = JSON.stringify({ ...notification(conversationId, 'x'.repeat(MAX_BODY_BYTES + c.extraBytes)) });
      return { body, signature: sign(body), allowed: [413], startsRun: false };
    }
    case 'not-json':
      return { body: c.text, signature: sign(c.text), allowed: [400], startsRun: false };
    case 'wrong-types': {
      const n = notification(conversationId, 'hello');
      const body = JSON.stringify(
        c.field === 'item-id'
          ? { ...n, data: { ...n.data, item: { ...n.data.item, id: c.value } } }
          : { ...n, [c.field]: c.value },
      );
      return { body, signature: sign(body), allowed: [400], startsRun: false };
    }
    case 'unknown-topic': {
      const body = JSON.stringify(notification(conversationId, 'hello', c.topic));
      return { body, signature: sign(body), allowed: [202], startsRun: false };
    }
  }
}

interface IngressFuzz {
  valid: number;
  bad: number;
  duplicatesSent: number;
  followUps: { before: number; after: number };
  unexpected: string[];
  runsForBadInput: number;
  validWithRun: number;
  extraRuns: number;
  healthy: boolean;
}

async function fuzzIngress(harness: Harness, cases: number): Promise<IngressFuzz> {
  let n = 0;
  const started = new Set<string>();
  const refused = new Set<string>();
  const wrong: string[] = [];
  let duplicatesSent = 0;
  const followUps = { before: 0, after: 0 };
  await fc.assert(
    fc.asyncProperty(caseArbitrary, async (c) => {
      const conversationId = String(700000 + ++n);
      const { body, signature, allowed, startsRun } = request(c, conversationId);
      const send = async (payload = body, signed = signature) => {
        const response = await fetch(`${harness.ingressUrl}/webhooks/intercom`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(signed === null ? {} : { 'x-hub-signature': signed }),
          },
          body: payload,
        });
        const json = (await response.json().catch(() => undefined)) as { error?: unknown } | undefined;
        return { status: response.status, json };
      };
      const followUp = JSON.stringify({
        ...notification(conversationId, 'one more thing', 'conversation.user.replied'),
        id: `notif-${conversationId}-follow-up`,
      });
      const sendFollowUp = async () => {
        const answer = await send(followUp, sign(followUp));
        if (answer.status !== 202) wrong.push(`follow-up: ${answer.status}`);
      };
      if (c.kind === 'valid' && c.followUp !== 'none') followUps[c.followUp] += 1;
      if (c.kind === 'valid' && c.followUp === 'before') await sendFollowUp();
      const first = await send();
      if (!allowed.includes(first.status) || (first.status >= 400 && typeof first.json?.error !== 'string')) {
        wrong.push(`${c.kind}: ${first.status}`);
      }
      if (c.kind === 'valid' && c.followUp === 'after') await sendFollowUp();
      if (c.kind === 'valid') {
        for (let i = 1; i < c.duplicates; i++) {
          duplicatesSent += 1;
          const again = await send();
          if (again.status !== 200) wrong.push(`duplicate: ${again.status}`);
        }
      }
      (startsRun ? started : refused).add(conversationId);
      return true;
    }),
    { numRuns: cases, seed: 42 },
  );
  const healthy = (await fetch(`${harness.ingressUrl}/healthz`)).ok;
  let runsForBadInput = 0;
  let runsForValid = 0;
  for (const id of refused) {
    const exists = await harness.client.workflow
      .getHandle(workflowIdFor(id))
      .describe()
      .then(
        () => true,
        () => false,
      );
    if (exists) runsForBadInput += 1;
  }
  let extraRuns = 0;
  for (const id of started) {
    let runs = 0;
    for await (const _run of harness.client.workflow.list({ query: `WorkflowId = '${workflowIdFor(id)}'` })) runs += 1;
    if (runs > 0) runsForValid += 1;
    extraRuns += Math.max(0, runs - 1);
  }
  return {
    valid: started.size,
    bad: refused.size,
    duplicatesSent,
    followUps,
    unexpected: wrong,
    runsForBadInput,
    validWithRun: runsForValid,
    extraRuns,
    healthy,
  };
}

/** Model outputs of every JSON shape: each is either a valid draft or, after one repair, a non-retryable failure. */
async function fuzzModelOutputs(
  harness: Harness,
  cases: number,
): Promise<{ valid: number; invalid: number; other: string[] }> {
  const activities = createLlmActivities(
    oneModelForAllTiers({
      openai: createOpenAiClient({ apiKey: SANDBOX_SECRETS.openAiKey, baseURL: harness.sandbox.urls.model }),
      model: SANDBOX_MODEL_NAME,
    }),
  );
  const tally = { valid: 0, invalid: 0, other: [] as string[] };
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.json(),
        fc
          .record({
            text: fc.string(),
            response_type: fc.constantFrom('REPLY', 'ROUTE_TO_TEAM', 'OTHER'),
            open_intents: fc.array(fc.string(), { maxLength: 2 }),
          })
          .map((d) => JSON.stringify(d)),
      ),
      async (content) => {
        harness.sandbox.model.script('draft', { content }, { content });
        // An environment per case, as each activity attempt has a context of its own: the OpenAI client leaves a
        // listener on the attempt's cancellation signal for each request, which one shared signal would pile up.
        const environment = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
        try {
          await environment.run(activities.draft, {
            prompt: 'p',
            context: {
              messages: [],
              user_name: null,
              intents: [],
              open_intents: [],
              known_context: [],
              missing_context: [],
              tool_data: {},
              docs_data: {},
            },
          });
          tally.valid += 1;
        } catch (err) {
          if (err instanceof Error && err.name === 'LlmInvalidOutputError') tally.invalid += 1;
          else tally.other.push(String(err));
        }
        harness.sandbox.model.clear();
        return true;
      },
    ),
    { numRuns: cases, seed: 7 },
  );
  return tally;
}

export async function badInput(options: { ingressCases: number; modelCases: number }): Promise<Report> {
  const harness = new Harness();
  await harness.start();
  try {
    const ingress = await fuzzIngress(harness, options.ingressCases);
    const model = await fuzzModelOutputs(harness, options.modelCases);

    // A tool that answers with something that is not an MCP result: the call fails clearly, the run escalates.
    const conversation = harness.addConversation('payment');
    harness.sandbox.talent.faults.set({ get_user_payments: [{ error: 'malformed', always: true }] });
    await harness.deliver(conversation);
    await harness.waitForAll(120_000, [conversation]);
    harness.sandbox.talent.faults.set({});
    const state = await harness.client.workflow.getHandle(workflowIdFor(conversation.id)).query(stateQuery);
    const toolError = state.tool_data.get_user_payments?.error ?? '';
    return {
      experiment: 'bad input',
      figures: [
        ['ingress cases (fast-check, seed 42)', options.ingressCases],
        ['valid deliveries / bad inputs', `${ingress.valid} / ${ingress.bad}`],
        ['duplicate deliveries sent', ingress.duplicatesSent],
        [
          'follow-up deliveries: after / reordered before the first',
          `${ingress.followUps.after} / ${ingress.followUps.before}`,
        ],
        ['answers outside the expected status', ingress.unexpected.length],
        ['runs started by bad input', ingress.runsForBadInput],
        ['valid deliveries with a run', `${ingress.validWithRun} / ${ingress.valid}`],
        ['extra runs from duplicates', ingress.extraRuns],
        ['model outputs (fast-check, seed 7): valid / refused after one repair', `${model.valid} / ${model.invalid}`],
        ['MCP result of the wrong shape → tool error', toolError.slice(0, 80)],
        ['… and the run', `${state.escalate?.escalation_source ?? 'no escalation'}, ${state.finalize?.melvin_status}`],
      ],
      checks: [
        check(
          'every bad input got its 4xx (every valid one 202), with a JSON error',
          ingress.unexpected.length === 0,
          ingress.unexpected.slice(0, 3).join('; '),
        ),
        check('no run started by bad input', ingress.runsForBadInput === 0),
        check(
          'every valid delivery started one run; duplicates joined it',
          ingress.validWithRun === ingress.valid && ingress.extraRuns === 0,
        ),
        check('the ingress never crashed', ingress.healthy),
        check(
          'every model output is a valid draft or a clear LlmInvalidOutputError',
          model.other.length === 0,
          model.other[0],
        ),
        check(
          'a malformed MCP result fails the call clearly and escalates',
          toolError.length > 0 && state.finalize?.melvin_status === 'ROUTE_TO_TEAM',
        ),
      ],
    };
  } finally {
    await harness.stop();
  }
}
