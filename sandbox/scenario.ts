// The scenario format (scenarios/FORMAT.md) as strict zod schemas: an unknown field is an error naming its path.
import { z } from 'zod';

const IsoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/, 'must be an ISO date');

export const HttpFault = z.strictObject({
  status: z.number().int().min(100).max(599).optional(),
  retry_after_s: z.number().min(0).max(600).optional(),
  delay_ms: z.number().int().min(0).max(600_000).optional(),
  after_accept: z.boolean().optional(),
  always: z.boolean().optional(),
});
export type HttpFault = z.infer<typeof HttpFault>;

export const McpFault = z.strictObject({
  /** `malformed` (beyond the shared format) answers with a result that is not a valid CallToolResult. */
  error: z.enum(['timeout', 'server', 'tool', 'malformed']),
  always: z.boolean().optional(),
});
export type McpFault = z.infer<typeof McpFault>;

export const Application = z.strictObject({
  id: z.string().min(1),
  job_id: z.string().min(1),
  status: z.string().min(1),
  updated_at: IsoDate,
  next_step: z.string().optional(),
  applied_at: IsoDate.optional(),
});

export const Payment = z.strictObject({
  id: z.string().min(1),
  job_id: z.string().min(1),
  amount: z.number(),
  currency: z.string().length(3),
  status: z.string().min(1),
  expected_date: IsoDate.optional(),
  paid_at: IsoDate.optional(),
});

export const TalentUser = z.strictObject({
  email: z.email(),
  name: z.string().min(1),
  applications: z.array(Application).default([]),
  payments: z.array(Payment).default([]),
});
export type TalentUser = z.infer<typeof TalentUser>;

export const Job = z.strictObject({
  id: z.string().min(1),
  title: z.string().min(1),
  location: z.string().min(1),
  status: z.string().min(1),
  pay_rate: z.string().optional(),
  start_date: IsoDate.optional(),
});
export type Job = z.infer<typeof Job>;

export const TalentData = z.strictObject({
  users: z.array(TalentUser).default([]),
  jobs: z.array(Job).default([]),
});
export type TalentData = z.infer<typeof TalentData>;

export const Doc = z.strictObject({ title: z.string().min(1), body: z.string().min(1) });
export type Doc = z.infer<typeof Doc>;

/** A past conversation a teammate resolved: the talent's question and the team's answer, in the team's own voice. */
export const ResolvedConversation = z.strictObject({
  question: z.string().min(1),
  answer: z.string().min(1),
  resolved_by: z.string().min(1).optional(),
  resolved_at: IsoDate.optional(),
});
export type ResolvedConversation = z.infer<typeof ResolvedConversation>;

export const ScenarioPart = z.strictObject({
  author: z.enum(['user', 'lead', 'admin', 'bot']),
  type: z.enum(['comment', 'note']).default('comment'),
  body: z.string().min(1),
});
export type ScenarioPart = z.infer<typeof ScenarioPart>;

export const ScenarioConversation = z.strictObject({
  // Intercom's conversation ids are integers; the emulator answers 404 for any other, as Intercom does.
  id: z.string().regex(/^\d{1,19}$/, 'must be an integer, as Intercom conversation ids are (e.g. "2001")'),
  contact: z.strictObject({ id: z.string().min(1), email: z.email(), name: z.string().min(1) }),
  parts: z.array(ScenarioPart).min(1),
  /** The conversation's custom attributes in the workspace, e.g. `Melvin Reply Mode` (beyond the shared format). */
  attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  /**
   * Other wordings of the last user part, as other talents would write it (beyond the shared format): each try of an
   * evaluation draws one of them or the part itself; a scenario run alone uses the part.
   */
  paraphrases: z.array(z.string().min(1)).optional(),
});
export type ScenarioConversation = z.infer<typeof ScenarioConversation>;

const IntercomFaults = z.strictObject({
  fetch: z.array(HttpFault).optional(),
  contact: z.array(HttpFault).optional(),
  reply: z.array(HttpFault).optional(),
  note: z.array(HttpFault).optional(),
  update: z.array(HttpFault).optional(),
  snooze: z.array(HttpFault).optional(),
  /** The conversation search the resolved-conversation index pages through. */
  search: z.array(HttpFault).optional(),
});
export type IntercomFaults = z.infer<typeof IntercomFaults>;

const LlmFaults = z.strictObject({
  plan: z.array(HttpFault).optional(),
  coverage: z.array(HttpFault).optional(),
  draft: z.array(HttpFault).optional(),
});
export type LlmFaults = z.infer<typeof LlmFaults>;

export const ValidationFault = HttpFault.extend({ overall_passed: z.boolean().optional() });
export type ValidationFault = z.infer<typeof ValidationFault>;

export const Faults = z.strictObject({
  intercom: IntercomFaults.optional(),
  mcp: z.record(z.string(), z.array(McpFault)).optional(),
  llm: LlmFaults.optional(),
  validation: ValidationFault.optional(),
});
export type Faults = z.infer<typeof Faults>;

/** Who a lead's request is from, as the operator API records it. */
const By = z.string().min(1).max(200).default('lead@scenario');

export const ScenarioSignal = z.strictObject({
  after_node: z.enum(['initialize', 'plan', 'gather', 'coverage', 'draft', 'validate', 'response']),
  name: z.enum(['forceEscalation', 'newUserMessage']),
  args: z.record(z.string(), z.unknown()).default({}),
});

export const Expectations = z.strictObject({
  melvin_status: z.string().optional(),
  replied: z.boolean().optional(),
  reply_includes: z.array(z.string()).optional(),
  reply_excludes: z.array(z.string()).optional(),
  tools_called: z.array(z.string()).optional(),
  escalation_source: z
    .enum(['coverage', 'draft', 'validate', 'initialization', 'plan', 'operator'])
    .nullable()
    .optional(),
  note_includes: z.array(z.string()).optional(),
  /** Must appear in no internal note (beyond the shared format), e.g. the reason of a request Melvin refused. */
  note_excludes: z.array(z.string()).optional(),
  max_hops: z.number().int().min(1).optional(),
  snoozed: z.boolean().optional(),
  /** Approval and shadow modes: how the draft ended (beyond the shared format). */
  approval_outcome: z.enum(['approved', 'edited', 'rejected', 'timed_out', 'noted', 'withdrawn']).optional(),
  /** Shadow mode: what the team answered after Melvin's noted draft, as the conversation record keeps it. */
  team_answer_includes: z.array(z.string()).optional(),
});

const NODES = ['initialize', 'plan', 'gather', 'coverage', 'draft', 'validate', 'response'] as const;

const Reason = z.string().min(1).max(1000);

/** A lead's requests, each with the fields Melvin's operator API takes, and `extra` fields of the caller's own. */
function leadActions<T extends z.ZodRawShape>(extra: T) {
  return z.discriminatedUnion('action', [
    z.strictObject({ action: z.literal('escalate'), reason: Reason, by: By, ...extra }),
    z.strictObject({ action: z.literal('hand_back'), reason: Reason, by: By, ...extra }),
    z.strictObject({ action: z.literal('approve'), by: By, ...extra }),
    z.strictObject({ action: z.literal('edit'), text: z.string().min(1).max(4000), by: By, ...extra }),
    z.strictObject({ action: z.literal('reject'), reason: Reason, by: By, ...extra }),
  ]);
}

/** What a lead does through Melvin's operator API: escalate or hand back, approve, edit or reject a waiting draft. */
export const LeadAction = leadActions({});
export type LeadAction = z.infer<typeof LeadAction>;

/**
 * A step in a turn (beyond the shared format): a lead's request, with the answer Melvin must give it (`accepted`, 2xx,
 * or `refused`, a 409 because it can have no effect; absent, either), or a teammate assigning the conversation.
 */
export const TurnStep = z.union([
  leadActions({ answer: z.enum(['accepted', 'refused']).optional() }),
  z.strictObject({ assign: z.enum(['teammate', 'melvin', 'nobody']) }),
]);
export type TurnStep = z.infer<typeof TurnStep>;

/**
 * A later turn of the conversation (beyond the shared format), in order: a teammate's answer in Intercom, what leads
 * and teammates do (`steps`), then the user's message; its expectations are judged on what the turn added to the
 * conversation. `during` places the whole turn while the turn before it is at that node (its next request is held until
 * the turn's steps and message are sent), instead of after that turn has settled; a decision always waits for a draft
 * to wait for one.
 */
export const ScenarioTurn = z
  .strictObject({
    during: z.enum(NODES).optional(),
    teammate_replies: z.string().min(1).optional(),
    steps: z.array(TurnStep).default([]),
    user: z.string().min(1).optional(),
    /** Other wordings of `user`, one drawn per evaluation try (beyond the shared format). */
    paraphrases: z.array(z.string().min(1)).optional(),
    expect: Expectations,
  })
  .refine((t) => t.user || t.steps.length || t.teammate_replies, {
    message: 'a turn needs a user message, steps or a teammate reply',
  });
export type ScenarioTurn = z.infer<typeof ScenarioTurn>;

/**
 * A lead's decision on Melvin's draft in approval mode (beyond the shared format): the runner sends it once the draft
 * waits. A scenario in approval mode without one lets the approval time out.
 */
export const ScenarioDecision = z.discriminatedUnion('decision', [
  z.strictObject({ decision: z.literal('approve'), by: z.string().min(1).default('scenario-runner') }),
  z.strictObject({
    decision: z.literal('edit'),
    text: z.string().min(1).max(4000),
    by: z.string().min(1).default('scenario-runner'),
  }),
  z.strictObject({
    decision: z.literal('reject'),
    reason: z.string().min(1),
    by: z.string().min(1).default('scenario-runner'),
  }),
]);
export type ScenarioDecision = z.infer<typeof ScenarioDecision>;

/** The stages and team steps a scenario can be labelled with: Melvin's lists, written out (eval/labelled.ts checks). */
export const LABEL_STAGES = [
  'exploring',
  'applied',
  'screening',
  'interviewing',
  'offered',
  'hired',
  'working',
  'awaiting_payment',
  'paid',
] as const;
export const LABEL_ACTIONS = [
  'reschedule_interview',
  'verify_payout_details',
  'ask_business_about_pay',
  'fix_account_access',
  'review_application',
] as const;

/**
 * What a person reading the talent's first message labels it with (beyond the shared format): whether they complain
 * (frustration or anger) and how urgent it is, their stage, and the team's next step. The evaluation measures Melvin's
 * readings against them; nothing else reads them.
 */
export const ScenarioLabels = z.strictObject({
  tone: z.strictObject({ complains: z.boolean(), urgency: z.enum(['low', 'normal', 'high']).optional() }).optional(),
  /** Where the talent is in their journey, as their records and words show it; null when nothing shows it. */
  stage: z.enum(LABEL_STAGES).nullable().optional(),
  /** The step only the team can take that the first reply should propose; `none` when it should propose none. */
  action: z.enum([...LABEL_ACTIONS, 'none']).optional(),
  /**
   * The team's past conversations (ids in the evaluation's eval/team-history.json) that answer the same kind of
   * question: the ones the first turn's retrieval should rank first.
   */
  examples: z.array(z.string().regex(/^\d+$/, 'must be a conversation id (digits)')).min(1).optional(),
});
export type ScenarioLabels = z.infer<typeof ScenarioLabels>;

/** A conversation a teammate answered and closed: what the resolved-conversation index takes in. */
export const ClosedConversation = ScenarioConversation.pick({ id: true, contact: true, parts: true });
export type ClosedConversation = z.infer<typeof ClosedConversation>;

export const Scenario = z
  .strictObject({
    id: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be kebab-case'),
    description: z.string().min(1),
    conversation: ScenarioConversation,
    talent: TalentData.default({ users: [], jobs: [] }),
    docs: z.array(Doc).default([]),
    /** Past conversations the team resolved, searched for Draft's style examples (beyond the shared format). */
    resolved_conversations: z.array(ResolvedConversation).default([]),
    /**
     * Conversations the team answers and closes while Melvin runs (beyond the shared format): the runner seeds and
     * closes each, then runs the resolved-conversation index once and waits for it, before the scenario's own
     * conversation starts. Needs a stack whose worker keeps the index (`npm start` does).
     */
    closed_by_team: z.array(ClosedConversation).default([]),
    faults: Faults.optional(),
    signals: z.array(ScenarioSignal).default([]),
    decision: ScenarioDecision.optional(),
    expect: Expectations,
    turns: z.array(ScenarioTurn).default([]),
    /**
     * What a good reply does, in words (beyond the shared format): `npm run eval` asks an LLM judge whether Melvin's
     * replies meet it when a real model endpoint is configured; the scenario runner and the sandbox model ignore it.
     */
    rubric: z.string().min(1).max(2000).optional(),
    labels: ScenarioLabels.optional(),
  })
  // Both hold the first turn's requests at a node, and the sandbox holds one request at a time.
  .refine((s) => !(s.signals.length && s.turns[0]?.during), {
    message: 'signals and a second turn placed "during" the first cannot both be given',
    path: ['turns', 0, 'during'],
  })
  .refine((s) => !s.turns.some((turn, i) => turn.during && s.turns[i - 1]?.during), {
    message: 'a turn placed "during" another cannot itself be the turn another is placed during',
    path: ['turns'],
  });
export type Scenario = z.infer<typeof Scenario>;
