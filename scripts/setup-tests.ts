/**
 * `npm test`'s pretest (and, with --production, `npm run test:production`'s): obtains what the tiers need beyond Node
 * and npm on a fresh machine, one line for each thing it installs, nothing when all is there (the OpenTelemetry
 * Collector of the traces test is built with Go, scripts/lib/otelcol.ts). The real-model tier's
 * llama-server is built by the slow tier's global setup (test/global-setup-slow.ts), once, into ~/.cache.
 */
import { ensurePrerequisites, ensureHadolint, ensureSchemathesis, PRODUCTION_PREREQUISITES, TEST_PREREQUISITES } from './lib/prerequisites';
import { ensureOtelcol } from './lib/otelcol';
import { ensureTemporalCli } from './lib/temporal-cli';

async function main(): Promise<void> {
  const production = process.argv.includes('--production');
  ensurePrerequisites(production ? PRODUCTION_PREREQUISITES : TEST_PREREQUISITES);
  if (!production) {
    ensureHadolint();
    ensureSchemathesis();
    ensureOtelcol();
  }
  await ensureTemporalCli();
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
