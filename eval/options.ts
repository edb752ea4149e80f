// The evaluation's command line and environment, checked with zod: a usage error says which option is wrong and how.
import path from 'node:path';
import { z } from 'zod';
import { MAX_TRIES } from './tries';
import { ModelEnvironment, keyWithEndpoint } from '../harness/model-environment';

export const USAGE = `Usage: npm run eval -- [options] [scenario file or folder…]   (default: eval/scenarios)

  --k <n>              tries per scenario (default 4, at most ${MAX_TRIES})
  --only <id,…>        only these scenarios
  --faults <rate>|off  share of calls to the sandbox's services that fail with a transient fault (default 0.1)
  --seed <n>           seed of what varies between tries: the wording each try draws, latency jitter and the
                       random faults (default: a new one per run, printed)
  --jitter <ms>        each LLM and tool call waits a random 0…ms (default 200; 0: no jitter)
  --adversary <rate>|off  share of the sandbox model's plan and draft answers it gets wrong on purpose, spread
                       over the kinds of wrong output a real model gives (default 0.5); the seed picks which
  --validation <how>   the sandbox validation service: checking, lenient (passes every draft) or both, odd tries
                       checking and even ones lenient (default both)
  --baselines on|off   also run two baseline agents over the set once each (one recites every record, one hands
                       every message over), which its expectations must fail (default: on for the whole set)
  --holdout            run the holdout set (eval/holdout), kept out of daily development, instead of eval/scenarios
  --concurrency <n>    tries at once (default 3)
  --baseline <file>    compare with this baseline (default: eval/baseline.json, for the default set)
  --save-baseline      write this run as the baseline (to --baseline, or eval/baseline.json for the whole set)
  --check              exit 1 when a scenario got worse than the baseline
  --out <dir>          where results.json, table.md and stack.log go (default test-output/eval)

With OPENAI_BASE_URL (and OPENAI_API_KEY, MODEL_NAME, optional LLM_RESPONSE_FORMAT) set, the worker uses that
endpoint instead of the sandbox model, and scenarios with a rubric are judged by it; the tier settings (PLAN_MODEL_NAME,
DRAFT_OPENAI_BASE_URL, …) reach the worker as they would in production.`;

/** A mistake in how the evaluation was asked for: reported with the usage, exit code 2. */
export class UsageError extends Error {}

const FLAGS = new Set(['save-baseline', 'check', 'help', 'holdout']);

/** Splits `--name value`, `--name=value` and bare flags from the positional targets; zod checks the values after. */
export function splitArgs(argv: string[]): { options: Record<string, string | boolean>; targets: string[] } {
  const options: Record<string, string | boolean> = {};
  const targets: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      targets.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    if (FLAGS.has(name)) {
      options[name] = inline ?? true;
    } else if (inline !== undefined) {
      options[name] = inline;
    } else {
      const value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new UsageError(`--${name} needs a value`);
      options[name] = value;
      i += 1;
    }
  }
  return { options, targets };
}

export const EvalOptions = z.strictObject({
  k: z.coerce.number().int().min(1).max(MAX_TRIES).default(4),
  only: z
    .string()
    .transform((ids) =>
      ids
        .split(',')
        .map((id) => id.trim())
        .filter(Boolean),
    )
    .optional(),
  faults: z
    .union([z.literal('off'), z.coerce.number().min(0).max(1)], {
      error: 'must be a share of calls from 0 to 1, or off',
    })
    .default(0.1),
  seed: z.coerce.number().int().min(0).max(4_294_967_295).optional(),
  jitter: z.coerce.number().int().min(0).max(10_000).default(200),
  adversary: z
    .union([z.literal('off'), z.coerce.number().min(0).max(1)], {
      error: "must be a share of the model's answers from 0 to 1, or off",
    })
    .default(0.5),
  validation: z.enum(['checking', 'lenient', 'both']).default('both'),
  baselines: z.enum(['on', 'off']).optional(),
  holdout: z.boolean().default(false),
  concurrency: z.coerce.number().int().min(1).max(16).default(3),
  baseline: z.string().min(1).optional(),
  'save-baseline': z.boolean().default(false),
  check: z.boolean().default(false),
  out: z.string().min(1).default(path.join('test-output', 'eval')),
  help: z.boolean().default(false),
});
export type EvalOptions = z.infer<typeof EvalOptions>;

/** The model endpoint comes from the same variables the worker reads; without `OPENAI_BASE_URL`, the sandbox model. */
export const EvalEnv = ModelEnvironment.extend({
  SCENARIO_TIMEOUT_MS: z.coerce.number().int().min(1000).default(180_000),
}).refine(keyWithEndpoint.check, { path: keyWithEndpoint.path, message: keyWithEndpoint.message });
export type EvalEnv = z.infer<typeof EvalEnv>;

function problems(error: z.ZodError, prefix: string): string {
  return error.issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') return `unknown option ${issue.keys.map((k) => `--${k}`).join(', ')}`;
      return `${prefix}${issue.path.join('.')}: ${issue.message}`;
    })
    .join('; ');
}

/** The options, targets and environment of one `npm run eval`; a `UsageError` names what is wrong. */
export function parseCommandLine(
  argv: string[],
  environment: NodeJS.ProcessEnv,
): { options: EvalOptions; targets: string[]; env: EvalEnv } {
  const { options, targets } = splitArgs(argv);
  const checked = EvalOptions.safeParse(options);
  if (!checked.success) throw new UsageError(problems(checked.error, '--'));
  const env = EvalEnv.safeParse(environment);
  if (!env.success) throw new UsageError(problems(env.error, ''));
  return { options: checked.data, targets, env: env.data };
}

/** Why a file is not a baseline, in the same words as a usage error. */
export function baselineProblems(error: z.ZodError): string {
  return problems(error, '');
}
