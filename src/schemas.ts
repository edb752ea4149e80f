// The LLM and validation contracts: zod schemas for what comes back, and the context each LLM step is sent.
import { z } from 'zod';
import type { Message, StoredDocsData, StoredToolData, ToolDefinition } from './state';

/** The plan as the model writes it. Arguments travel as a JSON string so the schema stays valid in strict mode. */
export const PlanOutput = z.object({
  user_query: z.string().describe('The question the user is asking, in one sentence'),
  reasoning: z.string().describe('Why these tool calls answer it'),
  tool_calls: z
    .array(
      z.object({
        tool_name: z.string().min(1).describe('A tool from available_tools'),
        arguments_json: z.string().describe('The tool arguments as a JSON object, e.g. {"query":"payout schedule"}'),
        reasoning: z.string().describe('Why this call is needed'),
      }),
    )
    .max(12),
});
export type PlanOutput = z.infer<typeof PlanOutput>;

export const CoverageOutput = z.object({
  user_query: z.string(),
  data_sufficient: z.boolean().describe('True when the gathered data answers the question'),
  coverage_score: z.number().min(0).max(1),
  available_data: z.array(z.string()),
  missing_data: z.array(z.object({ gap_type: z.string(), description: z.string() })),
  reasoning: z.string(),
  confidence: z.number().min(0).max(1),
});
export type CoverageOutput = z.infer<typeof CoverageOutput>;

export const DraftOutput = z.object({
  text: z.string().min(1).describe('The reply to send to the user'),
  response_type: z
    .enum(['REPLY', 'ROUTE_TO_TEAM'])
    .default('REPLY')
    .describe('ROUTE_TO_TEAM when the user asks for a human or the reply cannot be given safely'),
});
export type DraftOutput = z.infer<typeof DraftOutput>;

/** The validation endpoint's answer: `overall_passed` is the contract; the per-check results are kept as they come. */
export const ValidationResponse = z.looseObject({
  overall_passed: z.boolean(),
  checks: z.array(z.looseObject({ name: z.string(), passed: z.boolean(), detail: z.string().optional() })).optional(),
});
export type ValidationResponse = z.infer<typeof ValidationResponse>;

export type ToolSummary = Pick<ToolDefinition, 'name' | 'description' | 'input_schema'>;

export interface PlanContext {
  hop: number;
  max_hops: number;
  messages: Message[];
  available_tools: ToolSummary[];
  /** Argument names the workflow fills from the conversation's contact; the model must not set them. */
  identity_arguments: string[];
  tool_data: Record<string, StoredToolData>;
  docs_data: Record<string, StoredDocsData>;
  previous_hops: { hop: number; user_query: string; tool_calls: string[]; missing_data: string[] }[];
}

export interface CoverageContext {
  hop: number;
  max_hops: number;
  user_query: string;
  messages: Message[];
  tool_data: Record<string, StoredToolData>;
  docs_data: Record<string, StoredDocsData>;
}

export interface DraftContext {
  messages: Message[];
  user_name: string | null;
  tool_data: Record<string, StoredToolData>;
  docs_data: Record<string, StoredDocsData>;
}

export type LlmStep = 'plan' | 'coverage' | 'draft';

/** The sandbox model marks its answers with this `system_fingerprint`, so each run's state says a stand-in answered. */
export const STAND_IN_FINGERPRINT = 'melvin-sandbox-stand-in';
