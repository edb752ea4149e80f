// Every activity module of the worker, built from its real clients.
import { createIntercomActivities } from './intercom';
import { createEmbeddingActivities, type EmbeddingEndpoint } from './embeddings';
import { createLlmActivities, type LlmEndpoint } from './llm';
import type { ModelTier } from '../contract/schemas';
import type { McpToolPolicy } from '../guards/mcp-tool-policy';
import type { McpConnections } from './mcp';
import { createMcpActivities } from './mcp';
import { createPromptActivities } from './prompts';
import { createResolvedIndexActivities } from './resolved-index';
import type { ResolvedIndexStore } from '../resolved-index/store';
import { createValidationActivities } from './validation';
import type { IntercomClient } from 'intercom-client';
import type { Client as LangSmithClient } from 'langsmith';

export interface ActivityClients {
  intercom: IntercomClient;
  adminId: string;
  mcp: McpConnections;
  /** Which listed tools the model is offered, pinned to whose identity, and which may write. */
  mcpToolPolicy: McpToolPolicy;
  /** Each model tier's endpoint, model and response format (`auto` when not given). */
  models: Record<ModelTier, LlmEndpoint>;
  /** The embeddings endpoint and model, for the semantic tier of entity resolution. */
  embeddings: EmbeddingEndpoint;
  langsmith?: LangSmithClient;
  /** The resolved-conversation index's store, opened on first use; absent or null when no index is configured. */
  resolvedIndex?: () => Promise<ResolvedIndexStore> | null;
  validation: { endpoint: string; apiKey: string };
}

export function createActivities(clients: ActivityClients) {
  return {
    ...createIntercomActivities(clients.intercom, { adminId: clients.adminId }),
    ...createMcpActivities(clients.mcp, clients.mcpToolPolicy),
    ...createLlmActivities(clients.models),
    ...createEmbeddingActivities(clients.embeddings),
    ...createPromptActivities({ langsmith: clients.langsmith }),
    ...createValidationActivities(clients.validation),
    ...createResolvedIndexActivities({
      intercom: clients.intercom,
      adminId: clients.adminId,
      embeddings: clients.embeddings,
      store: clients.resolvedIndex ?? (() => null),
    }),
  };
}
