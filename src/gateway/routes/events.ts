/**
 * `GET /v1/runs/:id/events`: Server-Sent Events built on `AgentRunHandle.watch`. The response opens once the first
 * state view arrives (an unknown run is still a JSON 404), carries one SSE event per watch event with a resume
 * cursor as its id, a heartbeat comment every `heartbeatMs`, and ends after `end`, on an error, when the client
 * goes away or when the gateway closes. The watch loop stops with the response.
 */
import { once } from 'node:events';
import type { FastifyInstance } from 'fastify';
import { abortOnClose, type GatewayContext } from '../context';
import { toHttpError } from '../errors';
import { parseOr400, RunParamsSchema } from '../schemas';
import { EventCursor, parseCursor, type SseEvent } from '../sse-cursor';

/** How long a browser's EventSource waits before reconnecting. */
const RETRY_MS = 2_000;

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  // nginx and similar proxies buffer responses unless told not to.
  'x-accel-buffering': 'no',
};

export const formatSseEvent = (e: SseEvent): string => `event: ${e.type}\nid: ${e.id}\ndata: ${JSON.stringify(e.data)}\n\n`;

export function registerEventRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.get('/v1/runs/:id/events', async (request, reply) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    const lastEventId = request.headers['last-event-id'];
    const cursor = new EventCursor(parseCursor(Array.isArray(lastEventId) ? lastEventId[0] : lastEventId));
    const raw = reply.raw;
    const { signal, dispose } = abortOnClose(ctx, reply);
    let heartbeat: NodeJS.Timeout | undefined;
    let opened = false;

    const writable = () => !raw.destroyed && !raw.writableEnded;
    const write = async (chunk: string) => {
      // A slow reader holds the watch back instead of piling events up in memory.
      if (writable() && !raw.write(chunk)) await once(raw, 'drain', { signal });
    };
    const open = () => {
      reply.hijack();
      raw.writeHead(200, SSE_HEADERS);
      raw.write(`retry: ${RETRY_MS}\n\n`);
      opened = true;
      heartbeat = setInterval(() => writable() && raw.write(': heartbeat\n\n'), ctx.heartbeatMs);
    };

    try {
      await ctx.agents.handle(id).watch(
        async (event) => {
          for (const e of cursor.next(event)) await write(formatSseEvent(e));
        },
        {
          signal,
          intervalMs: ctx.pollIntervalMs,
          onView: (view) => {
            if (!opened) open();
            cursor.observe(view);
          },
        },
      );
    } catch (err) {
      if (signal.aborted) {
        if (!opened) reply.hijack();
      } else if (!opened) {
        throw err; // nothing sent yet: an ordinary JSON error
      } else {
        const http = toHttpError(err);
        if (!http) request.log.error({ err }, 'SSE watch failed');
        await write(formatSseEvent(cursor.error(http?.code ?? 'internal', http?.message ?? 'internal error'))).catch(() => undefined);
      }
    } finally {
      clearInterval(heartbeat);
      dispose();
      if (opened || signal.aborted) raw.end();
    }
  });
}
