// Starts the four sandbox services on loopback ports and builds Melvin's real activities pointed at them.
import { IntercomClient } from 'intercom-client';
import { createActivities } from '../../src/activities';
import { createOpenAiClient, oneModelForAllTiers } from '../../src/activities/llm';
import { SANDBOX_EMBEDDING_MODEL_NAME, SANDBOX_MODEL_NAME } from '../../sandbox/model/server';
import { McpConnections } from '../../src/activities/mcp';
import { DEFAULT_MCP_TOOL_POLICY } from '../../src/guards/mcp-tool-policy';
import type { Scenario } from '../../sandbox/scenario';
import { SANDBOX_SECRETS, startSandboxServices, type SandboxServices, type SeedData } from '../../sandbox/services';
import { allContractProblems } from '../sandbox/intercom-api';

export const ADMIN_ID = SANDBOX_SECRETS.adminId;
export const INTERCOM_TOKEN = SANDBOX_SECRETS.intercomToken;
export const OPENAI_KEY = SANDBOX_SECRETS.openAiKey;
export const VALIDATION_KEY = SANDBOX_SECRETS.validationKey;

/**
 * The sandbox talent server's tools that the built-in policy offers, in the server's order; the server also lists
 * `update_payout_details`, which writes and is withheld.
 */
export const OFFERED_TALENT_TOOLS = [
  'get_user_profile',
  'get_user_applications_detailed',
  'get_job_details',
  'get_user_payments',
  'search_talent_docs',
  'get_talent_profile',
];

/**
 * Notes without the run map every escalation note ends with (a Mermaid flowchart of the path taken), so tests can
 * compare notes exactly; `test/workflows/run-map.test.ts` checks the map itself.
 */
export function withoutRunMaps(notes: string[]): string[] {
  return notes.map((note) => note.replace(/\nHow Melvin got here:\n```mermaid\n[\s\S]*?\n```$/, ''));
}

export interface Sandbox extends SandboxServices {
  mcp: McpConnections;
  activities: ReturnType<typeof createActivities>;
  /** Seeds a conversation, its talent data and docs, the way a scenario file does. */
  seed(scenario: Pick<Scenario, 'conversation'> & Partial<Pick<Scenario, 'talent' | 'docs'>>): void;
  /** Forgets scripts, faults and recorded requests between tests. */
  reset(): void;
  /** Stops the services; fails when any Intercom exchange of the whole test file broke the Intercom contract. */
  close(): Promise<void>;
}

/**
 * The sandbox a test talks to; its model answers from scripts first, then by its own reasoning. `seed` is what the
 * services start with, e.g. the team's resolved conversations (which make the talent server offer their search);
 * `webhookUrl` is where its Intercom sends webhooks, when a test runs an ingress.
 */
export async function startSandbox(seed?: SeedData, options: { webhookUrl?: string } = {}): Promise<Sandbox> {
  const services = await startSandboxServices({ seed, webhookUrl: options.webhookUrl });
  const mcp = new McpConnections([{ name: 'talent', url: services.urls.mcp }]);
  const openai = createOpenAiClient({ apiKey: OPENAI_KEY, baseURL: services.urls.model });
  const activities = createActivities({
    intercom: new IntercomClient({ token: INTERCOM_TOKEN, baseUrl: services.urls.intercom, maxRetries: 0 }),
    adminId: ADMIN_ID,
    mcp,
    mcpToolPolicy: DEFAULT_MCP_TOOL_POLICY,
    models: oneModelForAllTiers({ openai, model: SANDBOX_MODEL_NAME }),
    embeddings: { openai, model: SANDBOX_EMBEDDING_MODEL_NAME },
    validation: { endpoint: services.urls.validation, apiKey: VALIDATION_KEY },
  });
  // Every exchange with the emulator is checked against the Intercom contract before reset() forgets it.
  const contractProblems: string[] = [];
  const checkContract = () =>
    contractProblems.push(...allContractProblems(services.intercom.requests.map((r) => r.exchange)));
  return {
    ...services,
    mcp,
    activities,
    seed(scenario) {
      services.intercom.seed(scenario.conversation);
      services.talent.merge({ talent: scenario.talent, docs: scenario.docs });
    },
    reset() {
      checkContract();
      services.gates.release();
      services.intercom.faults.set({});
      services.intercom.requests.length = 0;
      services.talent.faults.set({});
      services.talent.calls.length = 0;
      services.talent.received.length = 0;
      services.model.clear();
      services.validation.faults.set({});
      services.validation.requests.length = 0;
      services.validation.rawAnswers.length = 0;
    },
    async close() {
      checkContract();
      await mcp.close();
      await services.stop();
      if (contractProblems.length) {
        throw new Error(`Intercom exchanges broke the contract:\n${[...new Set(contractProblems)].join('\n')}`);
      }
    },
  };
}
