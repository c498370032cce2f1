/**
 * `AgentClient.memory`: memories across runs from a backend service, in the store the workers use (docs/memory.md).
 * Each call names a namespace and, for a multi-tenant service, the tenant (absent: the default tenant, where runs
 * without a tenant keep theirs). The store opens on first use, so a client that never touches memory loads no SQLite.
 */
import { parseWith } from '../common/input';
import {
  MemoryKeySchema,
  MemoryListQuerySchema,
  MemoryNamespaceSchema,
  MemorySearchQuerySchema,
  MemoryWriteSchema,
  type Memory,
  type MemoryList,
  type MemoryListQuery,
  type MemorySearchHit,
  type MemorySearchQuery,
  type MemoryWrite,
} from '../common/memory';
import { memorySettings, type MemorySettings } from '../config';
import { openMemoryStore, type MemoryScope, type MemoryStore } from '../memory';
import { InvalidAgentInputError } from './errors';

/** Whose memories a call reads or writes beside its namespace. */
export interface MemoryCallOptions {
  /** The tenant whose namespace it is. @default none: the default tenant */
  tenant?: string | null;
}

export class AgentMemory {
  private opened: Promise<MemoryStore> | undefined;

  /**
   * `source`: a store of yours (yours to close), or the settings of one this client opens on first use and closes.
   * @default `memorySettings()` (AGENT_MEMORY), read on first use
   */
  constructor(private readonly source?: MemoryStore | MemorySettings) {}

  /** Writes `key` (created, or replaced whole with its version one higher); `write.idempotencyKey` makes a retried write a no-op. */
  async put(namespace: string, key: string, write: MemoryWrite, options: MemoryCallOptions = {}): Promise<Memory> {
    const checked = check(MemoryWriteSchema, write, 'memory');
    return (await this.store()).put(scope(namespace, options, key), key, checked);
  }

  /** The memory under `key`, or null. */
  async get(namespace: string, key: string, options: MemoryCallOptions = {}): Promise<Memory | null> {
    return (await this.store()).get(scope(namespace, options, key), key);
  }

  /** A page of the namespace's memories by key (`prefix`, `after` the last page's `next`, `limit`). */
  async list(namespace: string, query: MemoryListQuery & MemoryCallOptions = {}): Promise<MemoryList> {
    const { tenant, ...rest } = query;
    return (await this.store()).list(scope(namespace, { tenant }), check(MemoryListQuerySchema, rest, 'memory list query'));
  }

  /** Deletes `key`: whether there was one. */
  async delete(namespace: string, key: string, options: MemoryCallOptions & { idempotencyKey?: string } = {}): Promise<boolean> {
    return (await this.store()).delete(scope(namespace, options, key), key, options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {});
  }

  /** The namespace's memories whose key or text matches words of `query.query`, best first. */
  async search(namespace: string, query: MemorySearchQuery & MemoryCallOptions): Promise<MemorySearchHit[]> {
    const { tenant, ...rest } = query;
    return (await this.store()).search(scope(namespace, { tenant }), check(MemorySearchQuerySchema, rest, 'memory search'));
  }

  /** Closes the store if this client opened it. */
  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (opened && (this.source === undefined || isSettings(this.source))) await (await opened).close();
  }

  private store(): Promise<MemoryStore> {
    const source = this.source ?? memorySettings();
    return (this.opened ??= isSettings(source) ? openMemoryStore(source) : Promise.resolve(source));
  }
}

const isSettings = (s: MemoryStore | MemorySettings): s is MemorySettings => 'kind' in s && (s.kind === 'sqlite' || s.kind === 'postgres');

function check<T extends Parameters<typeof parseWith>[0]>(schema: T, value: unknown, what: string) {
  const parsed = parseWith(schema, value, what);
  if (!parsed.ok) throw new InvalidAgentInputError(parsed.error);
  return parsed.value as ReturnType<T['parse']>;
}

function scope(namespace: string, options: MemoryCallOptions, key?: string): MemoryScope {
  check(MemoryNamespaceSchema, namespace, 'memory namespace');
  if (key !== undefined) check(MemoryKeySchema, key, 'memory key');
  return { namespace, tenant: options.tenant ?? null };
}
