/**
 * Temporal connection options for the worker (`NativeConnection`) and clients (`Connection`), from the settings that
 * src/config reads by the conventions of `@temporalio/envconfig` (TEMPORAL_*, temporal.toml profiles).
 */
import { connect } from 'node:tls';
import { Metadata, status as GrpcStatus, type Interceptor, type InterceptingCall } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type ConnectionOptions, type ConnectionPlugin } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import type { TemporalSettings } from '.';

/** What both connection kinds take: the address, and the API key, TLS and gRPC metadata when set. */
export type TemporalConnectionOptions = Pick<TemporalSettings, 'address' | 'apiKey' | 'tls' | 'metadata'>;

export function temporalConnectionOptions({ address, apiKey, tls, metadata }: TemporalSettings): TemporalConnectionOptions {
  return { address, ...(apiKey ? { apiKey } : {}), ...(tls != null ? { tls } : {}), ...(metadata ? { metadata } : {}) };
}

/** Options of `NativeConnection.connect` for the worker. */
export const nativeConnectionOptions = (settings: TemporalSettings): NativeConnectionOptions => temporalConnectionOptions(settings);

/** Options of `Connection.connect` for clients: the settings, and the SDK's retry made safe to close under. */
export const clientConnectionOptions = (settings: TemporalSettings): ConnectionOptions => ({
  ...temporalConnectionOptions(settings),
  interceptors: closeSafeInterceptors(),
});

/**
 * The SDK's gRPC retry waits on a timer that a closed connection does not cancel: a call that failed with a retryable
 * status (UNAVAILABLE, say) just before `connection.close()` starts its next attempt on the closed channel, and grpc-js
 * throws "Channel has been shut down" from inside that timer, an uncaught exception that can end the process, while
 * the caller's promise never settles. This interceptor sits inside the retry: an attempt on a closed channel ends with
 * status CANCELLED (which the retry does not retry), so the caller's call is rejected and nothing is thrown.
 */
export const closedChannelGuard: Interceptor = (options, nextCall) => {
  try {
    return nextCall(options) as InterceptingCall;
  } catch (err) {
    return closedCall(err instanceof Error ? err.message : String(err));
  }
};

/**
 * A call that never reached the channel: it ends with CANCELLED as soon as it starts, and ignores what is sent. Like
 * grpc-js's own unary calls, it hands the listener a null message before the status: the SDK's retry passes the saved
 * message on when it gives up, and had none to pass when the very first attempt was this one (a call made after the
 * close), which threw a TypeError from the status callback and left the caller's promise unsettled.
 */
function closedCall(reason: string): InterceptingCall {
  const details = `the Temporal connection is closed: ${reason}`;
  const call = {
    start(
      _metadata: Metadata,
      listener?: { onReceiveMessage?: (message: unknown) => void; onReceiveStatus?: (status: { code: number; details: string; metadata: Metadata }) => void },
    ) {
      process.nextTick(() => {
        listener?.onReceiveMessage?.(null);
        listener?.onReceiveStatus?.({ code: GrpcStatus.CANCELLED, details, metadata: new Metadata() });
      });
    },
    cancelWithStatus() {},
    getPeer: () => '',
    sendMessageWithContext() {},
    sendMessage() {},
    startRead() {},
    halfClose() {},
    getAuthContext: () => null,
  };
  return call as unknown as InterceptingCall;
}

/**
 * The interceptors a client connection gets: the SDK's default retry (as when none are given), then
 * `closedChannelGuard` inside it. Give `retry` to change the retry's backoff.
 */
export function closeSafeInterceptors(retry: Parameters<typeof defaultGrpcRetryOptions>[0] = {}): Interceptor[] {
  return [makeGrpcRetryInterceptor(defaultGrpcRetryOptions(retry)), closedChannelGuard];
}

/**
 * For connections this library does not open (`TestWorkflowEnvironment`'s, a caller's own `Connection.connect`): a
 * connection plugin that adds `closedChannelGuard` innermost, after the SDK's default retry when no interceptors were
 * given, or after the caller's own.
 */
export const closeSafeConnectionPlugin: ConnectionPlugin = {
  name: 'durable-agent-worker/close-safe-connection',
  configureConnection: (options) => ({
    ...options,
    interceptors: options.interceptors ? [...options.interceptors.filter((i) => i !== closedChannelGuard), closedChannelGuard] : closeSafeInterceptors(),
  }),
};

/**
 * Why a TLS connection to `address` fails, found by one TLS handshake with the same settings and a moment of reading:
 * Temporal's own connect only reports a deadline when the handshake is refused. `undefined` when the handshake and
 * the first read succeed, when TLS is off, or when the address does not answer at all.
 */
export async function tlsFailureReason({ address, tls }: Pick<ConnectionOptions, 'address' | 'tls'>, timeoutMs = 5_000): Promise<string | undefined> {
  if (!tls || !address) return undefined;
  const config = tls === true ? {} : tls;
  const separator = address.lastIndexOf(':');
  const host = separator > 0 ? address.slice(0, separator).replace(/^\[|\]$/g, '') : address;
  const port = separator > 0 ? Number(address.slice(separator + 1)) : 7233;
  const servername = config.serverNameOverride ?? (/^[\d.]+$|:/.test(host) ? undefined : host);
  return new Promise((resolve) => {
    let settled = false;
    const done = (reason: string | undefined) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(reason);
    };
    const socket = connect({
      host,
      port,
      ...(servername ? { servername } : {}),
      ALPNProtocols: ['h2'],
      ...(config.serverRootCACertificate ? { ca: Buffer.from(config.serverRootCACertificate) } : {}),
      ...(config.clientCertPair ? { cert: Buffer.from(config.clientCertPair.crt), key: Buffer.from(config.clientCertPair.key) } : {}),
    });
    // TLS 1.3 servers refuse a missing client certificate after the client's side of the handshake: wait for that alert.
    socket.once('secureConnect', () => setTimeout(() => done(undefined), 1_000));
    socket.once('error', (err: NodeJS.ErrnoException) => done(describeTlsError(err, Boolean(config.clientCertPair))));
    socket.setTimeout(timeoutMs, () => done(undefined));
  });
}

function describeTlsError(error: NodeJS.ErrnoException, hasClientCert: boolean): string | undefined {
  if (['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT'].includes(error.code ?? '')) return undefined;
  // OpenSSL's message carries its source file and line; the reason alone is what a user needs.
  const err = { code: error.code, message: /SSL routines:[^:]*:([^:]+)/.exec(error.message)?.[1] ?? error.message.trim() };
  if (/certificate required|handshake failure|bad certificate/i.test(err.message) && !hasClientCert) {
    return `the server requires a client certificate (mutual TLS) and none is configured: set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (TLS: ${err.message})`;
  }
  if (/certificate required|bad certificate|unknown ca/i.test(err.message)) return `the server refused this client's certificate (TLS: ${err.message})`;
  if (err.code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' || err.code === 'SELF_SIGNED_CERT_IN_CHAIN' || err.code === 'DEPTH_ZERO_SELF_SIGNED_CERT') {
    return `the server's certificate is not signed by a trusted CA: set TEMPORAL_TLS_SERVER_CA_CERT_PATH to its CA (TLS: ${err.message})`;
  }
  if (err.code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `the server's certificate does not name this host: set TEMPORAL_TLS_SERVER_NAME to a name it carries (TLS: ${err.message})`;
  if (/wrong version number|packet length too long|disconnected before secure TLS/i.test(err.message)) return `the server does not speak TLS here: set TEMPORAL_TLS=false for a plaintext server (TLS: ${err.message})`;
  return `TLS: ${err.message}`;
}
