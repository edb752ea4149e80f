// Loads the agent prompts: pulled from LangSmith once per run when configured, else the bundled prompt files.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client as LangSmithClient } from 'langsmith';
import { z } from 'zod';
import type { PromptsUsed } from '../contract/state';
import { errorMessage } from '../observability/error-message';
import { PromptUnavailableError, withRetryContract } from './errors';

export const PROMPT_NAMES = {
  plan: 'agent-plan-prompt',
  coverage: 'agent-coverage-prompt',
  draft: 'agent-draft-prompt',
  resolve: 'agent-resolve-prompt',
} as const;
type Step = keyof typeof PROMPT_NAMES;
const STEPS = Object.keys(PROMPT_NAMES) as Step[];

export interface LoadedPrompts {
  plan: string;
  coverage: string;
  draft: string;
  /** Absent in prompts loaded before the resolve step: such a run leaves what no other tier resolved open. */
  resolve?: string;
  used: PromptsUsed;
}

/** The bundled prompts live in `prompts/` at the package root, found from here whether running from src or dist. */
export const BUNDLED_PROMPTS_DIR = path.resolve(
  __dirname,
  __dirname.includes(`${path.sep}dist${path.sep}`) ? '../../..' : '../..',
  'prompts',
);

const TemplateNode = z.looseObject({
  id: z.array(z.string()).optional(),
  kwargs: z.looseObject({
    template: z.string().optional(),
    prompt: z.looseObject({ kwargs: z.looseObject({ template: z.string() }) }).optional(),
    messages: z.array(z.unknown()).optional(),
  }),
});

/**
 * A LangSmith prompt commit's manifest is a serialized LangChain template. Melvin's prompts are instructions only
 * (the data goes in a separate message), so the text is the system message's template, or a plain template's.
 */
export function promptTextFromManifest(manifest: unknown): string {
  const root = TemplateNode.parse(manifest);
  if (root.kwargs.template) return root.kwargs.template;
  const messages = (root.kwargs.messages ?? []).map((m) => TemplateNode.parse(m));
  const system = messages.filter((m) => m.id?.some((part) => part.startsWith('SystemMessage')));
  const texts = (system.length > 0 ? system : messages).map(
    (m) => m.kwargs.prompt?.kwargs.template ?? m.kwargs.template,
  );
  const text = texts.filter((t): t is string => Boolean(t)).join('\n\n');
  if (!text) throw new Error('the manifest holds no template text');
  return text;
}

export async function readBundledPrompts(dir = BUNDLED_PROMPTS_DIR): Promise<Record<Step, string>> {
  const texts = await Promise.all(STEPS.map((step) => readFile(path.join(dir, `${PROMPT_NAMES[step]}.md`), 'utf8')));
  return Object.fromEntries(STEPS.map((step, i) => [step, texts[i]!])) as Record<Step, string>;
}

const bundledVersions = (): Record<string, string> =>
  Object.fromEntries(Object.values(PROMPT_NAMES).map((name) => [name, 'bundled']));

/**
 * LangSmith's client hard-codes four retries for its API calls whatever `callerOptions` say; the caller reads
 * `maxRetries` on every call, so setting it to 0 leaves Temporal's policy as the only retry layer.
 */
export function createLangSmithClient(config: { apiKey: string; apiUrl: string }): LangSmithClient {
  const client = new LangSmithClient({ apiKey: config.apiKey, apiUrl: config.apiUrl, timeout_ms: 8_000 });
  (client as unknown as { caller: { maxRetries: number } }).caller.maxRetries = 0;
  return client;
}

export function createPromptActivities(options: { langsmith?: LangSmithClient; bundledDir?: string }) {
  const { langsmith, bundledDir } = options;
  // The bundled files ship with the worker and change only with a release, so each worker reads them once (a failed
  // read is tried again next time). LangSmith's prompts are pulled on every run: a new commit applies at once.
  let bundled: Promise<Record<Step, string>> | undefined;
  const bundledPrompts = () =>
    (bundled ??= readBundledPrompts(bundledDir).catch((err: unknown) => {
      bundled = undefined;
      throw err;
    }));

  async function pull(step: Step): Promise<{ text: string; version: string }> {
    const name = PROMPT_NAMES[step];
    try {
      const commit = await langsmith!.pullPromptCommit(name, { skipCache: true });
      return { text: promptTextFromManifest(commit.manifest), version: commit.commit_hash };
    } catch (err) {
      throw new PromptUnavailableError(`pull ${name} from LangSmith: ${errorMessage(err)}`, { cause: err });
    }
  }

  return withRetryContract({
    /** LangSmith's current commit of each prompt when an API key is configured, the bundled files otherwise. */
    async loadPrompts(): Promise<LoadedPrompts> {
      if (!langsmith) {
        return {
          ...(await bundledPrompts()),
          used: { source: 'bundled', versions: bundledVersions(), fallback_reason: null },
        };
      }
      const pulled = await Promise.all(STEPS.map(pull));
      return {
        ...(Object.fromEntries(STEPS.map((step, i) => [step, pulled[i]!.text])) as Record<Step, string>),
        used: {
          source: 'langsmith',
          versions: Object.fromEntries(STEPS.map((step, i) => [PROMPT_NAMES[step], pulled[i]!.version])),
          fallback_reason: null,
        },
      };
    },

    /** Used when LangSmith could not be reached: the run goes on with the bundled prompts and says so in its state. */
    async loadBundledPrompts({ fallbackReason }: { fallbackReason: string }): Promise<LoadedPrompts> {
      return {
        ...(await bundledPrompts()),
        used: { source: 'bundled', versions: bundledVersions(), fallback_reason: fallbackReason },
      };
    },
  });
}

export type PromptActivities = ReturnType<typeof createPromptActivities>;
