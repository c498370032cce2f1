/**
 * `POST /internal/v1/streams/:id`: where workers publish a run's events to the gateway's channel (the embedded hub,
 * `AGENT_STREAM_URL`); `GET` reads them back (a retried model call re-attaching to the text streamed before).
 * `POST /internal/v1/workers`: a worker's hello, every 10 s (`GET /v1/health` names the workers that do not say it).
 * Internal: they take the gateway's token (never a stream token) and are not in the OpenAPI document.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { StreamEvent } from '../../common/stream';
import { isOffset, START, type HearsWorkers, type Readable, type StreamChannel } from '../../stream/channel';
import { parseOr400, RunParamsSchema } from '../schemas';

/** Events are the workers' own: only their shape is checked, as an envelope of typed objects. */
const PublishSchema = z.object({ events: z.array(z.looseObject({ type: z.string() })).min(1).max(1_000) });

const ReadQuerySchema = z.strictObject({
  after: z.string().refine((s) => s === START || isOffset(s), 'an offset such as 0-0 or 1732590000000-42').default(START),
  count: z.coerce.number().int().min(1).max(1_000).default(1_000),
});

const HelloSchema = z.strictObject({ identity: z.string().min(1).max(200), taskQueue: z.string().max(1_000).optional() });

export function registerStreamPublishRoute(app: FastifyInstance, channel: StreamChannel & Partial<Readable> & Partial<HearsWorkers>): void {
  app.post('/internal/v1/workers', async (request, reply) => {
    const hello = parseOr400(HelloSchema, request.body, 'body');
    await channel.hello?.(hello);
    return reply.code(204).send();
  });

  app.get('/internal/v1/streams/:id', async (request) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    const { after, count } = parseOr400(ReadQuerySchema, request.query, 'query');
    return channel.read ? channel.read(id, after.trim(), count) : { entries: [], gap: true };
  });

  app.post('/internal/v1/streams/:id', async (request) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    const { events } = parseOr400(PublishSchema, request.body, 'body');
    return { offsets: await channel.publish(id, events as StreamEvent[]) };
  });
}
