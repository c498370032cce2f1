import { ensureTemporalCli } from './lib/temporal-cli';

// Prints only the binary path on stdout so other scripts can capture it.
ensureTemporalCli()
  .then((bin) => console.log(bin))
  .catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
