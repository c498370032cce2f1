/**
 * Authentication and authorization for every route except the public ones: who calls (`request.caller`, identity.ts),
 * whether their role allows the operation (the role each needs is in openapi.ts's operation table), and whether the
 * run they name is their tenant's (another tenant's run is a 404, the same as a run that does not exist).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentRunNotFoundError } from '../client';
import { HttpError } from './errors';
import { callerTenant, hasRole, SERVICE_CALLER, type Caller } from './identity';
import { headerSafe, InvalidTokenError, type JwtVerifier } from './jwt';
import { requiredRole } from './openapi';
import { UI_ROUTES } from './routes/ui';
import { RunParamsSchema } from './schemas';
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
  const presented = bearerOf(header);
  if (presented === undefined) return false;
  return timingSafeEqual(sha256(presented), sha256(token));
}

const bearerOf = (header: string | undefined): string | undefined => /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

export interface AuthOptions {
  /** The service token (`GATEWAY_TOKEN`); null: none. With neither it nor `jwt`, authentication is off. */
  token: string | null;
  /** Checks signed identities (jwt.ts); absent: only the service token is taken. */
  jwt?: JwtVerifier;
  streamTokens: StreamTokens;
  /** The tenant of a run (`AgentClient.tenantOf`); rejects with `AgentRunNotFoundError` for no such run. */
  tenantOf(workflowId: string): Promise<string | null>;
}

/**
 * Refuses a request without a valid credential with 401, one whose role is too weak with 403, and one that names
 * another tenant's run with 404. Without a token and without JWTs (GATEWAY_INSECURE=1) every caller is the service.
 */
export function registerAuth(app: FastifyInstance, opts: AuthOptions): void {
  // No initial value: Fastify refuses an object there (it would be shared); the hook sets it on every request.
  app.decorateRequest('caller');
  const on = opts.token !== null || opts.jwt !== undefined;
  app.addHook('onRequest', async (request, reply) => {
    const url = request.routeOptions.url;
    // Public routes serve no run's data: the caller there is never read.
    if (!on || (url !== undefined && PUBLIC_ROUTES.has(url))) {
      request.caller = SERVICE_CALLER;
      return;
    }
    // Unknown routes require a credential too, so that probing reveals nothing.
    request.caller = await authenticate(request, reply, opts);
    // Before the run is looked at: what the role allows does not depend on the run, so a 403 reveals nothing of it.
    if (url !== undefined) authorize(request.caller, request.method, url);
  });
  // After the query and path are checked (a bad id is the route's 400): another tenant's run is no run at all.
  app.addHook('preHandler', async (request) => {
    const tenant = callerTenant(request.caller);
    if (tenant === null || !request.routeOptions.url?.includes(':id')) return;
    const parsed = RunParamsSchema.safeParse({ id: (request.params as { id?: unknown }).id });
    if (!parsed.success) return;
    if ((await opts.tenantOf(parsed.data.id)) !== tenant) throw new AgentRunNotFoundError(parsed.data.id);
    // A second run named in the query (`/diff?against=`) is held to the same rule.
    const against = (request.query as { against?: unknown } | undefined)?.against;
    if (typeof against === 'string' && (await opts.tenantOf(against)) !== tenant) throw new AgentRunNotFoundError(against);
  });
}

async function authenticate(request: FastifyRequest, reply: FastifyReply, opts: AuthOptions): Promise<Caller> {
  const header = request.headers.authorization;
  const bearer = bearerOf(header);
  if (bearer !== undefined && opts.token !== null && bearerMatches(header, opts.token)) return SERVICE_CALLER;
  if (bearer !== undefined && opts.jwt) {
    try {
      return await opts.jwt(bearer);
    } catch (err) {
      if (!(err instanceof InvalidTokenError)) throw err;
      // RFC 6750: the reason, never the token.
      reply.header('www-authenticate', `Bearer error="invalid_token", error_description="${headerSafe(err.message)}"`);
      throw new HttpError(401, 'unauthorized', err.message);
    }
  }
  const streamToken = (request.query as Record<string, unknown> | undefined)?.token;
  let message = `missing or wrong bearer token (Authorization: Bearer <${opts.jwt ? 'token or JWT' : 'token'}>)`;
  if (typeof streamToken === 'string' && header === undefined) {
    const id = (request.params as { id: string }).id;
    const check: StreamTokenCheck =
      request.routeOptions.url === STREAM_TOKEN_ROUTE
        ? opts.streamTokens.verify(streamToken, id)
        : { ok: false, message: 'a stream token (?token=) is accepted only by GET /v1/runs/:id/events' };
    if (check.ok) return { kind: 'stream', workflowId: id, tenant: check.tenant };
    message = check.message;
  }
  reply.header('www-authenticate', 'Bearer');
  throw new HttpError(401, 'unauthorized', message);
}

/** 403 when the caller's role is short of what the operation needs (openapi.ts), naming the role it needs. */
function authorize(caller: Caller, method: string, url: string): void {
  const needed = requiredRole(method, url);
  if (needed === 'service') {
    if (caller.kind === 'service') return;
    throw new HttpError(403, 'forbidden', `${method} ${url} is the service's only: it needs the gateway's own token (GATEWAY_TOKEN)`, { requiredRole: 'service' });
  }
  if (hasRole(caller, needed)) return;
  const held = caller.kind === 'user' && caller.roles.length ? `it holds ${caller.roles.join(', ')}` : 'it holds none';
  throw new HttpError(403, 'forbidden', `${method} ${url} needs the ${needed} role; ${held}`, { requiredRole: needed });
}
