/**
 * The HTTP gateway: a Fastify server over `AgentClient` for services and front ends that do not embed a Temporal
 * client. JSON routes under `/v1/runs`, Server-Sent Events for following a run, one error shape
 * `{ error: { code, message } }`, bearer-token auth. See docs/gateway.md.
 */
import cors from '@fastify/cors';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { DEFAULT_CONTROL_TIMEOUT_MS, type AgentClient } from '../client';
import { registerAuth } from './auth';
import { jwtVerifier, type JwtSettings } from './jwt';
import type { GatewayContext } from './context';
import { HttpError, toHttpError } from './errors';
import { registerRoutes } from './routes';
import { registerStreamPublishRoute } from './routes/stream-publish';
import { registerStopRoutes } from './routes/stops';
import { registerUiRoutes } from './routes/ui';
import type { StreamChannel } from '../stream/channel';
import { sharedReads, sharedStates } from './shared-state';
import { streamTokens } from './stream-token';

export { HttpError, type ErrorBody } from './errors';
export { openApiDocument } from './openapi';

/** Options of `buildGateway`. */
export interface GatewayOptions {
  agents: AgentClient;
  /**
   * The service token (`GATEWAY_TOKEN`): every route but the public ones takes it, and it sees every tenant. `null`,
   * without `jwt`, turns authentication off.
   */
  token: string | null;
  /**
   * Signed identities besides the token: JWTs checked against the issuer's key set, each caller confined to its
   * tenant's runs and to what its roles allow (docs/security.md). @default none
   */
  jwt?: JwtSettings | null;
  /** Fastify's logger. @default false */
  logger?: boolean;
  /** Time between heartbeat comments on an SSE stream. @default 15000 */
  heartbeatMs?: number;
  /** Time between two state queries of an SSE stream. @default 250 */
  pollIntervalMs?: number;
  /**
   * How long a control (approval, message, abort, pause, resume) waits for the run to take it: later, the request
   * fails with 504 `control_timeout` and the run refuses it. @default 10000 (`DEFAULT_CONTROL_TIMEOUT_MS`)
   */
  controlTimeoutMs?: number;
  /** Largest request body in bytes; a larger one is refused with 413, the limit named. @default 1048576 (1 MiB) */
  bodyLimit?: number;
  /** Serve the web page for runs at `/ui` (its data still needs the token). @default true */
  ui?: boolean;
  /**
   * Origins whose pages may call the gateway from a browser (CORS), e.g. `https://app.example.com`; `*` for any.
   * Empty: no CORS headers, so browsers allow only same-origin calls. @default []
   */
  corsOrigins?: string[];
  /**
   * The stream channel SSE streams are served from (`MemoryHub`, `RedisChannel`); workers publish to it, to the hub
   * through `POST /internal/v1/streams/:id`. Absent: every stream polls the run's state. @default none
   */
  stream?: StreamChannel;
  /**
   * How long a stream waits for a running run's first published event, once a worker has taken the run, before polling
   * its state instead (a loaded worker's first publish can take a second or more). @default 3000
   */
  attachWaitMs?: number;
  /** How long a stream token from `POST /v1/runs/:id/stream-token` is accepted. @default 300000 */
  streamTokenTtlMs?: number;
}

/** 1 MiB: a conversation carried in a start request fits many times over; what does not belongs in a blob store. */
export const DEFAULT_BODY_LIMIT = 1_048_576;

/** Stream tokens travel in the query string: they are cut from the URLs the logger writes. */
const logSerializers = {
  req: (request: FastifyRequest) => ({ method: request.method, url: request.url.replace(/([?&]token=)[^&]*/g, '$1[redacted]'), remoteAddress: request.ip }),
};

/** Builds the gateway; call `listen` to serve, or `inject` to test. Closing it ends open streams and result waits. */
export function buildGateway(opts: GatewayOptions): FastifyInstance {
  if (opts.token !== null && !opts.token.trim()) throw new Error('the gateway token must be a non-empty string (or null to turn authentication off)');
  const bodyLimit = opts.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const app = Fastify({ logger: opts.logger ? { serializers: logSerializers } : false, bodyLimit });
  const ctx: GatewayContext = {
    agents: opts.agents,
    heartbeatMs: opts.heartbeatMs ?? 15_000,
    pollIntervalMs: opts.pollIntervalMs ?? 250,
    controlTimeoutMs: opts.controlTimeoutMs ?? DEFAULT_CONTROL_TIMEOUT_MS,
    inflight: new Map(),
    streamTokens: streamTokens(opts.token, opts.streamTokenTtlMs ?? 300_000),
    // Within half a poll: a shared view is at most that much older than one of its own.
    states: sharedStates(Math.min(100, (opts.pollIntervalMs ?? 250) / 2)),
    degradedChecks: sharedReads<boolean>(200),
    ...(opts.stream ? { stream: opts.stream } : {}),
    attachWaitMs: opts.attachWaitMs ?? 3_000,
  };

  app.setErrorHandler((err, request, reply) => {
    // A method Fastify parses a body for (QUERY) fails that parse before it finds no route: a 405 still. The auth
    // hook's 401 comes first, so that probing without the token reveals nothing.
    if (request.is404 && !(err instanceof HttpError)) return notFound(request, reply);
    const http = unsupportedMediaType(err, request) ?? bodyTooLarge(err, bodyLimit) ?? toHttpError(err);
    if (http) return reply.code(http.statusCode).send(http.body());
    request.log.error({ err }, 'unexpected error');
    return reply.code(500).send({ error: { code: 'internal', message: 'internal error' } });
  });
  const routes = knownRoutes(app);
  const notFound = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    const allow = routes.methodsOf(path);
    if (allow.length) {
      return reply
        .code(405)
        .header('allow', allow.join(', '))
        .send({ error: { code: 'method_not_allowed', message: `${request.method} is not a method of ${path}: it takes ${allow.join(', ')}` } });
    }
    return reply.code(404).send({ error: { code: 'route_not_found', message: `no route ${request.method} ${path}` } });
  };
  app.setNotFoundHandler(notFound);
  if (opts.corsOrigins?.length) registerCors(app, opts.corsOrigins);
  registerAuth(app, {
    token: opts.token,
    ...(opts.jwt ? { jwt: jwtVerifier(opts.jwt) } : {}),
    streamTokens: ctx.streamTokens,
    tenantOf: (id) => opts.agents.tenantOf(id),
  });
  registerJsonOnly(app);
  registerRoutes(app, ctx);
  if (opts.stream) {
    registerStreamPublishRoute(app, opts.stream);
    registerStopRoutes(app);
  }
  if (opts.ui ?? true) registerUiRoutes(app);
  app.addHook('preClose', async () => {
    ctx.closing = true;
    const ends = [...ctx.inflight.values()];
    for (const request of ctx.inflight.keys()) request.abort(new Error('the gateway is closing'));
    // Also those whose client left already: a state query of theirs in a retry's backoff outlives the abort.
    await Promise.all(ends);
  });
  endConnectionsOnClose(app);
  return app;
}

/**
 * The gateway's routes as they are registered, so that a method a known path does not take is 405 with `Allow`, not
 * a 404 that says the path does not exist.
 */
function knownRoutes(app: FastifyInstance): { methodsOf(path: string): string[] } {
  const routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  app.addHook('onRoute', ({ url, method }) => {
    // `:param` matches one segment, as Fastify's router does (an id's `/` is sent as %2F).
    const pattern = new RegExp(`^${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:\w+/g, '[^/]+')}$`);
    const known = routes.find((r) => r.pattern.source === pattern.source) ?? routes[routes.push({ pattern, methods: new Set() }) - 1]!;
    for (const m of [method].flat()) known.methods.add(m);
  });
  return {
    methodsOf: (path) => {
      const methods = new Set(routes.filter((r) => r.pattern.test(path)).flatMap((r) => [...r.methods]));
      return ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => methods.has(m));
    },
  };
}

/**
 * The close waits for every connection to end, and Node ends only those idle when it begins: one on which no request
 * came yet (a browser's preconnect) or whose response ends later (a stream the close aborted, a request in flight)
 * would hold the close open until the client drops it or keepAliveTimeout (72 s) passes. These end here: the first at
 * once, the others once their last response is sent.
 */
function endConnectionsOnClose(app: FastifyInstance): void {
  const inFlight = new Map<Socket, number>();
  let closing = false;
  const endIfIdle = (socket: Socket) => closing && !inFlight.get(socket) && socket.destroySoon();
  app.server.on('connection', (socket: Socket) => {
    inFlight.set(socket, 0);
    socket.once('close', () => inFlight.delete(socket));
  });
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    if (!inFlight.has(socket)) return;
    inFlight.set(socket, inFlight.get(socket)! + 1);
    response.once('close', () => {
      // A socket already closed is gone from the map and stays gone.
      if (!inFlight.has(socket)) return;
      inFlight.set(socket, inFlight.get(socket)! - 1);
      endIfIdle(socket);
    });
  });
  app.addHook('preClose', (done) => {
    closing = true;
    for (const socket of inFlight.keys()) endIfIdle(socket);
    done();
  });
}

/**
 * CORS for the listed origins. Its hook answers preflights before the auth hook (a preflight carries no token);
 * no credentials mode, since the gateway authenticates with a header, not cookies.
 */
function registerCors(app: FastifyInstance, origins: string[]): void {
  void app.register(cors, {
    origin: origins.includes('*') ? '*' : origins,
    methods: ['GET', 'POST', 'PUT', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', 'last-event-id'],
    exposedHeaders: ['location', 'www-authenticate'],
    maxAge: 600,
  });
}

/**
 * JSON bodies only: Fastify would hand a `text/plain` body to the routes as a string, and the schema check would
 * answer 400 for what is a wrong content type.
 */
function registerJsonOnly(app: FastifyInstance): void {
  app.removeContentTypeParser('text/plain');
}

/** Fastify's 415 says only "Unsupported Media Type": this one names the type sent and the one expected. */
function unsupportedMediaType(err: unknown, request: FastifyRequest): HttpError | undefined {
  if ((err as { code?: unknown } | null)?.code !== 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return undefined;
  const sent = request.headers['content-type'] ? `Content-Type: ${request.headers['content-type']}` : 'no Content-Type';
  return new HttpError(415, 'unsupported_media_type', `the body must be JSON (Content-Type: application/json); the request has ${sent}`);
}

/** Fastify's 413 says only "Request body is too large": this one states the limit. */
function bodyTooLarge(err: unknown, limit: number): HttpError | undefined {
  if ((err as { code?: unknown } | null)?.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') return undefined;
  return new HttpError(413, 'payload_too_large', `the body is larger than the gateway's limit of ${byteSize(limit)} (${limit.toLocaleString('en-US')} bytes)`, { limitBytes: limit });
}

const byteSize = (n: number): string => (n % 1_048_576 === 0 ? `${n / 1_048_576} MiB` : n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);
