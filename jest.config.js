// Jest: TypeScript through ts-jest; one global setup finds or builds the Temporal CLI before any test starts a server.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  globalSetup: '<rootDir>/test/global-setup.ts',
  testTimeout: 120_000,
  // Each workflow test file runs its own Temporal dev server; two at a time suit a 2-core machine.
  maxWorkers: 2,
};
