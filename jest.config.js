/**
 * Two tiers. `unit`: the pure machine, input parsing, activities against MockActivityEnvironment and the scripted
 * model, the CLI against a fake client; no Temporal server, seconds to run (`npm run test:unit`). `integration`:
 * everything on a real dev server (and the real model server), which its global setup starts. Jest runs a project's
 * global setup only when one of that project's tests runs, so `jest test/machine.test.ts` starts no server.
 */
const UNIT = ['machine', 'input-fuzz', 'cli', 'codec-server', 'config', 'connection', 'activities', 'ledger', 'provider-errors', 'scripted-model'];
const unitMatch = UNIT.map((name) => `<rootDir>/test/${name}.test.ts`);

const shared = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: {
    // Transpile only: `npm test` runs `tsc --noEmit` first, so jest need not type-check again.
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: { isolatedModules: true } }],
  },
};

/** @type {import('jest').Config} */
module.exports = {
  // Workflow tests bundle code and talk to a real dev server.
  testTimeout: 60_000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: unitMatch },
    {
      ...shared,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...UNIT.map((name) => `/test/${name}\\.test\\.ts$`)],
      globalSetup: '<rootDir>/test/global-setup.ts',
      globalTeardown: '<rootDir>/test/global-teardown.ts',
    },
  ],
};
