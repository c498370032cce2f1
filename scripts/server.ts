import { ensureSearchAttributes, isServerUp, startDevServer, type DevServerHandle } from './lib/dev-server';
import { ensureTemporalCli } from './lib/temporal-cli';
import { uiCodecEndpoint } from './lib/ui-codec';

// Foreground dev server for local work: `npm run server`, Ctrl-C to stop. Data persists in .temporal/.
const port = Number(process.env.TEMPORAL_PORT ?? 7233);
const uiPort = Number(process.env.TEMPORAL_UI_PORT ?? port + 1000);
const address = `127.0.0.1:${port}`;
const logFile = '.temporal/server.log';

async function main(): Promise<void> {
  const cliPath = await ensureTemporalCli();

  if (await isServerUp(address)) {
    // Someone else's server (another terminal, docker compose): make it usable and leave it running.
    await ensureSearchAttributes(address);
    console.log(`A Temporal server already answers on ${address}; search attributes ensured, nothing started.`);
    return;
  }

  // Handlers go in before the start so a signal during startup still stops the child once it exists.
  let server: DevServerHandle | undefined;
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal} received, stopping the server...`);
    if (server) stopAndExit(server);
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));

  const codec = await uiCodecEndpoint();
  server = await startDevServer({ port, uiPort, dbFile: '.temporal/dev.sqlite', logFile, cliPath, uiCodecEndpoint: codec?.url });
  if (stopping) return stopAndExit(server);
  console.log(`Temporal dev server ready on ${server.address} (pid ${server.pid})`);
  console.log(`Web UI: ${server.uiUrl}`);
  if (codec) {
    console.log(`Web UI decodes payloads with the codec server at ${codec.url}${codec.up ? '' : ' (not answering yet: npm run codec-server)'}`);
    console.log(`  once per browser: turn on "Include cross-origin credentials" in the UI's Codec Server settings, then sign in at ${codec.url}/login (docs/ui.md)`);
  }
  console.log(`Log: ${logFile}. Press Ctrl-C to stop.`);
  void server.exited.then((code) => {
    if (stopping) return;
    console.error(`Temporal dev server exited unexpectedly (code ${code}); see ${logFile}`);
    process.exit(1);
  });
}

function stopAndExit(server: DevServerHandle): void {
  server.stop().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
