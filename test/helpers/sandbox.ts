// Starts the four sandbox services on loopback ports and builds Melvin's real activities pointed at them.
import { IntercomClient } from 'intercom-client';
import { createActivities } from '../../src/activities';
import { createOpenAiClient } from '../../src/activities/llm';
import { McpConnections } from '../../src/activities/mcp';
import { IntercomEmulator } from '../../sandbox/intercom/emulator';
import { SandboxModel, type Responder } from '../../sandbox/model/server';
import type { RunningServer } from '../../sandbox/http';
import type { Scenario } from '../../sandbox/scenario';
import { startTalentMcpHttp } from '../../sandbox/talent-mcp/http';
import { TalentStore } from '../../sandbox/talent-mcp/server';
import { ValidationService } from '../../sandbox/validation/server';

export const ADMIN_ID = '8918000';
export const INTERCOM_TOKEN = 'test-intercom-token';
export const OPENAI_KEY = 'test-openai-key';
export const VALIDATION_KEY = 'test-validation-key';

export interface Sandbox {
  intercom: IntercomEmulator;
  talent: TalentStore;
  mcpServer: RunningServer;
  model: SandboxModel;
  validation: ValidationService;
  mcp: McpConnections;
  activities: ReturnType<typeof createActivities>;
  /** Seeds a conversation, its talent data and docs, the way a scenario file does. */
  seed(scenario: Pick<Scenario, 'conversation'> & Partial<Pick<Scenario, 'talent' | 'docs'>>): void;
  /** Forgets scripts, faults and recorded requests between tests. */
  reset(): void;
  close(): Promise<void>;
}

export async function startSandbox(options: { responder?: Responder } = {}): Promise<Sandbox> {
  const intercom = new IntercomEmulator({ token: INTERCOM_TOKEN, adminId: ADMIN_ID });
  const talent = new TalentStore();
  const model = new SandboxModel({ apiKey: OPENAI_KEY, responder: options.responder });
  const validation = new ValidationService({ apiKey: VALIDATION_KEY });
  const [intercomUrl, mcpServer, modelUrl, validationUrl] = await Promise.all([
    intercom.start(),
    startTalentMcpHttp(talent),
    model.start(),
    validation.start(),
  ]);
  const mcp = new McpConnections([{ name: 'talent', url: `${mcpServer.url}/mcp` }]);
  const activities = createActivities({
    intercom: new IntercomClient({ token: INTERCOM_TOKEN, baseUrl: intercomUrl, maxRetries: 0 }),
    adminId: ADMIN_ID,
    mcp,
    openai: createOpenAiClient({ apiKey: OPENAI_KEY, baseURL: modelUrl }),
    model: 'sandbox',
    validation: { endpoint: validationUrl, apiKey: VALIDATION_KEY },
  });
  return {
    intercom,
    talent,
    mcpServer,
    model,
    validation,
    mcp,
    activities,
    seed(scenario) {
      intercom.seed(scenario.conversation);
      talent.merge({ talent: scenario.talent, docs: scenario.docs });
    },
    reset() {
      intercom.faults.set({});
      intercom.requests.length = 0;
      talent.faults.set({});
      talent.calls.length = 0;
      model.clear();
      validation.faults.set({});
      validation.requests.length = 0;
      validation.rawAnswers.length = 0;
    },
    async close() {
      await mcp.close();
      await Promise.all([intercom.stop(), mcpServer.close(), model.stop(), validation.stop()]);
    },
  };
}
