/**
 * Memory across runs (docs/memory.md): the store and its two backends. The backends load their native module or
 * driver only when opened, so the client's entry stays free of SQLite until memory is used.
 */
import type { MemoryStore } from './store';

export type { MemoryScope, MemoryStore } from './store';

/** What `openMemoryStore` opens: the shape of `memorySettings()` in src/config. */
export type MemoryStoreSettings = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };

/** The store the settings name: `SqliteMemoryStore` on a file, or `PostgresMemoryStore` on a server. */
export async function openMemoryStore(settings: MemoryStoreSettings): Promise<MemoryStore> {
  if (settings.kind === 'postgres') {
    const { PostgresMemoryStore } = await import('./postgres');
    return new PostgresMemoryStore(settings.url);
  }
  const { SqliteMemoryStore } = await import('./sqlite');
  return new SqliteMemoryStore(settings.file);
}
