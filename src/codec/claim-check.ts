/**
 * A claim-check payload codec: a payload larger than the threshold goes to a content-addressed blob store, and only a
 * small reference to it is sent to the server and kept in history. Smaller payloads pass through untouched, so they
 * stay readable in the Temporal UI and the plain `temporal` CLI.
 *
 * Why: every model call's input is the whole conversation. Inline, each step would add the conversation again to
 * history, which then grows quadratically and hits the server's payload (2 MB) and history (50 MB) limits.
 */
import { createHash } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { BlobStore } from './blob-store';

const ProtoPayload = temporal.api.common.v1.Payload;

/** The `encoding` metadata of a reference payload. */
export const CLAIM_CHECK_ENCODING = 'binary/claim-check';
/** Metadata of a reference payload: the size in bytes of the serialized payload it stands for. */
export const CLAIM_CHECK_SIZE_KEY = 'claim-check-size';
/** Payloads whose serialized size exceeds this many bytes are claim-checked by default. */
export const DEFAULT_CLAIM_CHECK_THRESHOLD = 32 * 1024;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** Options of `ClaimCheckCodec`. */
export interface ClaimCheckCodecOptions {
  store: BlobStore;
  /** Payloads whose serialized size is above this many bytes go to the store. @default 32768 */
  thresholdBytes?: number;
}

export class ClaimCheckCodec implements PayloadCodec {
  readonly store: BlobStore;
  readonly thresholdBytes: number;

  constructor({ store, thresholdBytes = DEFAULT_CLAIM_CHECK_THRESHOLD }: ClaimCheckCodecOptions) {
    if (!Number.isSafeInteger(thresholdBytes) || thresholdBytes < 0) {
      throw new Error(`claim-check threshold must be a non-negative integer number of bytes, got ${thresholdBytes}`);
    }
    this.store = store;
    this.thresholdBytes = thresholdBytes;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    // Most payloads are far below the threshold: no serializing them to learn so, and no promise each.
    if (payloads.every((p) => surelyAtMost(p, this.thresholdBytes))) return payloads;
    return Promise.all(payloads.map((p) => this.encodeOne(p)));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(payloads.map((p) => this.decodeOne(p)));
  }

  private async encodeOne(payload: Payload): Promise<Payload> {
    const bytes = ProtoPayload.encode(payload).finish();
    if (bytes.length <= this.thresholdBytes) return payload;
    // Keyed by content: the same payload stored twice (a retried activity, a repeated input) is one blob.
    const key = sha256Hex(bytes);
    await this.store.put(key, bytes);
    return claimCheckReference(key, bytes.length);
  }

  private async decodeOne(payload: Payload): Promise<Payload> {
    if (!isClaimCheckReference(payload)) return payload;
    const key = fromUtf8.decode(payload.data ?? new Uint8Array());
    const bytes = await this.store.get(key);
    // A blob that does not hash to its key was corrupted or overwritten; decoding it would feed wrong data to replay.
    const actual = sha256Hex(bytes);
    if (actual !== key) throw new Error(`claim-check blob ${key} is corrupt: its content hashes to ${actual}`);
    return ProtoPayload.decode(bytes);
  }
}

/**
 * Whether the payload's serialized size is surely at most `bytes`, from an upper bound that needs no serializing:
 * every field's tag and length prefix at most 6 bytes, a map entry's three of them, a key at most 3 bytes a character.
 */
function surelyAtMost(payload: Payload, bytes: number): boolean {
  if (payload.externalPayloads?.length) return false;
  let bound = (payload.data?.length ?? 0) + 6;
  for (const [key, value] of Object.entries(payload.metadata ?? {})) bound += 18 + 3 * key.length + (value?.length ?? 0);
  return bound <= bytes;
}

/** The reference that stands in history for a payload stored under `key`. */
export function claimCheckReference(key: string, size: number): Payload {
  return {
    metadata: { encoding: utf8.encode(CLAIM_CHECK_ENCODING), [CLAIM_CHECK_SIZE_KEY]: utf8.encode(String(size)) },
    data: utf8.encode(key),
  };
}

/** Whether a payload is a claim-check reference (as sent to the server) rather than the payload itself. */
export function isClaimCheckReference(payload: Payload): boolean {
  const encoding = payload.metadata?.encoding;
  return encoding != null && fromUtf8.decode(encoding) === CLAIM_CHECK_ENCODING;
}

const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
