/**
 * TLS for the stack's frontend: a CA, a server certificate for 127.0.0.1 and localhost, and a client certificate for
 * mTLS, made once by `openssl` under `<dir>/tls/`. The server reads them through its config template's
 * TEMPORAL_TLS_FRONTEND_* and TEMPORAL_TLS_SERVER_* settings; every client of the stack through the TEMPORAL_TLS_*
 * settings of envconfig (config.ts), the same ones a user sets against any cluster.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const TLS_MODES = ['off', 'tls', 'mtls'] as const;
export type TlsMode = (typeof TLS_MODES)[number];

/** The name clients verify the server certificate against (it also carries IP 127.0.0.1). */
export const TLS_SERVER_NAME = 'localhost';
const DAYS = '825';

export interface TlsFiles {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

export function tlsFiles(stackDir: string): TlsFiles {
  const dir = path.join(stackDir, 'tls');
  const f = (name: string) => path.join(dir, name);
  return { dir, caCert: f('ca.pem'), caKey: f('ca-key.pem'), serverCert: f('server.pem'), serverKey: f('server-key.pem'), clientCert: f('client.pem'), clientKey: f('client-key.pem') };
}

/** `--tls`, `--mtls`, or STACK_TLS (1, true, tls, mtls, 0, false, off); unset, off. */
export function tlsModeFrom(args: string[], env: NodeJS.ProcessEnv): TlsMode {
  if (args.includes('--mtls')) return 'mtls';
  if (args.includes('--tls')) return 'tls';
  const raw = env.STACK_TLS?.trim().toLowerCase();
  if (!raw || ['0', 'false', 'off'].includes(raw)) return 'off';
  if (['1', 'true', 'tls'].includes(raw)) return 'tls';
  if (raw === 'mtls') return 'mtls';
  throw new Error(`STACK_TLS must be tls (or 1), mtls, or off, got "${env.STACK_TLS}"`);
}

/** Makes whatever certificate is missing; a server or client certificate is remade with a new CA. */
export function ensureCertificates(stackDir: string): TlsFiles {
  const t = tlsFiles(stackDir);
  mkdirSync(t.dir, { recursive: true, mode: 0o700 });
  const newCa = !existsSync(t.caCert) || !existsSync(t.caKey);
  if (newCa) {
    openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', t.caKey, '-out', t.caCert, '-days', DAYS, '-subj', '/CN=durable-agent-worker stack CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  }
  // One server certificate for the frontend and for the server's own nodes, which present it to each other as clients too.
  if (newCa || !existsSync(t.serverCert)) issue(t, t.serverCert, t.serverKey, `/CN=${TLS_SERVER_NAME}`, ['subjectAltName=DNS:localhost,IP:127.0.0.1', 'extendedKeyUsage=serverAuth,clientAuth']);
  if (newCa || !existsSync(t.clientCert)) issue(t, t.clientCert, t.clientKey, '/CN=agent-client', ['extendedKeyUsage=clientAuth']);
  return t;
}

function issue(t: TlsFiles, cert: string, key: string, subject: string, extensions: string[]): void {
  const csr = `${cert}.csr`;
  const ext = `${cert}.ext`;
  writeFileSync(ext, `${['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', ...extensions].join('\n')}\n`);
  try {
    openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', subject]);
    openssl(['x509', '-req', '-in', csr, '-CA', t.caCert, '-CAkey', t.caKey, '-CAcreateserial', '-out', cert, '-days', DAYS, '-sha256', '-extfile', ext]);
  } finally {
    rmSync(csr, { force: true });
    rmSync(ext, { force: true });
  }
}

function openssl(args: string[]): void {
  const result = spawnSync('openssl', args, { encoding: 'utf8' });
  if (result.error) throw new Error(`openssl could not run (${result.error.message}): it makes the stack's TLS certificates (apt-get install openssl)`);
  if (result.status !== 0) throw new Error(`openssl ${args.slice(0, 2).join(' ')} failed (exit ${result.status}): ${(result.stderr ?? '').trim()}`);
}

/**
 * The server's config template settings: TLS on the frontend and between the server's own services (the internal
 * worker is a client of the frontend, and presents the internode certificate to it); with mTLS every client needs a
 * certificate signed by the CA.
 */
export function serverTlsEnv(mode: TlsMode, t: TlsFiles): NodeJS.ProcessEnv {
  if (mode === 'off') return {};
  return {
    TEMPORAL_TLS_SERVER_CERT: t.serverCert,
    TEMPORAL_TLS_SERVER_KEY: t.serverKey,
    TEMPORAL_TLS_SERVER_CA_CERT: t.caCert,
    TEMPORAL_TLS_INTERNODE_SERVER_NAME: TLS_SERVER_NAME,
    TEMPORAL_TLS_FRONTEND_CERT: t.serverCert,
    TEMPORAL_TLS_FRONTEND_KEY: t.serverKey,
    TEMPORAL_TLS_FRONTEND_SERVER_NAME: TLS_SERVER_NAME,
    TEMPORAL_TLS_REQUIRE_CLIENT_AUTH: mode === 'mtls' ? 'true' : 'false',
    // The template lists two client CAs (for rotation); both are this one.
    ...(mode === 'mtls' ? { TEMPORAL_TLS_CLIENT1_CA_CERT: t.caCert, TEMPORAL_TLS_CLIENT2_CA_CERT: t.caCert } : {}),
  };
}

/** The TEMPORAL_TLS_* settings of every client of the stack (config.ts reads them by envconfig's names). */
export function clientTlsEnv(mode: TlsMode, t: TlsFiles): NodeJS.ProcessEnv {
  if (mode === 'off') return {};
  return {
    TEMPORAL_TLS: 'true',
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: t.caCert,
    TEMPORAL_TLS_SERVER_NAME: TLS_SERVER_NAME,
    ...(mode === 'mtls' ? { TEMPORAL_TLS_CLIENT_CERT_PATH: t.clientCert, TEMPORAL_TLS_CLIENT_KEY_PATH: t.clientKey } : {}),
  };
}
