import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startDevServer, type DevServerHandle } from '../scripts/lib/dev-server';
import { ensureTemporalCli } from '../scripts/lib/temporal-cli';

/** Preferred port of the test server, apart from the 7233 that `npm run server` uses; a free one if it is taken. */
const TEST_SERVER_PORT = 17233;

/** Another test run (a second terminal, an engineer beside you) may hold the preferred port. */
async function freePort(preferred: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | undefined>((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(undefined));
      probe.listen(port, '127.0.0.1', () => {
        const { port: bound } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(bound));
      });
    });
  return (await tryListen(preferred)) ?? (await tryListen(0))!;
}

export interface TestServerState {
  server: DevServerHandle;
  /** Temp dir holding the db and the server log, removed at teardown. */
  dir: string;
}

// Jest loads globalSetup and globalTeardown as separate modules in one process; globalThis is what they share.
const KEY = Symbol.for('durable-agent-worker.test-server');
type Holder = { [KEY]?: TestServerState };

/**
 * The global setup of the `integration` and `slow` projects (jest.config.js): one headless dev server on a fresh db for
 * the whole jest run, unless TEMPORAL_TEST_ADDRESS names one to reuse. Jest runs each distinct setup module once, so
 * when both projects run, the second setup finds TEMPORAL_TEST_ADDRESS set and starts nothing; the shared teardown
 * module likewise runs once, after every test of both.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.TEMPORAL_TEST_ADDRESS) return;
  const cliPath = await ensureTemporalCli();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-temporal-test-'));
  const started = Date.now();
  const server = await startDevServer({
    port: await freePort(TEST_SERVER_PORT),
    headless: true,
    dbFile: path.join(dir, 'dev.sqlite'),
    logFile: path.join(dir, 'server.log'),
    cliPath,
  });
  // Test files, in band or in workers forked later, read the environment of this process.
  process.env.TEMPORAL_TEST_ADDRESS = server.address;
  (globalThis as Holder)[KEY] = { server, dir };
  console.log(`\nTemporal test server on ${server.address}, ready in ${Date.now() - started} ms`);
}

/** Hands the server started above to the teardown, once. */
export function takeTestServer(): TestServerState | undefined {
  const holder = globalThis as Holder;
  const state = holder[KEY];
  delete holder[KEY];
  return state;
}
