// MCP activities over the official SDK client: list every server's tools (all pages) under the MCP tool policy, and
// run one tool call each, which the policy checks again.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Context, log } from '@temporalio/activity';
import {
  reviewTool,
  ruleFor,
  type ListedToolFacts,
  type McpToolPolicy,
  type PolicyVerdict,
} from '../guards/mcp-tool-policy';
import type { ToolDefinition, ToolServerStatus, WithheldTool } from '../contract/state';
import { distinctToolNames, type ListedTool } from '../guards/tool-arguments';
import {
  McpInvalidArgumentsError,
  McpToolRefusedError,
  McpTransportError,
  McpUnknownToolError,
  withRetryContract,
} from './errors';
import { errorMessage } from '../observability/error-message';
import { withHeartbeats } from './heartbeat';

/** One MCP server: a Streamable HTTP `url`, or a `command` started over stdio. */
export type McpServerConfig = { name: string; url: string } | { name: string; command: string; args: string[] };

/** Tool results kept in workflow state are capped so no payload nears Temporal's 2 MB limit. */
export const MAX_TOOL_RESULT_BYTES = 32 * 1024;
/**
 * A server that accepts the connection but never answers must not hold the listing past the activity's 15 s
 * start-to-close (the SDK's own request timeout is 60 s): the handshake gets 10 s (a stdio server may take seconds to
 * start), one server's whole listing 12 s.
 */
const CONNECT_TIMEOUT_MS = 10_000;
const LIST_TIMEOUT_MS = 12_000;

/**
 * How long one tool call may take (within the activity's 30 s start-to-close), and how long a session has to answer a
 * ping after a request on it timed out or failed oddly. The ping fits in what is left of both activities' timeouts.
 */
export interface McpSessionTimings {
  callTimeoutMs: number;
  probeTimeoutMs: number;
}
const DEFAULT_TIMINGS: McpSessionTimings = { callTimeoutMs: 25_000, probeTimeoutMs: 2_000 };

/**
 * The configured servers' tools that the policy offers, under distinct names; how listing each server went; and the
 * tools the policy withheld, with why.
 */
export interface ToolListing {
  tools: ToolDefinition[];
  servers: ToolServerStatus[];
  /** Absent in listings recorded before the MCP tool policy. */
  withheld?: WithheldTool[];
}

/** The worker's MCP sessions: one client per server, connected on first use and re-opened after a transport failure. */
export class McpConnections {
  private readonly clients = new Map<string, Promise<Client>>();
  readonly timings: McpSessionTimings;

  constructor(
    readonly servers: McpServerConfig[],
    timings: Partial<McpSessionTimings> = {},
  ) {
    this.timings = { ...DEFAULT_TIMINGS, ...timings };
  }

  /** The server's session: the same promise for every caller until the session is reset. */
  client(serverName: string): Promise<Client> {
    const existing = this.clients.get(serverName);
    if (existing) return existing;
    const server = this.servers.find((s) => s.name === serverName);
    if (!server) return Promise.reject(new McpUnknownToolError(`no MCP server named "${serverName}" is configured`));
    const connecting: Promise<Client> = this.connect(server, () => {
      if (this.clients.get(serverName) === connecting) this.clients.delete(serverName);
    });
    this.clients.set(serverName, connecting);
    connecting.catch(() => {
      if (this.clients.get(serverName) === connecting) this.clients.delete(serverName);
    });
    return connecting;
  }

  private async connect(server: McpServerConfig, onClose: () => void): Promise<Client> {
    const client = new Client({ name: 'melvin', version: '1.0.0' });
    const transport =
      'url' in server
        ? new StreamableHTTPClientTransport(new URL(server.url))
        : new StdioClientTransport({ command: server.command, args: server.args, stderr: 'inherit' });
    client.onclose = onClose;
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw new McpTransportError(`cannot connect to MCP server "${server.name}": ${errorText(err)}`, { cause: err });
    }
    return client;
  }

  /**
   * Closes a session whose transport failed, so the next attempt reconnects. Given the session that failed, it closes
   * only that one: a concurrent call may already have opened its successor.
   */
  async reset(serverName: string, failed?: Promise<Client>): Promise<void> {
    const existing = this.clients.get(serverName);
    if (!existing || (failed && failed !== existing)) return;
    this.clients.delete(serverName);
    await existing.then((c) => c.close()).catch(() => undefined);
  }

  async close(): Promise<void> {
    const names = [...this.clients.keys()];
    await Promise.all(names.map((name) => this.reset(name)));
  }
}

export interface ToolCallOutcome {
  /** The tool's own `isError`: an expected failure the agent reasons about, not an activity failure. */
  is_error: boolean;
  data: unknown;
  truncated: boolean;
}

/** Caps a value at `maxBytes` of JSON; a capped value becomes the JSON text's prefix. */
export function capPayload(value: unknown, maxBytes = MAX_TOOL_RESULT_BYTES): { data: unknown; truncated: boolean } {
  const json = JSON.stringify(value) ?? 'null';
  if (Buffer.byteLength(json) <= maxBytes) return { data: value, truncated: false };
  return { data: Buffer.from(json).subarray(0, maxBytes).toString('utf8'), truncated: true };
}

/** Structured content when the tool gave it, else its text (parsed when it is JSON), else the raw content blocks. */
export function toolResultData(result: CallToolResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const texts = result.content.flatMap((block) => (block.type === 'text' ? [block.text] : []));
  if (texts.length !== result.content.length) return result.content;
  const text = texts.join('\n');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * An error's message with its cause's, e.g. "fetch failed (connect ECONNREFUSED 127.0.0.1:4711)". Read by shape, not
 * `instanceof`: `fetch` errors can come from another realm's `Error`.
 */
function errorText(err: unknown): string {
  const cause = err && typeof err === 'object' && 'cause' in err && err.cause ? errorMessage(err.cause) : '';
  const message = errorMessage(err);
  return cause && cause !== message ? `${message} (${cause})` : message;
}

/**
 * Whether a request's failure means the session itself is gone, so it must be closed and the next call reconnect.
 * Closing a session fails every other call in flight on it, from other conversations on this worker too, and over stdio
 * it kills the server's process: so only a failed transport counts. It failed when the connection closed (a stdio server
 * that exited, a cut stream) or the server forgot the session (HTTP 404, which the Streamable HTTP spec answers with a
 * new session). It did not when the server answered: an HTTP error status, a JSON-RPC error. A request that timed out
 * or was aborted ended alone (the SDK sent the server a cancellation), and the session is kept unless it then fails to
 * answer a ping; so is it for any other failure (a refused connection, "fetch failed", "Not connected" do fail the
 * ping). `client` is undefined when connecting failed: that attempt is already forgotten.
 */
async function sessionLost(err: unknown, client: Client | undefined, probeTimeoutMs: number): Promise<boolean> {
  if (!client) return false;
  if (err instanceof StreamableHTTPError && err.code !== undefined && err.code > 0) return err.code === 404;
  if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) return true;
  if (err instanceof McpError && err.code !== ErrorCode.RequestTimeout) return false;
  return client.ping({ timeout: probeTimeoutMs }).then(
    () => false,
    () => true,
  );
}

function mcpFailure(err: unknown, what: string): Error {
  if (err instanceof McpError && err.code === ErrorCode.InvalidParams) {
    return new McpInvalidArgumentsError(`${what}: ${err.message}`, { cause: err });
  }
  if (err instanceof McpError && err.code === ErrorCode.MethodNotFound) {
    return new McpUnknownToolError(`${what}: ${err.message}`, { cause: err });
  }
  if (err instanceof McpTransportError || err instanceof McpUnknownToolError) return err;
  // The SDK's message carries the response body but not the status, which is what an operator looks for first.
  const status = err instanceof StreamableHTTPError && err.code && err.code > 0 ? `HTTP ${err.code}: ` : '';
  return new McpTransportError(`${what}: ${status}${errorText(err)}`, { cause: err });
}

/** One tool as its server lists it: what the policy judges, and what the model is shown. */
type ServerTool = ListedToolFacts & Omit<ListedTool, 'grant'>;

/** One server's tools, all pages, as the server names them; a lost session is reset so the next run reconnects. */
async function listServerTools(mcp: McpConnections, server: McpServerConfig): Promise<ServerTool[]> {
  const deadline = Date.now() + LIST_TIMEOUT_MS;
  const tools: ServerTool[] = [];
  const session = mcp.client(server.name);
  let client: Client | undefined;
  try {
    client = await session;
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout: Math.max(1, deadline - Date.now()) });
      for (const tool of page.tools) {
        tools.push({
          name: tool.name,
          description: tool.description ?? '',
          input_schema: tool.inputSchema as Record<string, unknown>,
          server: server.name,
          read_only: tool.annotations?.readOnlyHint === true,
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  } catch (err) {
    if (await sessionLost(err, client, mcp.timings.probeTimeoutMs)) await mcp.reset(server.name, session);
    throw mcpFailure(err, `list tools of MCP server "${server.name}"`);
  }
}

export function createMcpActivities(mcp: McpConnections, policy: McpToolPolicy) {
  /** The policy's verdict on each server's tools at their latest listing on this worker, for `callTool` to check. */
  const verdicts = new Map<string, Map<string, PolicyVerdict>>();
  /** Withheld tools already logged by this worker: each is logged once, not at every run. */
  const logged = new Set<string>();

  function judge(serverName: string, listed: ServerTool[]): { offered: ListedTool[]; withheld: WithheldTool[] } {
    const judged = new Map<string, PolicyVerdict>();
    const offered: ListedTool[] = [];
    const withheld: WithheldTool[] = [];
    for (const listedTool of listed) {
      const verdict = reviewTool(policy, listedTool);
      const { read_only: _readOnly, ...tool } = listedTool;
      if (!judged.has(tool.name)) judged.set(tool.name, verdict);
      if (verdict.offered) {
        offered.push({ ...tool, grant: verdict.grant });
        continue;
      }
      withheld.push({ server: serverName, name: tool.name, reason: verdict.reason });
      const key = JSON.stringify([serverName, tool.name, verdict.reason]);
      if (!logged.has(key)) {
        logged.add(key);
        log.warn('MCP tool withheld by the tool policy; it is never offered to the model', {
          server: serverName,
          tool: tool.name,
          reason: verdict.reason,
        });
      }
    }
    verdicts.set(serverName, judged);
    return { offered, withheld };
  }

  /**
   * Why a call must not be made, or null when the policy allows it. A tool outside the policy is refused before any
   * request; otherwise the verdict of the server's latest listing on this worker decides, and a worker that has not
   * listed the server since it started lists it first (a listing, never the tool itself).
   */
  async function refusal(serverName: string, toolName: string): Promise<string | null> {
    if (!ruleFor(policy, serverName, toolName)) return 'not in the tool policy';
    if (!verdicts.get(serverName)?.has(toolName)) {
      const server = mcp.servers.find((s) => s.name === serverName);
      if (server) judge(serverName, await listServerTools(mcp, server));
    }
    const verdict = verdicts.get(serverName)?.get(toolName);
    if (!verdict) throw new McpUnknownToolError(`MCP server "${serverName}" does not list ${toolName}`);
    return verdict.offered ? null : verdict.reason;
  }

  return withRetryContract({
    /**
     * Lists every server at once. A server that fails is recorded and offers no tools this run, as long as another
     * answered; when none does, the listing fails (and is retried) as a whole. Tools the policy withholds are recorded
     * with why, and never offered.
     */
    async listTools(): Promise<ToolListing> {
      const settled = await Promise.allSettled(mcp.servers.map((server) => listServerTools(mcp, server)));
      const judged = settled.map((result, index) =>
        result.status === 'fulfilled' ? judge(mcp.servers[index]!.name, result.value) : null,
      );
      const servers = settled.map((result, index): ToolServerStatus => {
        const name = mcp.servers[index]!.name;
        const offered = judged[index]?.offered;
        if (offered) return { name, ok: true, tool_count: offered.length, error: null };
        const error = ((result as PromiseRejectedResult).reason as Error).message;
        log.warn('MCP server could not be listed; its tools are not offered this run', { server: name, error });
        return { name, ok: false, tool_count: 0, error };
      });
      if (servers.length > 0 && servers.every((s) => !s.ok)) {
        const first = settled.find((r) => r.status === 'rejected');
        throw new McpTransportError(servers.map((s) => s.error).join('; '), { cause: first?.reason });
      }
      const { tools, duplicated } = distinctToolNames(judged.flatMap((j) => j?.offered ?? []));
      for (const { name, servers: offeredBy } of duplicated) {
        log.warn('MCP tool name offered by several servers; each is offered as <server>__<tool>', {
          tool: name,
          servers: offeredBy,
        });
      }
      return { tools, servers, withheld: judged.flatMap((j) => j?.withheld ?? []) };
    },

    /**
     * Calls one tool. The policy is checked again here, apart from the workflow: a tool it withholds is refused with a
     * non-retryable McpToolRefusedError and never reaches its server, so no retry can make a refused write.
     */
    async callTool(input: {
      server: string;
      name: string;
      arguments: Record<string, unknown>;
    }): Promise<ToolCallOutcome> {
      const what = `call ${input.name} on MCP server "${input.server}"`;
      // Heartbeating from the start: the policy check may first list the server, which can take longer than the
      // heartbeat timeout on a worker that has not listed it yet; and the call gets what is left of its time.
      return withHeartbeats(async (signal) => {
        const started = Date.now();
        const refused = await refusal(input.server, input.name);
        if (refused) throw new McpToolRefusedError(`${what}: withheld by the tool policy: ${refused}`);
        const session = mcp.client(input.server);
        let client: Client | undefined;
        try {
          client = await session;
          const timeout = Math.max(1_000, mcp.timings.callTimeoutMs - (Date.now() - started));
          const result = (await client.callTool({ name: input.name, arguments: input.arguments }, undefined, {
            signal,
            timeout,
          })) as CallToolResult;
          return { is_error: result.isError === true, ...capPayload(toolResultData(result)) };
        } catch (err) {
          // A cancelled call (forced escalation) says nothing about the session, and its activity must end now.
          const cancelled = Context.current().cancellationSignal.aborted;
          if (!cancelled && (await sessionLost(err, client, mcp.timings.probeTimeoutMs))) {
            await mcp.reset(input.server, session);
          }
          throw mcpFailure(err, what);
        }
      });
    },
  });
}

export type McpActivities = ReturnType<typeof createMcpActivities>;
