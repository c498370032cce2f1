/**
 * Payload codecs: encryption (AES-256-GCM, rotating keys) and the claim check, where large payloads go to a
 * content-addressed blob store and history keeps a small reference, so a long agent run's history grows linearly with
 * its steps instead of quadratically. Node-only (worker, client, codec server).
 */
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { FsBlobStore, type BlobStore } from './blob-store';
import { ClaimCheckCodec } from './claim-check';
import { ConversationStore } from './conversation-store';
import { EncryptionCodec, type EncryptionCodecOptions } from './encryption';

export { BlobNotFoundError, FsBlobStore, type BlobStore, type FsBlobStoreOptions } from './blob-store';
export {
  CLAIM_CHECK_ENCODING,
  CLAIM_CHECK_SIZE_KEY,
  ClaimCheckCodec,
  DEFAULT_CLAIM_CHECK_THRESHOLD,
  claimCheckReference,
  isClaimCheckReference,
  type ClaimCheckCodecOptions,
} from './claim-check';
export {
  ENCRYPTED_ENCODING,
  ENCRYPTION_KEY_ID_KEY,
  EncryptionCodec,
  EncryptionKeyNotFoundError,
  isEncrypted,
  PayloadDecryptionError,
  type EncryptionCodecOptions,
} from './encryption';

export {
  DEFAULT_RETENTION_GRACE_MS,
  markLive,
  namespaceRetentionMs,
  pruneStore,
  startRetentionSweeps,
  type PrunableLedger,
  type PruneOptions,
  type PruneReport,
  type RetentionService,
} from './retention';
export type { SweepResult } from './blob-store';
export { ConversationStore, ConversationUnavailableError, type ConversationStoreOptions } from './conversation-store';

/** The claim check's settings; `claimCheckSettings()` in src/config reads them from the environment. */
export interface ClaimCheckSettings {
  /** `AGENT_CLAIM_CHECK`: `off` keeps every payload inline in history. @default true */
  enabled: boolean;
  /** `AGENT_BLOB_DIR`: where large payloads are stored. @default ./.agent/blobs */
  blobDir: string;
  /** `AGENT_CLAIM_CHECK_THRESHOLD`: payloads above this many serialized bytes go to the blob store; unset, the codec's default (32768). */
  thresholdBytes?: number;
}

/**
 * What the payload codecs are built from (`createDataConverter`), read from the environment by `codecSettings()` in
 * src/config. Workers, clients and the codec server must agree on it.
 */
export interface CodecSettings {
  claimCheck: ClaimCheckSettings;
  /** Absent: payloads are not encrypted. */
  encryption?: EncryptionCodecOptions;
}

/**
 * The worker's conversation store (see conversation-store.ts): in the claim check's blob store and encoded with the
 * same data converter; none when the claim check is off (AGENT_CLAIM_CHECK=off), and then every model call carries the
 * whole conversation.
 */
export function createConversationStore(dataConverter: DataConverter, claimCheck: ClaimCheckSettings): ConversationStore | undefined {
  return claimCheck.enabled ? new ConversationStore(new FsBlobStore(claimCheck.blobDir), { dataConverter }) : undefined;
}

/** Module of the failure converter that moves error messages and stack traces into encrypted payloads. */
export const ENCRYPTED_FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

/** A data converter with the claim-check codec over `store`, for `Worker.create` and `new Client` alike. */
export function claimCheckDataConverter(options: { store: BlobStore; thresholdBytes?: number }): DataConverter {
  return { payloadCodecs: [new ClaimCheckCodec(options)] };
}

/**
 * The agent's data converter: encryption when keys are configured (AGENT_ENCRYPTION_KEYS, see encryption.ts), then the
 * claim check (AGENT_CLAIM_CHECK, AGENT_BLOB_DIR, AGENT_CLAIM_CHECK_THRESHOLD) over an `FsBlobStore`; `codecSettings`
 * in src/config reads them. With neither, the SDK's defaults (`{}`).
 */
export function createDataConverter({ claimCheck, encryption: keys }: CodecSettings): DataConverter {
  // Order matters: codecs encode first to last and decode last to first. Encrypt first, then claim-check, so blobs at
  // rest are ciphertext like history, and a blob's key hashes ciphertext, not the plaintext (which it would confirm).
  const codecs: PayloadCodec[] = [];
  if (keys) codecs.push(new EncryptionCodec(keys));
  if (claimCheck.enabled) codecs.push(new ClaimCheckCodec({ store: new FsBlobStore(claimCheck.blobDir), thresholdBytes: claimCheck.thresholdBytes }));
  if (codecs.length === 0) return {};
  return { payloadCodecs: codecs, ...(keys ? { failureConverterPath: ENCRYPTED_FAILURE_CONVERTER_PATH } : {}) };
}
