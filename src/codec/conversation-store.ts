/**
 * Conversation chains. Every model call needs the whole conversation, and at step 500 of a run that is ~600 kB: sent
 * whole, every step serialises it in the workflow, claim-checks it into a new blob and parses it again in the
 * activity, so a step costs more the longer the run, and the blob store grows quadratically.
 *
 * Instead, a model call stores what it was sent as a chain node, `{ base, messages }`, where `base` refers to the node
 * of an earlier call and `messages` are the ones added since, and answers with a reference to it. The next call of the
 * run sends that reference and only the new messages. A node is small, content-addressed, written once, and encoded
 * with the worker's payload codecs, so it is encrypted at rest exactly as claim-checked payloads are. Workers keep
 * recent conversations in memory; a worker that has not seen a chain (a restart, another replica) reads it back from
 * the shared blob store, node by node, to the nearest conversation it has.
 */
import { createHash } from 'node:crypto';
import { defaultDataConverter, type DataConverter, type LoadedDataConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { ChatMessage, ConversationRef } from '../common/chat';
import { BlobNotFoundError, type BlobStore } from './blob-store';
import { decodeAt, encodeOne } from './payloads';

const ProtoPayload = temporal.api.common.v1.Payload;

interface ChainNode {
  v: 1;
  base: ConversationRef | null;
  messages: ChatMessage[];
}

/** The chain cannot be read back (its blobs are gone or do not add up): the run must send the whole conversation. */
export class ConversationUnavailableError extends Error {
  override name = 'ConversationUnavailableError';
}

export interface ConversationStoreOptions {
  /** The payload codecs of this data converter (encryption, claim check) encode every node. @default none */
  dataConverter?: DataConverter;
  /**
   * Conversations kept in memory, least recently used out first: one per run (a call's base goes when the call stores
   * its own). Keep it above the runs a worker serves at once, or their calls read their chains back from the store.
   * @default 1024
   */
  maxCached?: number;
}

export class ConversationStore {
  private readonly converter: LoadedDataConverter;
  private readonly maxCached: number;
  /** Insertion-ordered: re-inserting on use makes it an LRU. Arrays share their message objects with each other. */
  private readonly cache = new Map<string, ChatMessage[]>();
  /** The conversation each run stored last, by the `run` given to `save` (swept of those no longer in memory). */
  private readonly latestOf = new Map<string, string>();

  constructor(
    private readonly store: BlobStore,
    options: ConversationStoreOptions = {},
  ) {
    // A node is this package's own JSON: the default payload converter writes it, the data converter's codecs encode it.
    this.converter = { ...defaultDataConverter, payloadCodecs: options.dataConverter?.payloadCodecs ?? [] };
    this.maxCached = options.maxCached ?? 1024;
  }

  /** The whole conversation: `base`'s messages, then `tail`. */
  async resolve(base: ConversationRef, tail: ChatMessage[]): Promise<ChatMessage[]> {
    return (await this.load(base)).concat(tail);
  }

  /**
   * The conversation `ref` names, from memory when this worker has it. The array is the one kept in memory, the same
   * object on every call until the run moves on (the model call keys its encoded request by it): do not change it.
   */
  conversation(ref: ConversationRef): Promise<readonly ChatMessage[]> {
    return this.load(ref);
  }

  /**
   * Stores `messages` (everything after `base`, or the whole conversation without one) as a node; `full` is the result.
   * `run` names the run that stores it (its workflow ID, the same along a chain of continue-as-new): a run keeps one
   * conversation in memory, so one that starts afresh (after a compaction, without a base) drops the one it had.
   */
  async save(base: ConversationRef | undefined, messages: ChatMessage[], full: ChatMessage[], run?: string): Promise<ConversationRef> {
    const node: ChainNode = { v: 1, base: base ?? null, messages };
    const bytes = ProtoPayload.encode(await encodeOne(this.converter, node)).finish();
    const ref = sha256Hex(bytes);
    // A node names its base, so it is new but for a retry (or runs begun alike), which writes the same bytes again.
    // Not flushed to disk: a node a crash of the host loses (or leaves torn) reads back as unavailable, and the run
    // sends the whole conversation instead (CHAIN_UNAVAILABLE), so a flush a model call would buy nothing. Where the
    // store can, it appends the node to a pack and says where, and the reference carries that place.
    let at: string | undefined;
    if (this.store.append) at = await this.store.append(ref, bytes);
    else await this.store.put(ref, bytes, { fresh: true, durable: false });
    // The run has moved on from its base (or from the conversation it had before a compaction); a retry of this call
    // that needs it again reads it back.
    if (base) this.cache.delete(base.ref);
    if (run !== undefined) {
      const previous = this.latestOf.get(run);
      if (previous !== undefined && previous !== ref) this.cache.delete(previous);
      this.latestOf.set(run, ref);
      if (this.latestOf.size > 2 * this.maxCached) {
        for (const [other, kept] of this.latestOf) if (kept !== ref && !this.cache.has(kept)) this.latestOf.delete(other);
      }
    }
    this.remember(ref, full);
    return at === undefined ? { ref, count: full.length } : { ref, count: full.length, at };
  }

  private async load(target: ConversationRef): Promise<ChatMessage[]> {
    // Back to the nearest conversation in memory (or the chain's root), then forward; iterative, as chains grow long.
    const nodes: Array<{ at: ConversationRef; node: ChainNode }> = [];
    let at: ConversationRef | null = target;
    let messages: ChatMessage[] = [];
    while (at) {
      const cached = this.cache.get(at.ref);
      if (cached) {
        messages = cached;
        break;
      }
      const node = await this.read(at);
      nodes.push({ at, node });
      at = node.base;
    }
    for (let i = nodes.length - 1; i >= 0; i--) {
      const { at: ref, node } = nodes[i];
      messages = messages.concat(node.messages);
      if (messages.length !== ref.count) {
        throw new ConversationUnavailableError(`conversation ${ref.ref} holds ${messages.length} messages, not the ${ref.count} its reference says`);
      }
    }
    this.remember(target.ref, messages);
    return messages;
  }

  private async read({ ref, at }: ConversationRef): Promise<ChainNode> {
    let bytes: Uint8Array;
    try {
      bytes = await this.store.get(ref, at);
    } catch (err) {
      if (err instanceof BlobNotFoundError) throw new ConversationUnavailableError(`conversation ${ref} is not in the blob store (${err.message})`);
      throw err; // the store is unreachable for now: worth a retry
    }
    const actual = sha256Hex(bytes);
    if (actual !== ref) throw new ConversationUnavailableError(`conversation ${ref} is corrupt: its content hashes to ${actual}`);
    const node = await decodeAt<ChainNode>(this.converter, 0, [ProtoPayload.decode(bytes)]);
    if (node?.v !== 1 || !Array.isArray(node.messages)) throw new ConversationUnavailableError(`conversation ${ref} is not a chain node`);
    return node;
  }

  private remember(ref: string, messages: ChatMessage[]): void {
    this.cache.delete(ref);
    this.cache.set(ref, messages);
    while (this.cache.size > this.maxCached) this.cache.delete(this.cache.keys().next().value!);
  }
}

const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
