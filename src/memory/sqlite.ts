/**
 * The embedded memory store: one SQLite file (WAL, `synchronous = FULL`), the same native module the tool ledger uses.
 * Search is SQLite's FTS5 over each memory's key and text, stemmed (porter), ranked by bm25. Workers and clients on
 * one host share the file.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { parseOrThrow } from '../common/input';
import { MemoryListQuerySchema, MemorySearchQuerySchema, MemoryWriteSchema, type Memory, type MemoryList, type MemoryListQuery, type MemorySearchHit, type MemorySearchQuery, type MemoryWrite } from '../common/memory';
import { checkNames, searchWords, tenantColumn, type MemoryScope, type MemoryStore } from './store';

const BUSY_TIMEOUT_MS = 5_000;

interface Row {
  namespace: string;
  key: string;
  text: string;
  metadata: string;
  version: number;
  created_at: string;
  updated_at: string;
}

const toMemory = (r: Row): Memory => ({
  namespace: r.namespace,
  key: r.key,
  text: r.text,
  metadata: JSON.parse(r.metadata) as Record<string, unknown>,
  version: r.version,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class SqliteMemoryStore implements MemoryStore {
  private readonly db: Database.Database;

  /** `file`: the SQLite file, created with its folder; `:memory:` for one process alone. */
  constructor(file: string) {
    if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
    this.db = new Database(file, { timeout: BUSY_TIMEOUT_MS });
    retryWhileBusy(() => this.db.pragma('journal_mode = WAL'));
    this.db.pragma('synchronous = FULL');
    retryWhileBusy(() =>
      this.db.exec(`
        CREATE TABLE IF NOT EXISTS memories (
          id INTEGER PRIMARY KEY,
          tenant TEXT NOT NULL,
          namespace TEXT NOT NULL,
          key TEXT NOT NULL,
          text TEXT NOT NULL,
          metadata TEXT NOT NULL,
          version INTEGER NOT NULL,
          created_at TEXT NOT NULL,
          updated_at TEXT NOT NULL,
          UNIQUE (tenant, namespace, key)
        );
        CREATE TABLE IF NOT EXISTS memory_writes (
          idempotency_key TEXT PRIMARY KEY,
          result TEXT NOT NULL,
          written_at INTEGER NOT NULL
        );
        CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(key, text, content='memories', content_rowid='id', tokenize='porter unicode61');
        CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
          INSERT INTO memories_fts (rowid, key, text) VALUES (new.id, new.key, new.text);
        END;
        CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
          INSERT INTO memories_fts (memories_fts, rowid, key, text) VALUES ('delete', old.id, old.key, old.text);
        END;
        CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
          INSERT INTO memories_fts (memories_fts, rowid, key, text) VALUES ('delete', old.id, old.key, old.text);
          INSERT INTO memories_fts (rowid, key, text) VALUES (new.id, new.key, new.text);
        END;
      `),
    );
  }

  async put(scope: MemoryScope, key: string, write: MemoryWrite): Promise<Memory> {
    checkNames(scope, key);
    const { text, metadata, idempotencyKey } = parseOrThrow(MemoryWriteSchema, write, 'memory');
    return this.once(idempotencyKey, () => {
      const now = new Date().toISOString();
      const row = this.db
        .prepare(
          `INSERT INTO memories (tenant, namespace, key, text, metadata, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?)
           ON CONFLICT (tenant, namespace, key) DO UPDATE SET text = excluded.text, metadata = excluded.metadata, version = version + 1, updated_at = excluded.updated_at
           RETURNING namespace, key, text, metadata, version, created_at, updated_at`,
        )
        .get(tenantColumn(scope), scope.namespace, key, text, JSON.stringify(metadata ?? {}), now, now) as Row;
      return toMemory(row);
    });
  }

  async get(scope: MemoryScope, key: string): Promise<Memory | null> {
    checkNames(scope, key);
    const row = this.db.prepare(`SELECT * FROM memories WHERE tenant = ? AND namespace = ? AND key = ?`).get(tenantColumn(scope), scope.namespace, key) as Row | undefined;
    return row ? toMemory(row) : null;
  }

  async list(scope: MemoryScope, query: MemoryListQuery = {}): Promise<MemoryList> {
    checkNames(scope);
    const { prefix = '', after = '', limit } = parseOrThrow(MemoryListQuerySchema, query, 'memory list query');
    const rows = this.db
      .prepare(`SELECT * FROM memories WHERE tenant = ? AND namespace = ? AND substr(key, 1, ?) = ? AND key > ? ORDER BY key LIMIT ?`)
      .all(tenantColumn(scope), scope.namespace, prefix.length, prefix, after, limit + 1) as Row[];
    const page = rows.slice(0, limit).map(toMemory);
    return { memories: page, next: rows.length > limit ? page[page.length - 1]!.key : null };
  }

  async delete(scope: MemoryScope, key: string, options: { idempotencyKey?: string } = {}): Promise<boolean> {
    checkNames(scope, key);
    return this.once(options.idempotencyKey, () => {
      const { changes } = this.db.prepare(`DELETE FROM memories WHERE tenant = ? AND namespace = ? AND key = ?`).run(tenantColumn(scope), scope.namespace, key);
      return changes > 0;
    });
  }

  async search(scope: MemoryScope, query: MemorySearchQuery): Promise<MemorySearchHit[]> {
    checkNames(scope);
    const { query: text, limit } = parseOrThrow(MemorySearchQuerySchema, query, 'memory search');
    const words = searchWords(text);
    if (words.length === 0) return [];
    // Each word quoted: FTS5's own syntax (AND, NEAR, column filters) is not the caller's to use.
    const match = words.map((w) => `"${w}"`).join(' OR ');
    const rows = this.db
      .prepare(
        `SELECT m.*, bm25(memories_fts) AS rank FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
         WHERE memories_fts MATCH ? AND m.tenant = ? AND m.namespace = ? ORDER BY rank, m.key LIMIT ?`,
      )
      .all(match, tenantColumn(scope), scope.namespace, limit) as Array<Row & { rank: number }>;
    return rows.map((r) => ({ ...toMemory(r), score: -r.rank }));
  }

  async close(): Promise<void> {
    this.db.close();
  }

  /** Runs `write` in one transaction with the record of its idempotency key: a key seen before answers its first result. */
  private once<T>(idempotencyKey: string | undefined, write: () => T): T {
    if (idempotencyKey === undefined) return write();
    return this.db.transaction((): T => {
      const earlier = this.db.prepare(`SELECT result FROM memory_writes WHERE idempotency_key = ?`).get(idempotencyKey) as { result: string } | undefined;
      if (earlier) return JSON.parse(earlier.result) as T;
      const result = write();
      this.db.prepare(`INSERT INTO memory_writes (idempotency_key, result, written_at) VALUES (?, ?, ?)`).run(idempotencyKey, JSON.stringify(result), Date.now());
      return result;
    }).immediate();
  }
}

/** Run `fn`, trying again for up to BUSY_TIMEOUT_MS while another connection holds a lock SQLite does not wait for. */
function retryWhileBusy<T>(fn: () => T): T {
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
