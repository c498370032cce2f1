/**
 * Signed identities: a JWT (RS256 or ES256) checked with jose against the issuer's JSON Web Key Set. jose's remote key
 * set caches the keys and fetches them again when a token names a `kid` it does not hold (a key rotated in), at most
 * once every 30 s. The signature, `exp`, `nbf`, `iss` and `aud` are checked; `sub`, the tenant claim and the roles
 * claim make the caller. A refusal says why in words safe to send back (never the token, never its claims).
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import type { JwtSettings } from '../config';
import { HttpError } from './errors';
import { ROLES, type Caller, type Role } from './identity';

export type { JwtSettings };

/** The algorithms accepted: asymmetric only, so that the gateway holds no key that could sign. */
export const JWT_ALGORITHMS = ['RS256', 'ES256'];
/** Clock difference tolerated between the issuer and the gateway on `exp` and `nbf`. */
const CLOCK_TOLERANCE_S = 5;

/** Why a token was refused, for `WWW-Authenticate: Bearer error="invalid_token", error_description="..."`. */
export class InvalidTokenError extends Error {
  override readonly name = 'InvalidTokenError';
}

export type JwtVerifier = (token: string) => Promise<Extract<Caller, { kind: 'user' }>>;

/** Checks JWTs against `settings`; rejects with `InvalidTokenError` (a 401) or an `HttpError` 503 when the keys cannot be fetched. */
export function jwtVerifier(settings: JwtSettings): JwtVerifier {
  const keys = createRemoteJWKSet(new URL(settings.jwksUrl), settings.jwksCooldownMs !== undefined ? { cooldownDuration: settings.jwksCooldownMs } : {});
  return async (token) => {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: settings.issuer,
        audience: settings.audience,
        algorithms: JWT_ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      throw refusal(err, settings);
    }
    return caller(payload, settings);
  };
}

function caller(payload: JWTPayload, settings: JwtSettings): Extract<Caller, { kind: 'user' }> {
  if (typeof payload.sub !== 'string' || !payload.sub) throw new InvalidTokenError('the token has no sub claim (the caller)');
  const tenant = payload[settings.tenantClaim];
  if (typeof tenant !== 'string' || !tenant || tenant.length > 200) {
    throw new InvalidTokenError(`the token has no ${settings.tenantClaim} claim (the tenant: a string of 1 to 200 characters)`);
  }
  const claimed = payload[settings.rolesClaim];
  const names = Array.isArray(claimed) ? claimed : typeof claimed === 'string' ? claimed.split(/\s+/) : [];
  const roles = ROLES.filter((role) => names.includes(role));
  return { kind: 'user', sub: payload.sub, tenant, roles: roles as Role[] };
}

/** The refusal for what jose threw: a 401 for the token's fault, a 503 when the issuer's keys cannot be had. */
function refusal(err: unknown, settings: JwtSettings): Error {
  if (err instanceof errors.JWTExpired) return new InvalidTokenError(`the token expired${at(err.payload.exp)}`);
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'nbf':
        return new InvalidTokenError(`the token is not valid yet${at(err.payload.nbf, 'before')}`);
      case 'iss':
        return new InvalidTokenError(`the token was not issued by ${settings.issuer} (iss)`);
      case 'aud':
        return new InvalidTokenError(`the token is not meant for ${settings.audience.join(' or ')} (aud)`);
      default:
        return new InvalidTokenError(`the token's ${err.claim} claim is ${err.reason === 'missing' ? 'missing' : 'not valid'}`);
    }
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return new InvalidTokenError("the token's signature does not verify with the issuer's key");
  if (err instanceof errors.JWKSNoMatchingKey) return new InvalidTokenError("no key of the issuer's key set matches the token (kid, alg)");
  if (err instanceof errors.JOSEAlgNotAllowed) return new InvalidTokenError(`the token's algorithm is not accepted (${JWT_ALGORITHMS.join(' or ')})`);
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid || err instanceof errors.JOSENotSupported) {
    return new InvalidTokenError('the token is malformed: not a signed JWT');
  }
  // The rest is the key set's: out of reach, too slow, not 200, not a key set.
  return new HttpError(503, 'identity_keys_unavailable', `the issuer's keys (GATEWAY_JWKS_URL) could not be fetched: ${err instanceof Error ? err.message : String(err)}`);
}

const at = (seconds: unknown, word = 'at'): string => (typeof seconds === 'number' ? ` ${word} ${new Date(seconds * 1000).toISOString()}` : '');

/** A value for `error_description`: RFC 6750 allows printable ASCII without `"` and `\`. */
export const headerSafe = (text: string): string => text.replace(/[^\x20-\x7e]|["\\]/g, "'");
