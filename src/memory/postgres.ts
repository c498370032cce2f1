/**
 * The memory store on PostgreSQL, for a fleet whose workers run on several hosts: a table `agent_memories` keyed by
 * (tenant, namespace, key), searched by PostgreSQL's full-text search (a stored `tsvector` of key and text, English
 * stemming, a GIN index, ranked by `ts_rank`), and `agent_memory_writes`, the idempotency keys of the writes done.
 * The tables are made on first use, under an advisory lock, so workers starting together do not race.
 */
import { Pool, type PoolClient, type PoolConfig } from 'pg';
import { parseOrThrow } from '../common/input';
import { MemoryListQuerySchema, MemorySearchQuerySchema, MemoryWriteSchema, type Memory, type MemoryList, type MemoryListQuery, type MemorySearchHit, type MemorySearchQuery, type MemoryWrite } from '../common/memory';
import { checkNames, searchWords, tenantColumn, type MemoryScope, type MemoryStore } from './store';

/** Any number, the same in every worker: the advisory lock the table creation holds. */
const SCHEMA_LOCK = 5_301_977;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS agent_memories (
    tenant text NOT NULL,
    namespace text NOT NULL,
    key text NOT NULL,
    text text NOT NULL,
    metadata jsonb NOT NULL,
    version integer NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    search tsvector GENERATED ALWAYS AS (to_tsvector('english', replace(key, '_', ' ') || ' ' || text)) STORED,
    PRIMARY KEY (tenant, namespace, key)
  );
  CREATE INDEX IF NOT EXISTS agent_memories_search ON agent_memories USING gin (search);
  CREATE TABLE IF NOT EXISTS agent_memory_writes (
    idempotency_key text PRIMARY KEY,
    result jsonb NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now()
  );
`;

interface Row {
  namespace: string;
  key: string;
  text: string;
  metadata: Record<string, unknown>;
  version: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'namespace, key, text, metadata, version, created_at, updated_at';
const toMemory = (r: Row): Memory => ({
  namespace: r.namespace,
  key: r.key,
  text: r.text,
  metadata: r.metadata,
  version: r.version,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export class PostgresMemoryStore implements MemoryStore {
  private readonly pool: Pool;
  private ready: Promise<void> | undefined;

  /** `connection`: a `postgres://` URL, or pg's pool options. @default pool size 10 */
  constructor(connection: string | PoolConfig) {
    this.pool = new Pool(typeof connection === 'string' ? { connectionString: connection, max: 10 } : connection);
    // An idle client that loses its server (a restart) is dropped by the pool; nothing to crash the process over.
    this.pool.on('error', () => undefined);
  }

  async put(scope: MemoryScope, key: string, write: MemoryWrite): Promise<Memory> {
    checkNames(scope, key);
    const { text, metadata, idempotencyKey } = parseOrThrow(MemoryWriteSchema, write, 'memory');
    return this.once(idempotencyKey, async (db) => {
      const { rows } = await db.query<Row>(
        `INSERT INTO agent_memories (tenant, namespace, key, text, metadata, version, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 1, now(), now())
         ON CONFLICT (tenant, namespace, key) DO UPDATE SET text = EXCLUDED.text, metadata = EXCLUDED.metadata, version = agent_memories.version + 1, updated_at = EXCLUDED.updated_at
         RETURNING ${COLUMNS}`,
        [tenantColumn(scope), scope.namespace, key, text, JSON.stringify(metadata ?? {})],
      );
      return toMemory(rows[0]!);
    });
  }

  async get(scope: MemoryScope, key: string): Promise<Memory | null> {
    checkNames(scope, key);
    await this.schema();
    const { rows } = await this.pool.query<Row>(`SELECT ${COLUMNS} FROM agent_memories WHERE tenant = $1 AND namespace = $2 AND key = $3`, [tenantColumn(scope), scope.namespace, key]);
    return rows[0] ? toMemory(rows[0]) : null;
  }

  async list(scope: MemoryScope, query: MemoryListQuery = {}): Promise<MemoryList> {
    checkNames(scope);
    const { prefix = '', after = '', limit } = parseOrThrow(MemoryListQuerySchema, query, 'memory list query');
    await this.schema();
    // COLLATE "C": keys in byte order, as SQLite orders them, whatever the database's collation.
    const { rows } = await this.pool.query<Row>(
      `SELECT ${COLUMNS} FROM agent_memories WHERE tenant = $1 AND namespace = $2 AND starts_with(key, $3) AND key COLLATE "C" > $4
       ORDER BY key COLLATE "C" LIMIT $5`,
      [tenantColumn(scope), scope.namespace, prefix, after, limit + 1],
    );
    const page = rows.slice(0, limit).map(toMemory);
    return { memories: page, next: rows.length > limit ? page[page.length - 1]!.key : null };
  }

  async delete(scope: MemoryScope, key: string, options: { idempotencyKey?: string } = {}): Promise<boolean> {
    checkNames(scope, key);
    return this.once(options.idempotencyKey, async (db) => {
      const { rowCount } = await db.query(`DELETE FROM agent_memories WHERE tenant = $1 AND namespace = $2 AND key = $3`, [tenantColumn(scope), scope.namespace, key]);
      return (rowCount ?? 0) > 0;
    });
  }

  async search(scope: MemoryScope, query: MemorySearchQuery): Promise<MemorySearchHit[]> {
    checkNames(scope);
    const { query: text, limit } = parseOrThrow(MemorySearchQuerySchema, query, 'memory search');
    const words = searchWords(text);
    if (words.length === 0) return [];
    await this.schema();
    // Any of the words, each stemmed by to_tsquery; quoted so that none is read as an operator.
    const tsquery = words.map((w) => `'${w}'`).join(' | ');
    const { rows } = await this.pool.query<Row & { score: number }>(
      `SELECT ${COLUMNS}, ts_rank(search, q) AS score FROM agent_memories, to_tsquery('english', $3) AS q
       WHERE tenant = $1 AND namespace = $2 AND search @@ q ORDER BY score DESC, key COLLATE "C" LIMIT $4`,
      [tenantColumn(scope), scope.namespace, tsquery, limit],
    );
    return rows.map((r) => ({ ...toMemory(r), score: Number(r.score) }));
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** The tables, made once per store (and by one worker at a time). */
  private schema(): Promise<void> {
    this.ready ??= this.transaction(async (db) => {
      await db.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
      await db.query(SCHEMA);
    }).catch((err: unknown) => {
      this.ready = undefined; // tried again by the next call
      throw err;
    });
    return this.ready;
  }

  /**
   * Runs `write` in one transaction with the record of its idempotency key: a key seen before answers its first result.
   * A concurrent write with the same key waits on the key's row and then answers the first one's result.
   */
  private async once<T>(idempotencyKey: string | undefined, write: (db: PoolClient) => Promise<T>): Promise<T> {
    await this.schema();
    return this.transaction(async (db) => {
      if (idempotencyKey !== undefined) {
        const claimed = await db.query(`INSERT INTO agent_memory_writes (idempotency_key, result) VALUES ($1, 'null') ON CONFLICT DO NOTHING`, [idempotencyKey]);
        if (claimed.rowCount === 0) {
          const { rows } = await db.query<{ result: T }>(`SELECT result FROM agent_memory_writes WHERE idempotency_key = $1`, [idempotencyKey]);
          return rows[0]!.result;
        }
      }
      const result = await write(db);
      if (idempotencyKey !== undefined) await db.query(`UPDATE agent_memory_writes SET result = $2 WHERE idempotency_key = $1`, [idempotencyKey, JSON.stringify(result)]);
      return result;
    });
  }

  private async transaction<T>(fn: (db: PoolClient) => Promise<T>): Promise<T> {
    const db = await this.pool.connect();
    try {
      await db.query('BEGIN');
      const result = await fn(db);
      await db.query('COMMIT');
      return result;
    } catch (err) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      db.release();
    }
  }
}
