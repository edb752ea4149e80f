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
});
export type ScenarioConversation = z.infer<typeof ScenarioConversation>;

const IntercomFaults = z.strictObject({
  fetch: z.array(HttpFault).optional(),
  contact: z.array(HttpFault).optional(),
  reply: z.array(HttpFault).optional(),
  note: z.array(HttpFault).optional(),
  update: z.array(HttpFault).optional(),
  snooze: z.array(HttpFault).optional(),
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
  max_hops: z.number().int().min(1).optional(),
  snoozed: z.boolean().optional(),
  /** Approval and shadow modes: how the draft ended (beyond the shared format). */
  approval_outcome: z.enum(['approved', 'edited', 'rejected', 'timed_out', 'noted']).optional(),
  /** Shadow mode: what the team answered after Melvin's noted draft, as the conversation record keeps it. */
  team_answer_includes: z.array(z.string()).optional(),
});

/**
 * A later turn of the conversation (beyond the shared format): optionally a teammate answers in Intercom first, then
 * the user writes; its expectations are judged on what this turn added to the conversation.
 */
export const ScenarioTurn = z.strictObject({
  teammate_replies: z.string().min(1).optional(),
  user: z.string().min(1),
  expect: Expectations,
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

export const Scenario = z.strictObject({
  id: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be kebab-case'),
  description: z.string().min(1),
  conversation: ScenarioConversation,
  talent: TalentData.default({ users: [], jobs: [] }),
  docs: z.array(Doc).default([]),
  /** Past conversations the team resolved, searched for Draft's style examples (beyond the shared format). */
  resolved_conversations: z.array(ResolvedConversation).default([]),
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
});
export type Scenario = z.infer<typeof Scenario>;
