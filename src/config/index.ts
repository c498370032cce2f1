/**
 * Settings from the environment, read and validated here and nowhere else: each reader takes an environment
 * (`process.env` unless given) and returns typed settings, and a bad value fails with an error that names its variable.
 * A process (src/bin) reads its settings once at start and passes them down; library functions take them as
 * parameters. Secrets stay here and in the worker: never in workflow input.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadClientConfigProfile, toClientOptions, type ClientConfigProfile } from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';
import type { ClaimCheckSettings, CodecSettings } from '../codec';
import { ENCRYPTION_KEY_BYTES, ENCRYPTION_KEY_ID_PATTERN, type EncryptionCodecOptions } from '../codec/encryption';
import { DEFAULT_TASK_QUEUE } from '../common/constants';

// The codec defines what it is built from; these are read from the environment here.
export type { ClaimCheckSettings, CodecSettings };

export const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';
export const DEFAULT_TEMPORAL_NAMESPACE = 'default';

/** Where and how to reach Temporal; `connection.ts` turns it into the SDK's connection options. */
export interface TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
  /** `TEMPORAL_API_KEY` (or the profile's `api_key`); turns TLS on. */
  apiKey?: string;
  /** `true`: TLS with the system roots; an object: server CA, server name, client certificate (mTLS). */
  tls?: NonNullable<NativeConnectionOptions['tls']>;
  /** gRPC headers from TEMPORAL_GRPC_META_* (or `grpc_meta` in the profile). */
  metadata?: Record<string, string>;
}

export interface LlmSettings {
  /** Absent: the worker starts the project's scripted model (offline, not a real LLM). */
  baseURL?: string;
  /** `LLM_API_KEY`: the first of the default provider's keys. */
  apiKey?: string;
  /** `LLM_API_KEY` with several keys separated by commas: tried in turn when one is refused or out of quota. */
  apiKeys?: string[];
  /** `LLM_PROVIDERS`: named providers a run reaches with `provider/model`, `{ "name": { "baseURL", "apiKeys": [...] } }`. */
  providers?: Record<string, { baseURL: string; apiKeys?: string[] }>;
  /** `LLM_KEY_COOLDOWN_MS`: how long a key that was refused is tried only after the others. @default 300000 */
  keyCooldownMs?: number;
  model?: string;
  /** `LLM_CONTEXT_WINDOW_TOKENS`: the context window of the models the worker calls; unset, the table in common/models.ts. */
  contextWindowTokens?: number;
  /**
   * `SCRIPTED_MODEL_PACE_MS`: with the scripted model, each streamed chunk of the demo's text waits this long and each
   * tool call five times as long, so that pause, abort and approval can be tried by hand. @default 0 (the demo's own pace)
   */
  scriptedPaceMs?: number;
}

/** The envconfig profile: `temporal.toml` overlaid by the TEMPORAL_* variables of `env`. */
function temporalProfile(env: NodeJS.ProcessEnv): ClientConfigProfile {
  try {
    return loadClientConfigProfile({ overrideEnvVars: env as Record<string, string> });
  } catch (err) {
    throw new Error(`cannot read the Temporal client config (temporal.toml, TEMPORAL_PROFILE): ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/**
 * Temporal settings by the conventions of `@temporalio/envconfig` that the `temporal` CLI shares: a profile of
 * `temporal.toml` (`TEMPORAL_CONFIG_FILE`, else the user config dir; `TEMPORAL_PROFILE`, else `default`) overlaid by
 * TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_* and TEMPORAL_GRPC_META_*, plus
 * TEMPORAL_TASK_QUEUE. With none of them: plaintext to localhost. TLS is on with an API key or any TLS setting, unless
 * TEMPORAL_TLS=false. Certificates and keys given by path are read here, so a wrong path fails before connecting. A
 * client certificate without its key (or the reverse) is refused: envconfig would silently connect without one, and
 * the server's refusal would not say why.
 */
export function temporalSettings(env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  const profile = temporalProfile(env);
  const { clientCert, clientKey } = profile.tls ?? {};
  if (!profile.tls?.disabled && !clientCert !== !clientKey) {
    throw new Error('mTLS needs both a client certificate and its key: set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or their _DATA forms) together');
  }
  let options: ReturnType<typeof toClientOptions>['connectionOptions'];
  try {
    options = toClientOptions(profile).connectionOptions;
  } catch (err) {
    throw new Error(`cannot load the Temporal TLS files: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const { apiKey, tls, metadata } = options;
  return {
    address: profile.address || DEFAULT_TEMPORAL_ADDRESS,
    namespace: profile.namespace || DEFAULT_TEMPORAL_NAMESPACE,
    taskQueue: env.TEMPORAL_TASK_QUEUE || DEFAULT_TASK_QUEUE,
    ...(typeof apiKey === 'string' && apiKey ? { apiKey } : {}),
    ...(tls != null ? { tls } : {}),
    ...(metadata && Object.keys(metadata).length ? { metadata: metadata as Record<string, string> } : {}),
  };
}

export function llmSettings(env: NodeJS.ProcessEnv = process.env): LlmSettings {
  const window = env.LLM_CONTEXT_WINDOW_TOKENS?.trim();
  if (window && !(/^\d+$/.test(window) && Number(window) > 0 && Number.isSafeInteger(Number(window)))) {
    throw new Error(`LLM_CONTEXT_WINDOW_TOKENS must be a positive whole number of tokens, got ${JSON.stringify(env.LLM_CONTEXT_WINDOW_TOKENS)}`);
  }
  const pace = env.SCRIPTED_MODEL_PACE_MS?.trim();
  if (pace && !(/^\d+$/.test(pace) && Number(pace) <= 60_000)) {
    throw new Error(`SCRIPTED_MODEL_PACE_MS must be a whole number of milliseconds up to 60000, got ${JSON.stringify(env.SCRIPTED_MODEL_PACE_MS)}`);
  }
  const keys = (env.LLM_API_KEY ?? '').split(',').map((k) => k.trim()).filter(Boolean);
  const cooldown = env.LLM_KEY_COOLDOWN_MS?.trim();
  if (cooldown && !/^\d+$/.test(cooldown)) throw new Error(`LLM_KEY_COOLDOWN_MS must be a whole number of milliseconds, got ${JSON.stringify(env.LLM_KEY_COOLDOWN_MS)}`);
  const providers = env.LLM_PROVIDERS?.trim() ? parseProviders(env.LLM_PROVIDERS) : undefined;
  return {
    baseURL: env.LLM_BASE_URL || undefined,
    apiKey: keys[0],
    ...(keys.length > 1 ? { apiKeys: keys } : {}),
    ...(providers ? { providers } : {}),
    ...(cooldown ? { keyCooldownMs: Number(cooldown) } : {}),
    model: env.LLM_MODEL || undefined,
    ...(window ? { contextWindowTokens: Number(window) } : {}),
    ...(pace ? { scriptedPaceMs: Number(pace) } : {}),
  };
}

/** `LLM_PROVIDERS` as JSON, each problem named: `{ "name": { "baseURL": "https://…", "apiKeys": ["…"] } }`. */
export function parseProviders(text: string): Record<string, { baseURL: string; apiKeys?: string[] }> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`LLM_PROVIDERS is not JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('LLM_PROVIDERS must be a JSON object of providers by name');
  const out: Record<string, { baseURL: string; apiKeys?: string[] }> = {};
  for (const [name, p] of Object.entries(value as Record<string, unknown>)) {
    const where = `LLM_PROVIDERS.${name}`;
    if (!/^[A-Za-z0-9_.-]+$/.test(name) || name === 'default') throw new Error(`${where}: a provider name is [A-Za-z0-9_.-], and not "default"`);
    const { baseURL, apiKeys } = (p ?? {}) as { baseURL?: unknown; apiKeys?: unknown };
    if (typeof baseURL !== 'string' || !/^https?:\/\//.test(baseURL)) throw new Error(`${where}.baseURL: must be an http(s) URL`);
    if (apiKeys !== undefined && !(Array.isArray(apiKeys) && apiKeys.every((k) => typeof k === 'string' && k !== ''))) {
      throw new Error(`${where}.apiKeys: must be an array of non-empty strings`);
    }
    out[name] = { baseURL, ...(apiKeys ? { apiKeys: apiKeys as string[] } : {}) };
  }
  return out;
}

/** A real endpoint is configured when a key or a base URL is given (local servers such as Ollama need no key). */
export const usesScriptedModel = (llm: LlmSettings): boolean => !llm.apiKey && !llm.baseURL;

export const workspaceDir = (env: NodeJS.ProcessEnv = process.env): string => path.resolve(env.AGENT_WORKSPACE || './workspace');

/** `AGENT_WORKFLOW_BUNDLE_DIR`: prebuilt workflow bundles (`npm run build:workflows`); unset, the worker bundles at boot. */
export const workflowBundleDir = (env: NodeJS.ProcessEnv = process.env): string | undefined => env.AGENT_WORKFLOW_BUNDLE_DIR?.trim() || undefined;

/** The durable ledger of side-effecting tool calls (`AGENT_LEDGER`). */
export const ledgerFile = (env: NodeJS.ProcessEnv = process.env): string => path.resolve(env.AGENT_LEDGER || './.agent/tool-ledger.sqlite');

/** Where memories across runs are kept (src/memory): the embedded SQLite file, or a PostgreSQL server. */
export type MemorySettings = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };

/**
 * `AGENT_MEMORY`: a `postgres://` (or `postgresql://`) URL keeps memories in PostgreSQL; anything else is the path of
 * the SQLite file. @default ./.agent/memory.sqlite
 */
export function memorySettings(env: NodeJS.ProcessEnv = process.env): MemorySettings {
  const raw = env.AGENT_MEMORY?.trim();
  if (raw && /^postgres(ql)?:\/\//i.test(raw)) return { kind: 'postgres', url: raw };
  if (raw && /^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) throw new Error(`AGENT_MEMORY must be a postgres:// URL or the path of a SQLite file, got a ${raw.split(':')[0]}: URL`);
  return { kind: 'sqlite', file: raw === ':memory:' ? raw : path.resolve(raw || './.agent/memory.sqlite') };
}

/** Claim-check codec settings; the worker and every client that reads results must point at the same blob store. */
export function claimCheckSettings(env: NodeJS.ProcessEnv = process.env): ClaimCheckSettings {
  const flag = (env.AGENT_CLAIM_CHECK || 'on').trim().toLowerCase();
  if (!['on', 'off', 'true', 'false', '1', '0'].includes(flag)) {
    throw new Error(`AGENT_CLAIM_CHECK must be on or off, got ${JSON.stringify(env.AGENT_CLAIM_CHECK)}`);
  }
  const threshold = env.AGENT_CLAIM_CHECK_THRESHOLD?.trim();
  if (threshold && !/^\d+$/.test(threshold)) {
    throw new Error(`AGENT_CLAIM_CHECK_THRESHOLD must be a number of bytes, got ${JSON.stringify(env.AGENT_CLAIM_CHECK_THRESHOLD)}`);
  }
  return {
    enabled: !['off', 'false', '0'].includes(flag),
    blobDir: path.resolve(env.AGENT_BLOB_DIR || './.agent/blobs'),
    ...(threshold ? { thresholdBytes: Number(threshold) } : {}),
  };
}

/** Retention of the blob store and the tool ledger (src/codec/retention.ts); `AGENT_RETENTION=off` turns the worker's sweep off. */
export interface RetentionSettings {
  /** `AGENT_RETENTION`: runs closed longer ago than this are no longer read; unset or `namespace`: the namespace's retention. */
  retentionMs?: number;
  /** Whether the worker sweeps in the background (`AGENT_RETENTION=off`: it does not; `agent gc` still can). */
  enabled: boolean;
  /** `AGENT_RETENTION_INTERVAL`: how often a worker sweeps. @default 6h */
  intervalMs: number;
  /** `AGENT_RETENTION_GRACE`: what was written or touched within this long is kept though no history names it yet. @default 24h */
  graceMs: number;
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90m`, `36h`, `7d`, `1500ms`, or a number of milliseconds. */
export function parseDuration(name: string, raw: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(raw.trim());
  if (!m) throw new Error(`${name} must be a duration such as 30m, 36h or 7d, got ${JSON.stringify(raw)}`);
  return Number(m[1]) * UNITS[m[2] ?? 'ms'];
}

export function retentionSettings(env: NodeJS.ProcessEnv = process.env): RetentionSettings {
  const raw = env.AGENT_RETENTION?.trim().toLowerCase() || 'namespace';
  const off = raw === 'off';
  const interval = env.AGENT_RETENTION_INTERVAL?.trim();
  const grace = env.AGENT_RETENTION_GRACE?.trim();
  return {
    enabled: !off,
    ...(off || raw === 'namespace' ? {} : { retentionMs: parseDuration('AGENT_RETENTION', raw) }),
    intervalMs: interval ? parseDuration('AGENT_RETENTION_INTERVAL', interval) : 6 * 3_600_000,
    graceMs: grace ? parseDuration('AGENT_RETENTION_GRACE', grace) : 24 * 3_600_000,
  };
}

const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * The keys configured by `AGENT_ENCRYPTION_KEYS` (comma-separated `id:base64key`, 32-byte keys; the first is current
 * unless `AGENT_ENCRYPTION_KEY_ID` names another), or `undefined` when none are: encryption is off. Errors name the
 * variable and the key id, never key material.
 */
export function encryptionSettings(env: NodeJS.ProcessEnv = process.env): EncryptionCodecOptions | undefined {
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
    if (!ENCRYPTION_KEY_ID_PATTERN.test(id)) throw new Error(`AGENT_ENCRYPTION_KEYS entry ${i + 1} must be id:base64key with an id of 1 to 64 of A-Z a-z 0-9 . _ -`);
    if (Object.hasOwn(keys, id)) throw new Error(`AGENT_ENCRYPTION_KEYS names key "${id}" twice`);
    const key = BASE64.test(encoded) ? Buffer.from(encoded, encoded.includes('-') || encoded.includes('_') ? 'base64url' : 'base64') : undefined;
    if (key?.length !== ENCRYPTION_KEY_BYTES) {
      throw new Error(`AGENT_ENCRYPTION_KEYS key "${id}" must be ${ENCRYPTION_KEY_BYTES} bytes in base64 (openssl rand -base64 32), got ${key ? `${key.length} bytes` : 'no valid base64'}`);
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

export function codecSettings(env: NodeJS.ProcessEnv = process.env): CodecSettings {
  const claimCheck = claimCheckSettings(env);
  const encryption = encryptionSettings(env);
  return { claimCheck, ...(encryption ? { encryption } : {}) };
}

/** Where runs' live streams go (src/stream). */
export interface StreamSettings {
  /** `AGENT_STREAM_REDIS_URL`: Redis Streams, for workers and gateways alike. */
  redisUrl?: string;
  /**
   * `AGENT_STREAM_URL`: a worker without Redis publishes to this gateway's hub. Unset, the local gateway of the Quick
   * start (`http://127.0.0.1:<GATEWAY_PORT or 8080>`); `off`: it publishes nothing and streams poll the state.
   */
  gatewayUrl?: string;
  /** The gateway URL is the local default, not one configured: nobody asked for it, so its absence is no fault. */
  gatewayDefault?: boolean;
  /** `AGENT_STREAM_TOKEN`, else `GATEWAY_TOKEN`: the token the worker presents to the gateway. */
  token?: string;
}

export function streamSettings(env: NodeJS.ProcessEnv = process.env): StreamSettings {
  const redisUrl = env.AGENT_STREAM_REDIS_URL?.trim();
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new Error(`AGENT_STREAM_REDIS_URL must be a redis:// or rediss:// URL, got ${JSON.stringify(redisUrl)}`);
  const given = env.AGENT_STREAM_URL?.trim();
  if (given && given !== 'off' && !/^https?:\/\/[^\s]+$/.test(given)) {
    throw new Error(`AGENT_STREAM_URL must be the gateway's http(s):// URL, or off, got ${JSON.stringify(given)}`);
  }
  const port = (env.GATEWAY_PORT || '8080').trim();
  // The embedded default: the gateway `npm run gateway` starts on this host (whatever interface it listens on).
  const fallback = !given && !redisUrl && /^\d+$/.test(port) ? `http://127.0.0.1:${port}` : undefined;
  const gatewayUrl = given === 'off' ? undefined : given || fallback;
  const token = env.AGENT_STREAM_TOKEN?.trim() || env.GATEWAY_TOKEN?.trim();
  return { ...(redisUrl ? { redisUrl } : {}), ...(gatewayUrl ? { gatewayUrl } : {}), ...(gatewayUrl && !given ? { gatewayDefault: true } : {}), ...(token ? { token } : {}) };
}

/**
 * The fleet's provider budget (src/quota): `LLM_TOKENS_PER_MINUTE`, `LLM_REQUESTS_PER_MINUTE` and
 * `LLM_MAX_CONCURRENT_REQUESTS`, shared by every worker through Redis (`AGENT_QUOTA_REDIS_URL`, else the stream's
 * `AGENT_STREAM_REDIS_URL`), under `LLM_QUOTA_NAME` (default: the provider's host; never the key).
 */
export interface QuotaSettings {
  redisUrl: string;
  name: string;
  tokensPerMinute?: number;
  requestsPerMinute?: number;
  maxConcurrent?: number;
}

export function quotaSettings(env: NodeJS.ProcessEnv = process.env): QuotaSettings | undefined {
  const limit = (name: string): number | undefined => {
    const raw = env[name]?.trim();
    if (!raw) return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number ≥ 1, got ${JSON.stringify(raw)}`);
    return n;
  };
  const limits = {
    tokensPerMinute: limit('LLM_TOKENS_PER_MINUTE'),
    requestsPerMinute: limit('LLM_REQUESTS_PER_MINUTE'),
    maxConcurrent: limit('LLM_MAX_CONCURRENT_REQUESTS'),
  };
  if (Object.values(limits).every((v) => v === undefined)) return undefined;
  const redisUrl = env.AGENT_QUOTA_REDIS_URL?.trim() || env.AGENT_STREAM_REDIS_URL?.trim();
  if (!redisUrl) {
    throw new Error('LLM_TOKENS_PER_MINUTE, LLM_REQUESTS_PER_MINUTE and LLM_MAX_CONCURRENT_REQUESTS are one budget for every worker, kept in Redis: set AGENT_QUOTA_REDIS_URL (or AGENT_STREAM_REDIS_URL)');
  }
  if (!/^rediss?:\/\//.test(redisUrl)) throw new Error(`AGENT_QUOTA_REDIS_URL must be a redis:// or rediss:// URL, got ${JSON.stringify(redisUrl)}`);
  const baseURL = env.LLM_BASE_URL?.trim();
  const host = baseURL ? (URL.canParse(baseURL) ? new URL(baseURL).host : baseURL) : env.LLM_API_KEY?.trim() ? 'api.openai.com' : 'scripted-model';
  const name = env.LLM_QUOTA_NAME?.trim() || host;
  return { redisUrl, name, ...Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)) };
}

/**
 * `AGENT_TENANT_BURST`: runs a tenant may start a minute through one client (the gateway, the CLI, `AgentClient`) at
 * its own priority; its further runs that minute start in the background (docs/quota.md, "A tenant's burst"). `off`
 * (or 0): never. @default 100
 */
export function tenantBurstSettings(env: NodeJS.ProcessEnv = process.env): { runs: number; windowMs: number } | undefined {
  const raw = env.AGENT_TENANT_BURST?.trim();
  if (raw === 'off' || raw === '0') return undefined;
  if (!raw) return { runs: DEFAULT_TENANT_BURST, windowMs: 60_000 };
  const runs = Number(raw);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`AGENT_TENANT_BURST must be a whole number ≥ 1 (runs a tenant may start a minute) or off, got ${JSON.stringify(raw)}`);
  return { runs, windowMs: 60_000 };
}

/** Runs a tenant may start a minute before its next go to the background, unless AGENT_TENANT_BURST says otherwise. */
export const DEFAULT_TENANT_BURST = 100;

export interface GatewaySettings {
  /** `GATEWAY_PORT`. @default 8080 */
  port: number;
  /** `GATEWAY_HOST`. @default 127.0.0.1 */
  host: string;
  /** `GATEWAY_TOKEN`; `null` only with `GATEWAY_INSECURE=1`. */
  token: string | null;
  /** `GATEWAY_CONTROL_TIMEOUT_MS`: how long a control waits for the run to take it. @default 10000 */
  controlTimeoutMs: number;
  /** `GATEWAY_CORS_ORIGINS`: comma-separated origins whose pages may call the gateway, or `*`. @default none (no CORS) */
  corsOrigins: string[];
  /** Signed identities (JWTs) the gateway accepts besides its token; null: none (`GATEWAY_JWKS_URL` unset). */
  jwt: JwtSettings | null;
}

/** How the gateway checks a JWT: against the issuer's keys, for this issuer and audience; which claims hold the tenant and the roles. */
export interface JwtSettings {
  /** `GATEWAY_JWKS_URL`: the issuer's JSON Web Key Set (http or https). */
  jwksUrl: string;
  /** `GATEWAY_JWT_ISSUER`: the `iss` a token must carry. */
  issuer: string;
  /** `GATEWAY_JWT_AUDIENCE`: the `aud` a token must carry (one of several, comma-separated). */
  audience: string[];
  /** `GATEWAY_JWT_TENANT_CLAIM`: the claim holding the caller's tenant. @default tenant */
  tenantClaim: string;
  /** `GATEWAY_JWT_ROLES_CLAIM`: the claim holding the caller's roles (an array, or a space-separated string). @default roles */
  rolesClaim: string;
  /**
   * Least time between two fetches of the key set: a token naming an unknown `kid` fetches it again only this long
   * after the last fetch (not from the environment). @default 30000
   */
  jwksCooldownMs?: number;
}

/** HTTP gateway settings; refuses to run without a token unless GATEWAY_INSECURE=1 says so. */
export function gatewaySettings(env: NodeJS.ProcessEnv = process.env): GatewaySettings {
  const port = (env.GATEWAY_PORT || '8080').trim();
  if (!/^\d+$/.test(port) || Number(port) > 65_535) throw new Error(`GATEWAY_PORT must be a port number, got ${JSON.stringify(env.GATEWAY_PORT)}`);
  const token = env.GATEWAY_TOKEN?.trim() || null;
  if (!token && env.GATEWAY_INSECURE !== '1') {
    throw new Error('GATEWAY_TOKEN is required (set GATEWAY_INSECURE=1 to run without authentication, on a trusted network only)');
  }
  const controlTimeout = (env.GATEWAY_CONTROL_TIMEOUT_MS || '10000').trim();
  if (!/^[1-9]\d*$/.test(controlTimeout)) throw new Error(`GATEWAY_CONTROL_TIMEOUT_MS must be a positive number of milliseconds, got ${JSON.stringify(env.GATEWAY_CONTROL_TIMEOUT_MS)}`);
  const corsOrigins = (env.GATEWAY_CORS_ORIGINS ?? '').split(',').map((o) => o.trim().replace(/\/+$/, '')).filter(Boolean);
  for (const origin of corsOrigins) {
    if (origin !== '*' && !/^https?:\/\/[^/?#\s]+$/.test(origin)) {
      throw new Error(`GATEWAY_CORS_ORIGINS: ${JSON.stringify(origin)} is not an origin (scheme://host[:port], e.g. https://app.example.com, or *)`);
    }
  }
  const jwt = jwtSettings(env);
  if (jwt && env.GATEWAY_INSECURE === '1') throw new Error('GATEWAY_INSECURE=1 turns authentication off, and GATEWAY_JWKS_URL turns signed identities on: set one of them');
  return { port: Number(port), host: env.GATEWAY_HOST || '127.0.0.1', token, controlTimeoutMs: Number(controlTimeout), corsOrigins, jwt };
}

/** The JWT settings; all three of URL, issuer and audience, or none (the others' defaults apply only with them). */
function jwtSettings(env: NodeJS.ProcessEnv): JwtSettings | null {
  const jwksUrl = env.GATEWAY_JWKS_URL?.trim();
  const issuer = env.GATEWAY_JWT_ISSUER?.trim();
  const audience = (env.GATEWAY_JWT_AUDIENCE ?? '').split(',').map((a) => a.trim()).filter(Boolean);
  const claims = { tenantClaim: env.GATEWAY_JWT_TENANT_CLAIM?.trim(), rolesClaim: env.GATEWAY_JWT_ROLES_CLAIM?.trim() };
  if (!jwksUrl) {
    const stray = ['GATEWAY_JWT_ISSUER', 'GATEWAY_JWT_AUDIENCE', 'GATEWAY_JWT_TENANT_CLAIM', 'GATEWAY_JWT_ROLES_CLAIM'].filter((name) => env[name]?.trim());
    if (stray.length) throw new Error(`${stray.join(', ')} ${stray.length > 1 ? 'are' : 'is'} set without GATEWAY_JWKS_URL: set the issuer's JWKS URL too, or unset ${stray.length > 1 ? 'them' : 'it'}`);
    return null;
  }
  if (!URL.canParse(jwksUrl) || !/^https?:$/.test(new URL(jwksUrl).protocol)) throw new Error(`GATEWAY_JWKS_URL must be an http(s) URL of the issuer's JSON Web Key Set, got ${JSON.stringify(env.GATEWAY_JWKS_URL)}`);
  if (!issuer) throw new Error('GATEWAY_JWKS_URL is set without GATEWAY_JWT_ISSUER: set the issuer (the `iss` its tokens carry), so that tokens of another issuer using the same keys are refused');
  if (!audience.length) throw new Error('GATEWAY_JWKS_URL is set without GATEWAY_JWT_AUDIENCE: set the audience (the `aud` tokens for this gateway carry), so that tokens meant for another service are refused');
  for (const [name, value] of [['GATEWAY_JWT_TENANT_CLAIM', claims.tenantClaim], ['GATEWAY_JWT_ROLES_CLAIM', claims.rolesClaim]] as const) {
    if (value !== undefined && value !== '' && !/^[\x21-\x7e]+$/.test(value)) throw new Error(`${name} must be a claim name (printable, no spaces), got ${JSON.stringify(value)}`);
  }
  return { jwksUrl, issuer, audience, tenantClaim: claims.tenantClaim || 'tenant', rolesClaim: claims.rolesClaim || 'roles' };
}

export const DEFAULT_CODEC_SERVER_PORT = 8081;
/** The Web UI of `npm run server`. */
export const DEFAULT_CODEC_SERVER_ORIGINS = ['http://localhost:8233', 'http://127.0.0.1:8233'];
const MIN_CODEC_SERVER_TOKEN_CHARS = 16;

/** Settings of the codec server process; its codecs come from `codecSettings`. */
export interface CodecServerSettings {
  /** `CODEC_SERVER_PORT`. @default 8081 */
  port: number;
  /** `CODEC_SERVER_HOST`: the interface to listen on; `0.0.0.0` in a container. @default 127.0.0.1 */
  host: string;
  /** `CODEC_SERVER_TOKEN`: the bearer token every request must carry. Required. */
  token: string;
  /** `CODEC_SERVER_CORS_ORIGINS`: comma-separated origins of the Web UI, or `*` for any. @default the dev server's UI */
  allowedOrigins: string[];
}

export function codecServerSettings(env: NodeJS.ProcessEnv = process.env): CodecServerSettings {
  const token = env.CODEC_SERVER_TOKEN?.trim() ?? '';
  if (token.length < MIN_CODEC_SERVER_TOKEN_CHARS) {
    throw new Error(`CODEC_SERVER_TOKEN must be set to a secret of at least ${MIN_CODEC_SERVER_TOKEN_CHARS} characters (openssl rand -hex 32): the codec server decrypts for whoever holds it`);
  }
  const port = env.CODEC_SERVER_PORT?.trim() || String(DEFAULT_CODEC_SERVER_PORT);
  if (!/^\d+$/.test(port) || Number(port) > 65_535) throw new Error(`CODEC_SERVER_PORT must be a port number, got ${JSON.stringify(env.CODEC_SERVER_PORT)}`);
  const origins = (env.CODEC_SERVER_CORS_ORIGINS ?? '').split(',').map((o) => o.trim().replace(/\/+$/, '')).filter(Boolean);
  return {
    port: Number(port),
    host: env.CODEC_SERVER_HOST?.trim() || '127.0.0.1',
    token,
    allowedOrigins: origins.length ? origins : DEFAULT_CODEC_SERVER_ORIGINS,
  };
}

/** MCP servers as raw JSON and where they came from; activities/tools/mcp.ts validates the shape. */
export interface McpServersSource {
  /** The variable (and file) named in errors. */
  source: string;
  value: unknown;
}

/** MCP servers as raw JSON, from `AGENT_MCP_SERVERS` (inline) or the file `AGENT_MCP_CONFIG`; validated in activities/tools/mcp.ts. */
export function mcpServersSource(env: NodeJS.ProcessEnv = process.env): McpServersSource | undefined {
  const inline = env.AGENT_MCP_SERVERS?.trim();
  const file = env.AGENT_MCP_CONFIG?.trim();
  if (inline && file) throw new Error('set AGENT_MCP_SERVERS or AGENT_MCP_CONFIG, not both');
  const [source, text] = inline ? ['AGENT_MCP_SERVERS', inline] : file ? [`AGENT_MCP_CONFIG (${path.resolve(file)})`, readFileSync(file, 'utf8')] : [];
  if (source === undefined) return undefined;
  try {
    return { source, value: JSON.parse(text!) };
  } catch (err) {
    throw new Error(`${source} is not valid JSON: ${(err as Error).message}`);
  }
}

export interface ObservabilitySettings {
  /** `AGENT_TRACING`: `otlp`, `console` or `off`. @default `otlp` when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, else `off` */
  tracing: 'otlp' | 'console' | 'off';
  /** `AGENT_METRICS_PORT`: a port, or host:port, for Prometheus `/metrics`; a bare port binds 0.0.0.0. Unset: no metrics endpoint. */
  metricsBindAddress?: string;
  /** `AGENT_LOG_FORMAT`: `json` for one JSON object per line. @default text */
  logFormat: 'text' | 'json';
  /** `AGENT_LOG_LEVEL`: TRACE, DEBUG, INFO, WARN or ERROR. @default INFO */
  logLevel: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** `OTEL_SERVICE_NAME`: the `service.name` of the spans. @default durable-agent-worker */
  serviceName: string;
}

export const DEFAULT_SERVICE_NAME = 'durable-agent-worker';

export function observabilitySettings(env: NodeJS.ProcessEnv = process.env): ObservabilitySettings {
  const otlp = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const tracing = (env.AGENT_TRACING?.trim().toLowerCase() || (otlp ? 'otlp' : 'off')) as ObservabilitySettings['tracing'];
  if (!['otlp', 'console', 'off'].includes(tracing)) throw new Error(`AGENT_TRACING must be otlp, console or off, got ${JSON.stringify(env.AGENT_TRACING)}`);
  const port = env.AGENT_METRICS_PORT?.trim();
  if (port && !/^(.+:)?\d{1,5}$/.test(port)) throw new Error(`AGENT_METRICS_PORT must be a port or host:port, got ${JSON.stringify(port)}`);
  const logFormat = (env.AGENT_LOG_FORMAT?.trim().toLowerCase() || 'text') as ObservabilitySettings['logFormat'];
  if (!['text', 'json'].includes(logFormat)) throw new Error(`AGENT_LOG_FORMAT must be text or json, got ${JSON.stringify(env.AGENT_LOG_FORMAT)}`);
  const logLevel = (env.AGENT_LOG_LEVEL?.trim().toUpperCase() || 'INFO') as ObservabilitySettings['logLevel'];
  if (!['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'].includes(logLevel)) throw new Error(`AGENT_LOG_LEVEL must be TRACE, DEBUG, INFO, WARN or ERROR, got ${JSON.stringify(env.AGENT_LOG_LEVEL)}`);
  return {
    tracing,
    ...(port ? { metricsBindAddress: port.includes(':') ? port : `0.0.0.0:${port}` } : {}),
    logFormat,
    logLevel,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME,
  };
}

/**
 * Worker Deployment Versioning: the worker polls as version `deploymentName`/`buildId`, and the server routes each run
 * to the version it started on (PINNED) until it ends, so a deploy never changes a run's code under it.
 */
export interface VersioningSettings {
  /** `AGENT_DEPLOYMENT_NAME`: one name for every build of this worker (e.g. `agent-worker`). */
  deploymentName: string;
  /** `AGENT_BUILD_ID`: unique to the workflow code of this build (e.g. the image tag or git commit). */
  buildId: string;
  /**
   * `AGENT_VERSIONING_BEHAVIOR`: `pinned` keeps a run on the build it started on; `auto-upgrade` moves open runs to the
   * current version at their next workflow task, which replays them on the new code. @default pinned
   */
  defaultBehavior: 'PINNED' | 'AUTO_UPGRADE';
}

/** Versioning from AGENT_DEPLOYMENT_NAME and AGENT_BUILD_ID (both or neither); unset, the worker is unversioned. */
export function versioningSettings(env: NodeJS.ProcessEnv = process.env): VersioningSettings | undefined {
  const deploymentName = env.AGENT_DEPLOYMENT_NAME?.trim();
  const buildId = env.AGENT_BUILD_ID?.trim();
  const behavior = env.AGENT_VERSIONING_BEHAVIOR?.trim().toLowerCase();
  if (!deploymentName && !buildId) {
    if (behavior) throw new Error('AGENT_VERSIONING_BEHAVIOR is set but AGENT_DEPLOYMENT_NAME and AGENT_BUILD_ID are not: set both to version the worker');
    return undefined;
  }
  if (!deploymentName || !buildId) throw new Error(`Worker Versioning needs both AGENT_DEPLOYMENT_NAME and AGENT_BUILD_ID; ${deploymentName ? 'AGENT_BUILD_ID' : 'AGENT_DEPLOYMENT_NAME'} is not set`);
  // The server refuses these in a deployment name: it joins name and build id with them.
  if (/[.:]/.test(deploymentName)) throw new Error(`AGENT_DEPLOYMENT_NAME must not contain "." or ":", got ${JSON.stringify(deploymentName)}`);
  if (behavior && !['pinned', 'auto-upgrade'].includes(behavior)) throw new Error(`AGENT_VERSIONING_BEHAVIOR must be pinned or auto-upgrade, got ${JSON.stringify(env.AGENT_VERSIONING_BEHAVIOR)}`);
  return { deploymentName, buildId, defaultBehavior: behavior === 'auto-upgrade' ? 'AUTO_UPGRADE' : 'PINNED' };
}

/** Everything the worker process reads from the environment, read once by `workerConfig` and passed to `createAgentWorker`. */
export interface WorkerConfig {
  temporal: TemporalSettings;
  llm: LlmSettings;
  /** `AGENT_WORKSPACE`: the directory the file tools are confined to. @default ./workspace */
  workspace: string;
  /** `AGENT_LEDGER`: the durable ledger of side-effecting tool calls. @default ./.agent/tool-ledger.sqlite */
  ledgerFile: string;
  /** `AGENT_MEMORY`: where the `remember` and `recall` tools keep memories. @default ./.agent/memory.sqlite */
  memory: MemorySettings;
  /** `AGENT_WORKFLOW_BUNDLE_DIR`: prebuilt workflow bundles (`npm run build:workflows`); unset, the worker bundles at boot. */
  workflowBundleDir?: string;
  codecs: CodecSettings;
  /** `AGENT_RETENTION`, `AGENT_RETENTION_INTERVAL`, `AGENT_RETENTION_GRACE`: the background sweep of the blob store and the ledger. */
  retention?: RetentionSettings;
  /** `AGENT_MCP_SERVERS` or `AGENT_MCP_CONFIG`; unset, no MCP servers. */
  mcpServers?: McpServersSource;
  observability: ObservabilitySettings;
  /** The fleet's provider budget; unset, calls reserve nothing. */
  quota?: QuotaSettings;
  /** `AGENT_DEPLOYMENT_NAME`, `AGENT_BUILD_ID`, `AGENT_VERSIONING_BEHAVIOR`; unset, the worker is unversioned. */
  versioning?: VersioningSettings;
  /**
   * `AGENT_HEAP_GROWING_PERCENT`: how far past what is live V8's old generation grows before its next full collection
   * (src/worker/heap.ts); 0 leaves V8's own growth. Unset: `WORKER_HEAP_GROWING_PERCENT` (300).
   */
  heapGrowingPercent?: number;
  /**
   * `AGENT_WORKFLOW_TASK_SLOTS`: how many workflow tasks the worker holds at once (the SDK's
   * `maxConcurrentWorkflowTaskExecutions`). Unset: `WORKFLOW_TASK_SLOTS` (40, the SDK's). Fewer keep a backlog on the
   * server's task queue, in its fair order by tenant (docs/quota.md, "Fair share").
   */
  workflowTaskSlots?: number;
  /**
   * `AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS`: how many workflow tasks of background runs (`priority` 8 and 9) the worker
   * holds at once, polling their own task queue (`backgroundTaskQueue`) through a second `Worker`; 0 polls none, and
   * clients start such runs on the fleet's queue. Unset: `BACKGROUND_WORKFLOW_TASK_SLOTS` (2). docs/quota.md.
   */
  backgroundTaskSlots?: number;
  /**
   * `AGENT_CACHED_RUNS`: how many runs the worker keeps in memory between their workflow tasks (the SDK's sticky
   * cache, `maxCachedWorkflows`); 0 keeps none, and every workflow task replays its run. Unset: the SDK's, 600 a GB of
   * the heap limit. A cached run holds about 1.2 MB; a heap limit bounds the RSS (BENCHMARKS.md, figure (h)).
   */
  cachedRuns?: number;
  /**
   * `AGENT_WORKFLOW_THREADS`: the threads that run the worker's workflow code (the SDK's `workflowThreadPoolSize`), each
   * a V8 isolate of its own with the runs it holds. Unset: the SDK's 1. More let replays (a run out of the cache) and
   * new runs' first tasks go on side by side on a machine of several cores, at one more copy of the workflow bundle
   * each (BENCHMARKS.md, figure (h)).
   */
  workflowThreads?: number;
}

/** A whole-number setting of the worker: unset or blank, undefined; refused, naming the variable and `rule`, unless `ok`. */
function wholeNumberSetting(env: NodeJS.ProcessEnv, name: string, ok: (n: number) => boolean, rule: string): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (!/^\d+$/.test(raw) || !ok(Number(raw))) throw new Error(`${name} must be ${rule}, got ${JSON.stringify(env[name])}`);
  return Number(raw);
}

const cachedRuns = (env: NodeJS.ProcessEnv) =>
  wholeNumberSetting(env, 'AGENT_CACHED_RUNS', (n) => n !== 1 && n <= 1_000_000, '0 (no run kept in memory) or a whole number from 2 to 1000000');
const workflowTaskSlots = (env: NodeJS.ProcessEnv) => wholeNumberSetting(env, 'AGENT_WORKFLOW_TASK_SLOTS', (n) => n >= 2 && n <= 1_000, 'a whole number from 2 to 1000');
const backgroundTaskSlots = (env: NodeJS.ProcessEnv) =>
  wholeNumberSetting(env, 'AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS', (n) => n !== 1 && n <= 1_000, '0 (no background task queue) or a whole number from 2 to 1000');
const workflowThreads = (env: NodeJS.ProcessEnv) => wholeNumberSetting(env, 'AGENT_WORKFLOW_THREADS', (n) => n >= 1 && n <= 64, 'a whole number from 1 to 64');
const heapGrowingPercent = (env: NodeJS.ProcessEnv) =>
  wholeNumberSetting(env, 'AGENT_HEAP_GROWING_PERCENT', (n) => n <= 1_000, "a whole number from 0 to 1000 (0 leaves V8's own growth)");

export function workerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const bundleDir = workflowBundleDir(env);
  const mcpServers = mcpServersSource(env);
  const quota = quotaSettings(env);
  const versioning = versioningSettings(env);
  const heap = heapGrowingPercent(env);
  const slots = workflowTaskSlots(env);
  const backgroundSlots = backgroundTaskSlots(env);
  const cached = cachedRuns(env);
  const threads = workflowThreads(env);
  return {
    temporal: temporalSettings(env),
    llm: llmSettings(env),
    workspace: workspaceDir(env),
    ledgerFile: ledgerFile(env),
    memory: memorySettings(env),
    ...(bundleDir ? { workflowBundleDir: bundleDir } : {}),
    codecs: codecSettings(env),
    retention: retentionSettings(env),
    ...(mcpServers ? { mcpServers } : {}),
    observability: observabilitySettings(env),
    ...(quota ? { quota } : {}),
    ...(versioning ? { versioning } : {}),
    ...(heap !== undefined ? { heapGrowingPercent: heap } : {}),
    ...(slots !== undefined ? { workflowTaskSlots: slots } : {}),
    ...(backgroundSlots !== undefined ? { backgroundTaskSlots: backgroundSlots } : {}),
    ...(cached !== undefined ? { cachedRuns: cached } : {}),
    ...(threads !== undefined ? { workflowThreads: threads } : {}),
  };
}
