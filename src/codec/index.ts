/**
 * Claim-check payload codec: large payloads go to a content-addressed blob store and history keeps a small reference,
 * so a long agent run's history grows linearly with its steps instead of quadratically. Node-only (worker, client).
 */
import type { DataConverter } from '@temporalio/common';
import { claimCheckSettings } from '../config';
import { FsBlobStore, type BlobStore } from './blob-store';
import { ClaimCheckCodec } from './claim-check';

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

/** A data converter with the claim-check codec over `store`, for `Worker.create` and `new Client` alike. */
export function claimCheckDataConverter(options: { store: BlobStore; thresholdBytes?: number }): DataConverter {
  return { payloadCodecs: [new ClaimCheckCodec(options)] };
}

/**
 * The data converter configured by AGENT_CLAIM_CHECK, AGENT_BLOB_DIR and AGENT_CLAIM_CHECK_THRESHOLD (see config.ts):
 * the claim-check codec over an `FsBlobStore`, or the SDK's defaults (`{}`) when AGENT_CLAIM_CHECK=off.
 */
export function dataConverterFromEnv(env: NodeJS.ProcessEnv = process.env): DataConverter {
  const settings = claimCheckSettings(env);
  if (!settings.enabled) return {};
  return claimCheckDataConverter({ store: new FsBlobStore(settings.blobDir), thresholdBytes: settings.thresholdBytes });
}
