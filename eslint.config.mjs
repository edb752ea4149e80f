// Lint rules: the conventions' type-aware checks, the ban on Node built-ins inside deterministic workflow code, and
// imports that run one way: workflow modules import the rest of src/, never the other way round.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

/** What the report page's script may use of the browser. */
const BROWSER_GLOBALS = [
  'document',
  'window',
  'location',
  'history',
  'fetch',
  'URL',
  'URLSearchParams',
  'sessionStorage',
  'Option',
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'test-output/', '.data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...builtinModules, ...builtinModules.map((m) => `node:${m}`)].map((name) => ({
            name,
            message: 'Workflow code must be deterministic: do I/O in an activity.',
          })),
          patterns: [
            { group: ['**/activities/*'], allowTypeImports: true, message: 'Import activities as types only.' },
          ],
        },
      ],
    },
  },
  {
    // The workflows orchestrate everything else, so nothing else may depend on them: a helper two layers need lives
    // in a module both may import (src/contract/, src/guards/, …), not in src/workflows/.
    files: ['src/**/*.ts'],
    ignores: ['src/workflows/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/workflows', '**/workflows/**'],
              message:
                'Only workflow code imports from src/workflows/: move what both sides need to a module outside it.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.cjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', module: 'writable', require: 'readonly' } },
  },
  {
    // The report page's script runs in the browser (src/ingress/report-page/).
    files: ['src/ingress/report-page/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: Object.fromEntries(BROWSER_GLOBALS.map((name) => [name, 'readonly'])),
    },
  },
  {
    // A CommonJS file's way to import is require().
    files: ['**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
