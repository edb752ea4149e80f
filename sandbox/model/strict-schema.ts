// OpenAI's checks of a `json_schema` response format in strict mode, answered with OpenAI's own error messages.
//
// The rules follow the Structured Outputs guide's "Supported schemas" section: the root is an object; every schema
// has a `type` (or is an `anyOf` or a `$ref`); every object sets `additionalProperties: false` and lists every property
// in `required`; only the keywords of the supported subset appear (string `pattern` and `format`; number `minimum`,
// `maximum`, `exclusiveMinimum`, `exclusiveMaximum` and `multipleOf`; array `minItems` and `maxItems`); at most 5000
// object properties in all and 10 levels of nesting (counted as `properties` and `items` steps down to an object or
// array). Anything else — `default`, `minLength`, `maxLength`, `uniqueItems`, `minProperties`, `patternProperties`,
// `propertyNames`, `allOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentRequired`, … — is refused the way the API
// refuses it: "In context=(…), '<keyword>' is not permitted.", the context being the Python tuple of the path to the
// schema. The wording of each message is the API's, as its users have reported it. Where the guide is silent the check
// takes the stricter side: an `enum` or `const` without a `type` is refused.

export interface OpenAiErrorBody {
  error: { message: string; type: 'invalid_request_error'; param: string | null; code: string | null };
}

export interface Refusal {
  status: 400;
  body: OpenAiErrorBody;
}

const MAX_PROPERTIES = 5000;
const MAX_NESTING = 10;
const NAME_PATTERN = /^[a-zA-Z0-9_-]+$/;
const MAX_NAME_LENGTH = 64;

/** Keywords the strict subset accepts in any schema; the root may also name its dialect. */
const PERMITTED = new Set([
  'type',
  'description',
  'title',
  'enum',
  'const',
  'anyOf',
  '$ref',
  '$defs',
  'definitions',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
]);
const PERMITTED_AT_ROOT = new Set([...PERMITTED, '$schema']);

export function refusal(message: string, param: string | null, code: string | null): Refusal {
  return { status: 400, body: { error: { message, type: 'invalid_request_error', param, code } } };
}

type Schema = Record<string, unknown>;
const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A path as Python prints a tuple of strings: `()`, `('items',)`, `('properties', 'text')`. */
export function pythonTuple(path: string[]): string {
  const items = path.map((part) => (part.includes("'") && !part.includes('"') ? `"${part}"` : `'${part}'`));
  return items.length === 1 ? `(${items[0]},)` : `(${items.join(', ')})`;
}

function typesOf(schema: Schema): string[] {
  const type = schema.type;
  return Array.isArray(type) ? type.map(String) : type === undefined ? [] : [String(type)];
}

/** The children of a schema with the path segments that lead to them (combinators add no level of nesting). */
function children(schema: Schema): { path: string[]; child: unknown; nests: boolean }[] {
  const found: { path: string[]; child: unknown; nests: boolean }[] = [];
  for (const map of ['properties', '$defs', 'definitions'] as const) {
    const entries = schema[map];
    if (isSchema(entries))
      for (const [key, child] of Object.entries(entries))
        found.push({ path: [map, key], child, nests: map === 'properties' });
  }
  if (schema.items !== undefined) found.push({ path: ['items'], child: schema.items, nests: true });
  if (Array.isArray(schema.anyOf))
    schema.anyOf.forEach((child, index) => found.push({ path: ['anyOf', String(index)], child, nests: false }));
  return found;
}

/** The deepest chain of `properties`/`items` steps to an object or array, and the number of properties in all. */
function measure(schema: Schema, level = 0): { nesting: number; properties: number } {
  let nesting = typesOf(schema).some((t) => t === 'object' || t === 'array') ? level : 0;
  let properties = isSchema(schema.properties) ? Object.keys(schema.properties).length : 0;
  for (const { child, nests } of children(schema)) {
    if (!isSchema(child)) continue;
    const inner = measure(child, nests ? level + 1 : level);
    nesting = Math.max(nesting, inner.nesting);
    properties += inner.properties;
  }
  return { nesting, properties };
}

/** The first rule a schema node (and then its children) breaks, in OpenAI's words; null when it keeps them all. */
function nodeProblem(schema: unknown, path: string[]): string | null {
  const at = `In context=${pythonTuple(path)}, `;
  if (!isSchema(schema)) return `${at}schema must have a 'type' key.`;
  const permitted = path.length === 0 ? PERMITTED_AT_ROOT : PERMITTED;
  const refused = Object.keys(schema).find((keyword) => !permitted.has(keyword));
  if (refused !== undefined) return `${at}'${refused}' is not permitted.`;
  if (schema.type === undefined && schema.anyOf === undefined && schema.$ref === undefined)
    return `${at}schema must have a 'type' key.`;
  const types = typesOf(schema);
  if (types.includes('object')) {
    if (schema.additionalProperties !== false)
      return `${at}'additionalProperties' is required to be supplied and to be false.`;
    const keys = isSchema(schema.properties) ? Object.keys(schema.properties) : [];
    const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
    const rule = `'required' is required to be supplied and to be an array including every key in properties.`;
    const missing = keys.find((key) => !required.includes(key));
    if (missing !== undefined) return `${at}${rule} Missing '${missing}'.`;
    const extra = required.find((key) => !keys.includes(key));
    if (extra !== undefined) return `${at}${rule} Extra required key '${extra}' supplied.`;
  }
  if (types.includes('array') && !isSchema(schema.items)) return `${at}array schema missing items.`;
  for (const { path: step, child } of children(schema)) {
    const problem = nodeProblem(child, [...path, ...step]);
    if (problem !== null) return problem;
  }
  return null;
}

/** Why OpenAI's strict mode refuses a schema (the text after "Invalid schema for response_format '<name>': "). */
export function strictSchemaProblem(schema: unknown): string | null {
  const root = isSchema(schema) ? schema : {};
  if (root.type !== 'object') {
    const got =
      root.type === undefined ? 'None' : typeof root.type === 'string' ? root.type : JSON.stringify(root.type);
    return `schema must be a JSON Schema of 'type: "object"', got 'type: "${got}"'.`;
  }
  const { nesting, properties } = measure(root);
  if (nesting > MAX_NESTING) return `${nesting} levels of nesting exceeds limit of ${MAX_NESTING}.`;
  if (properties > MAX_PROPERTIES) return `${properties} parameters exceeds limit of ${MAX_PROPERTIES}.`;
  return nodeProblem(root, []);
}

/**
 * Checks the `json_schema` object of a `response_format` as OpenAI does: the name always, the schema only when
 * `strict` is true (without it the API takes any schema). Returns the 400 the API would answer, or null.
 */
export function checkJsonSchemaFormat(jsonSchema: unknown): Refusal | null {
  const param = 'response_format.json_schema';
  if (!isSchema(jsonSchema))
    return refusal(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
  const name = jsonSchema.name;
  if (typeof name !== 'string')
    return refusal(`Missing required parameter: '${param}.name'.`, `${param}.name`, 'missing_required_parameter');
  if (name.length > MAX_NAME_LENGTH) {
    return refusal(
      `Invalid '${param}.name': string too long. Expected a string with maximum length ${MAX_NAME_LENGTH}, but got a string with length ${name.length} instead.`,
      `${param}.name`,
      'string_above_max_length',
    );
  }
  if (!NAME_PATTERN.test(name)) {
    return refusal(
      `Invalid '${param}.name': string does not match pattern. Expected a string that matches the pattern '${NAME_PATTERN.source}'.`,
      `${param}.name`,
      'invalid_value',
    );
  }
  if (jsonSchema.strict !== true) return null;
  const problem = strictSchemaProblem(jsonSchema.schema);
  if (problem === null) return null;
  return refusal(`Invalid schema for response_format '${name}': ${problem}`, 'response_format', 'invalid_json_schema');
}

/** JSON mode's rule: the messages must ask for JSON somewhere, since an unprompted model may emit whitespace forever. */
export function checkJsonModeMessages(messages: { content?: unknown }[]): Refusal | null {
  const mentionsJson = messages.some((m) =>
    JSON.stringify(m.content ?? '')
      .toLowerCase()
      .includes('json'),
  );
  if (mentionsJson) return null;
  return refusal(
    "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
    'messages',
    null,
  );
}
