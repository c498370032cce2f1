/**
 * Three tiers. `unit` (`npm run test:unit`): the pure machine, input parsing, settings, activities against
 * MockActivityEnvironment and the scripted model, the CLI against a fake client; no Temporal server, seconds to run.
 * `integration` (`npm run test:integration`): workflows on a real dev server, which its global setup starts.
 * `slow` (`npm run test:slow`): minutes each: the chaos short form, the 500-model-call run, the Web UI in Chromium,
 * the packed package installed into a fresh project, and the real-model tier, whose llama-server its global setup
 * provisions. `npm test` runs these three.
 * `production` (`npm run test:production`): agent runs on the stack of `npm run stack` (PostgreSQL, the Temporal Server
 * built from source, two workers), which its global setup brings up on free ports and its teardown stops; kill -9 of
 * a worker and of the server. Not in `npm test`: the first run builds the server (minutes), and each run starts a
 * whole cluster.
 *
 * Jest runs a project's global setup only when one of that project's tests runs, so `jest test/machine.test.ts`
 * starts no server. It runs each distinct setup and teardown module once per run: `integration` and `slow` share
 * one dev server (global-setup-slow.ts starts it through global-setup.ts, which starts nothing when it is already up)
 * and one teardown, which runs after the last test of both.
 */
const UNIT = ['machine', 'discovery', 'memory', 'machine-docs', 'layout', 'deploy-files', 'docs-links', 'quota', 'model-fallback-unit', 'agents-as-tools-unit', 'stack-options', 'tls-diagnosis', 'real-model-launch', 'agents-unit', 'input-fuzz', 'cli', 'codec-server', 'config', 'connection', 'activities', 'ledger', 'provider-errors', 'scripted-model', 'worker-options', 'wire', 'payloads', 'tenant-burst'];
const SLOW = ['chaos', 'long-run-500', 'ui', 'ui-page', 'ui-views', 'ui-codec', 'ui-list', 'real-model', 'package'];
const PRODUCTION = ['production', 'production-tls'];
const files = (names) => names.map((name) => `<rootDir>/test/${name}.test.ts`);
const ignored = (names) => names.map((name) => `/test/${name}\\.test\\.ts$`);

const shared = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: {
    // Transpile only: `npm test` runs `tsc --noEmit` first, so jest need not type-check again.
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: { isolatedModules: true } }],
    // jose ships ES modules only, which Node requires as they are and jest's module system does not: turned into CommonJS here.
    '/node_modules/jose/.+\\.js$': ['ts-jest', { tsconfig: { isolatedModules: true, allowJs: true } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
};
const devServer = { globalTeardown: '<rootDir>/test/global-teardown.ts' };

/** @type {import('jest').Config} */
module.exports = {
  // Workflow tests bundle code and talk to a real dev server; slow tests set their own, longer timeouts.
  testTimeout: 60_000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: files(UNIT) },
    {
      ...shared,
      ...devServer,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...ignored(UNIT), ...ignored(SLOW), ...ignored(PRODUCTION)],
      globalSetup: '<rootDir>/test/global-setup.ts',
    },
    { ...shared, ...devServer, displayName: 'slow', testMatch: files(SLOW), globalSetup: '<rootDir>/test/global-setup-slow.ts' },
    {
      ...shared,
      displayName: 'production',
      testMatch: files(PRODUCTION),
      globalSetup: '<rootDir>/test/global-setup-production.ts',
      globalTeardown: '<rootDir>/test/global-teardown-production.ts',
    },
  ],
};
