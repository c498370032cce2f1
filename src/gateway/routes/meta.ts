/** Unauthenticated routes: liveness and the OpenAPI document. */
import type { FastifyInstance } from 'fastify';
import { openApiDocument } from '../openapi';
import { answer, HealthSchema } from '../responses';

export function registerMetaRoutes(app: FastifyInstance): void {
  // Liveness of the gateway process only: a Temporal outage shows as 503 on the run routes.
  app.get('/healthz', async () => answer(HealthSchema, { status: 'ok' }));
  app.get('/openapi.json', async () => openApiDocument());
}
