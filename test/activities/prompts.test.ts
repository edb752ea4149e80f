// Prompt loading: LangSmith's prompt commits over HTTP when configured (a local LangSmith-compatible endpoint), else files.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import express from 'express';
import {
  BUNDLED_PROMPTS_DIR,
  PROMPT_NAMES,
  createLangSmithClient,
  createPromptActivities,
  promptTextFromManifest,
} from '../../src/activities/prompts';
import { listen, type RunningServer } from '../../sandbox/http';
import { runActivity } from '../helpers/activity';

const KEY = 'ls-test-key';
let server: RunningServer;
const pulls: { path: string; apiKey: string | undefined }[] = [];
let failPulls = false;

/** The serialized LangChain ChatPromptTemplate LangSmith stores for a prompt with a system and a human message. */
const chatManifest = (system: string) => ({
  lc: 1,
  type: 'constructor',
  id: ['langchain', 'prompts', 'chat', 'ChatPromptTemplate'],
  kwargs: {
    input_variables: [],
    messages: [
      {
        lc: 1,
        type: 'constructor',
        id: ['langchain', 'prompts', 'chat', 'SystemMessagePromptTemplate'],
        kwargs: {
          prompt: {
            lc: 1,
            type: 'constructor',
            id: ['langchain', 'prompts', 'prompt', 'PromptTemplate'],
            kwargs: { template: system, input_variables: [] },
          },
        },
      },
      {
        lc: 1,
        type: 'constructor',
        id: ['langchain', 'prompts', 'chat', 'HumanMessagePromptTemplate'],
        kwargs: {
          prompt: {
            lc: 1,
            type: 'constructor',
            id: ['langchain', 'prompts', 'prompt', 'PromptTemplate'],
            kwargs: { template: '{data}' },
          },
        },
      },
    ],
  },
});

beforeAll(async () => {
  const app = express();
  app.get('/commits/:owner/:name/:commit', (req, res) => {
    pulls.push({ path: req.path, apiKey: req.header('x-api-key') });
    if (failPulls) return res.status(503).json({ detail: 'unavailable' });
    res.json({
      commit_hash: `hash-${req.params.name}`,
      manifest: chatManifest(`LangSmith says: ${req.params.name}`),
      examples: [],
    });
  });
  server = await listen(app);
});
afterAll(() => server.close());

const langsmith = () => createLangSmithClient({ apiKey: KEY, apiUrl: server.url });
const run = <R>(fn: () => Promise<R>) => runActivity(fn);

test('without LangSmith the bundled prompt files are used and recorded as such', async () => {
  const loaded = await run(createPromptActivities({}).loadPrompts);
  expect(loaded.plan).toBe(readFileSync(path.join(BUNDLED_PROMPTS_DIR, 'agent-plan-prompt.md'), 'utf8'));
  expect(loaded.used).toEqual({
    source: 'bundled',
    versions: {
      'agent-plan-prompt': 'bundled',
      'agent-coverage-prompt': 'bundled',
      'agent-draft-prompt': 'bundled',
      'agent-resolve-prompt': 'bundled',
    },
    fallback_reason: null,
  });
});

test('a worker reads the bundled files once; a read that failed is tried again', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'melvin-prompts-'));
  const activities = createPromptActivities({ bundledDir: dir });
  await expect(run(activities.loadPrompts)).rejects.toThrow(/ENOENT/);
  for (const name of Object.values(PROMPT_NAMES)) {
    writeFileSync(path.join(dir, `${name}.md`), `first ${name}`);
  }
  expect((await run(activities.loadPrompts)).plan).toBe('first agent-plan-prompt');
  writeFileSync(path.join(dir, 'agent-plan-prompt.md'), 'changed after the worker read it');
  expect((await run(activities.loadPrompts)).plan).toBe('first agent-plan-prompt');
  expect((await run(() => activities.loadBundledPrompts({ fallbackReason: 'down' }))).plan).toBe(
    'first agent-plan-prompt',
  );
});

test('with LangSmith each prompt is pulled (latest commit, no cache) and its commit recorded', async () => {
  pulls.length = 0;
  const activities = createPromptActivities({ langsmith: langsmith() });
  const loaded = await run(activities.loadPrompts);
  expect(loaded.plan).toBe('LangSmith says: agent-plan-prompt');
  expect(loaded.draft).toBe('LangSmith says: agent-draft-prompt');
  expect(loaded.used.source).toBe('langsmith');
  expect(loaded.used.versions).toEqual(Object.fromEntries(Object.values(PROMPT_NAMES).map((n) => [n, `hash-${n}`])));
  expect(pulls.map((p) => p.path).sort()).toEqual(
    Object.values(PROMPT_NAMES)
      .map((n) => `/commits/-/${n}/latest`)
      .sort(),
  );
  expect(pulls.every((p) => p.apiKey === KEY)).toBe(true);
  await run(activities.loadPrompts);
  expect(pulls).toHaveLength(2 * Object.keys(PROMPT_NAMES).length);
});

test('LangSmith unavailable is a retryable PromptUnavailableError, not retried inside the SDK; the fallback says why', async () => {
  failPulls = true;
  pulls.length = 0;
  const activities = createPromptActivities({ langsmith: langsmith() });
  await expect(run(activities.loadPrompts)).rejects.toMatchObject({ name: 'PromptUnavailableError' });
  expect(pulls).toHaveLength(Object.keys(PROMPT_NAMES).length);
  failPulls = false;
  const fallback = await run(() => activities.loadBundledPrompts({ fallbackReason: 'LangSmith down' }));
  expect(fallback.used).toMatchObject({ source: 'bundled', fallback_reason: 'LangSmith down' });
});

test('a plain PromptTemplate manifest is read too; a manifest without text is an error', () => {
  expect(promptTextFromManifest({ id: ['x', 'PromptTemplate'], kwargs: { template: 'plain' } })).toBe('plain');
  expect(() => promptTextFromManifest({ kwargs: { messages: [] } })).toThrow('no template text');
});
