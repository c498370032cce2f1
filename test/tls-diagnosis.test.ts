/**
 * Why a TLS connection fails, told by `tlsFailureReason` (connection.ts), against a local TLS server with the
 * certificates the stack makes (scripts/lib/stack/tls.ts): a real handshake, no Temporal server.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createServer, type Server } from 'node:tls';
import { ensureCertificates, type TlsFiles } from '../scripts/lib/stack/tls';
import { tlsFailureReason } from '../src/config/connection';

let files: TlsFiles;
let server: Server;
let address: string;
const read = (p: string) => readFileSync(p);

beforeAll(async () => {
  files = ensureCertificates(mkdtempSync(path.join(os.tmpdir(), 'tls-diagnosis-')));
  // Requires a client certificate signed by the CA, as the stack's frontend does with --mtls.
  server = createServer({ cert: read(files.serverCert), key: read(files.serverKey), ca: read(files.caCert), requestCert: true, rejectUnauthorized: true, ALPNProtocols: ['h2'] }, (socket) => socket.on('error', () => undefined));
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const ca = () => read(files.caCert);
const clientCertPair = () => ({ crt: read(files.clientCert), key: read(files.clientKey) });

test('with the CA, the server name and a client certificate, nothing is wrong', async () => {
  await expect(tlsFailureReason({ address, tls: { serverRootCACertificate: ca(), serverNameOverride: 'localhost', clientCertPair: clientCertPair() } })).resolves.toBeUndefined();
});

test('no client certificate: names mTLS and the two settings to set', async () => {
  await expect(tlsFailureReason({ address, tls: { serverRootCACertificate: ca(), serverNameOverride: 'localhost' } })).resolves.toMatch(
    /^the server requires a client certificate \(mutual TLS\) and none is configured: set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH \(TLS: .*certificate required\)$/,
  );
});

test('a server certificate from a CA not given: names the CA setting', async () => {
  await expect(tlsFailureReason({ address, tls: { serverNameOverride: 'localhost', clientCertPair: clientCertPair() } })).resolves.toMatch(/not signed by a trusted CA: set TEMPORAL_TLS_SERVER_CA_CERT_PATH/);
});

test('a server name the certificate does not carry: names the server-name setting', async () => {
  await expect(tlsFailureReason({ address, tls: { serverRootCACertificate: ca(), serverNameOverride: 'temporal.example.com', clientCertPair: clientCertPair() } })).resolves.toMatch(
    /does not name this host: set TEMPORAL_TLS_SERVER_NAME/,
  );
});

test('TLS off, or nothing listening: no TLS reason (the connect error stands)', async () => {
  await expect(tlsFailureReason({ address, tls: false })).resolves.toBeUndefined();
  await expect(tlsFailureReason({ address: '127.0.0.1:1', tls: { serverRootCACertificate: ca() } })).resolves.toBeUndefined();
});
