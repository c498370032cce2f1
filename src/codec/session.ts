/**
 * Browser sessions of the codec server. The Web UI can send cookies ("include cross-origin credentials") but not a
 * fixed bearer token, so a person proves the token once at `/login` and the browser keeps a signed, expiring cookie.
 *
 * The cookie holds `v1.<expiry>.<nonce>.<mac>`: mac = HMAC-SHA256(session key, "v1.<expiry>.<nonce>"), and the session
 * key = HMAC-SHA256(token, a fixed label). Never the token itself, no server-side state (so replicas agree), and a new
 * token ends every session.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'codec_session';
/** A working day; signing in again costs one paste of the token. */
export const SESSION_TTL_SECONDS = 8 * 60 * 60;
const VERSION = 'v1';
const KEY_LABEL = 'durable-agent-worker codec-server session v1';

/** Mints and checks session values for one token. */
export class SessionSigner {
  readonly #key: Buffer;

  constructor(token: string) {
    this.#key = createHmac('sha256', token).update(KEY_LABEL).digest();
  }

  /** A fresh session value, valid for `SESSION_TTL_SECONDS` from `now`. */
  mint(now = Date.now()): string {
    const expiry = Math.floor(now / 1000) + SESSION_TTL_SECONDS;
    const body = `${VERSION}.${expiry}.${randomBytes(16).toString('base64url')}`;
    return `${body}.${this.#mac(body).toString('base64url')}`;
  }

  /** True for a value this signer minted that has not expired; the MAC is compared in constant time. */
  verify(value: string | undefined, now = Date.now()): boolean {
    const match = /^(v1\.(\d{1,12})\.[A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(value ?? '');
    if (!match) return false;
    const [, body, expiry, mac] = match;
    const ok = timingSafeEqual(Buffer.from(mac, 'base64url'), this.#mac(body));
    return ok && Number(expiry) * 1000 > now;
  }

  #mac(body: string): Buffer {
    return createHmac('sha256', this.#key).update(body).digest();
  }
}

/** The value of cookie `name` in a `Cookie` header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * `Set-Cookie` for a session (or, with `value` empty, for clearing it). HttpOnly: page scripts, the UI's included,
 * never read it. SameSite=Strict: sent only from the same site (a UI on another port of the same host qualifies).
 * Secure unless the codec server is reached on a loopback address over plain HTTP.
 */
export function sessionCookie(value: string, secure: boolean): string {
  const maxAge = value ? SESSION_TTL_SECONDS : 0;
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** Whether a `Host` header names this machine (where browsers accept cookies over plain HTTP). */
export function isLoopbackHost(host: string | undefined): boolean {
  try {
    const { hostname } = new URL(`http://${host ?? ''}`);
    return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
  } catch {
    return false;
  }
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A page of the sign-in flow: no script, no external resource, a relative form action (works behind a path prefix). */
export function sessionPage(opts: { title: string; message?: string; error?: string; form?: boolean }): string {
  const form = opts.form
    ? `<form method="post" action="login">
<label for="token">Codec server token (CODEC_SERVER_TOKEN)</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(opts.title)}</title>
<style>body{font:16px system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}input,button{display:block;width:100%;margin:.5rem 0;padding:.5rem;font:inherit}.error{color:#b00020}</style>
</head><body>
<h1>${escapeHtml(opts.title)}</h1>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ''}${opts.message ? `<p>${escapeHtml(opts.message)}</p>` : ''}
${form}
</body></html>
`;
}

/** Headers for every sign-in page: no framing (clickjacking of the form), no caching, no referrer. */
export const SESSION_PAGE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
} as const;
