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

const CIPHER = 'aes-256-gcm';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

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
      if (!KEY_ID.test(id)) throw new Error(`invalid encryption key id ${JSON.stringify(id)}: use 1 to 64 of A-Z a-z 0-9 . _ -`);
      if (key.length !== KEY_BYTES) throw new Error(`encryption key "${id}" must be ${KEY_BYTES} bytes, got ${key.length}`);
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

/**
 * The keys configured by `AGENT_ENCRYPTION_KEYS` (comma-separated `id:base64key`, 32-byte keys; the first is current
 * unless `AGENT_ENCRYPTION_KEY_ID` names another), or `undefined` when none are: encryption is off. Errors name the
 * variable and the key id, never key material.
 */
export function encryptionKeysFromEnv(env: NodeJS.ProcessEnv = process.env): EncryptionCodecOptions | undefined {
  const entries = (env.AGENT_ENCRYPTION_KEYS ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  if (entries.length === 0) {
    if (env.AGENT_ENCRYPTION_KEY_ID?.trim()) throw new Error('AGENT_ENCRYPTION_KEY_ID is set but AGENT_ENCRYPTION_KEYS is empty');
    return undefined;
  }
  const keys: Record<string, Uint8Array> = {};
  const ids: string[] = [];
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(':');
    const id = colon < 0 ? '' : entry.slice(0, colon).trim();
    const encoded = colon < 0 ? '' : entry.slice(colon + 1).trim();
    if (!KEY_ID.test(id)) throw new Error(`AGENT_ENCRYPTION_KEYS entry ${i + 1} must be id:base64key with an id of 1 to 64 of A-Z a-z 0-9 . _ -`);
    if (Object.hasOwn(keys, id)) throw new Error(`AGENT_ENCRYPTION_KEYS names key "${id}" twice`);
    const key = BASE64.test(encoded) ? Buffer.from(encoded, encoded.includes('-') || encoded.includes('_') ? 'base64url' : 'base64') : undefined;
    if (key?.length !== KEY_BYTES) {
      throw new Error(`AGENT_ENCRYPTION_KEYS key "${id}" must be ${KEY_BYTES} bytes in base64 (openssl rand -base64 32), got ${key ? `${key.length} bytes` : 'no valid base64'}`);
    }
    keys[id] = key;
    ids.push(id);
  });
  // From the list, not Object.keys(keys): an object puts integer-like ids ("2024") first whatever their order.
  const currentKeyId = env.AGENT_ENCRYPTION_KEY_ID?.trim() || ids[0];
  if (!Object.hasOwn(keys, currentKeyId)) {
    throw new Error(`AGENT_ENCRYPTION_KEY_ID "${currentKeyId}" is not among AGENT_ENCRYPTION_KEYS (${ids.join(', ')})`);
  }
  return { keys, currentKeyId };
}
