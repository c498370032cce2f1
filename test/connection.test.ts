/**
 * Remote Temporal connection options from the environment, by envconfig's conventions (temporalSettings in config.ts,
 * then connection.ts): the mapping only, no server. Every env here is explicit and has no HOME, so a temporal.toml on
 * this machine cannot leak in.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporalSettings } from '../src/config';
import { Connection } from '@temporalio/client';
import { clientConnectionOptions, closeSafeConnectionPlugin, closedChannelGuard, nativeConnectionOptions, temporalConnectionOptions } from '../src/config/connection';

/** What a connection is opened with, for this environment. */
const optionsFrom = (env: NodeJS.ProcessEnv) => temporalConnectionOptions(temporalSettings(env));

const dir = mkdtempSync(path.join(os.tmpdir(), 'temporal-tls-'));
const file = (name: string, content: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
};
const CERT = '-----BEGIN CERTIFICATE-----\nclient\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nclient\n-----END PRIVATE KEY-----\n';
const CA = '-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n';
const bytes = (s: string) => new TextEncoder().encode(s);

test('nothing set: plaintext to localhost, default namespace', () => {
  expect(optionsFrom({})).toEqual({ address: 'localhost:7233' });
  expect(temporalSettings({})).toMatchObject({ address: 'localhost:7233', namespace: 'default', taskQueue: 'agent-runs' });
});

test('an API key turns TLS on and is sent; TEMPORAL_TLS=false turns TLS back off', () => {
  const env = { TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_NAMESPACE: 'ns.acct', TEMPORAL_API_KEY: 'key-123' };
  expect(optionsFrom(env)).toEqual({ address: 'ns.acct.tmprl.cloud:7233', apiKey: 'key-123', tls: true });
  expect(temporalSettings(env)).toMatchObject({ address: 'ns.acct.tmprl.cloud:7233', namespace: 'ns.acct' });
  expect(optionsFrom({ ...env, TEMPORAL_TLS: 'false' })).toEqual({ address: 'ns.acct.tmprl.cloud:7233', apiKey: 'key-123', tls: false });
});

test('client certificate and key paths give mTLS, with the server CA and server name', () => {
  const env = {
    TEMPORAL_ADDRESS: 'temporal.internal:7233',
    TEMPORAL_TLS_CLIENT_CERT_PATH: file('client.pem', CERT),
    TEMPORAL_TLS_CLIENT_KEY_PATH: file('client.key', KEY),
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.pem', CA),
    TEMPORAL_TLS_SERVER_NAME: 'temporal.example',
  };
  expect(optionsFrom(env)).toEqual({
    address: 'temporal.internal:7233',
    tls: {
      clientCertPair: { crt: bytes(CERT), key: bytes(KEY) },
      serverRootCACertificate: bytes(CA),
      serverNameOverride: 'temporal.example',
    },
  });
  // Inline data works the same way; TEMPORAL_TLS=true alone is TLS with the system roots.
  const inline = optionsFrom({ TEMPORAL_TLS_CLIENT_CERT_DATA: CERT, TEMPORAL_TLS_CLIENT_KEY_DATA: KEY });
  expect(inline.tls).toMatchObject({ clientCertPair: { crt: bytes(CERT), key: bytes(KEY) } });
  expect(optionsFrom({ TEMPORAL_TLS: 'true' }).tls).toEqual({});
});

test('a certificate without its key, or a missing file, fails with a message that says so', () => {
  expect(() => optionsFrom({ TEMPORAL_TLS_CLIENT_CERT_PATH: file('only.pem', CERT) })).toThrow(/mTLS needs both a client certificate and its key/);
  expect(() => optionsFrom({ TEMPORAL_TLS_CLIENT_KEY_DATA: KEY })).toThrow(/mTLS needs both/);
  expect(() =>
    optionsFrom({ TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'nope.pem'), TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(dir, 'nope.key') }),
  ).toThrow(/cannot load the Temporal TLS files: .*ENOENT/);
});

test('a temporal.toml profile is read, and TEMPORAL_* variables override it', () => {
  const toml = file(
    'temporal.toml',
    [
      '[profile.default]',
      'address = "localhost:7233"',
      '[profile.prod]',
      'address = "prod.example:7233"',
      'namespace = "agents-prod"',
      'api_key = "from-profile"',
      '[profile.prod.grpc_meta]',
      'x-team = "agents"',
    ].join('\n'),
  );
  const env = { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'prod' };
  expect(optionsFrom(env)).toEqual({ address: 'prod.example:7233', apiKey: 'from-profile', tls: true, metadata: { 'x-team': 'agents' } });
  expect(temporalSettings(env)).toMatchObject({ address: 'prod.example:7233', namespace: 'agents-prod' });
  expect(optionsFrom({ ...env, TEMPORAL_ADDRESS: 'override:7233', TEMPORAL_API_KEY: 'from-env' })).toMatchObject({ address: 'override:7233', apiKey: 'from-env' });
  expect(() => temporalSettings({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'staging' })).toThrow(/cannot read the Temporal client config.*Profile 'staging' not found/);
});

test('an explicit address wins over the environment; worker and client options are the same mapping', () => {
  const env = { TEMPORAL_ADDRESS: 'from-env:7233', TEMPORAL_API_KEY: 'k', TEMPORAL_GRPC_META_X_TENANT: 't1' };
  const expected = { address: 'explicit:7233', apiKey: 'k', tls: true, metadata: { 'x-tenant': 't1' } };
  const settings = { ...temporalSettings(env), address: 'explicit:7233' };
  expect(nativeConnectionOptions(settings)).toEqual(expected);
  const { interceptors, ...client } = clientConnectionOptions(settings);
  expect(client).toEqual(expected);
  expect(interceptors?.at(-1)).toBe(closedChannelGuard);
});

/**
 * A call that fails with a retryable status (UNAVAILABLE: nothing listens on port 1) waits on the SDK's retry timer;
 * the connection closes during the wait. Without the guard the next attempt throws "Channel has been shut down" from
 * the timer (an uncaught exception: it failed CI's ui.test.ts) and the caller's promise never settles.
 */
describe('a connection closed while a call waits to retry', () => {
  const closeDuringRetry = async (connection: Connection) => {
    const call = connection.workflowService.getSystemInfo({}).then(
      () => 'answered',
      (err: { code?: number; message: string }) => err,
    );
    await new Promise((r) => setTimeout(r, 300));
    await connection.close();
    let timer: NodeJS.Timeout | undefined;
    const never = new Promise((r) => (timer = setTimeout(() => r('never settled'), 10_000)));
    return Promise.race([call, never]).finally(() => clearTimeout(timer));
  };
  const expectCancelled = (outcome: unknown) =>
    expect(outcome).toMatchObject({ code: 1, message: expect.stringMatching(/the Temporal connection is closed: Channel has been shut down/) });

  test('a call made after the close is rejected with CANCELLED as well, and nothing is thrown', async () => {
    // The guard then answers the retry's first attempt, which has no response yet (CI's live-stream.test.ts failure).
    const connection = await Connection.lazy(clientConnectionOptions({ ...temporalSettings({}), address: '127.0.0.1:1' }));
    await connection.close();
    let timer: NodeJS.Timeout | undefined;
    const never = new Promise((r) => (timer = setTimeout(() => r('never settled'), 10_000)));
    const call = connection.workflowService.getSystemInfo({}).then(
      () => 'answered',
      (err: { code?: number; message: string }) => err,
    );
    expectCancelled(await Promise.race([call, never]).finally(() => clearTimeout(timer)));
  }, 20_000);

  test("the library's client options: the call is rejected with CANCELLED, nothing is thrown", async () => {
    const settings = { ...temporalSettings({}), address: '127.0.0.1:1' };
    expectCancelled(await closeDuringRetry(await Connection.lazy(clientConnectionOptions(settings))));
  }, 20_000);

  test("closeSafeConnectionPlugin on a connection opened elsewhere, with or without the caller's own interceptors", async () => {
    expectCancelled(await closeDuringRetry(await Connection.lazy({ address: '127.0.0.1:1', plugins: [closeSafeConnectionPlugin] })));
    const configured = closeSafeConnectionPlugin.configureConnection!({ address: 'x:1', interceptors: [closedChannelGuard] });
    expect(configured.interceptors).toEqual([closedChannelGuard]);
  }, 20_000);
});
