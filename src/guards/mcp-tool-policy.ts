// The MCP tool policy: which listed tools the model may be offered, which of their arguments are pinned to the
// conversation's contact, and which may write. Pure: the configuration, the worker's listing and its calls share it (the
// workflow scopes a call with ./tool-arguments, which the policy's rules are written in terms of).
import { z } from 'zod';
import type { IdentityArgument, IdentitySource, ToolGrant } from '../contract/state';
import { isIdentityLike, SERVER_SEPARATOR } from './tool-arguments';

export const IDENTITY_SOURCES = ['contact_email', 'contact_id'] as const satisfies readonly IdentitySource[];

/** Neither a server's name nor a tool's own name may hold the separator, so no qualified name can stand for another. */
const holdsSeparator = (name: string) => name.includes(SERVER_SEPARATOR);

const SERVER_NAME = /^[A-Za-z0-9_-]+$/;
const IDENTITY_PATH = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
/** Names that would reach an object's prototype when set as a path: never an argument Melvin writes. */
const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'prototype', 'constructor']);

const ToolRule = z.strictObject({
  /** Argument path (property names joined by dots) → what it is set from. */
  identity: z
    .record(z.string(), z.enum(IDENTITY_SOURCES, { error: `must be one of ${IDENTITY_SOURCES.join(', ')}` }))
    .default({}),
  /** Lets a tool its server does not mark `readOnlyHint: true` be offered and called. */
  write: z.boolean().default(false),
});

export const McpToolPolicy = z
  .strictObject({
    /** Server name, as in MCP_SERVERS → the tools allowed, by the server's own tool name. */
    servers: z.record(z.string(), z.strictObject({ tools: z.record(z.string(), ToolRule) })),
  })
  .superRefine((policy, ctx) => {
    for (const [server, { tools }] of Object.entries(policy.servers)) {
      if (!SERVER_NAME.test(server) || holdsSeparator(server)) {
        ctx.addIssue({
          code: 'custom',
          path: ['servers', server],
          message: `a server name is [A-Za-z0-9_-]+ without "${SERVER_SEPARATOR}"`,
        });
      }
      for (const [tool, rule] of Object.entries(tools)) {
        const at = ['servers', server, 'tools', tool, 'identity'];
        if (!tool) ctx.addIssue({ code: 'custom', path: at.slice(0, 4), message: 'a tool name cannot be empty' });
        const paths = Object.keys(rule.identity);
        for (const path of paths) {
          const segments = path.split('.');
          if (!IDENTITY_PATH.test(path) || segments.some((s) => FORBIDDEN_SEGMENTS.has(s))) {
            ctx.addIssue({
              code: 'custom',
              path: [...at, path],
              message: 'must be argument names joined by dots, e.g. "email" or "filter.user.email"',
            });
          }
          const parent = paths.find((other) => path.startsWith(`${other}.`));
          if (parent) {
            ctx.addIssue({ code: 'custom', path: [...at, path], message: `lies inside identity argument "${parent}"` });
          }
        }
      }
    }
  });
export type McpToolPolicy = z.infer<typeof McpToolPolicy>;
export type McpToolRule = McpToolPolicy['servers'][string]['tools'][string];

/**
 * The policy used when MCP_TOOL_POLICY is unset: the sandbox's talent server, read tools only. `get_talent_profile`
 * takes its talent's email nested, and the policy names that path; `update_payout_details` writes, so it is left out.
 */
export const DEFAULT_MCP_TOOL_POLICY: McpToolPolicy = McpToolPolicy.parse({
  servers: {
    talent: {
      tools: {
        get_user_profile: { identity: { email: 'contact_email' } },
        get_user_applications_detailed: { identity: { email: 'contact_email' } },
        get_user_payments: { identity: { email: 'contact_email' } },
        get_talent_profile: { identity: { 'talent.contactEmail': 'contact_email' } },
        get_job_details: {},
        search_talent_docs: {},
        search_resolved_conversations: {},
      },
    },
  },
});

/** The policy's rule for a server's tool, if it allows the tool at all. */
export function ruleFor(policy: McpToolPolicy, server: string, tool: string): McpToolRule | undefined {
  const tools = Object.hasOwn(policy.servers, server) ? policy.servers[server]!.tools : {};
  return Object.hasOwn(tools, tool) ? tools[tool] : undefined;
}

/** Schema keywords whose subschemas describe array items: their properties sit under `[]` in a path. */
const ITEM_KEYWORDS = new Set(['items', 'prefixItems', 'additionalItems', 'contains', 'unevaluatedItems']);
/** Schema keywords whose subschemas describe properties of any name: they sit under `*`. */
const ANY_KEY_KEYWORDS = new Set(['additionalProperties', 'patternProperties', 'unevaluatedProperties']);

/**
 * Every argument a JSON Schema declares, at any depth, as a path of property names. Combinators (anyOf, allOf, if…)
 * add nothing to a path; array items add `[]`, properties of any name `*`, and `$defs`/`definitions` start paths of
 * their own. Only plain property paths can be named in the policy, so an identity behind an array or a `$ref` keeps
 * its tool withheld: the rule errs on the side of offering less.
 */
export function schemaArguments(schema: unknown, path: string[] = [], found: string[][] = []): string[][] {
  if (Array.isArray(schema)) {
    for (const item of schema) schemaArguments(item, path, found);
    return found;
  }
  if (!schema || typeof schema !== 'object') return found;
  for (const [keyword, value] of Object.entries(schema)) {
    if (keyword === 'properties' && value && typeof value === 'object' && !Array.isArray(value)) {
      for (const [name, property] of Object.entries(value)) {
        found.push([...path, name]);
        schemaArguments(property, [...path, name], found);
      }
    } else if (ITEM_KEYWORDS.has(keyword)) {
      schemaArguments(value, [...path, '[]'], found);
    } else if (ANY_KEY_KEYWORDS.has(keyword)) {
      schemaArguments(value, [...path, '*'], found);
    } else if ((keyword === '$defs' || keyword === 'definitions') && value && typeof value === 'object') {
      for (const [name, definition] of Object.entries(value)) schemaArguments(definition, [keyword, name], found);
    } else {
      schemaArguments(value, path, found);
    }
  }
  return found;
}

/** A path as the policy writes it (`filter.user.email`), array items as `[]` (`recipients[].email`). */
export function pathText(path: string[]): string {
  return path.reduce((text, segment) => (segment === '[]' ? `${text}[]` : text ? `${text}.${segment}` : segment), '');
}

/** What a server lists of a tool that the policy judges. */
export interface ListedToolFacts {
  server: string;
  name: string;
  input_schema: Record<string, unknown>;
  /** The server's MCP annotation `readOnlyHint: true`. */
  read_only: boolean;
}

export type PolicyVerdict = { offered: true; grant: ToolGrant } | { offered: false; reason: string };

const quoted = (names: string[]) => names.map((n) => `"${n}"`).join(', ');

/**
 * Whether the policy lets the model be offered a listed tool: its name must not hold the separator; it must be in the
 * policy; every identity argument the
 * policy names must be in its input schema (else the policy is stale); every identity-like argument of the schema must
 * be one the policy names; and a tool its server does not mark read-only must be allowed to write.
 */
export function reviewTool(policy: McpToolPolicy, tool: ListedToolFacts): PolicyVerdict {
  if (holdsSeparator(tool.name)) {
    return {
      offered: false,
      reason: `its name holds "${SERVER_SEPARATOR}", which Melvin joins server and tool names with`,
    };
  }
  const rule = ruleFor(policy, tool.server, tool.name);
  if (!rule) return { offered: false, reason: 'not in the tool policy' };
  const declared = Object.keys(rule.identity);
  const schemaPaths = schemaArguments(tool.input_schema);
  const argumentPaths = schemaPaths.map(pathText);
  const absent = declared.filter((path) => !argumentPaths.includes(path));
  if (absent.length) {
    return {
      offered: false,
      reason: `the policy names identity argument ${quoted(absent)}, which the tool's input schema lacks`,
    };
  }
  const covered = (path: string) => declared.some((d) => d === path || d.startsWith(`${path}.`));
  const undeclared = [...new Set(schemaPaths.filter((path) => isIdentityLike(path.at(-1)!)).map(pathText))].filter(
    (path) => !covered(path),
  );
  if (undeclared.length) {
    return {
      offered: false,
      reason: `identity-like argument ${quoted(undeclared)} is not named as an identity argument by the policy`,
    };
  }
  if (!tool.read_only && !rule.write) {
    return {
      offered: false,
      reason: 'its server does not mark it read-only (readOnlyHint) and the policy does not allow it to write',
    };
  }
  const identity: IdentityArgument[] = declared.map((path) => ({ path: path.split('.'), from: rule.identity[path]! }));
  return { offered: true, grant: { identity, writes: !tool.read_only } };
}
