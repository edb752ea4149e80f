// Every activity's timeouts and retries in one place: a named retry policy per external system, one proxy per policy.
import { ActivityCancellationType, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import type { EmbeddingActivities } from '../../activities/embeddings';
import type { IntercomActivities } from '../../activities/intercom';
import type { LlmActivities } from '../../activities/llm';
import type { McpActivities } from '../../activities/mcp';
import type { PromptActivities } from '../../activities/prompts';
import type { ResolvedIndexActivities } from '../../activities/resolved-index';
import type { ValidationActivities } from '../../activities/validation';
import { LOCAL_ACTIVITIES_PATCH, LOCAL_AGENT_CALLS_RULES, rulesSince, since } from '../versions/patches';

/**
 * A cancelled activity (a forced escalation or a cancelled run) is waited for until it has stopped, so the escalation
 * and Finalize come after it and a finished run shows no activity still pending. The long ones (model and tool calls)
 * heartbeat every second and stop within about a second; the others are short and bounded by their timeouts. Since
 * UNCANCELLED_LOCAL_CALLS_RULES only the agent's local calls are cancelled; any other local activity's attempt is waited
 * for (local-calls-interceptor.ts).
 */
const waitForCancellation = { cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED };

/** 401, 403, 404 and every other 4xx but 408/429 (the request is wrong, so a retry would fail the same way). */
export const intercomPolicy: ActivityOptions = {
  ...waitForCancellation,
  startToCloseTimeout: '15s',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumInterval: '30s',
    maximumAttempts: 8,
    nonRetryableErrorTypes: [
      'IntercomAuthError',
      'IntercomNotFoundError',
      'IntercomRejectedError',
      'IntercomResponseInvalidError',
    ],
  },
};

export const mcpListPolicy: ActivityOptions = {
  ...waitForCancellation,
  startToCloseTimeout: '15s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: 5 },
};

/**
 * Only transport errors are retried: a tool's `isError` is data, bad arguments fail the same way every time, and a
 * call the MCP tool policy refuses must never be tried again.
 */
export const toolPolicy: ActivityOptions = {
  ...waitForCancellation,
  startToCloseTimeout: '30s',
  heartbeatTimeout: '5s',
  retry: {
    initialInterval: '2s',
    backoffCoefficient: 2,
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['McpInvalidArgumentsError', 'McpUnknownToolError', 'McpToolRefusedError'],
  },
};

/** Three tries; after that the workflow falls back to the bundled prompts and records why. */
export const promptPolicy: ActivityOptions = {
  ...waitForCancellation,
  startToCloseTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: 3 },
};

/**
 * 408/409/429/5xx and timeouts are retried; 400/401/403/404 and output still invalid after one repair are not.
 * Six attempts, not five: the backoffs of five add up to exactly 30 s, so a 30 s outage of the
 * model endpoint would race the last attempt; the sixth comes 32 s later.
 */
export const llmPolicy: ActivityOptions = {
  ...waitForCancellation,
  startToCloseTimeout: '90s',
  heartbeatTimeout: '10s',
  retry: {
    initialInterval: '2s',
    backoffCoefficient: 2,
    maximumInterval: '60s',
    maximumAttempts: 6,
    nonRetryableErrorTypes: ['LlmRejectedError', 'LlmInvalidOutputError'],
  },
};

/** Embeddings for the semantic tier of entity resolution: short calls; a turn goes on without them when they fail. */
export const embeddingsPolicy: ActivityOptions = {
  ...waitForCancellation,
  startToCloseTimeout: '30s',
  heartbeatTimeout: '10s',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumInterval: '20s',
    maximumAttempts: 4,
    nonRetryableErrorTypes: ['LlmRejectedError', 'LlmInvalidOutputError'],
  },
};

export const validationPolicy: ActivityOptions = {
  ...waitForCancellation,
  startToCloseTimeout: '20s',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumAttempts: 5,
    nonRetryableErrorTypes: ['ValidationRejectedError'],
  },
};

export const intercom = proxyActivities<IntercomActivities>(intercomPolicy);
/** The reply with the validation note beside it: two posts, and from attempt 2 their duplicate checks, in one activity. */
export const replyWithNotePolicy: ActivityOptions = { ...intercomPolicy, startToCloseTimeout: '60s' };
export const replyWithNote = proxyActivities<IntercomActivities>(replyWithNotePolicy);
const tools = proxyActivities<McpActivities>(toolPolicy);
const embeddings = proxyActivities<EmbeddingActivities>(embeddingsPolicy);
const llm = proxyActivities<LlmActivities>(llmPolicy);
/**
 * The validation check stays an activity: an operator's escalation that comes while it runs (seconds, against a real
 * service) must reach the workflow before the reply is sent, and a signal reaches it only between workflow tasks.
 */
const validationActivity = proxyActivities<ValidationActivities>(validationPolicy);
const localValidation = proxyLocalActivities<ValidationActivities>(local(validationPolicy));

/**
 * For a while the validation check ran as a local activity under LOCAL_ACTIVITIES_PATCH, and the same patch id stayed
 * when it became an activity again, so no marker tells those runs apart. The builds of that while that recorded the
 * histories then committed (test/histories, at commits 4f4ba08 and b846d65) are known by their build id, which a
 * replay reads from the history: their runs replay with the local check. Every change since has a patch id of its own.
 */
const LOCAL_VALIDATION_BUILDS = new Set([
  '@temporalio/worker@1.23.0+8a5b13b9a511ea79a6a7ce5b3010a53760cf678b0502c076099608e194e1edfe',
  '@temporalio/worker@1.23.0+9b42b4717774695054256c8e8351a205a1f1013dc79b5fecadcb0e22fb35b79b',
]);

/** The validation check: an activity, but for the runs of the builds that ran it as a local one. */
export const validation = () =>
  LOCAL_VALIDATION_BUILDS.has(workflowInfo().currentBuildId ?? '') ? localValidation : validationActivity;

/**
 * The same policy for a local activity: the worker that runs the workflow task runs the activity too and records its
 * result with the task, so no task of its own is dispatched and no extra workflow task follows it. Only calls that are
 * safe to run again qualify, since a worker lost before its task completed leaves the next worker to run them again as
 * a first attempt: the reads (the conversation, the tool listing, the prompts), the writes that set a value (Melvin
 * Status, the snooze), and since LOCAL_AGENT_CALLS_RULES the agent's model, embedding and retrieval calls and its tool
 * calls that cannot write. Posts stay activities: their retries find an earlier attempt's part only from attempt 2; so
 * does a tool that may write, and the validation check (above). A local activity does not heartbeat: a lost worker is
 * noticed by its workflow task's timeout, and the task is extended while its local activities run.
 *
 * A wait before a retry longer than a second is a workflow timer, not a pause inside the worker: while a local
 * activity waits in the worker, its workflow task stays open, and a lead's request cannot be answered until the task is
 * extended (every 8 s), so one that came while Intercom refused reads for a minute was answered after the operator
 * API's deadline (the model-based test found it).
 */
function local(policy: ActivityOptions): LocalActivityOptions {
  const { cancellationType, startToCloseTimeout, retry } = policy;
  return { cancellationType, startToCloseTimeout, retry, localRetryThreshold: '1s' };
}

const localIntercom = proxyLocalActivities<IntercomActivities>(local(intercomPolicy));
const localMcpList = proxyLocalActivities<McpActivities>(local(mcpListPolicy));
const localPrompts = proxyLocalActivities<PromptActivities>(local(promptPolicy));
const mcpList = proxyActivities<McpActivities>(mcpListPolicy);
const prompts = proxyActivities<PromptActivities>(promptPolicy);

function sincePatchLocal<Remote, Local>(remote: Remote, localProxy: Local): Remote | Local {
  return since(LOCAL_ACTIVITIES_PATCH) ? localProxy : remote;
}

/** For the conversation read and the settings writes (Melvin Status, the snooze). */
export const intercomReads = () => sincePatchLocal(intercom, localIntercom);
export const mcpListing = () => sincePatchLocal(mcpList, localMcpList);
export const promptLoading = () => sincePatchLocal(prompts, localPrompts);

const localLlm = proxyLocalActivities<LlmActivities>(local(llmPolicy));
const localTools = proxyLocalActivities<McpActivities>(local(toolPolicy));
const localEmbeddings = proxyLocalActivities<EmbeddingActivities>(local(embeddingsPolicy));

/**
 * The agent's calls as local activities since LOCAL_AGENT_CALLS_RULES. A signal that comes while one runs waits for its
 * workflow task to end (the task is extended every few seconds while they run, and the signal comes with the next):
 * the validation check, an activity, is where an operator's escalation and a new message are sure to have come in
 * before the reply goes out.
 */
function sinceRulesLocal<Remote, Local>(remote: Remote, localProxy: Local): Remote | Local {
  return rulesSince(LOCAL_AGENT_CALLS_RULES) ? localProxy : remote;
}

export const modelCalls = () => sinceRulesLocal(llm, localLlm);
export const embeddingCalls = () => sinceRulesLocal(embeddings, localEmbeddings);
/** A tool that may write stays an activity: a lost worker's local attempt would be made again as a first attempt. */
export const toolCalls = (writes: boolean) => (writes ? tools : sinceRulesLocal(tools, localTools));

/**
 * The resolved-conversation index. Indexing one conversation fetches it, embeds its messages and upserts them: all
 * safe to run again, so every failure a retry can cure is retried; a request Intercom or the embeddings endpoint refuses
 * fails the run, which leaves the watermark where it was for the next scheduled run.
 */
export const indexConversationPolicy: ActivityOptions = {
  ...waitForCancellation,
  startToCloseTimeout: '90s',
  heartbeatTimeout: '20s',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumInterval: '60s',
    maximumAttempts: 8,
    nonRetryableErrorTypes: [
      'IntercomAuthError',
      'IntercomRejectedError',
      'IntercomResponseInvalidError',
      'LlmRejectedError',
      'LlmInvalidOutputError',
    ],
  },
};

/** The index's watermark, read and moved forward in the store. */
export const indexStorePolicy: ActivityOptions = {
  ...waitForCancellation,
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 8 },
};

/** Draft's retrieval from the index: short, few attempts, since a turn goes on without examples when it fails. */
export const retrievalPolicy: ActivityOptions = {
  ...waitForCancellation,
  startToCloseTimeout: '20s',
  heartbeatTimeout: '10s',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['LlmRejectedError', 'LlmInvalidOutputError'],
  },
};

export const indexSearch = proxyActivities<ResolvedIndexActivities>(intercomPolicy);
export const indexing = proxyActivities<ResolvedIndexActivities>(indexConversationPolicy);
export const indexStore = proxyActivities<ResolvedIndexActivities>(indexStorePolicy);
const retrieval = proxyActivities<ResolvedIndexActivities>(retrievalPolicy);
const localRetrieval = proxyLocalActivities<ResolvedIndexActivities>(local(retrievalPolicy));
export const exampleRetrieval = () => sinceRulesLocal(retrieval, localRetrieval);
