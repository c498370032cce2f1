/**
 * `POST /internal/v1/streams/:id`: where workers publish a run's events to the gateway's channel (the embedded hub,
 * `AGENT_STREAM_URL`). Internal: it takes the gateway's token (never a stream token) and is not in the OpenAPI document.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { StreamEvent } from '../../common/stream';
import type { StreamChannel } from '../../stream/channel';
import { parseOr400, RunParamsSchema } from '../schemas';

/** Events are the workers' own: only their shape is checked, as an envelope of typed objects. */
const PublishSchema = z.object({ events: z.array(z.looseObject({ type: z.string() })).min(1).max(1_000) });

export function registerStreamPublishRoute(app: FastifyInstance, channel: StreamChannel): void {
  app.post('/internal/v1/streams/:id', async (request) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    const { events } = parseOr400(PublishSchema, request.body, 'body');
    return { offsets: await channel.publish(id, events as StreamEvent[]) };
  });
}
