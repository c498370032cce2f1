/**
 * Memory across runs: what a memory is, and what each operation takes and answers. One zod schema each; the store
 * (src/memory), the `remember` and `recall` tools, the client, the CLI and the gateway all read them from here.
 */
import { z } from 'zod';
import { MEMORY_NAME_PATTERN, MEMORY_NAME_RULE } from './input';

/** The namespace a run's `remember` and `recall` use when its input names none. */
export const DEFAULT_MEMORY_NAMESPACE = 'default';
/** Longest text one memory holds. */
export const MAX_MEMORY_TEXT = 20_000;
/** Most memories one list or search answers. */
export const MAX_MEMORY_LIMIT = 100;

const WORD = MEMORY_NAME_PATTERN;
const WORD_RULE = MEMORY_NAME_RULE;

/** Whose memories: a user, a tenant's team, an agent; the caller chooses. A run's tenant sits above it. */
export const MemoryNamespaceSchema = z.string().regex(WORD, WORD_RULE).describe('Whose memories (a user, an agent): 1-128 characters of [A-Za-z0-9_.:@-].');
export const MemoryKeySchema = z.string().regex(WORD, WORD_RULE).describe('The memory\'s name in its namespace: 1-128 characters of [A-Za-z0-9_.:@-].');
const MemoryTextSchema = z.string().trim().min(1, 'must be a non-empty string').max(MAX_MEMORY_TEXT);
const MetadataSchema = z.record(z.string(), z.unknown()).describe('Any JSON object kept beside the text.');
const limit = (fallback: number) => z.coerce.number().int().min(1).max(MAX_MEMORY_LIMIT).default(fallback);

/** One memory as stored. `version` counts its writes: a retried write with the same idempotency key adds none. */
export const MemorySchema = z.object({
  namespace: z.string(),
  key: z.string(),
  text: z.string(),
  metadata: z.record(z.string(), z.unknown()),
  version: z.number().int().min(1),
  createdAt: z.string().meta({ format: 'date-time' }),
  updatedAt: z.string().meta({ format: 'date-time' }),
});

/** What a put writes: the text and, optionally, metadata (replacing the memory's whole). */
export const MemoryWriteSchema = z
  .object({
    text: MemoryTextSchema,
    metadata: MetadataSchema.optional(),
    idempotencyKey: z.string().min(1).max(500).optional().describe('A retried write with the same key writes nothing and answers the memory as that write left it.'),
  })
  .strict();

export const MemoryListQuerySchema = z
  .object({
    prefix: z.string().max(128).optional().describe('Only keys that start with this.'),
    after: z.string().max(128).optional().describe('Keys after this one (the `next` of the page before).'),
    limit: limit(50).describe(`At most this many (1-${MAX_MEMORY_LIMIT}). @default 50`),
  })
  .strict();

export const MemorySearchQuerySchema = z
  .object({
    query: z.string().trim().min(1, 'must be a non-empty string').max(1_000),
    limit: limit(5).describe(`At most this many (1-${MAX_MEMORY_LIMIT}). @default 5`),
  })
  .strict();

export const MemoryListSchema = z.object({
  memories: z.array(MemorySchema),
  next: z.string().nullable().describe('Pass as `after` for the next page; null on the last.'),
});

export const MemorySearchHitSchema = MemorySchema.extend({ score: z.number().describe('Higher is a better match; comparable within one answer only.') });
export const MemorySearchResultSchema = z.object({ hits: z.array(MemorySearchHitSchema) });
export const MemoryDeletedSchema = z.object({ deleted: z.boolean() });

export type Memory = z.output<typeof MemorySchema>;
export type MemoryWrite = z.input<typeof MemoryWriteSchema>;
export type MemoryListQuery = z.input<typeof MemoryListQuerySchema>;
export type MemoryList = z.output<typeof MemoryListSchema>;
export type MemorySearchQuery = z.input<typeof MemorySearchQuerySchema>;
export type MemorySearchHit = z.output<typeof MemorySearchHitSchema>;
