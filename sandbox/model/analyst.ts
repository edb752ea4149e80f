// The sandbox model's tool calling: OpenAI's checks of `tools` and of the tool-call turns in `messages`, answered with
// OpenAI's own errors, and a stand-in analyst for a `Task: analyze.` request that picks tools by the question's words
// and answers only by quoting what the tools returned. It shares no code with Melvin's analysis agent.
import { z } from 'zod';
import { refusal, strictSchemaProblem, type Refusal } from './strict-schema';

const NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** A function tool as the request carries it; checked here the way the API checks it, field by field. */
interface FunctionTool {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
  strict: boolean;
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One message of a tool-calling conversation, read loosely: the checks below say what is wrong, in OpenAI's words. */
const Message = z.looseObject({
  role: z.string(),
  content: z.unknown().optional(),
  tool_call_id: z.unknown().optional(),
  tool_calls: z.unknown().optional(),
});
type Message = z.infer<typeof Message>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The request's `tools`, or the 400 the API answers for the first one it refuses. */
export function checkTools(tools: unknown): { tools: FunctionTool[] } | Refusal {
  if (!Array.isArray(tools)) {
    return refusal(
      `Invalid type for 'tools': expected an array, but got ${typeof tools} instead.`,
      'tools',
      'invalid_type',
    );
  }
  if (tools.length > 128) {
    return refusal(
      `Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length ${tools.length} instead.`,
      'tools',
      'array_above_max_length',
    );
  }
  const checked: FunctionTool[] = [];
  for (const [index, tool] of tools.entries()) {
    const at = `tools[${index}]`;
    if (!isObject(tool)) return refusal(`Invalid type for '${at}': expected an object.`, at, 'invalid_type');
    if (tool.type !== 'function') {
      return refusal(
        `Invalid value: '${String(tool.type)}'. Supported values are: 'function' and 'custom'.`,
        `${at}.type`,
        'invalid_value',
      );
    }
    const fn = tool.function;
    if (!isObject(fn))
      return refusal(`Missing required parameter: '${at}.function'.`, `${at}.function`, 'missing_required_parameter');
    if (typeof fn.name !== 'string') {
      return refusal(
        `Missing required parameter: '${at}.function.name'.`,
        `${at}.function.name`,
        'missing_required_parameter',
      );
    }
    if (!NAME_PATTERN.test(fn.name)) {
      return refusal(
        `Invalid '${at}.function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        `${at}.function.name`,
        'invalid_value',
      );
    }
    const parameters = fn.parameters ?? { type: 'object', properties: {} };
    if (fn.strict === true) {
      const problem = strictSchemaProblem(parameters);
      if (problem !== null) {
        return refusal(
          `Invalid schema for function '${fn.name}': ${problem}`,
          `${at}.function.parameters`,
          'invalid_function_parameters',
        );
      }
    }
    checked.push({
      name: fn.name,
      description: typeof fn.description === 'string' ? fn.description : undefined,
      parameters: isObject(parameters) ? parameters : {},
      strict: fn.strict === true,
    });
  }
  const names = checked.map((t) => t.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) return refusal(`Duplicate tool name: '${twice}'.`, 'tools', 'invalid_value');
  return { tools: checked };
}

/**
 * The tool-call turns of `messages` as the API checks them: a `tool` message answers a `tool_call_id` of the assistant
 * message before it, and every call of an assistant message is answered before the next message that is not a tool's.
 */
export function checkToolTurns(raw: unknown[]): Refusal | null {
  let pending: string[] = [];
  let pendingAt = -1;
  let answerable = new Set<string>();
  for (const [index, value] of raw.entries()) {
    const parsed = Message.safeParse(value);
    if (!parsed.success)
      return refusal(
        `Invalid type for 'messages[${index}]': expected an object.`,
        `messages[${index}]`,
        'invalid_type',
      );
    const message: Message = parsed.data;
    if (message.role === 'tool') {
      if (typeof message.tool_call_id !== 'string') {
        return refusal(
          `Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.`,
          `messages.[${index}].tool_call_id`,
          null,
        );
      }
      if (!answerable.has(message.tool_call_id)) {
        return refusal(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${index}].role`,
          null,
        );
      }
      pending = pending.filter((id) => id !== message.tool_call_id);
      continue;
    }
    if (pending.length) break;
    answerable = new Set();
    if (message.role === 'assistant' && message.tool_calls !== undefined) {
      const calls = z
        .array(
          z.looseObject({
            id: z.string(),
            type: z.literal('function'),
            function: z.looseObject({ name: z.string(), arguments: z.string() }),
          }),
        )
        .safeParse(message.tool_calls);
      if (!calls.success) {
        const issue = calls.error.issues[0]!;
        const where = `messages.[${index}].tool_calls${issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}`;
        return refusal(`Invalid value for '${where}': ${issue.message}.`, where, 'invalid_value');
      }
      pending = calls.data.map((c) => c.id);
      pendingAt = index;
      answerable = new Set(pending);
    }
  }
  if (pending.length) {
    return refusal(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${pending.join(', ')}`,
      `messages.[${pendingAt}].role`,
      null,
    );
  }
  return null;
}

/** Words of a question that ask for each kind of figure, tried in this order. */
const TOPICS: { words: RegExp; tool: RegExp }[] = [
  { words: /escalat|hand(ed|s)?[ -]?(over|off)|to the team|caus/i, tool: /escalat|cause/i },
  { words: /help ?cent|docs?\b|document|not cover|uncovered|missing/i, tool: /uncovered|cover/i },
  { words: /intent|succe|fail|answered|topic/i, tool: /intent/i },
  { words: /\bruns?\b|example|conversation/i, tool: /^runs?$/i },
];

/** A value for one schema property, from the question's words where the schema lists choices. */
function argumentFor(schema: unknown, question: string): unknown {
  if (!isObject(schema)) return null;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (Array.isArray(schema.enum)) {
    const named = schema.enum.find((v) => typeof v === 'string' && new RegExp(`\\b${v}`, 'i').test(question));
    return named ?? schema.enum[0];
  }
  if (types.includes('null')) return null;
  if (types.includes('object')) return argumentsFor(schema, question);
  if (types.includes('integer') || types.includes('number'))
    return typeof schema.minimum === 'number' ? schema.minimum : 10;
  if (types.includes('boolean')) return false;
  if (types.includes('array')) return [];
  return '';
}

function argumentsFor(parameters: Record<string, unknown>, question: string): Record<string, unknown> {
  const properties = isObject(parameters.properties) ? parameters.properties : {};
  return Object.fromEntries(Object.entries(properties).map(([key, schema]) => [key, argumentFor(schema, question)]));
}

/** The rows of a tool's result: its first array of objects, however the tool nests it. */
function rowsOf(value: unknown, depth = 0): Record<string, unknown>[] | null {
  if (Array.isArray(value)) return value.every(isObject) ? (value as Record<string, unknown>[]) : null;
  if (!isObject(value) || depth > 2) return null;
  for (const inner of Object.values(value)) {
    const rows = rowsOf(inner, depth + 1);
    if (rows) return rows;
  }
  return null;
}

/** One tool result in a sentence: its first three rows, each as its first text and first count. */
function describeResult(name: string, content: string): string {
  let result: unknown;
  try {
    result = JSON.parse(content);
  } catch {
    return `${name} returned text that is not JSON.`;
  }
  if (isObject(result) && typeof result.error === 'string') return `${name} could not answer: ${result.error}`;
  const rows = rowsOf(result);
  if (!rows || rows.length === 0) return `${name} found nothing in the period.`;
  const parts = rows.slice(0, 3).map((row) => {
    const label = Object.values(row).find((v) => typeof v === 'string');
    const count = Object.entries(row).find(([, v]) => typeof v === 'number');
    return `${String(label ?? '?')}${count ? ` (${count[0]}: ${count[1]})` : ''}`;
  });
  return `${name}: ${parts.join('; ')}${rows.length > 3 ? `; and ${rows.length - 3} more` : ''}.`;
}

export type AnalystAnswer = { content: string; tool_calls?: undefined } | { content: null; tool_calls: ToolCall[] };

/**
 * The stand-in analyst. Before any tool result it calls the tools whose names match what the question asks about (or
 * says it cannot answer from the tools it has); once results are back, it answers by quoting them, never from memory.
 */
export function analystAnswer(messages: unknown[], tools: FunctionTool[], nextId: () => string): AnalystAnswer {
  const parsed = messages.map((m) => Message.parse(m));
  const lastUser = parsed.map((m) => m.role).lastIndexOf('user');
  const question = typeof parsed[lastUser]?.content === 'string' ? (parsed[lastUser]!.content as string) : '';
  const after = parsed.slice(lastUser + 1);
  const results = after.filter((m) => m.role === 'tool');
  if (results.length === 0) {
    const chosen = TOPICS.filter((t) => t.words.test(question))
      .map((t) => tools.find((tool) => t.tool.test(tool.name)))
      .filter((tool): tool is FunctionTool => tool !== undefined);
    if (chosen.length === 0) {
      const offered = tools.map((t) => t.name).join(', ') || 'none';
      return {
        content: `Sandbox stand-in analyst: the run records cannot answer that. The tools I have (${offered}) give escalation causes, intents' outcomes, uncovered questions and runs; ask about one of those.`,
      };
    }
    return {
      content: null,
      tool_calls: [...new Set(chosen)].slice(0, 2).map((tool) => ({
        id: nextId(),
        type: 'function',
        function: { name: tool.name, arguments: JSON.stringify(argumentsFor(tool.parameters, question)) },
      })),
    };
  }
  const callNames = new Map<string, string>();
  for (const m of after) {
    if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) continue;
    for (const call of m.tool_calls as ToolCall[]) callNames.set(call.id, call.function.name);
  }
  const sentences = results.map((r) =>
    describeResult(
      callNames.get(String(r.tool_call_id)) ?? 'a tool',
      typeof r.content === 'string' ? r.content : JSON.stringify(r.content),
    ),
  );
  return { content: `Sandbox stand-in analyst, from the tools' results: ${sentences.join(' ')}` };
}
