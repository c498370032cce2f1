/** Bearer-token authentication for every route except the public ones. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors';
import { SERVICE_CALLER } from './identity';
import { UI_ROUTES } from './routes/ui';
import type { StreamTokenCheck, StreamTokens } from './stream-token';

/** The one route that also takes a stream token (`?token=`), since a browser's EventSource cannot send a header. */
export const STREAM_TOKEN_ROUTE = '/v1/runs/:id/events';

/** Routes served without a token: liveness, the API description and the web page's static files (which hold no data). */
export const PUBLIC_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/openapi.json', ...UI_ROUTES]);

/**
 * Whether an `Authorization` header carries the token. Both sides are hashed first so that the comparison is
 * constant-time whatever their lengths.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
  if (presented === undefined) return false;
  return timingSafeEqual(sha256(presented), sha256(token));
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Refuses requests without the token with 401; `token: null` turns authentication off (GATEWAY_INSECURE=1). The
 * event stream also takes a stream token for its own run as `?token=`.
 */
export function registerAuth(app: FastifyInstance, token: string | null, streamTokens: StreamTokens): void {
  // No initial value: Fastify refuses an object there (it would be shared); the hook sets it on every request.
  app.decorateRequest('caller');
  app.addHook('onRequest', async (request, reply) => {
    request.caller = SERVICE_CALLER;
    if (token === null) return;
    // Unknown routes require the token too, so that probing reveals nothing.
    if (request.routeOptions.url !== undefined && PUBLIC_ROUTES.has(request.routeOptions.url)) return;
    if (bearerMatches(request.headers.authorization, token)) return;
    const streamToken = (request.query as Record<string, unknown> | undefined)?.token;
    let message = 'missing or wrong bearer token (Authorization: Bearer <token>)';
    if (typeof streamToken === 'string' && request.headers.authorization === undefined) {
      const check: StreamTokenCheck =
        request.routeOptions.url === STREAM_TOKEN_ROUTE
          ? streamTokens.verify(streamToken, (request.params as { id: string }).id)
          : { ok: false, message: 'a stream token (?token=) is accepted only by GET /v1/runs/:id/events' };
      if (check.ok) {
        request.caller = { kind: 'stream', workflowId: (request.params as { id: string }).id, tenant: null };
        return;
      }
      message = check.message;
    }
    reply.header('www-authenticate', 'Bearer');
    throw new HttpError(401, 'unauthorized', message);
  });
}
