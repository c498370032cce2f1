/**
 * The HTTP gateway: a Fastify server over `AgentClient` for services and front ends that do not embed a Temporal
 * client. JSON routes under `/v1/runs`, Server-Sent Events for following a run, one error shape
 * `{ error: { code, message } }`, bearer-token auth. See docs/gateway.md.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { DEFAULT_CONTROL_TIMEOUT_MS, type AgentClient } from '../client';
import { registerAuth } from './auth';
import type { GatewayContext } from './context';
import { toHttpError } from './errors';
import { registerRoutes } from './routes';
import { registerUiRoutes } from './routes/ui';

export { HttpError, type ErrorBody } from './errors';
export { openApiDocument } from './openapi';

/** Options of `buildGateway`. */
export interface GatewayOptions {
  agents: AgentClient;
  /** The bearer token every route but `/healthz` and `/openapi.json` requires; `null` turns authentication off. */
  token: string | null;
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
  /** Largest request body in bytes. @default 1048576 */
  bodyLimit?: number;
  /** Serve the web page for runs at `/ui` (its data still needs the token). @default true */
  ui?: boolean;
}

/** Builds the gateway; call `listen` to serve, or `inject` to test. Closing it ends open streams and result waits. */
export function buildGateway(opts: GatewayOptions): FastifyInstance {
  if (opts.token !== null && !opts.token.trim()) throw new Error('the gateway token must be a non-empty string (or null to turn authentication off)');
  const app = Fastify({ logger: opts.logger ?? false, bodyLimit: opts.bodyLimit ?? 1_048_576 });
  const ctx: GatewayContext = {
    agents: opts.agents,
    heartbeatMs: opts.heartbeatMs ?? 15_000,
    pollIntervalMs: opts.pollIntervalMs ?? 250,
    controlTimeoutMs: opts.controlTimeoutMs ?? DEFAULT_CONTROL_TIMEOUT_MS,
    inflight: new Set(),
  };

  app.setErrorHandler((err, request, reply) => {
    const http = toHttpError(err);
    if (http) return reply.code(http.statusCode).send(http.body());
    request.log.error({ err }, 'unexpected error');
    return reply.code(500).send({ error: { code: 'internal', message: 'internal error' } });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: { code: 'route_not_found', message: `no route ${request.method} ${request.url.split('?')[0]}` } }),
  );
  registerAuth(app, opts.token);
  registerRoutes(app, ctx);
  if (opts.ui ?? true) registerUiRoutes(app);
  app.addHook('preClose', async () => {
    for (const request of ctx.inflight) request.abort(new Error('the gateway is closing'));
  });
  return app;
}
