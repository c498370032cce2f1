/** Every route of the gateway; the OpenAPI test registers them on a bare instance to list them. */
import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from '../context';
import { refuseUnknownParameters, routeQuery } from '../schemas';
import { registerControlRoutes } from './control';
import { registerEventRoutes } from './events';
import { registerHealthRoute } from './health';
import { registerInspectRoutes } from './inspect';
import { registerMemoryRoutes } from './memory';
import { registerMetaRoutes } from './meta';
import { registerRunRoutes } from './runs';
import { registerScheduleRoutes } from './schedules';
import { registerTimeTravelRoutes } from './time-travel';

export function registerRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  // Before any route reads its query: one that names a parameter the route does not take is refused, whatever else it has.
  app.addHook('preValidation', async (request) => {
    const url = request.routeOptions.url;
    if (url?.startsWith('/v1/')) refuseUnknownParameters(routeQuery(request.method, url), request.query, `${request.method} ${url}`);
  });
  registerMetaRoutes(app);
  registerRunRoutes(app, ctx);
  registerTimeTravelRoutes(app, ctx);
  registerInspectRoutes(app, ctx);
  registerControlRoutes(app, ctx);
  registerEventRoutes(app, ctx);
  registerMemoryRoutes(app, ctx);
  registerScheduleRoutes(app, ctx);
  registerHealthRoute(app, ctx);
}
