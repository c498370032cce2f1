/**
 * The memory store: memories across runs, by tenant and namespace. Two backends implement it, the embedded SQLite
 * (sqlite.ts, the default) and PostgreSQL (postgres.ts, for a fleet); `openMemoryStore` (index.ts) picks one from the
 * settings. Writes take an idempotency key: a write retried with the same key writes nothing and answers what the
 * first one did, so a retried activity, or a client's retried request, writes once.
 */
import { parseOrThrow } from '../common/input';
import { MemoryKeySchema, MemoryNamespaceSchema, type Memory, type MemoryList, type MemoryListQuery, type MemorySearchHit, type MemorySearchQuery, type MemoryWrite } from '../common/memory';

/** Whose memories: a namespace the caller chooses, under a tenant (null or absent: the one default tenant). */
export interface MemoryScope {
  namespace: string;
  tenant?: string | null;
}

export interface MemoryStore {
  /** Writes `key` (created, or replaced whole with its version one higher); answers the memory as written. */
  put(scope: MemoryScope, key: string, write: MemoryWrite): Promise<Memory>;
  /** The memory under `key`, or null. */
  get(scope: MemoryScope, key: string): Promise<Memory | null>;
  /** Memories by key order, a page at a time. */
  list(scope: MemoryScope, query?: MemoryListQuery): Promise<MemoryList>;
  /** Deletes `key`; whether there was one (for a retried delete with the same idempotency key: what the first found). */
  delete(scope: MemoryScope, key: string, options?: { idempotencyKey?: string }): Promise<boolean>;
  /** Memories whose key or text matches words of the query, best first (full-text search, stemmed). */
  search(scope: MemoryScope, query: MemorySearchQuery): Promise<MemorySearchHit[]>;
  close(): Promise<void>;
}

/** The tenant as stored: '' for none. */
export const tenantColumn = (scope: MemoryScope): string => scope.tenant ?? '';

/** The words of a search query (letters and digits), each at most once: what both backends match any of. */
export function searchWords(query: string): string[] {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(0, 32);
}

/** Throws a readable error for a namespace or key that is no memory name (common/memory.ts). */
export function checkNames(scope: MemoryScope, key?: string): void {
  parseOrThrow(MemoryNamespaceSchema, scope.namespace, 'memory namespace');
  if (key !== undefined) parseOrThrow(MemoryKeySchema, key, 'memory key');
}
