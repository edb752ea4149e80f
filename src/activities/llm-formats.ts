// How Melvin asks an OpenAI-compatible endpoint for JSON in each response-format mode, and how it reads the answer.
import { APIError } from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import type { ResponseFormatJSONObject, ResponseFormatJSONSchema } from 'openai/resources/shared';
import type { z } from 'zod';
import { CoverageOutput, DraftOutput, PlanOutput, ResolveOutput, type LlmStep } from '../contract/schemas';
import { errorMessage } from '../observability/error-message';

/**
 * `json_schema`: OpenAI strict Structured Outputs. `json_object`: JSON mode, the schema spelled out in the system
 * message. `none`: no `response_format` at all, the schema in the system message, the JSON found in whatever text
 * comes back.
 */
export type ResponseFormatMode = 'json_schema' | 'json_object' | 'none';
/** `auto` starts with `json_schema` and steps down when the endpoint refuses the format itself. */
export type ResponseFormatSetting = ResponseFormatMode | 'auto';

/** The next mode to try after an endpoint refused one; `none` sends no format, so nothing can refuse it. */
export const FALLBACK_AFTER: Record<ResponseFormatMode, ResponseFormatMode | undefined> = {
  json_schema: 'json_object',
  json_object: 'none',
  none: undefined,
};

export interface StepSchemas {
  plan: z.ZodType<PlanOutput>;
  coverage: z.ZodType<CoverageOutput>;
  draft: z.ZodType<DraftOutput>;
  resolve: z.ZodType<ResolveOutput>;
}

export const STEP_SCHEMAS: StepSchemas = {
  plan: PlanOutput,
  coverage: CoverageOutput,
  draft: DraftOutput,
  resolve: ResolveOutput,
};

/**
 * The `response_format` of each step exactly as Melvin sends it in `json_schema` mode, built once from the step's zod
 * schema by the official SDK's `zodResponseFormat` (strict: every property required, `additionalProperties: false`).
 */
export function jsonSchemaFormats(schemas: StepSchemas = STEP_SCHEMAS): Record<LlmStep, ResponseFormatJSONSchema> {
  return {
    plan: zodResponseFormat(schemas.plan, 'plan'),
    coverage: zodResponseFormat(schemas.coverage, 'coverage'),
    draft: zodResponseFormat(schemas.draft, 'draft'),
    resolve: zodResponseFormat(schemas.resolve, 'resolve'),
  };
}

const JSON_MODE: ResponseFormatJSONObject = { type: 'json_object' };

/** What a request carries in a mode: the `response_format` (if any) and the system message. */
export function formatRequest(
  mode: ResponseFormatMode,
  format: ResponseFormatJSONSchema,
  prompt: string,
): { response_format?: ResponseFormatJSONSchema | ResponseFormatJSONObject; system: string } {
  if (mode === 'json_schema') return { response_format: format, system: prompt };
  // Without structured outputs the schema travels as text. It names JSON, which JSON mode also requires.
  const system = [
    prompt,
    '',
    'Answer with one JSON object and nothing else. It must match this JSON Schema, with every property present:',
    JSON.stringify(format.json_schema.schema),
  ].join('\n');
  return mode === 'json_object' ? { response_format: JSON_MODE, system } : { system };
}

export type Extracted = { ok: true; value: unknown } | { ok: false; problem: string };

const MAX_BRACE_STARTS = 20;

/**
 * The JSON an answer carries: the whole text when it is JSON, else the first fenced block or `{…}` span that parses to
 * an object. Endpoints without structured outputs often wrap the object in ``` fences or in a sentence or two.
 */
export function extractJson(content: string): Extracted {
  const text = content.trim();
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    for (const candidate of jsonCandidates(text)) {
      try {
        const value: unknown = JSON.parse(candidate);
        if (typeof value === 'object' && value !== null && !Array.isArray(value)) return { ok: true, value };
      } catch {
        // Not this span; the next one may be the answer.
      }
    }
    return { ok: false, problem: `the answer is not JSON (${errorMessage(err)})` };
  }
}

function* jsonCandidates(text: string): Generator<string> {
  for (const match of text.matchAll(/```[\w-]*[^\S\n]*\n?([\s\S]*?)```/g)) yield match[1]!;
  let start = text.indexOf('{');
  for (let tried = 0; start !== -1 && tried < MAX_BRACE_STARTS; tried += 1) {
    const end = closingBrace(text, start);
    if (end !== -1) yield text.slice(start, end + 1);
    // A balanced span that did not parse is skipped whole: an object nested in it is not the answer.
    start = text.indexOf('{', end === -1 ? start + 1 : end + 1);
  }
}

/** The index of the `}` that closes the `{` at `start`, skipping braces inside JSON strings; -1 when none does. */
function closingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i += 1;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{') depth += 1;
    else if (char === '}' && --depth === 0) return i;
  }
  return -1;
}

/**
 * The endpoint's reason when it refused the response format itself, e.g. OpenAI's "'response_format' of type
 * 'json_schema' is not supported with this model", DeepSeek's "This response_format type is unavailable now" or an
 * older llama.cpp server's "response_format type must be one of \"text\" or \"json_object\"" (answered as a 500).
 * A refusal of Melvin's schema ("Invalid schema for response_format …", code `invalid_json_schema`), of the schema's
 * name, or of JSON mode's rule that the messages say "json" is not one: those are Melvin's mistakes, and a weaker
 * format would only hide them.
 */
export function formatRefusal(err: unknown, mode: ResponseFormatMode): string | null {
  if (!(err instanceof APIError) || err.status === undefined || mode === 'none') return null;
  if (![400, 422, 500].includes(err.status)) return null;
  const text = err.message;
  const param = typeof err.param === 'string' ? err.param : '';
  if (err.code === 'invalid_json_schema' || /invalid schema for response_format/i.test(text)) return null;
  if (param.startsWith('response_format.json_schema') || param === 'messages' || /word 'json'/i.test(text)) return null;
  const namesFormat = param === 'response_format' || /response[_ ]format/i.test(text) || text.includes(mode);
  return namesFormat ? text : null;
}

/**
 * What a client has learnt about an endpoint's response formats: the mode to ask in, and why it is less than strict.
 * One ladder serves every request of the client, so requests refused together move it down only once.
 */
export class ResponseFormatLadder {
  mode: ResponseFormatMode;
  /** Each refusal that moved the ladder down, e.g. `json_schema refused (…)`; null while it asks for strict outputs. */
  fallback: string | null = null;

  constructor(private readonly setting: ResponseFormatSetting) {
    this.mode = setting === 'auto' ? 'json_schema' : setting;
  }

  /**
   * After a request asked in `used` failed with `err`: whether to ask again, in the mode now current. Under `auto` an
   * endpoint's refusal of the format moves the ladder one step down (unless another request already moved it), and
   * `steppedDown` holds the refusal when this call moved it; anything else is the request's own failure.
   */
  afterFailure(err: unknown, used: ResponseFormatMode): { retry: boolean; steppedDown: string | null } {
    const refusal = this.setting === 'auto' ? formatRefusal(err, used) : null;
    const next = FALLBACK_AFTER[used];
    if (refusal === null || next === undefined) return { retry: false, steppedDown: null };
    if (this.mode !== used) return { retry: true, steppedDown: null };
    this.mode = next;
    this.fallback = [this.fallback, `${used} refused (${refusal})`].filter(Boolean).join('; ');
    return { retry: true, steppedDown: refusal };
  }
}
