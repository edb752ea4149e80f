// The talent MCP server over stdio: `node --import tsx sandbox/talent-mcp/stdio.ts [data.json]`; logs go to stderr only.
import { readFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { Doc, TalentData } from '../scenario';
import { loadKnowledgeBase } from './knowledge-base';
import { buildServer, TalentStore } from './server';

const DataFile = z.strictObject({ talent: TalentData.optional(), docs: z.array(Doc).optional() });

async function main(): Promise<void> {
  const file = process.argv[2];
  const store = new TalentStore({ knowledgeBase: loadKnowledgeBase() });
  if (file) {
    const parsed = DataFile.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (!parsed.success) throw new Error(`${file}: ${z.prettifyError(parsed.error)}`);
    store.merge(parsed.data);
  }
  await buildServer(store).connect(new StdioServerTransport());
  console.error(`talent MCP server on stdio (${store.data.users.length} users)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
