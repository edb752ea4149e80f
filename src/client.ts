// The operator CLI: start a conversation turn, force an escalation, hand a conversation back, print state, list runs,
// report on the runs for support leads.
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import {
  ConfigError,
  analysisSettings,
  loadAnalysisConfig,
  loadTemporalConfig,
  loadTurnConfig,
  type TemporalConfig,
} from './config/environment';
import { temporalConnectionOptions } from './config/temporal-connection';
import {
  RequestRefused,
  conversationState,
  decideReply,
  deliverUserMessage,
  forceEscalation,
  handBack,
  listRuns,
  turnOptions,
} from './operations/conversations';
import { toolDataConverter } from './config/dev-payload-keys';
import { codecEndpointUrl } from './ingress/codec-routes';
import { Since } from './reports/figures';
import { reportText } from './reports/text';
import { loadAnalysisData, loadReport } from './reports/visibility';
import { AnalysisRequest, askAnalysis } from './reports/analysis';
import { analysisText } from './reports/text';
import type { TemporalUi } from './reports/patterns';
import OpenAI from 'openai';
import { ConversationIdText } from './contract/schemas';
import { searchAttributes, type ReplyDecision } from './contract/shared';
import { errorMessage } from './observability/error-message';

const USAGE = `Usage:
  melvin start <conversationId>                       start (or join) a turn for the conversation
  melvin escalate <conversationId> --reason <text> [--by <who>]
                                                      hand the conversation to the team now
  melvin hand-back <conversationId> --reason <text> [--by <who>]
                                                      let Melvin answer a conversation the team owns again
  melvin approve <conversationId> [--text <edited reply>] [--by <who>]
                                                      send the draft waiting for approval (or the edited text)
  melvin reject <conversationId> --reason <text> [--by <who>]
                                                      keep the waiting draft from the user; the team takes over
  melvin state <conversationId>                       print the latest run's state as JSON
  melvin list [--status <MelvinStatus>] [--conversation <id>] [--limit <n>]
                                                      list runs, newest first
  melvin report [--since <n>m|h|d] [--json]           turns, resolution and escalation rates, approvals, hops,
                                                      turn times, tools, tokens, a table per day (default 7d),
                                                      causes of escalation, intents, uncovered questions, flows
  melvin report --ask "<question>" [--since …]        the analysis agent answers from the runs, with its figures
  melvin codec-endpoint --ingress <url>               the codec endpoint to give the Temporal UI (needs ADMIN_API_TOKEN)`;

export class UsageError extends Error {}

const ConversationId = z.string({ error: 'a conversation id is required' }).pipe(ConversationIdText);

/** Why an operator acts (escalate, hand back, reject), and who: recorded in the run's state and the team's note. */
const Reason = z.string({ error: '--reason is required' }).trim().min(1, '--reason must not be empty').max(1000);
const By = z.string().min(1).optional();

const Command = z.discriminatedUnion('command', [
  z.object({ command: z.literal('start'), conversationId: ConversationId }),
  z.object({
    command: z.literal('escalate'),
    conversationId: ConversationId,
    reason: Reason,
    by: By,
  }),
  z.object({
    command: z.literal('hand-back'),
    conversationId: ConversationId,
    reason: Reason,
    by: By,
  }),
  z.object({
    command: z.literal('approve'),
    conversationId: ConversationId,
    text: z.string().trim().min(1, '--text must not be empty').max(4000).optional(),
    by: By,
  }),
  z.object({
    command: z.literal('reject'),
    conversationId: ConversationId,
    reason: Reason,
    by: By,
  }),
  z.object({ command: z.literal('state'), conversationId: ConversationId }),
  z.object({
    command: z.literal('list'),
    status: z.string().min(1).optional(),
    conversation: ConversationId.optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(20),
  }),
  z.object({
    command: z.literal('report'),
    since: Since.prefault('7d'),
    json: z.boolean().default(false),
    ask: AnalysisRequest.shape.question.optional(),
  }),
  z.object({
    command: z.literal('codec-endpoint'),
    ingress: z.url({ protocol: /^https?$/, error: '--ingress must be the ingress’s http(s) URL' }),
  }),
]);
export type Command = z.infer<typeof Command>;

export function parseCommand(argv: string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        reason: { type: 'string' },
        text: { type: 'string' },
        by: { type: 'string' },
        status: { type: 'string' },
        conversation: { type: 'string' },
        limit: { type: 'string' },
        since: { type: 'string' },
        json: { type: 'boolean' },
        ask: { type: 'string' },
        ingress: { type: 'string' },
      },
    });
  } catch (err) {
    throw new UsageError(errorMessage(err));
  }
  const [command, conversationId, ...extra] = parsed.positionals;
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  // `report 30d` would otherwise report on the default week without a word.
  if ((command === 'report' || command === 'codec-endpoint') && conversationId !== undefined) {
    throw new UsageError(
      `unexpected argument "${conversationId}": ${command === 'report' ? 'give the window as --since <n>m|h|d' : 'give the URL as --ingress <url>'}`,
    );
  }
  const result = Command.safeParse({ command, conversationId, ...parsed.values });
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const where = issue.path.join('.');
    if (where === 'command') throw new UsageError(`unknown command "${command ?? ''}"`);
    throw new UsageError(`${where === 'conversationId' ? 'conversation id' : where}: ${issue.message}`);
  }
  return result.data;
}

async function run(command: Command, client: Client, temporal: TemporalConfig): Promise<unknown> {
  switch (command.command) {
    case 'start': {
      const turn = loadTurnConfig();
      return deliverUserMessage(
        client,
        {
          conversationId: command.conversationId,
          trigger: { topic: 'cli', notificationId: `cli-${randomUUID()}`, receivedAt: new Date().toISOString() },
        },
        turnOptions(temporal.TASK_QUEUE, turn),
      );
    }
    case 'escalate':
    case 'hand-back': {
      const request = { reason: command.reason, requestedBy: command.by ?? `cli:${userInfo().username}` };
      const options = turnOptions(temporal.TASK_QUEUE, loadTurnConfig());
      const send = command.command === 'escalate' ? forceEscalation : handBack;
      return {
        ...(await send(client, command.conversationId, request, options, 'cli')),
        conversationId: command.conversationId,
      };
    }
    case 'approve':
    case 'reject': {
      const by = command.by ?? `cli:${userInfo().username}`;
      const decision: ReplyDecision =
        command.command === 'reject'
          ? { decision: 'reject', reason: command.reason, by }
          : command.text
            ? { decision: 'edit', text: command.text, by }
            : { decision: 'approve', by };
      return {
        ...(await decideReply(client, command.conversationId, decision)),
        conversationId: command.conversationId,
      };
    }
    case 'state': {
      const state = await conversationState(client, command.conversationId);
      if (!state) throw new UsageError(`conversation ${command.conversationId} has no runs`);
      return state;
    }
    case 'list': {
      const runs = await listRuns(client, {
        status: command.status,
        conversationId: command.conversation,
        limit: command.limit,
      });
      return runs.map((r) => ({
        workflowId: r.workflowId,
        runId: r.runId,
        status: r.status.name,
        startTime: r.startTime.toISOString(),
        closeTime: r.closeTime?.toISOString() ?? null,
        melvinStatus: r.typedSearchAttributes.get(searchAttributes.melvinStatus) ?? null,
        escalationSource: r.typedSearchAttributes.get(searchAttributes.escalationSource) ?? null,
        hopCount: r.typedSearchAttributes.get(searchAttributes.hopCount) ?? null,
      }));
    }
    case 'report': {
      const ui = temporalUiOf(process.env.TEMPORAL_UI_ORIGIN, client.options.namespace);
      if (command.ask !== undefined) {
        const settings = analysisSettings(loadAnalysisConfig());
        if (!settings)
          throw new ConfigError('--ask needs ANALYSIS_OPENAI_API_KEY or OPENAI_API_KEY: the analysis agent’s model');
        const openai = new OpenAI({
          baseURL: settings.baseURL,
          apiKey: settings.apiKey,
          maxRetries: 1,
          timeout: 60_000,
        });
        const data = await loadAnalysisData(client, command.since, new Date(), ui);
        const answer = await askAnalysis({ openai, model: settings.model, question: command.ask, data });
        return command.json ? answer : analysisText(answer);
      }
      const report = await loadReport(client, command.since, new Date(), ui);
      return command.json ? report : reportText(report);
    }
  }
}

/** The Temporal UI that example runs link to: the first of TEMPORAL_UI_ORIGIN, as the ingress reads it. */
function temporalUiOf(origins: string | undefined, namespace: string): TemporalUi {
  const url = origins?.split(',')[0]?.trim() || 'http://localhost:8233';
  return { url, namespace };
}

/** The token of the codec endpoint is derived from the operator token, so only its holder can print the URL. */
const AdminApiToken = z
  .string({ error: 'ADMIN_API_TOKEN is required: the codec endpoint’s token is derived from it' })
  .min(16, 'ADMIN_API_TOKEN must be at least 16 characters');

async function main(command: Command): Promise<void> {
  if (command.command === 'codec-endpoint') {
    const token = AdminApiToken.safeParse(process.env.ADMIN_API_TOKEN || undefined);
    if (!token.success) throw new ConfigError(token.error.issues[0]!.message);
    console.log(codecEndpointUrl(command.ingress, token.data));
    return;
  }
  const temporal = loadTemporalConfig();
  const connection = await Connection.connect(temporalConnectionOptions(temporal));
  try {
    const client = new Client({
      connection,
      namespace: temporal.TEMPORAL_NAMESPACE,
      dataConverter: toolDataConverter(temporal),
    });
    const result = await run(command, client, temporal);
    console.log(typeof result === 'string' ? result : JSON.stringify(result, null, 2));
  } finally {
    await connection.close();
  }
}

/** One line for what an operator can act on; the stack trace only for what nobody expected. */
export function failureLine(err: unknown, command?: Command): string | undefined {
  if (err instanceof ConfigError || err instanceof RequestRefused) return err.message;
  if (err instanceof WorkflowNotFoundError && command && 'conversationId' in command) {
    return `conversation ${command.conversationId} has no open workflow: it never started, or it has ended`;
  }
  return undefined;
}

if (require.main === module) {
  let command: Command | undefined;
  new Promise<void>((resolve) => {
    command = parseCommand(process.argv.slice(2));
    resolve(main(command));
  }).catch((err) => {
    if (err instanceof UsageError) console.error(`${err.message}\n\n${USAGE}`);
    else console.error(failureLine(err, command) ?? err);
    process.exit(err instanceof UsageError ? 2 : 1);
  });
}
