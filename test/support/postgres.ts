/**
 * A private PostgreSQL for tests: the distribution's server binaries (as the production tier's stack runs them, see
 * scripts/lib/stack/postgres.ts) on a data directory of its own in a temp dir, on a free port, stopped with `stop()`.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { initPostgres, isPostgresReady, POSTGRES_PASSWORD, POSTGRES_USER, postgresBinDir, startPostgres, stopPostgres, type PostgresLayout } from '../../scripts/lib/stack/postgres';
import { waitFor } from './agent-harness';
import { freePort } from './redis';

export interface TestPostgres {
  /** `postgres://` URL of the server's `postgres` database, as its superuser. */
  url: string;
  stop(): Promise<void>;
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  const root = mkdtempSync(path.join(os.tmpdir(), 'agent-pg-test-'));
  chmodSync(root, 0o755); // PostgreSQL runs as its own user when this is root, and must reach its data dir inside
  const dir = path.join(root, 'pg');
  const layout: PostgresLayout = { root: dir, data: path.join(dir, 'data'), sockets: path.join(dir, 'sockets'), log: path.join(root, 'postgres.log'), initLog: path.join(root, 'initdb.log'), port: await freePort() };
  initPostgres(layout, bin);
  startPostgres(layout, bin);
  try {
    await waitFor(() => (isPostgresReady(layout, bin) ? true : undefined), 30_000, `PostgreSQL on port ${layout.port} (log: ${layout.log})`);
  } catch (err) {
    stopPostgres(layout, bin, 'immediate');
    throw err;
  }
  return {
    url: `postgres://${POSTGRES_USER}:${POSTGRES_PASSWORD}@127.0.0.1:${layout.port}/postgres`,
    async stop() {
      stopPostgres(layout, bin, 'fast');
      rmSync(root, { recursive: true, force: true });
    },
  };
}
