/**
 * `agent memory put|get|list|delete|search`: memories across runs in the workers' store (AGENT_MEMORY), through
 * `AgentMemory` as any embedder reads them; no Temporal server needed. `--tenant` names a tenant's memories (absent:
 * the default tenant, where runs without a tenant keep theirs).
 */
import type { Command } from 'commander';
import { integer, jsonObjectLike } from './args';
import type { AgentMemory, Memory } from '../client';

interface MemoryCliDeps {
  memory(): AgentMemory;
  out(text: string): void;
}

interface Flags {
  json?: boolean;
  tenant?: string;
}

export function registerMemoryCommands(program: Command, deps: MemoryCliDeps, state: { exitCode: number }): void {
  const print = (text: string) => deps.out(`${text}\n`);
  const printJson = (doc: unknown) => deps.out(`${JSON.stringify(doc)}\n`);
  const memory = program.command('memory').description('memories across runs: put, get, list, delete and search by namespace (docs/memory.md)');
  const command = (nameAndArgs: string, description: string) =>
    memory.command(nameAndArgs).description(description).option('--json', 'machine-readable output').option('--tenant <tenant>', 'the tenant whose memories these are (default: none)');

  /** Runs `fn` with the store and always closes it. */
  async function withMemory<T>(fn: (m: AgentMemory) => Promise<T>): Promise<T> {
    const m = deps.memory();
    try {
      return await fn(m);
    } finally {
      await m.close();
    }
  }

  command('put <namespace> <key> <text>', 'write a memory (created, or replaced whole with its version one higher)')
    .option('--metadata <json>', 'a JSON object kept beside the text', jsonObjectLike('{"source":"onboarding"}'))
    .option('--idempotency-key <key>', 'a retried put with the same key writes nothing again')
    .action(async (namespace: string, key: string, text: string, o: Flags & { metadata?: Record<string, unknown>; idempotencyKey?: string }) => {
      const written = await withMemory((m) =>
        m.put(namespace, key, { text, ...(o.metadata ? { metadata: o.metadata } : {}), ...(o.idempotencyKey ? { idempotencyKey: o.idempotencyKey } : {}) }, { tenant: o.tenant }),
      );
      if (o.json) printJson(written);
      else print(`${written.namespace}/${written.key}: version ${written.version}`);
    });

  command('get <namespace> <key>', 'print one memory')
    .action(async (namespace: string, key: string, o: Flags) => {
      const found = await withMemory((m) => m.get(namespace, key, { tenant: o.tenant }));
      if (!found) throw new Error(`no memory ${key} in namespace ${namespace}`);
      if (o.json) printJson(found);
      else print(found.text);
    });

  command('list <namespace>', 'list a namespace\'s memories by key')
    .option('--prefix <prefix>', 'only keys that start with this')
    .option('--after <key>', 'keys after this one (the `next` of the page before)')
    .option('--limit <n>', 'at most this many (default 50, at most 100)', integer)
    .action(async (namespace: string, o: Flags & { prefix?: string; after?: string; limit?: number }) => {
      const page = await withMemory((m) => m.list(namespace, { tenant: o.tenant, ...definedOnly({ prefix: o.prefix, after: o.after, limit: o.limit }) }));
      if (o.json) return printJson(page);
      if (page.memories.length === 0) print('(no memories)');
      for (const mem of page.memories) print(line(mem));
      if (page.next) print(`more: --after ${page.next}`);
    });

  command('delete <namespace> <key>', 'delete a memory')
    .action(async (namespace: string, key: string, o: Flags) => {
      const deleted = await withMemory((m) => m.delete(namespace, key, { tenant: o.tenant }));
      if (o.json) printJson({ deleted });
      else print(deleted ? `deleted ${namespace}/${key}` : `no memory ${key} in namespace ${namespace}`);
      if (!deleted) state.exitCode = 1;
    });

  command('search <namespace> <query>', 'the memories whose key or text matches words of the query, best first')
    .option('--limit <n>', 'at most this many (default 5, at most 100)', integer)
    .action(async (namespace: string, query: string, o: Flags & { limit?: number }) => {
      const hits = await withMemory((m) => m.search(namespace, { query, tenant: o.tenant, ...definedOnly({ limit: o.limit }) }));
      if (o.json) return printJson({ hits });
      if (hits.length === 0) print('(no match)');
      for (const hit of hits) print(`${line(hit)}  (score ${hit.score.toFixed(3)})`);
    });
}

const line = (m: Memory) => `${m.key}\t${m.text.replace(/\s+/g, ' ').slice(0, 120)}`;


function definedOnly<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
