#!/usr/bin/env node
/** The agent CLI process: `npm run agent -- <command>`. The commands are in `src/cli/cli.ts`; the exit code is theirs. */
import { runCli } from '../cli/cli';

// A reader that has had enough (`agent history RUN | head -2`) closes stdout: that ends the command quietly, as it ends `cat`.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(0);
});

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
