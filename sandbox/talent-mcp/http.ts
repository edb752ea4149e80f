// The talent MCP server over Streamable HTTP: stateless, one server and transport per request, at POST /mcp.
import { localhostHostValidation } from '@modelcontextprotocol/sdk/server/middleware/hostHeaderValidation.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express from 'express';
import { HttpService } from '../http';
import type { Gates } from '../gates';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { buildServer, type TalentStore } from './server';

interface ToolCallMessage {
  id?: unknown;
  method?: string;
  params?: { name?: string; arguments?: Record<string, unknown> };
}

/**
 * The key a random fault plan uses for transport failures of any tool call over HTTP. Planned faults name their tool;
 * a random plan draws once per `tools/call` request here, before the request reaches a tool. Over stdio there is no
 * transport to break, so a random plan under this key never applies there.
 */
export const ANY_TOOL_CALL = '*';

/** The tool a JSON-RPC message calls, if it is a `tools/call`. */
function toolCallName(body: unknown): string | undefined {
  const message = body as ToolCallMessage | undefined;
  return message?.method === 'tools/call' ? message.params?.name : undefined;
}

export function talentMcpApp(store: TalentStore, gates?: Gates): express.Express {
  const app = express();
  // Each request still gets a server of its own, connected to its own transport, as the SDK asks of a stateless server;
  // a server whose request is over is kept for a later one rather than built again: registering the tools costs a few
  // milliseconds, which parallel calls would otherwise pay one after another in this one process.
  const idle: McpServer[] = [];
  // A local server without auth must refuse other Host headers, or a web page could reach it by DNS rebinding.
  app.use(localhostHostValidation());
  app.use(express.json({ limit: '1mb' }));
  if (gates) app.use(gates.middleware((req) => toolCallName(req.body) && `mcp:${toolCallName(req.body)}`));
  app.post('/mcp', async (req, res) => {
    // A `server` fault is a transport failure: the HTTP request itself fails, as when the backend is down.
    const message = req.body as {
      id?: unknown;
      method?: string;
      params?: { name?: string; arguments?: Record<string, unknown> };
    };
    const tool = message?.method === 'tools/call' ? message.params?.name : undefined;
    if (tool) store.received.push({ tool, arguments: message.params?.arguments ?? {} });
    // The tool's own planned `server` fault, else what a random plan draws for any tool call.
    const transportFault = !tool
      ? undefined
      : store.faults.peek(tool)?.error === 'server'
        ? store.faults.take(tool)
        : store.faults.take(ANY_TOOL_CALL);
    if (tool && transportFault?.error === 'server') {
      store.calls.push({ tool, arguments: message.params?.arguments ?? {} });
      res.status(503).json({
        jsonrpc: '2.0',
        error: { code: -32000, message: `${tool}: the talent backend is unavailable` },
        id: message.id ?? null,
      });
      return;
    }
    const server = idle.pop() ?? buildServer(store);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close().then(() => idle.push(server));
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (err) {
      if (!res.headersSent) {
        res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: String(err) }, id: null });
      }
    }
  });
  const notAllowed: express.RequestHandler = (_req, res) => {
    res.status(405).json({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Method not allowed: this server is stateless' },
      id: null,
    });
  };
  app.get('/mcp', notAllowed);
  app.delete('/mcp', notAllowed);
  return app;
}

/** The talent MCP server as a sandbox service that can be stopped and started again on its port. */
export class TalentMcpService extends HttpService {
  constructor(
    private readonly store: TalentStore,
    private readonly gates?: Gates,
  ) {
    super('talent MCP server', '/mcp');
  }

  override app(): express.Express {
    return talentMcpApp(this.store, this.gates);
  }
}
