// The sandbox process: the four stand-in services on loopback ports, seeded with demo talent data.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { logEvent } from '../src/observability/log';
import { SANDBOX_MODEL_NAME } from './model/server';
import { startSandboxServices, type SeedData } from './services';

const Port = z.coerce.number().int().min(0).max(65535);
const Env = z.object({
  SANDBOX_INTERCOM_PORT: Port.default(8781),
  SANDBOX_MCP_PORT: Port.default(8782),
  SANDBOX_MODEL_PORT: Port.default(8783),
  SANDBOX_VALIDATION_PORT: Port.default(8784),
  SANDBOX_WEBHOOK_URL: z.url().default('http://127.0.0.1:8780/webhooks/intercom'),
  /** The kind of endpoint the sandbox model behaves like: `strict` (OpenAI), `json_object`, `text` or `text-prose`. */
  SANDBOX_MODEL_ENDPOINT: z.enum(['strict', 'json_object', 'text', 'text-prose']).default('strict'),
  /**
   * `off`: the talent MCP server offers no `search_resolved_conversations`, as for a team whose history lives only in
   * Intercom (Draft's examples then come from the resolved-conversation index alone).
   */
  SANDBOX_RESOLVED_SEARCH: z.enum(['on', 'off']).default('on'),
});

async function main(): Promise<void> {
  const parsed = Env.safeParse(process.env);
  if (!parsed.success) throw new Error(`Invalid configuration:\n${z.prettifyError(parsed.error)}`);
  const env = parsed.data;
  // Checked against the seed schema when the services start. The team's resolved conversations are the demo corpus
  // of the style-examples search.
  const read = (file: string) => JSON.parse(readFileSync(path.join(__dirname, file), 'utf8')) as unknown;
  const seed = {
    ...(read('demo-data.json') as SeedData),
    ...(env.SANDBOX_RESOLVED_SEARCH === 'on' && {
      resolved_conversations: read('talent-mcp/resolved-conversations.json'),
    }),
  } as SeedData;
  const sandbox = await startSandboxServices({
    ports: {
      intercom: env.SANDBOX_INTERCOM_PORT,
      mcp: env.SANDBOX_MCP_PORT,
      model: env.SANDBOX_MODEL_PORT,
      validation: env.SANDBOX_VALIDATION_PORT,
    },
    webhookUrl: env.SANDBOX_WEBHOOK_URL,
    seed,
    modelEndpoint:
      env.SANDBOX_MODEL_ENDPOINT === 'text-prose'
        ? { endpoint: 'text', textStyle: 'prose' }
        : { endpoint: env.SANDBOX_MODEL_ENDPOINT, textStyle: 'fenced' },
  });
  logEvent('info', 'sandbox ready', { ...sandbox.urls });
  logEvent(
    'warn',
    `the LLM is the sandbox stand-in "${SANDBOX_MODEL_NAME}": deterministic rules, not a language model`,
    {
      model: sandbox.urls.model,
      endpoint: sandbox.model.endpoint,
    },
  );
  const stop = () => {
    void sandbox.stop().finally(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
