/**
 * `remember` and `recall`: the model's door to memory across runs (src/memory). Offered only to runs that name them in
 * `tools` (`optIn`). The scope is the run's, never the model's: the input's `memory.namespace` under the run's tenant.
 * A `remember` writes with the call's idempotency key, so an attempt retried after its write writes nothing again.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { DEFAULT_MEMORY_NAMESPACE, MAX_MEMORY_TEXT, MemoryKeySchema } from '../../common/memory';
import type { MemoryScope, MemoryStore } from '../../memory';
import { defineTool, type Tool, type ToolContext } from './registry';

export const REMEMBER_TOOL = 'remember';
export const RECALL_TOOL = 'recall';

const scopeOf = (ctx: ToolContext): MemoryScope => ({ namespace: ctx.memory?.namespace ?? DEFAULT_MEMORY_NAMESPACE, tenant: ctx.memory?.tenant ?? null });

/** A key for a memory the model did not name: the same for every attempt of the call. */
const keyOfCall = (idempotencyKey: string) => `m-${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 16)}`;

export function memoryTools(store: MemoryStore): Tool[] {
  return [
    defineTool({
      name: REMEMBER_TOOL,
      description:
        'Save a fact to long-term memory, kept after this conversation ends and found again later with recall. ' +
        'Give a short key (e.g. "diet") to replace what was remembered under it; without one a new memory is added.',
      parameters: z.object({
        text: z.string().min(1).max(MAX_MEMORY_TEXT).describe('What to remember, as a self-contained sentence.'),
        key: MemoryKeySchema.optional(),
      }),
      sideEffects: true,
      optIn: true,
      timeoutMs: 30_000,
      async execute({ text, key }, ctx) {
        const memory = await store.put(scopeOf(ctx), key ?? keyOfCall(ctx.idempotencyKey), { text, idempotencyKey: ctx.idempotencyKey });
        return `remembered under "${memory.key}"`;
      },
    }),
    defineTool({
      name: RECALL_TOOL,
      description: 'Search long-term memory (facts saved with remember, in this or earlier conversations) for what matches the query.',
      parameters: z.object({
        query: z.string().min(1).max(1_000).describe('Words to look for.'),
        limit: z.number().int().min(1).max(20).default(5),
      }),
      sideEffects: false,
      optIn: true,
      timeoutMs: 30_000,
      async execute({ query, limit }, ctx) {
        const hits = await store.search(scopeOf(ctx), { query, limit });
        if (hits.length === 0) return 'No memories match.';
        return hits.map((h) => `- ${h.key}: ${h.text}`).join('\n');
      },
    }),
  ];
}
