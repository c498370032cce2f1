/**
 * A durable ledger of side-effecting tool calls, outside the workflow history, keyed by a stable idempotency key.
 * A retried call returns the recorded result instead of acting again; a call whose earlier attempt started but
 * never reported back has an unknown outcome, and the model is told so rather than the call being repeated blindly.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export type LedgerEntry =
  | { status: 'new' }
  | { status: 'done'; ok: boolean; content: string }
  | { status: 'unknown'; startedAt: number };

export interface ToolLedger {
  /** Claim `key` for a first execution, or report what an earlier attempt left behind. */
  begin(key: string, tool: string, args: string): LedgerEntry;
  complete(key: string, result: { ok: boolean; content: string }): void;
  /** Forget a claim whose execution is known to have had no effect (a retryable failure), so a retry may run it. */
  release(key: string): void;
  close(): void;
}

const BUSY_TIMEOUT_MS = 5_000;

/** Run `fn`, trying again for up to BUSY_TIMEOUT_MS while another connection holds the lock it needs. */
function whenUnlocked<T>(fn: () => T): T {
  const until = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      return fn();
    } catch (err) {
      const busy = err instanceof Database.SqliteError && (err.code === 'SQLITE_BUSY' || err.code === 'SQLITE_LOCKED');
      if (!busy || Date.now() > until) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50); // a synchronous pause: the constructor is synchronous
    }
  }
}

/** The ledger's SQLite file (created with its directory), in WAL mode with `synchronous` as given. */
export function openLedgerFile(file: string, synchronous: 'FULL' | 'NORMAL'): Database.Database {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file, { timeout: BUSY_TIMEOUT_MS });
  // Workers on one host share the ledger and start together: switching to WAL takes a lock SQLite does not wait
  // for, so a worker whose neighbour holds it tries again rather than fail to start.
  whenUnlocked(() => db.pragma('journal_mode = WAL'));
  db.pragma(`synchronous = ${synchronous}`);
  return db;
}

export class SqliteToolLedger implements ToolLedger {
  private readonly db: Database.Database;

  constructor(file: string) {
    // A recorded effect must survive a crash right after it is written.
    this.db = openLedgerFile(file, 'FULL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS tool_calls (
      key TEXT PRIMARY KEY,
      tool TEXT NOT NULL,
      arguments TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('started', 'done')),
      ok INTEGER,
      content TEXT,
      started_at INTEGER NOT NULL,
      finished_at INTEGER
    )`);
  }

  begin(key: string, tool: string, args: string): LedgerEntry {
    const claimed = this.db
      .prepare(`INSERT OR IGNORE INTO tool_calls (key, tool, arguments, state, started_at) VALUES (?, ?, ?, 'started', ?)`)
      .run(key, tool, args, Date.now());
    if (claimed.changes === 1) return { status: 'new' };
    const row = this.db.prepare(`SELECT state, ok, content, started_at FROM tool_calls WHERE key = ?`).get(key) as
      | { state: 'started' | 'done'; ok: number | null; content: string | null; started_at: number }
      | undefined;
    if (!row) return this.begin(key, tool, args); // released between the two statements
    return row.state === 'done' ? { status: 'done', ok: row.ok === 1, content: row.content ?? '' } : { status: 'unknown', startedAt: row.started_at };
  }

  complete(key: string, result: { ok: boolean; content: string }): void {
    this.db
      .prepare(`UPDATE tool_calls SET state = 'done', ok = ?, content = ?, finished_at = ? WHERE key = ?`)
      .run(result.ok ? 1 : 0, result.content, Date.now(), key);
  }

  release(key: string): void {
    this.db.prepare(`DELETE FROM tool_calls WHERE key = ? AND state = 'started'`).run(key);
  }

  /**
   * Retention (codec/retention.ts): the rows started before `before` (epoch ms) whose key `keep` does not keep, deleted
   * unless `dryRun`; their keys.
   */
  prune(before: number, keep: (key: string) => boolean, dryRun: boolean): string[] {
    const old = (this.db.prepare(`SELECT key FROM tool_calls WHERE started_at < ?`).all(before) as Array<{ key: string }>).map((r) => r.key);
    const gone = old.filter((key) => !keep(key));
    if (!dryRun && gone.length > 0) {
      const remove = this.db.prepare(`DELETE FROM tool_calls WHERE key = ? AND started_at < ?`);
      this.db.transaction(() => gone.forEach((key) => remove.run(key, before)))();
    }
    return gone;
  }

  /** Rows held: what retention keeps bounded. */
  count(): number {
    return (this.db.prepare(`SELECT count(*) AS n FROM tool_calls`).get() as { n: number }).n;
  }

  close(): void {
    this.db.close();
  }
}

/** What the model is told when an earlier attempt of a side-effecting call may or may not have acted. */
export const UNKNOWN_OUTCOME =
  'Error: the outcome of this call is unknown. An earlier attempt started but the worker stopped before it reported back, ' +
  'so it may or may not have taken effect. Check the current state before repeating it.';
