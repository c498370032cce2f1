/**
 * What-if forks: the hash that says two provider requests are the same. The model call, the model critic and compaction
 * stamp it on what they answer and look a request up by it; the client reads it from the answers a run recorded. Not
 * for workflow code (node:crypto).
 */
import { createHash } from 'node:crypto';
import type { ChatMessage } from './chat';

/**
 * What a request sends that decides its answer: the model, the whole conversation, the tools offered and the output
 * limit; and who asks, when it is not a model call (a model call's hash has no `kind`, as runs recorded before had none).
 */
export interface HashedRequest {
  kind?: 'critic' | 'compaction';
  model: string;
  messages: readonly ChatMessage[];
  tools: readonly string[] | null;
  maxOutputTokens: number | null;
}

/** SHA-256 of the request's canonical JSON (keys sorted, absent values left out). */
export function requestHash(request: HashedRequest): string {
  return createHash('sha256').update(canonical(request)).digest('hex');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonical(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
