/**
 * Temporal connection options for the worker (`NativeConnection`) and clients (`Connection`), read by the conventions
 * of `@temporalio/envconfig` that the `temporal` CLI shares: a profile of `temporal.toml` (`TEMPORAL_CONFIG_FILE`,
 * else the user config dir; `TEMPORAL_PROFILE`, else `default`) overlaid by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
 * TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_* and TEMPORAL_GRPC_META_*. With none of them: plaintext to localhost.
 */
import type { ConnectionOptions } from '@temporalio/client';
import { loadClientConfigProfile, toClientOptions, type ClientConfigProfile } from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';

export const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';
export const DEFAULT_TEMPORAL_NAMESPACE = 'default';

/** The envconfig profile: `temporal.toml` overlaid by the TEMPORAL_* variables of `env`. */
export function temporalProfile(env: NodeJS.ProcessEnv = process.env): ClientConfigProfile {
  try {
    return loadClientConfigProfile({ overrideEnvVars: env as Record<string, string> });
  } catch (err) {
    throw new Error(`cannot read the Temporal client config (temporal.toml, TEMPORAL_PROFILE): ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** What both connection kinds take: `tls` is on with an API key or any TLS setting, unless TEMPORAL_TLS=false. */
export interface TemporalConnectionOptions {
  address: string;
  apiKey?: string;
  /** `true`: TLS with the system roots; an object: server CA, server name, client certificate (mTLS). */
  tls?: NonNullable<NativeConnectionOptions['tls']>;
  /** gRPC headers from TEMPORAL_GRPC_META_* (or `grpc_meta` in the profile). */
  metadata?: Record<string, string>;
}

/**
 * Connection options from the environment; `address` overrides the profile's. Certificates and keys given by path are
 * read here, so a wrong path fails before connecting. A client certificate without its key (or the reverse) is refused:
 * envconfig would silently connect without one, and the server's refusal would not say why.
 */
export function temporalConnectionOptions(env: NodeJS.ProcessEnv = process.env, address?: string): TemporalConnectionOptions {
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
    address: address || profile.address || DEFAULT_TEMPORAL_ADDRESS,
    ...(typeof apiKey === 'string' && apiKey ? { apiKey } : {}),
    ...(tls != null ? { tls } : {}),
    ...(metadata && Object.keys(metadata).length ? { metadata: metadata as Record<string, string> } : {}),
  };
}

/** Options of `NativeConnection.connect` for the worker. */
export const nativeConnectionOptions = (env: NodeJS.ProcessEnv = process.env, address?: string): NativeConnectionOptions =>
  temporalConnectionOptions(env, address);

/** Options of `Connection.connect` for clients. */
export const clientConnectionOptions = (env: NodeJS.ProcessEnv = process.env, address?: string): ConnectionOptions =>
  temporalConnectionOptions(env, address);
