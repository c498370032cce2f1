/**
 * The codec server's browser sign-in over real HTTP: `/login` trades the token for a signed session cookie that the
 * Web UI's "include cross-origin credentials" requests carry, and the bearer API for the CLI stays as it was.
 * Needs no Temporal server: the codec is the real AES-GCM one with a random key.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { FastifyInstance } from 'fastify';
import { EncryptionCodec } from '../src/codec';
import { createCodecServer, WILDCARD_NO_SESSIONS } from '../src/codec/server';
import { SESSION_COOKIE, SESSION_TTL_SECONDS, SessionSigner } from '../src/codec/session';

const TOKEN = randomBytes(24).toString('hex');
const UI = 'http://127.0.0.1:8233';
const codec = new EncryptionCodec({ keys: { k1: randomBytes(32) }, currentKeyId: 'k1' });

const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

async function serve(allowedOrigins: string[]): Promise<{ app: FastifyInstance; url: string }> {
  const app = createCodecServer({ codecs: [codec], token: TOKEN, allowedOrigins });
  return { app, url: await app.listen({ port: 0, host: '127.0.0.1' }) };
}

/** `name=value` of the session cookie a response sets, and its attributes, lower-cased. */
function setCookie(res: Response): { pair: string; attributes: string[] } {
  const header = res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  if (!header) throw new Error(`no ${SESSION_COOKIE} cookie set (status ${res.status})`);
  const [pair, ...attributes] = header.split(';').map((s) => s.trim());
  return { pair, attributes: attributes.map((a) => a.toLowerCase()) };
}

describe('codec server sign-in, origins listed by name', () => {
  let app: FastifyInstance;
  let url: string;
  let encrypted: ReturnType<typeof toJson>;

  beforeAll(async () => {
    ({ app, url } = await serve([UI]));
    encrypted = toJson((await codec.encode([defaultPayloadConverter.toPayload({ prompt: 'the secret plan' })]))[0]);
  });
  afterAll(() => app?.close());

  const login = (token: string, form = true) =>
    fetch(`${url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json' },
      body: form ? new URLSearchParams({ token }).toString() : JSON.stringify({ token }),
    });
  /** A decode as the UI sends it from the browser: Origin (null: none), X-Namespace and whatever cookie it holds. */
  const decodeFromUi = (cookie: string | undefined, origin: string | null = UI) =>
    fetch(`${url}/default/decode?preserveStorageRefs=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...(origin ? { origin } : {}), ...(cookie ? { cookie } : {}) },
      body: JSON.stringify({ payloads: [encrypted] }),
    });

  test('GET /login is a password form that cannot be framed or cached', async () => {
    const res = await fetch(`${url}/login`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    expect(html).toContain('<form method="post" action="login">');
    expect(html).toContain('type="password"');
  });

  test('the right token sets an HttpOnly, SameSite=Strict session cookie that is not the token, and the UI decodes with it', async () => {
    const res = await login(TOKEN);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('Signed in');
    const { pair, attributes } = setCookie(res);
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=strict', 'path=/', `max-age=${SESSION_TTL_SECONDS}`]));
    // Plain HTTP on loopback: a Secure cookie would not be stored for 127.0.0.1 by every browser.
    expect(attributes).not.toContain('secure');
    expect(pair).not.toContain(TOKEN);
    expect(pair).toMatch(new RegExp(`^${SESSION_COOKIE}=v1\\.\\d+\\.[\\w-]{22}\\.[\\w-]{43}$`));

    const decoded = await decodeFromUi(pair);
    expect(decoded.status).toBe(200);
    expect(decoded.headers.get('access-control-allow-origin')).toBe(UI);
    expect(decoded.headers.get('access-control-allow-credentials')).toBe('true');
    const { payloads } = (await decoded.json()) as { payloads: { data: string }[] };
    expect(Buffer.from(payloads[0].data, 'base64').toString()).toContain('the secret plan');

    const json = await login(TOKEN, false);
    expect(json.status).toBe(200);
    expect(await json.json()).toEqual({ ok: true, expiresAt: expect.any(String) });
    setCookie(json);
  });

  test('a wrong token is refused with 401 and a clear message, and sets no cookie', async () => {
    for (const token of [`${TOKEN}x`, '', 'Bearer', TOKEN.slice(1)]) {
      const res = await login(token);
      expect(res.status).toBe(401);
      expect(await res.text()).toContain('Wrong token: enter the CODEC_SERVER_TOKEN of this codec server.');
      expect(res.headers.getSetCookie()).toEqual([]);
    }
    const json = await login('nope', false);
    expect(json.status).toBe(401);
    expect(await json.json()).toEqual({ error: 'Wrong token: enter the CODEC_SERVER_TOKEN of this codec server.' });
  });

  test('the cookie counts only from a listed origin, only unaltered, and only for this token', async () => {
    const { pair } = setCookie(await login(TOKEN));
    // No Origin: not a browser, so the bearer token is what counts.
    const bare = await decodeFromUi(pair, null);
    expect(bare.status).toBe(401);
    expect(((await bare.json()) as { error: string }).error).toContain('sign in at /login');
    expect((await decodeFromUi(pair, 'https://evil.example')).status).toBe(403);
    expect((await decodeFromUi(undefined)).status).toBe(401);

    const value = pair.slice(SESSION_COOKIE.length + 1);
    const [v, expiry, nonce, mac] = value.split('.');
    const forged = [
      `${v}.${Number(expiry) + 3600}.${nonce}.${mac}`, // a longer session
      `${v}.${expiry}.${nonce}.${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`, // another MAC
      `${v}.${expiry}.${nonce}`,
      new SessionSigner('another-token-of-enough-length').mint(),
      new SessionSigner(TOKEN).mint(Date.now() - (SESSION_TTL_SECONDS + 1) * 1000), // expired
      TOKEN, // the token itself is not a session
    ];
    for (const cookie of forged) expect((await decodeFromUi(`${SESSION_COOKIE}=${cookie}`)).status).toBe(401);
    expect((await decodeFromUi(`other=1; ${SESSION_COOKIE}=${value}`)).status).toBe(200);
  });

  test('the bearer token works as before, with or without an Origin', async () => {
    const post = (headers: Record<string, string>) =>
      fetch(`${url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ payloads: [encrypted] }) });
    expect((await post({ authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    expect((await post({ authorization: `Bearer ${TOKEN}`, origin: UI })).status).toBe(200);
    const refused = await post({ authorization: `Bearer ${TOKEN}x` });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
  });

  test('the preflight for a credentialed request names the origin and allows credentials', async () => {
    const res = await fetch(`${url}/default/decode`, {
      method: 'OPTIONS',
      headers: { origin: UI, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(UI);
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    expect(res.headers.get('vary')).toBe('Origin');
  });

  test('GET /logout clears the cookie', async () => {
    const res = await fetch(`${url}/logout`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('Signed out');
    const { pair, attributes } = setCookie(res);
    expect(pair).toBe(`${SESSION_COOKIE}=`);
    expect(attributes).toEqual(expect.arrayContaining(['max-age=0', 'httponly', 'samesite=strict', 'path=/']));
  });

  test('reached by a name other than loopback, the cookie is Secure', async () => {
    // fetch may not set Host, so a plain request with the Host a proxy would pass on.
    const { port } = new URL(url);
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const body = new URLSearchParams({ token: TOKEN }).toString();
      const req = http.request({ host: '127.0.0.1', port, path: '/login', method: 'POST', headers: { host: 'codec.example.com', 'content-type': 'application/x-www-form-urlencoded' } }, resolve);
      req.once('error', reject);
      req.end(body);
    });
    res.resume();
    expect(res.statusCode).toBe(200);
    expect(res.headers['set-cookie']).toEqual([expect.stringMatching(new RegExp(`^${SESSION_COOKIE}=v1\\..*; HttpOnly; SameSite=Strict; Secure$`))]);
  });
});

describe('codec server with CODEC_SERVER_CORS_ORIGINS=*', () => {
  let app: FastifyInstance;
  let url: string;

  beforeAll(async () => ({ app, url } = await serve(['*'])));
  afterAll(() => app?.close());

  test('CORS allows any origin without credentials', async () => {
    const res = await fetch(`${url}/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'https://anything.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });

  test('sign-in is refused with the reason, no cookie is set, and a session cookie is ignored', async () => {
    const page = await fetch(`${url}/login`);
    expect(page.status).toBe(403);
    const html = await page.text();
    expect(html).toContain('CODEC_SERVER_CORS_ORIGINS is *');
    expect(html).not.toContain('<form');
    const login = await fetch(`${url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: TOKEN }) });
    expect(login.status).toBe(403);
    expect(await login.json()).toEqual({ error: WILDCARD_NO_SESSIONS });
    expect(login.headers.getSetCookie()).toEqual([]);

    const decode = (headers: Record<string, string>) =>
      fetch(`${url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', origin: UI, ...headers }, body: JSON.stringify({ payloads: [] }) });
    const withCookie = await decode({ cookie: `${SESSION_COOKIE}=${new SessionSigner(TOKEN).mint()}` });
    expect(withCookie.status).toBe(401);
    expect(((await withCookie.json()) as { error: string }).error).not.toContain('/login');
    const withBearer = await decode({ authorization: `Bearer ${TOKEN}` });
    expect(withBearer.status).toBe(200);
    expect(withBearer.headers.get('access-control-allow-origin')).toBe('*');
  });
});
