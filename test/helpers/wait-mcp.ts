// An MCP server for session tests, whose tools take as long as asked: `wait` answers after `ms` with its process id,
// `freeze` blocks its process for `ms`. Over stdio when run: `node --import tsx test/helpers/wait-mcp.ts`.
import { setTimeout as sleep } from 'node:timers/promises';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const READ_ONLY = { readOnlyHint: true };
const MS = { type: 'object' as const, properties: { ms: { type: 'number' } }, required: ['ms'] };

export function waitServer(): Server {
  const server = new Server({ name: 'wait', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      { name: 'wait', description: 'Answers after ms milliseconds', inputSchema: MS, annotations: READ_ONLY },
      { name: 'freeze', description: 'Blocks the server for ms milliseconds', inputSchema: MS, annotations: READ_ONLY },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const ms = Number(request.params.arguments?.ms ?? 0);
    if (request.params.name === 'freeze') {
      const until = Date.now() + ms;
      while (Date.now() < until);
    } else {
      await sleep(ms);
    }
    return { content: [], structuredContent: { waited: ms, pid: process.pid } };
  });
  return server;
}

if (require.main === module) {
  waitServer()
    .connect(new StdioServerTransport())
    .catch((err) => {
      console.error(err);
      process.exit(1);
    });
}
