/**
 * Temporal connection options for the worker (`NativeConnection`) and clients (`Connection`), from the settings that
 * config.ts reads by the conventions of `@temporalio/envconfig` (TEMPORAL_*, temporal.toml profiles).
 */
import type { ConnectionOptions } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import type { TemporalSettings } from './config';

/** What both connection kinds take: the address, and the API key, TLS and gRPC metadata when set. */
export type TemporalConnectionOptions = Pick<TemporalSettings, 'address' | 'apiKey' | 'tls' | 'metadata'>;

export function temporalConnectionOptions({ address, apiKey, tls, metadata }: TemporalSettings): TemporalConnectionOptions {
  return { address, ...(apiKey ? { apiKey } : {}), ...(tls != null ? { tls } : {}), ...(metadata ? { metadata } : {}) };
}

/** Options of `NativeConnection.connect` for the worker. */
export const nativeConnectionOptions = (settings: TemporalSettings): NativeConnectionOptions => temporalConnectionOptions(settings);

/** Options of `Connection.connect` for clients. */
export const clientConnectionOptions = (settings: TemporalSettings): ConnectionOptions => temporalConnectionOptions(settings);
