/**
 * Short-lived stream tokens: a browser's `EventSource` cannot send `Authorization`, so a caller that holds the bearer
 * token asks `POST /v1/runs/:id/stream-token` for one and passes it as `?token=` on that run's event stream.
 *
 * A token is `<payload>.<signature>`, both base64url: the payload is `{ v, run, exp, tenant? }` (exp in ms since the
 * epoch; `tenant` that of the signed identity it was issued to, so that the stream still checks the run's tenant),
 * the signature its HMAC-SHA256 under a key derived from the gateway token, so changing the gateway token revokes
 * every stream token. Nothing is stored: any gateway with the same token accepts it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const VERSION = 1;
/** Keeps this key apart from any other use of the gateway token. */
const KEY_LABEL = 'durable-agent-worker/gateway/stream-token/v1';

export interface IssuedStreamToken {
  token: string;
  expiresAt: string;
}

export type StreamTokenCheck = { ok: true; tenant: string | null } | { ok: false; message: string };

export interface StreamTokens {
  /** A token for `runId`'s stream; `tenant`: the tenant of the identity it is issued to (null: the service). */
  issue(runId: string, tenant?: string | null, now?: number): IssuedStreamToken;
  verify(token: string, runId: string, now?: number): StreamTokenCheck;
}

/** Tokens signed with a key derived from `secret`; with no secret (authentication off) a random key per process. */
export function streamTokens(secret: string | null, ttlMs: number): StreamTokens {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new Error(`the stream token lifetime must be a positive number of ms, got ${ttlMs}`);
  const key = createHmac('sha256', secret ?? randomBytes(32)).update(KEY_LABEL).digest();
  const sign = (payload: string) => createHmac('sha256', key).update(payload).digest();
  return {
    issue(runId, tenant = null, now = Date.now()) {
      const exp = now + ttlMs;
      const payload = Buffer.from(JSON.stringify({ v: VERSION, run: runId, exp, ...(tenant !== null ? { tenant } : {}) })).toString('base64url');
      return { token: `${payload}.${sign(payload).toString('base64url')}`, expiresAt: new Date(exp).toISOString() };
    },
    verify(token, runId, now = Date.now()) {
      const [payload, signature, ...rest] = token.split('.');
      if (!payload || !signature || rest.length > 0) return { ok: false, message: 'the stream token is malformed (expected <payload>.<signature>)' };
      const presented = Buffer.from(signature, 'base64url');
      const expected = sign(payload);
      // Checked before anything in the payload is believed; lengths first, as timingSafeEqual requires equal ones.
      if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
        return { ok: false, message: 'the stream token is not valid: its signature does not match (tampered with, or issued under another gateway token)' };
      }
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { v: number; run: string; exp: number; tenant?: string };
      if (claims.v !== VERSION) return { ok: false, message: `the stream token has version ${claims.v}; this gateway issues version ${VERSION}` };
      if (claims.run !== runId) return { ok: false, message: `the stream token is for run ${claims.run}, not ${runId}` };
      if (now >= claims.exp) return { ok: false, message: `the stream token expired at ${new Date(claims.exp).toISOString()}: ask POST /v1/runs/:id/stream-token for a new one` };
      return { ok: true, tenant: claims.tenant ?? null };
    },
  };
}
