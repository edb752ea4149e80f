// One turn of the sandbox stand-ins without a workflow: the sandbox model plans, the sandbox talent server answers its
// tool calls over MCP (in memory), the model judges coverage and drafts, and the sandbox validation judges the draft.
// Tests use it to say how the stand-ins answer a question; the workflow's own tests cover Melvin's side of the turn.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CoverageOutput, DraftOutput, PlanOutput } from '../../src/contract/schemas';
import { sandboxReasoning } from '../../sandbox/model/reasoning';
import type { TalentData } from '../../sandbox/scenario';
import { loadKnowledgeBase } from '../../sandbox/talent-mcp/knowledge-base';
import { buildServer, TalentStore } from '../../sandbox/talent-mcp/server';
import { checkDraft, type CheckResult } from '../../sandbox/validation/checks';

export interface StandInTurn {
  dataSufficient: boolean;
  draft: DraftOutput;
  /** The validation checks the draft failed; empty when it passed or routed to the team. */
  failedChecks: CheckResult[];
}

interface Stored {
  tool_name: string;
  query?: string;
  success: boolean;
  data: unknown;
}

/** Answers questions from talents in `talent` (the demo data's shape), each question its own turn. */
export async function standInTurns(talent: TalentData) {
  const store = new TalentStore({ knowledgeBase: loadKnowledgeBase(), talent });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = buildServer(store);
  await server.connect(serverSide);
  const client = new Client({ name: 'stand-in-turn', version: '1.0.0' });
  await client.connect(clientSide);
  const tools = (await client.listTools()).tools.map((t) => ({
    name: t.name,
    description: t.description ?? '',
    input_schema: t.inputSchema,
  }));

  async function call(email: string, name: string, args: Record<string, unknown>): Promise<Stored> {
    const tool = tools.find((t) => t.name === name);
    const withIdentity = tool?.input_schema.properties && 'email' in tool.input_schema.properties ? { email } : {};
    const result = await client.callTool({ name, arguments: { ...args, ...withIdentity } });
    const text = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? '').join('');
    const data = result.isError ? text : (JSON.parse(text) as unknown);
    return {
      tool_name: name,
      success: !result.isError,
      data,
      ...(typeof args.query === 'string' ? { query: args.query } : {}),
    };
  }

  async function ask(email: string, question: string, maxHops = 2): Promise<StandInTurn> {
    return thread(email, [{ role: 'user', content: question }], maxHops);
  }

  /**
   * `ask`, with the calls of `failing` tools failing for good on the hops given (1 for the first), as Gather records a
   * call whose retries all failed: no data, `success: false`.
   */
  async function askWhileFailing(
    email: string,
    question: string,
    failing: Record<string, number[]>,
  ): Promise<StandInTurn> {
    return thread(email, [{ role: 'user', content: question }], 2, failing);
  }

  /**
   * A conversation Melvin reads for the first time: earlier user messages, a bot's or a teammate's replies between
   * them (`assistant`), the question last. Melvin's ledger holds none of them, so every user message is unanswered.
   */
  async function thread(
    email: string,
    messages: { role: string; content: string }[],
    maxHops = 2,
    failing: Record<string, number[]> = {},
  ): Promise<StandInTurn> {
    const user = store.user(email);
    if (!user) throw new Error(`no talent ${email} in the data`);
    const unanswered_messages = messages.filter((m) => m.role === 'user').map((m) => m.content);
    const tool_data: Record<string, Stored> = {};
    const docs_data: Record<string, Stored> = {};
    const previous_hops: { tool_calls: string[]; missing_data: string[] }[] = [];
    let plan!: PlanOutput;
    let coverage!: CoverageOutput;
    for (let hop = 1; hop <= maxHops; hop++) {
      const context = {
        messages,
        unanswered_messages,
        available_tools: tools,
        identity_arguments: ['email'],
        tool_data,
        docs_data,
      };
      plan = sandboxReasoning('plan', { ...context, previous_hops }) as PlanOutput;
      for (const c of plan.tool_calls) {
        const stored = failing[c.tool_name]?.includes(hop)
          ? { tool_name: c.tool_name, success: false, data: null }
          : await call(email, c.tool_name, JSON.parse(c.arguments_json) as Record<string, unknown>);
        if (stored.query !== undefined) docs_data[`${c.tool_name}:${stored.query}`] = stored;
        else tool_data[c.tool_name] = stored;
      }
      coverage = sandboxReasoning('coverage', { ...context, intents: plan.intents }) as CoverageOutput;
      previous_hops.push({
        tool_calls: plan.tool_calls.map((c) => c.tool_name),
        missing_data: coverage.missing_data.map((m) => m.description),
      });
      if (coverage.data_sufficient) break;
    }
    const covered = new Map(coverage.intents.map((i) => [i.intent, i.covered]));
    const intents = plan.intents.map((i) => ({ ...i, covered: covered.get(i.intent) ?? false }));
    const draft = sandboxReasoning('draft', {
      messages,
      unanswered_messages,
      user_name: user.name,
      tool_data,
      docs_data,
      intents,
    });
    const answered = intents.filter((i) => !(draft as DraftOutput).open_intents.includes(i.intent));
    const checks =
      (draft as DraftOutput).response_type === 'REPLY'
        ? checkDraft({
            conversation_id: '1',
            response: (draft as DraftOutput).text,
            user_email: email,
            messages,
            internal_notes: [],
            tool_data,
            docs_data,
            intents: { answered: answered.map((i) => i.question), open: [] },
          })
        : [];
    return {
      dataSufficient: coverage.data_sufficient,
      draft: draft as DraftOutput,
      failedChecks: checks.filter((c) => !c.passed),
    };
  }

  return { ask, askWhileFailing, thread, close: () => Promise.all([client.close(), server.close()]) };
}
