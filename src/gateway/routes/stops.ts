/**
 * `POST /internal/v1/stops` and `GET /internal/v1/stops?after=&waitMs=`: the hub's relay of model-call stops between
 * workers (stream/stops.ts). A worker whose run stopped a call it does not hold posts the stop; workers with calls in
 * flight long-poll for the next. Internal: it takes the gateway's token and is not in the OpenAPI document.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { CallStopSchema, STOP_POLL_MS, StopBoard } from '../../stream/stops';
import { parseOr400 } from '../schemas';

const ReadQuerySchema = z.strictObject({
  after: z.coerce.number().int().nonnegative().optional(),
  waitMs: z.coerce.number().int().min(0).max(STOP_POLL_MS).default(0),
});

export function registerStopRoutes(app: FastifyInstance, board = new StopBoard()): void {
  app.post('/internal/v1/stops', async (request, reply) => {
    board.post(parseOr400(CallStopSchema, request.body, 'body'));
    return reply.code(204).send();
  });
  app.get('/internal/v1/stops', async (request, reply) => {
    const { after, waitMs } = parseOr400(ReadQuerySchema, request.query, 'query');
    // A worker that stops listening closes its poll: the wait ends with it.
    const left = new AbortController();
    reply.raw.once('close', () => left.abort());
    return board.read(after, waitMs, left.signal);
  });
  app.addHook('preClose', async () => board.wakeAll());
}
