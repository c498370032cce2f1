/**
 * An encrypting payload codec: AES-256-GCM with a random 12-byte IV per payload and named keys, so keys can rotate.
 * New payloads are encrypted with the current key; a payload names its key in `encryption-key-id` metadata and is
 * decrypted with that key, so history written under an older key stays readable while that key is configured.
 *
 * Wire form of an encrypted payload: metadata `encoding: binary/encrypted` and `encryption-key-id: <id>`; data is
 * `iv (12 bytes) || ciphertext || auth tag (16 bytes)` of the whole serialized original payload (metadata included).
 * The key id is bound to the ciphertext as additional authenticated data, so relabelling a payload fails to decrypt.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

const ProtoPayload = temporal.api.common.v1.Payload;

/** The `encoding` metadata of an encrypted payload. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata naming the key an encrypted payload was encrypted with. */
export const ENCRYPTION_KEY_ID_KEY = 'encryption-key-id';

/** The length of every key (AES-256). */
export const ENCRYPTION_KEY_BYTES = 32;
/** A key id: short and safe in metadata, logs and error messages. */
export const ENCRYPTION_KEY_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

const CIPHER = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** Options of `EncryptionCodec`. */
export interface EncryptionCodecOptions {
  /** Every key that may still be needed to decrypt, by id; each 32 bytes. */
  keys: Record<string, Uint8Array>;
  /** The key new payloads are encrypted with; must be one of `keys`. */
  currentKeyId: string;
}

/** A payload names a key that is not configured: the key was retired while history still needs it, or this process has another key set. */
export class EncryptionKeyNotFoundError extends Error {
  override readonly name = 'EncryptionKeyNotFoundError';
  constructor(
    readonly keyId: string,
    known: string[],
  ) {
    super(`payload is encrypted with key "${keyId}", which is not configured (known keys: ${known.join(', ')}); add it to AGENT_ENCRYPTION_KEYS`);
  }
}

/** The ciphertext failed authentication: it, its IV, its key id or the key was altered. */
export class PayloadDecryptionError extends Error {
  override readonly name = 'PayloadDecryptionError';
  constructor(readonly keyId: string) {
    super(`payload encrypted with key "${keyId}" failed authentication: the ciphertext or its key id was altered, or the key is wrong`);
  }
}

export class EncryptionCodec implements PayloadCodec {
  readonly currentKeyId: string;
  private readonly keys: Map<string, Uint8Array>;

  constructor({ keys, currentKeyId }: EncryptionCodecOptions) {
    this.keys = new Map(Object.entries(keys));
    for (const [id, key] of this.keys) {
      if (!ENCRYPTION_KEY_ID_PATTERN.test(id)) throw new Error(`invalid encryption key id ${JSON.stringify(id)}: use 1 to 64 of A-Z a-z 0-9 . _ -`);
      if (key.length !== ENCRYPTION_KEY_BYTES) throw new Error(`encryption key "${id}" must be ${ENCRYPTION_KEY_BYTES} bytes, got ${key.length}`);
    }
    if (!this.keys.has(currentKeyId)) throw new Error(`the current encryption key "${currentKeyId}" is not among the keys (${this.keyIds().join(', ')})`);
    this.currentKeyId = currentKeyId;
  }

  /** Ids of the configured keys. */
  keyIds(): string[] {
    return [...this.keys.keys()];
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.encryptOne(p));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.decryptOne(p));
  }

  private encryptOne(payload: Payload): Payload {
    const keyId = this.currentKeyId;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(CIPHER, this.keys.get(keyId)!, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(utf8.encode(keyId));
    const ciphertext = Buffer.concat([cipher.update(ProtoPayload.encode(payload).finish()), cipher.final()]);
    return {
      metadata: { encoding: utf8.encode(ENCRYPTED_ENCODING), [ENCRYPTION_KEY_ID_KEY]: utf8.encode(keyId) },
      data: Buffer.concat([iv, ciphertext, cipher.getAuthTag()]),
    };
  }

  private decryptOne(payload: Payload): Payload {
    if (!isEncrypted(payload)) return payload;
    const idBytes = payload.metadata?.[ENCRYPTION_KEY_ID_KEY];
    if (!idBytes) throw new Error(`encrypted payload has no ${ENCRYPTION_KEY_ID_KEY} metadata`);
    const keyId = fromUtf8.decode(idBytes);
    const key = this.keys.get(keyId);
    if (!key) throw new EncryptionKeyNotFoundError(keyId, this.keyIds());
    const data = payload.data ?? new Uint8Array();
    if (data.length < IV_BYTES + TAG_BYTES) throw new PayloadDecryptionError(keyId);
    const decipher = createDecipheriv(CIPHER, key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(idBytes);
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plaintext: Buffer;
    try {
      plaintext = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new PayloadDecryptionError(keyId);
    }
    return ProtoPayload.decode(plaintext);
  }
}

/** Whether a payload is encrypted by `EncryptionCodec` (as sent to the server). */
export function isEncrypted(payload: Payload): boolean {
  const encoding = payload.metadata?.encoding;
  return encoding != null && fromUtf8.decode(encoding) === ENCRYPTED_ENCODING;
}
