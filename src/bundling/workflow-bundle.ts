// How the workflow code is bundled, by the worker and by every test and tool that builds the bundle itself: which
// modules all runs of a worker share instead of each evaluating its own copy.
import path from 'node:path';

/*
 * Modules evaluated once per worker and shared by every run it keeps (the SDK's `preloadModules`, reusable V8 context).
 * Without it each run evaluates its own copy of zod, the largest library it loads, and of the modules below: paid in CPU
 * at every turn (a turn is a new run after continue-as-new) and held in memory for every open conversation.
 *
 * Only modules without per-run state may be listed: the SDK deep-freezes the objects they export, but a Map, a Set or a
 * `let` at module scope would be shared by every run (test/unit/workflow-bundle.test.ts refuses them in the sources
 * listed here). `src/workflows/**` is never listed: patches.ts keeps the run's rules in a module variable.
 */

/** Where the paths of SHARED_SOURCES start. */
const SRC = path.join(__dirname, '..');

/** The SDK's public API (the rest of the SDK is shared already: the bundle's entry loads it before any run exists). */
export const SHARED_MODULES = ['@temporalio/workflow'];
/**
 * Melvin's modules that build nothing at load but constants and functions, and zod through zod-library.ts; paths from
 * src/. No module of zod schemas is listed: zod completes a schema on its first use by writing to it, which a frozen
 * schema refuses. So workflows import only types from contract/schemas.ts, and the two schemas they parse with live in
 * src/contract/answers.ts.
 */
export const SHARED_SOURCES = [
  'bundling/zod-library',
  'contract/vocabulary',
  'contract/shared',
  'contract/state',
  'guards/reply-checks',
  'guards/grounding',
  'guards/claims',
  'guards/record-facts',
  'contract/notes',
  'guards/tool-arguments',
  'observability/error-message',
];

/** The bundler's options for Melvin's workflows: pass them to `bundleWorkflowCode` or as the worker's `bundlerOptions`. */
export function workflowBundleOptions(): {
  workflowsPath: string;
  workflowInterceptorModules: string[];
  preloadModules: string[];
} {
  return {
    workflowsPath: require.resolve('../workflows'),
    // A worker that builds its own bundle takes these as `interceptors.workflowModules`.
    workflowInterceptorModules: [require.resolve('../workflows/activity-options/local-calls-interceptor')],
    preloadModules: [...SHARED_MODULES, ...SHARED_SOURCES.map((name) => path.join(SRC, name))],
  };
}
