#!/usr/bin/env node
/** The agent CLI process: `npm run agent -- <command>`. The commands are in `src/client/cli.ts`; the exit code is theirs. */
import { runCli } from '../client/cli';

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
