/** Every route of the gateway; the OpenAPI test registers them on a bare instance to list them. */
import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from '../context';
import { registerControlRoutes } from './control';
import { registerEventRoutes } from './events';
import { registerInspectRoutes } from './inspect';
import { registerMetaRoutes } from './meta';
import { registerRunRoutes } from './runs';
import { registerTimeTravelRoutes } from './time-travel';

export function registerRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  registerMetaRoutes(app);
  registerRunRoutes(app, ctx);
  registerTimeTravelRoutes(app, ctx);
  registerInspectRoutes(app, ctx);
  registerControlRoutes(app, ctx);
  registerEventRoutes(app, ctx);
}
