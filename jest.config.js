// Jest: TypeScript through ts-jest; the global setup finds or builds the Temporal CLI and probes what end-to-end tests
// need before any test starts a server; the teardown lists the tests skipped for what the machine lacks.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  testTimeout: 120_000,
  // Each workflow test file runs its own Temporal dev server; two at a time suit a 2-core machine. `npm run test:fast`
  // runs four: its files spend most of their time waiting on retry backoffs and timers.
  maxWorkers: 2,
};
