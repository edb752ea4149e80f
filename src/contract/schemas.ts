// The LLM and validation contracts: zod schemas for what comes back from each step, and the model tiers the steps run on.
import { z } from 'zod';
import { STAGES, SUGGESTED_ACTIONS, TONE_EMOTIONS } from './vocabulary';

/** A zod error's issues as an answer names them: where (a dotted path, `(root)` for the whole) and what is wrong. */
export function issuesOf(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((issue) => ({ path: issue.path.join('.') || '(root)', message: issue.message }));
}

/** A conversation id as Intercom gives it and as workflow IDs and CLI arguments carry it. */
export const ConversationIdText = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "_" or "-"');

/*
 * The three step schemas are the single source of what the model must answer. Their JSON Schema goes to the model as
 * an OpenAI strict Structured Outputs `response_format`, so they stay inside the subset strict mode accepts: every
 * property required, no `default`, and no bounds at all (`minLength`, `maxItems`, `minimum`, … are refused outright or,
 * for fine-tuned models, unsupported). The bounds are refinements instead, which JSON Schema generation leaves out and
 * zod checks once the answer arrives; an answer outside them gets the one repair request like any invalid answer.
 */
const nonEmptyText = () => z.string().refine((text) => text.trim() !== '', 'must not be empty');
const fraction = () => z.number().refine((n) => n >= 0 && n <= 1, 'must be between 0 and 1');
export const MAX_PLANNED_CALLS = 12;

/** The team's next step a plan or a draft proposes: which, and why, in a sentence for the team. */
export const SuggestedAction = z.object({
  action: z.enum(SUGGESTED_ACTIONS),
  why: nonEmptyText().describe('In one sentence for the team, what in the conversation calls for it'),
});
export type SuggestedAction = z.infer<typeof SuggestedAction>;

/** The plan as the model writes it. Arguments travel as a JSON string so the schema stays valid in strict mode. */
export const PlanOutput = z.object({
  user_query: z.string().describe('The question the user is asking, in one sentence'),
  intents: z
    .array(
      z.object({
        intent: nonEmptyText().describe('A short name for one thing the user asks, e.g. "payment status"'),
        question: z.string().describe("The user's own words for it"),
      }),
    )
    .describe('Each separate thing the user asks in their latest messages, in order; none for a greeting'),
  entities: z
    .array(
      z.object({
        kind: z.string().describe('job, application, payment, date, form, …'),
        mention: z.string().describe('How the user referred to it, in their words, e.g. "the Denver catering shift"'),
      }),
    )
    .describe('Things the user named: what Melvin already knows and must never ask for again'),
  tone: z
    .object({
      emotions: z
        .array(
          z.object({
            emotion: z.enum(TONE_EMOTIONS),
            intensity: z.enum(['mild', 'strong']),
            phrase: z.string().describe("The user's own words that show it"),
          }),
        )
        .describe('Emotions the latest messages show, each with the words behind it; none for a neutral message'),
      urgency: z.enum(['low', 'normal', 'high']).describe('How soon the user needs an answer, from their words'),
      urgency_phrases: z.array(z.string()).describe('The words that show the urgency; none when it is normal'),
    })
    .describe("How the user feels and how urgent it is for them, from their latest messages' own words"),
  stage: z
    .enum([...STAGES, 'unknown'])
    .describe("Where the user's own words place them in their journey as a talent; unknown when they do not say"),
  suggested_action: SuggestedAction.nullable().describe(
    "The next step only a person on the team can take, when the user's words call for one; null otherwise",
  ),
  person_needed: z
    .object({
      kind: z.enum(['asked_for_person', 'sensitive_request']),
      why: nonEmptyText().describe('In one sentence for the team, what in the user’s words calls for a person'),
    })
    .nullable()
    .describe(
      'Set when a person must answer, whatever the data says: the user asks for one, or writes of legal steps, ' +
        'safety, harassment, discrimination or fraud; null otherwise',
    ),
  reasoning: z.string().describe('Why these tool calls answer it'),
  tool_calls: z
    .array(
      z.object({
        tool_name: nonEmptyText().describe('A tool from available_tools'),
        arguments_json: z.string().describe('The tool arguments as a JSON object, e.g. {"query":"payout schedule"}'),
        reasoning: z.string().describe('Why this call is needed'),
      }),
    )
    .refine((calls) => calls.length <= MAX_PLANNED_CALLS, `must hold at most ${MAX_PLANNED_CALLS} tool calls`)
    .describe(`At most ${MAX_PLANNED_CALLS} calls`),
});
export type PlanOutput = z.infer<typeof PlanOutput>;

/** The resolve step's choice among the records the user's words could name: one id, or none. */
export const ResolveOutput = z.object({
  id: z
    .string()
    .describe('The id of the candidate the user means, or an empty string when their words do not say which'),
  reasoning: z.string().describe("What in the user's words decided it, or why nothing did"),
});
export type ResolveOutput = z.infer<typeof ResolveOutput>;

export const CoverageOutput = z.object({
  user_query: z.string(),
  data_sufficient: z.boolean().describe('True when the gathered data answers the question'),
  coverage_score: fraction().describe('From 0 to 1'),
  available_data: z.array(z.string()),
  missing_data: z.array(z.object({ gap_type: z.string(), description: z.string() })),
  intents: z
    .array(z.object({ intent: z.string(), covered: z.boolean().describe('True when the data answers this intent') }))
    .describe("Each of the plan's intents, and whether the gathered data answers it"),
  reasoning: z.string(),
  confidence: fraction().describe('From 0 to 1'),
});
export type CoverageOutput = z.infer<typeof CoverageOutput>;

/** Why a draft routes to the team: the user asked for a person, no reply can be given safely, or a person must handle it. */
export const ROUTE_KINDS = ['asked_for_person', 'no_safe_answer', 'sensitive_request'] as const;
export type RouteKind = (typeof ROUTE_KINDS)[number];

const DraftRoute = z.object({
  kind: z
    .enum(ROUTE_KINDS)
    .describe(
      'asked_for_person: the user asks for a human; no_safe_answer: neither the data nor the help center gives a ' +
        'safe reply; sensitive_request: legal, safety, harassment, fraud or anything a person must handle',
    ),
  explanation: nonEmptyText().describe('For the team, one or two sentences: why Melvin does not answer this itself'),
});
export type DraftRoute = z.infer<typeof DraftRoute>;

const ResponseType = z.enum(['REPLY', 'ROUTE_TO_TEAM']);

export const DraftOutput = z.object({
  text: nonEmptyText().describe('The reply to send to the user'),
  response_type: ResponseType.describe(
    'REPLY, or ROUTE_TO_TEAM when the user asks for a human or the reply cannot be given safely',
  ),
  route: DraftRoute.nullable().describe('With ROUTE_TO_TEAM: its kind and why; null with REPLY'),
  open_intents: z
    .array(z.string())
    .describe('The intents (by name) the reply leaves for the team because the data does not answer them'),
  suggested_action: SuggestedAction.nullable().describe(
    'The next step only a person on the team can take, when the conversation calls for one; null otherwise',
  ),
});
export type DraftOutput = z.infer<typeof DraftOutput>;

/**
 * How a draft is read. Strict mode always sends every field, but JSON-mode endpoints (and models without a response
 * format) leave some out: as seed 000 says, a missing `response_type` is REPLY; a missing route is none (a route to the
 * team without one is told to the team as the model giving no reason), and missing open intents none.
 */
/**
 * The plan as Melvin reads it: an endpoint without strict formats may leave out what plans recorded before it did not
 * have, a missing `person_needed` is none.
 */
export const PlanReading = PlanOutput.extend({
  person_needed: PlanOutput.shape.person_needed.default(null),
});

export const DraftReading = DraftOutput.extend({
  response_type: ResponseType.default('REPLY'),
  route: DraftRoute.nullable().default(null),
  open_intents: z.array(z.string()).default([]),
  suggested_action: SuggestedAction.nullable().default(null),
});

export type LlmStep = 'plan' | 'coverage' | 'draft' | 'resolve';

/**
 * The model settings a step runs on (seed 003's tiers): reading the question and judging coverage can run on a
 * smaller, cheaper model than writing the answer the talent reads.
 */
export type ModelTier = 'plan' | 'draft';
export const MODEL_TIERS: readonly ModelTier[] = ['plan', 'draft'];
export const TIER_OF_STEP: Record<LlmStep, ModelTier> = {
  plan: 'plan',
  coverage: 'plan',
  resolve: 'plan',
  draft: 'draft',
};

/** The sandbox model marks its answers with this `system_fingerprint`, so each run's state says a stand-in answered. */
export const STAND_IN_FINGERPRINT = 'melvin-sandbox-stand-in';
