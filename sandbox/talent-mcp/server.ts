// The talent MCP server: buildServer() over a talent store, apart from its stdio and Streamable HTTP transports.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import MiniSearch from 'minisearch';
import { z } from 'zod';
import { FaultQueues, Latency, sleep } from '../faults';
import type { Doc, McpFault, ResolvedConversation, TalentData, TalentUser } from '../scenario';

export interface DocPassage {
  title: string;
  text: string;
  score: number;
}

/** What the talent server knows: users, jobs and docs, plus fault plans and a log of calls for tests to inspect. */
export class TalentStore {
  data: TalentData = { users: [], jobs: [] };
  readonly faults = new FaultQueues<McpFault>();
  readonly calls: { tool: string; arguments: Record<string, unknown>; latency_ms?: number }[] = [];
  /**
   * Every `tools/call` request over HTTP as it arrived, before the tools' input schemas dropped arguments they do not
   * declare: what proves an argument never reached the server.
   */
  readonly received: { tool: string; arguments: Record<string, unknown> }[] = [];
  /** Payout details changed through `update_payout_details`, by email: the one tool here that writes. */
  readonly payoutDetails = new Map<string, { method: string; account: string }>();
  readonly latency = new Latency();
  /** How long a `timeout` fault holds the call. */
  timeoutMs = 60_000;
  private readonly knowledgeBase: Doc[];
  private docs: Doc[] = [];
  private index: MiniSearch<Doc & { id: number }>;
  /**
   * The team's resolved conversations, when this server offers their search (`search_resolved_conversations`); a team
   * without a corpus offers no such tool.
   */
  readonly resolved: ResolvedConversation[] | undefined;
  private resolvedIndex: MiniSearch<ResolvedConversation & { id: number }> | undefined;

  /** `docs` are searched alongside the knowledge base, if one is given. */
  constructor(
    initial: {
      talent?: TalentData;
      docs?: Doc[];
      knowledgeBase?: Doc[];
      resolved_conversations?: ResolvedConversation[];
    } = {},
  ) {
    this.knowledgeBase = initial.knowledgeBase ?? [];
    this.index = this.buildIndex(this.knowledgeBase);
    this.resolved = initial.resolved_conversations ? [] : undefined;
    this.merge(initial);
  }

  /**
   * Adds users and jobs (replacing those with the same email or id), docs (replacing those with the same title) and
   * resolved conversations (replacing those with the same question), the last only when the server offers their search.
   */
  merge({
    talent,
    docs,
    resolved_conversations: resolved,
  }: {
    talent?: TalentData;
    docs?: Doc[];
    resolved_conversations?: ResolvedConversation[];
  }): void {
    const replace = <T>(current: T[], added: T[], key: (item: T) => string) => [
      ...current.filter((item) => !added.some((a) => key(a) === key(item))),
      ...added,
    ];
    if (talent) {
      this.data = {
        users: replace(this.data.users, talent.users, (u) => u.email.toLowerCase()),
        jobs: replace(this.data.jobs, talent.jobs, (j) => j.id),
      };
    }
    if (resolved) this.mergeResolved(resolved);
    if (docs) {
      this.docs = replace(this.docs, docs, (d) => d.title);
      this.indexDocs();
    }
  }

  /** The help center searched: the knowledge base, with the seeded docs in place of those with the same title. */
  private indexDocs(): void {
    this.index = this.buildIndex([
      ...this.knowledgeBase.filter((kb) => !this.docs.some((d) => d.title === kb.title)),
      ...this.docs,
    ]);
  }

  /**
   * Merges what a scenario seeds and returns how to take it back: the users, jobs, docs and resolved conversations it
   * replaced come back, those it added go, and payout details written for its users since are forgotten. An
   * evaluation takes each try's seed back when the try ends, so nothing one scenario seeds is seen by another.
   */
  seed(added: { talent?: TalentData; docs?: Doc[]; resolved_conversations?: ResolvedConversation[] }): () => void {
    const emails = new Set(added.talent?.users.map((u) => u.email.toLowerCase()));
    const jobIds = new Set(added.talent?.jobs.map((j) => j.id));
    const titles = new Set(added.docs?.map((d) => d.title));
    const questions = new Set(added.resolved_conversations?.map((r) => r.question));
    const before = {
      users: this.data.users.filter((u) => emails.has(u.email.toLowerCase())),
      jobs: this.data.jobs.filter((j) => jobIds.has(j.id)),
      docs: this.docs.filter((d) => titles.has(d.title)),
      resolved: (this.resolved ?? []).filter((r) => questions.has(r.question)),
    };
    this.merge(added);
    return () => {
      this.data = {
        users: [...this.data.users.filter((u) => !emails.has(u.email.toLowerCase())), ...before.users],
        jobs: [...this.data.jobs.filter((j) => !jobIds.has(j.id)), ...before.jobs],
      };
      for (const email of emails) this.payoutDetails.delete(email);
      if (titles.size) {
        this.docs = [...this.docs.filter((d) => !titles.has(d.title)), ...before.docs];
        this.indexDocs();
      }
      if (this.resolved && questions.size) {
        const kept = this.resolved.filter((r) => !questions.has(r.question));
        this.resolved.splice(0, this.resolved.length, ...kept, ...before.resolved);
        this.indexResolved();
      }
    };
  }

  private mergeResolved(added: ResolvedConversation[]): void {
    if (!this.resolved || !added.length) return;
    const kept = this.resolved.filter((r) => !added.some((a) => a.question === r.question));
    this.resolved.splice(0, this.resolved.length, ...kept, ...added);
    this.indexResolved();
  }

  private indexResolved(): void {
    const index = new MiniSearch<ResolvedConversation & { id: number }>({
      fields: ['question', 'answer'],
      storeFields: ['question', 'answer', 'resolved_by', 'resolved_at'],
      searchOptions: { boost: { question: 2 }, prefix: true, fuzzy: 0.2, combineWith: 'OR' },
    });
    index.addAll(this.resolved!.map((r, id) => ({ id, ...r })));
    this.resolvedIndex = index;
  }

  /**
   * Past answers ranked by similarity to the query, boosted by recency: an answer resolved today counts up to
   * a fifth more than one resolved half a year ago, so the team's current voice wins among equals.
   */
  searchResolved(query: string, limit: number): (ResolvedConversation & { score: number })[] {
    if (!this.resolvedIndex) return [];
    const now = Date.now();
    return this.resolvedIndex
      .search(query)
      .map((hit) => {
        const resolvedAt = typeof hit.resolved_at === 'string' ? Date.parse(hit.resolved_at) : NaN;
        const ageDays = Number.isNaN(resolvedAt) ? 365 : (now - resolvedAt) / 86_400_000;
        const freshness = Math.max(0, 1 - ageDays / 180);
        return {
          question: String(hit.question),
          answer: String(hit.answer),
          ...(hit.resolved_by ? { resolved_by: String(hit.resolved_by) } : {}),
          ...(hit.resolved_at ? { resolved_at: String(hit.resolved_at) } : {}),
          score: Math.round(hit.score * (1 + 0.2 * freshness) * 100) / 100,
        };
      })
      .sort((a, b) => b.score - a.score)
      .slice(0, limit);
  }

  private buildIndex(docs: Doc[]): MiniSearch<Doc & { id: number }> {
    const index = new MiniSearch<Doc & { id: number }>({
      fields: ['title', 'body'],
      storeFields: ['title', 'body'],
      searchOptions: { boost: { title: 2 }, prefix: true, fuzzy: 0.2, combineWith: 'OR' },
    });
    index.addAll(docs.map((doc, id) => ({ id, ...doc })));
    return index;
  }

  user(email: string): TalentUser | undefined {
    return this.data.users.find((u) => u.email.toLowerCase() === email.toLowerCase());
  }

  searchDocs(query: string, limit: number): DocPassage[] {
    return this.index
      .search(query)
      .slice(0, limit)
      .map((hit) => ({ title: String(hit.title), text: String(hit.body), score: Math.round(hit.score * 100) / 100 }));
  }
}

const json = (value: unknown): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value) }] });
const toolError = (message: string): CallToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

const Email = z.email().describe("The talent's email address; Melvin sets it from the conversation's contact");
/** The tools that only read, as a real server marks them (MCP tool annotations). */
const READ_ONLY = { readOnlyHint: true } as const;

export function buildServer(store: TalentStore): McpServer {
  const server = new McpServer({ name: 'talent-sandbox', version: '1.0.0' });

  /** Every tool goes through here: the call is logged, then the fault plan may delay it, break it or fail it. */
  const tool =
    <A extends Record<string, unknown>>(name: string, handler: (args: A) => CallToolResult) =>
    async (args: A): Promise<CallToolResult> => {
      const call: TalentStore['calls'][number] = { tool: name, arguments: args };
      store.calls.push(call);
      call.latency_ms = await store.latency.wait();
      const fault = store.faults.take(name);
      if (fault?.error === 'timeout') await sleep(store.timeoutMs);
      // Over HTTP a `server` fault never gets here: the transport answers 503 (see http.ts). Over stdio there is no
      // transport to break, so it comes back as the tool error a failing backend would give.
      if (fault?.error === 'server') return toolError(`${name} failed: the talent backend is unavailable`);
      if (fault?.error === 'tool') return toolError(`${name} failed: the talent backend returned an error`);
      if (fault?.error === 'malformed') return { content: 'not a list of content blocks' } as unknown as CallToolResult;
      return handler(args);
    };

  const withUser = (email: string, answer: (user: TalentUser) => CallToolResult) => {
    const user = store.user(email);
    return user ? answer(user) : toolError(`No talent account found for ${email}`);
  };

  server.registerTool(
    'get_user_profile',
    {
      description: "The talent's profile: name, email, and how many applications and payments they have",
      inputSchema: { email: Email },
      annotations: READ_ONLY,
    },
    tool('get_user_profile', ({ email }: { email: string }) =>
      withUser(email, (u) =>
        json({ name: u.name, email: u.email, applications: u.applications.length, payments: u.payments.length }),
      ),
    ),
  );

  server.registerTool(
    'get_user_applications_detailed',
    {
      description: "The talent's job applications with status, last update, next step and the job applied for",
      inputSchema: { email: Email },
      annotations: READ_ONLY,
    },
    tool('get_user_applications_detailed', ({ email }: { email: string }) =>
      withUser(email, (u) =>
        json({
          applications: u.applications.map((a) => ({
            ...a,
            job: store.data.jobs.find((j) => j.id === a.job_id) ?? null,
          })),
        }),
      ),
    ),
  );

  server.registerTool(
    'get_job_details',
    {
      description: 'A job posting: title, location, status, pay rate and start date',
      inputSchema: { job_id: z.string().min(1).describe('The job id, as found in applications or payments') },
      annotations: READ_ONLY,
    },
    tool('get_job_details', ({ job_id }: { job_id: string }) => {
      const job = store.data.jobs.find((j) => j.id === job_id);
      return job ? json(job) : toolError(`No job with id ${job_id}`);
    }),
  );

  server.registerTool(
    'get_user_payments',
    {
      description: "The talent's payments for worked shifts: amount, currency, status, expected or paid date",
      inputSchema: { email: Email },
      annotations: READ_ONLY,
    },
    tool('get_user_payments', ({ email }: { email: string }) =>
      withUser(email, (u) =>
        json({
          payments: u.payments.map((p) => ({
            ...p,
            job_title: store.data.jobs.find((j) => j.id === p.job_id)?.title ?? null,
          })),
        }),
      ),
    ),
  );

  server.registerTool(
    'search_talent_docs',
    {
      description:
        'Search the talent help center (payments and payout runs, application stages, withdrawing, identity ' +
        'verification, documents, tax forms, contracts, shift cancellation); returns the best passages, best first',
      inputSchema: {
        query: z.string().min(1).max(500).describe('What to look for, in plain words'),
        limit: z.number().int().min(1).max(10).optional().describe('How many passages to return (default 3)'),
      },
      annotations: READ_ONLY,
    },
    tool('search_talent_docs', ({ query, limit }: { query: string; limit?: number }) =>
      json({ query, results: store.searchDocs(query, limit ?? 3) }),
    ),
  );

  // A profile tool that takes its talent nested, under another name than `email`: a client that pins only `email`
  // would let the model choose whose profile it reads.
  server.registerTool(
    'get_talent_profile',
    {
      description:
        "The talent's profile: name, email, and how many applications and payments they have (nested talent lookup)",
      inputSchema: {
        talent: z
          .object({ contactEmail: Email })
          .describe('The talent whose profile to read; Melvin sets it from the conversation’s contact'),
      },
      annotations: READ_ONLY,
    },
    tool('get_talent_profile', ({ talent }: { talent: { contactEmail: string } }) =>
      withUser(talent.contactEmail, (u) =>
        json({ name: u.name, email: u.email, applications: u.applications.length, payments: u.payments.length }),
      ),
    ),
  );

  // The one tool that writes, as a real talent backend would offer it: not read-only, so it is offered to a model only
  // when the tool policy allows it to write.
  server.registerTool(
    'update_payout_details',
    {
      description: "Changes where the talent's payments are paid out: the payout method and account",
      inputSchema: {
        email: Email,
        method: z.enum(['bank_transfer', 'paypal']).describe('How payments are paid out'),
        account: z.string().min(1).max(100).describe('The IBAN, account number or PayPal address paid into'),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    tool('update_payout_details', ({ email, method, account }: { email: string; method: string; account: string }) =>
      withUser(email, (u) => {
        store.payoutDetails.set(u.email.toLowerCase(), { method, account });
        return json({ updated: true, email: u.email, method });
      }),
    ),
  );

  if (store.resolved) {
    server.registerTool(
      'search_resolved_conversations',
      {
        description:
          "Past talent conversations a teammate resolved, most similar to the query first: the talent's question and " +
          "the team's answer, to show how the team writes. Another talent's facts, never this user's.",
        inputSchema: {
          query: z.string().min(1).max(500).describe('The question to find similar past conversations for'),
          limit: z.number().int().min(1).max(10).optional().describe('How many to return (default 3)'),
        },
        annotations: READ_ONLY,
      },
      tool('search_resolved_conversations', ({ query, limit }: { query: string; limit?: number }) =>
        json({ query, results: store.searchResolved(query, limit ?? 3) }),
      ),
    );
  }

  return server;
}
