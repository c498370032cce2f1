/**
 * The codec server's app; the process is `src/bin/codec-server.ts` (`npm run codec-server`). Serves Temporal's remote
 * codec protocol so the Web UI (`--ui-codec-endpoint`) and the CLI (`--codec-endpoint`, `--codec-auth`) show payloads
 * decrypted and claim checks resolved, with the worker's own codecs (the same keys and the same blob store).
 *
 * Protocol: `POST .../encode` and `POST .../decode` (only the last path segment counts, so `/{namespace}/decode`
 * works too) with a proto3 JSON `{ payloads: [{ metadata: { key: base64 }, data: base64 }] }`, answered in the same
 * form. Every request needs `Authorization: Bearer $CODEC_SERVER_TOKEN`, or, from a browser on an allowed origin, the
 * session cookie that `/login` sets (`session.ts`): the Web UI cannot send a fixed token, only cookies. Browsers
 * from the allowed origins get CORS with credentials (preflight included) for the headers the UI sends: Content-Type,
 * X-Namespace, Authorization. With the origins `*`, CORS carries no credentials and sign-in is off.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  isLoopbackHost,
  readCookie,
  SESSION_COOKIE,
  SESSION_PAGE_HEADERS,
  SESSION_TTL_SECONDS,
  sessionCookie,
  sessionPage,
  SessionSigner,
} from './session';

/** Above the server's 2 MB payload limit, base64 included, with room for several payloads per request. */
const BODY_LIMIT_BYTES = 16 * 1024 * 1024;
const ALLOWED_HEADERS = 'Content-Type, X-Namespace, Authorization';
const LOGIN_BODY_LIMIT_BYTES = 4096;
/** Why a wildcard origin turns sign-in off, for the 403 and the start-up warning. */
export const WILDCARD_NO_SESSIONS =
  'browser sign-in is off because CODEC_SERVER_CORS_ORIGINS is *: a session cookie would let any web site read decrypted payloads, so browsers may not send one to a server that allows every origin. List the Web UI origins instead.';

/** Options of `createCodecServer`. */
export interface CodecServerOptions {
  /** Applied like a data converter's: encode first to last, decode last to first. */
  codecs: PayloadCodec[];
  token: string;
  /** Origins allowed to call from a browser; `*` allows any, without credentials (no cookies, no sign-in). */
  allowedOrigins: string[];
}

const Base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'must be base64');
const PayloadsBody = z.object({
  payloads: z.array(z.object({ metadata: z.record(z.string(), Base64).nullish(), data: Base64.nullish() })),
});
type JsonPayload = z.infer<typeof PayloadsBody>['payloads'][number];

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});

const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

/** A Fastify app serving the codec protocol; `listen` it, or `inject` requests in tests. */
export function createCodecServer(options: CodecServerOptions): FastifyInstance {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  const expected = digest(options.token);
  // Equal-length digests make the comparison constant-time whatever the length of what was sent.
  const authorised = (header: string | undefined) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    return match != null && timingSafeEqual(digest(match[1]), expected);
  };
  const anyOrigin = options.allowedOrigins.includes('*');
  const allowedOrigin = (origin: string | undefined) => origin != null && (anyOrigin || options.allowedOrigins.includes(origin));
  // Only origins listed by name may send the cookie: `*` with credentials would hand decrypted payloads to any site.
  const sessions = anyOrigin ? undefined : new SessionSigner(options.token);
  const hasSession = (req: FastifyRequest) =>
    sessions != null && options.allowedOrigins.includes(req.headers.origin ?? '') && sessions.verify(readCookie(req.headers.cookie, SESSION_COOKIE));
  // The sign-in pages are used on the codec server's own origin, which is not a UI origin; the token guards them.
  const isSessionRoute = (req: FastifyRequest) => req.routeOptions.url === '/login' || req.routeOptions.url === '/logout';

  const app = Fastify({ logger: false, bodyLimit: BODY_LIMIT_BYTES });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) =>
    done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const origin = req.headers.origin;
    if (origin == null || isSessionRoute(req)) return; // not a browser (the CLI, curl, a proxy), or the sign-in page
    // A browser on another site must not reach the codec at all, even one holding a cookie for an auth proxy.
    if (!allowedOrigin(origin)) return reply.code(403).send({ error: `origin ${origin} is not allowed (CODEC_SERVER_CORS_ORIGINS)` });
    if (anyOrigin) {
      reply.header('Access-Control-Allow-Origin', '*');
      return;
    }
    reply.header('Access-Control-Allow-Origin', origin);
    reply.header('Access-Control-Allow-Credentials', 'true');
    reply.header('Vary', 'Origin');
  });

  // Before the body is parsed, so an unauthenticated caller cannot make the server read megabytes.
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.method !== 'POST' || isSessionRoute(req) || authorised(req.headers.authorization) || hasSession(req)) return;
    const error = sessions
      ? 'a valid Authorization: Bearer token is required, or, from the Web UI, a session: sign in at /login'
      : 'a valid Authorization: Bearer token is required';
    return reply.code(401).header('WWW-Authenticate', 'Bearer').send({ error });
  });

  // Preflight carries no Authorization header, so it is answered before any auth check.
  app.options('/*', async (_req, reply) =>
    reply
      .code(204)
      .header('Access-Control-Allow-Methods', 'POST, OPTIONS')
      .header('Access-Control-Allow-Headers', ALLOWED_HEADERS)
      .header('Access-Control-Max-Age', '600')
      .send(),
  );

  app.get('/healthz', async () => ({ ok: true }));

  const page = (reply: FastifyReply, code: number, html: Parameters<typeof sessionPage>[0]) =>
    reply.code(code).headers(SESSION_PAGE_HEADERS).send(sessionPage(html));
  const secureCookie = (req: FastifyRequest) => req.protocol === 'https' || !isLoopbackHost(req.headers.host);

  app.get('/login', async (_req, reply) => {
    if (!sessions) return page(reply, 403, { title: 'Sign-in is off', error: WILDCARD_NO_SESSIONS });
    return page(reply, 200, { title: 'Sign in to the codec server', message: 'The Temporal Web UI in this browser then shows payloads decrypted.', form: true });
  });

  // A form post from the page above, or JSON `{ "token": ... }` from a script.
  app.post('/login', { bodyLimit: LOGIN_BODY_LIMIT_BYTES }, async (req, reply) => {
    const json = req.headers['content-type']?.startsWith('application/json') ?? false;
    const fail = (code: number, error: string) =>
      json ? reply.code(code).send({ error }) : page(reply, code, { title: 'Sign in to the codec server', error, form: code === 401 });
    if (!sessions) return fail(403, WILDCARD_NO_SESSIONS);
    const token = z.object({ token: z.string() }).safeParse(req.body).data?.token ?? '';
    if (!authorised(`Bearer ${token.trim()}`)) return fail(401, 'Wrong token: enter the CODEC_SERVER_TOKEN of this codec server.');
    reply.header('Set-Cookie', sessionCookie(sessions.mint(), secureCookie(req)));
    const expiresAt = new Date(Date.now() + SESSION_TTL_SECONDS * 1000).toISOString();
    if (json) return { ok: true, expiresAt };
    return page(reply, 200, { title: 'Signed in', message: `Until ${expiresAt}. Reload the Temporal Web UI: with "include cross-origin credentials" on, it now shows payloads decrypted.` });
  });

  app.get('/logout', async (req, reply) =>
    page(reply.header('Set-Cookie', sessionCookie('', secureCookie(req))), 200, { title: 'Signed out', message: 'This browser no longer sends a codec session.' }),
  );

  app.post('/*', async (req, reply) => {
    const op = req.url.split('?')[0].replace(/\/+$/, '').split('/').pop();
    if (op !== 'encode' && op !== 'decode') return reply.code(404).send({ error: 'expected POST .../encode or .../decode' });
    const body = PayloadsBody.safeParse(req.body);
    if (!body.success) return reply.code(400).send({ error: `expected { payloads: [{ metadata, data }] } in proto3 JSON: ${body.error.issues[0]?.message}` });
    let payloads = body.data.payloads.map(fromJson);
    try {
      if (op === 'encode') for (const codec of options.codecs) payloads = await codec.encode(payloads);
      else for (const codec of [...options.codecs].reverse()) payloads = await codec.decode(payloads);
    } catch (err) {
      // Codec errors name a key id or a blob key, never payload contents.
      return reply.code(422).send({ error: err instanceof Error ? err.message : String(err) });
    }
    return { payloads: payloads.map(toJson) };
  });

  return app;
}
