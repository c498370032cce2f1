/**
 * What-if forks: the hash that says two provider requests are the same. The model call, the model critic and compaction
 * stamp it on what they answer and look a request up by it; the client reads it from the answers a run recorded. Not
 * for workflow code (node:crypto).
 */
import { createHash, type Hash } from 'node:crypto';
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

/**
 * SHA-256 of the request's canonical JSON (keys sorted, absent values left out). `base`: a conversation hashed before
 * whose messages (the same objects) begin `request.messages`, as a model call's chain base does; the hash then goes on
 * from where that one's messages ended instead of reading the whole conversation again. The hash is the same.
 */
export function requestHash(request: HashedRequest, base?: readonly ChatMessage[]): string {
  const { messages } = request;
  // The canonical text around the messages: `{...,"messages":` before them, `,"model":...}` after.
  const [head, tail] = canonical({ ...request, messages: MESSAGES }).split(MESSAGES.text);
  const prior = base?.length && base.length <= messages.length && messages[0] === base[0] && messages[base.length - 1] === base[base.length - 1] ? absorbed.get(base) : undefined;
  const from = prior?.head === head && prior.count === base!.length ? prior.count : 0;
  const hash = from ? prior!.hash.copy() : createHash('sha256').update(`${head}[`);
  const added = messages.slice(from).map((m) => (m === undefined ? 'null' : canonical(m))).join(',');
  hash.update(from && added ? `,${added}` : added);
  absorbed.set(messages, { head, count: messages.length, hash: hash.copy() });
  return hash.update(`]${tail}`).digest('hex');
}

/** Text already canonical, taken as it is. */
class Canonical {
  constructor(readonly text: string) {}
}

/** Where the messages go in a request's canonical text (a NUL, which canonical JSON never holds unescaped). */
const MESSAGES = new Canonical('\u0000');

/**
 * A conversation's hash so far: the text before its messages (`head`), then `[` and its `count` messages, not closed. The
 * next call of its run goes on from it (`base`), so a call hashes only the messages added since its last: at step 500
 * of a run (600 kB) the hash took about 5 ms a call, 0.02 ms so (BENCHMARKS.md (b)). Weakly keyed by the conversation
 * array, which the conversation store keeps in memory while its run goes on (codec/conversation-store.ts), and never
 * changes; a base that did change since (another count) is hashed whole.
 */
const absorbed = new WeakMap<readonly ChatMessage[], { head: string; count: number; hash: Hash }>();

function canonical(value: unknown): string {
  if (value instanceof Canonical) return value.text;
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonical(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
