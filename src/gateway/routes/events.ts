/**
 * `POST /v1/runs/:id/stream-token`: a short-lived token for that run's stream, for browsers (see ../stream-token.ts).
 *
 * `GET /v1/runs/:id/events`: Server-Sent Events built on `AgentRunHandle.watch`. The response opens once the first
 * state view arrives (an unknown run is still a JSON 404), carries one SSE event per watch event with a resume
 * cursor as its id, a heartbeat comment every `heartbeatMs`, and ends after `end`, on an error, when the client
 * goes away or when the gateway closes. The watch loop stops with the response.
 *
 * `GET /v1/runs/:id/ui-message-stream`: the same events as the Vercel AI SDK's UI message stream (../ui-message-stream.ts).
 *
 * `GET /v1/runs/:id/ag-ui`: the same events as AG-UI events (../ag-ui.ts).
 */
import { once } from 'node:events';
import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RunStateView } from '../../common/view';
import { WorkflowNotFoundError } from '@temporalio/client';
import { AgentRunNotFoundError } from '../../client';
import { watchRun } from '../../client/watch';
import { modelCallDegraded } from '../../client/activity-view';
import { abortOnClose, type GatewayContext } from '../context';
import { callerTenant } from '../identity';
import { HttpError, toHttpError } from '../errors';
import { answer, RunEventSchemas, StreamTokenSchema, type RunEventName } from '../responses';
import { EventsQuerySchema, parseOr400, RunParamsSchema } from '../schemas';
import { isPastHead, START } from '../../stream/channel';
import { serveLive } from '../live-events';
import { uiMessageStreamFormat } from '../ui-message-stream';
import { agUiFormat } from '../ag-ui';
import type { EventFormat } from '../event-format';
import { EventCursor, parseStreamId, type SseEvent } from '../sse-cursor';

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
  app.post('/v1/runs/:id/stream-token', async (request, reply) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    // An unknown run is a 404 here, so that a page renewing its token stops instead of asking again and again.
    await ctx.agents.client.workflow.getHandle(id).describe().catch((err: unknown) => {
      throw err instanceof WorkflowNotFoundError ? new AgentRunNotFoundError(id) : err;
    });
    // The stream it opens checks the run's tenant again, as this request's did (auth.ts).
    return reply.code(201).send(answer(StreamTokenSchema, { workflowId: id, ...ctx.streamTokens.issue(id, callerTenant(request.caller)) }));
  });

  app.get('/v1/runs/:id/events', (request, reply) => serveRunEvents(ctx, request, reply, watchFormat));
  app.get('/v1/runs/:id/ui-message-stream', (request, reply) =>
    serveRunEvents(ctx, request, reply, uiMessageStreamFormat(parseOr400(RunParamsSchema, request.params, 'path').id)),
  );
  app.get('/v1/runs/:id/ag-ui', (request, reply) => serveRunEvents(ctx, request, reply, agUiFormat(parseOr400(RunParamsSchema, request.params, 'path').id)));
}

/** Each event's data goes out through its schema (responses.ts), the one the OpenAPI document describes it with. */
const watchFormat: EventFormat = {
  event: (type, id, data) => {
    const schema = RunEventSchemas[type as RunEventName];
    if (!schema) throw new Error(`no schema for the stream event ${JSON.stringify(type)} (responses.ts RunEventSchemas)`);
    return formatSseEvent({ type: type as SseEvent['type'], id, data: answer(schema, data as never) });
  },
};

/** The events of run `:id`, from the channel or by polling, resumed after `Last-Event-ID`, written in `format`. */
export async function serveRunEvents(ctx: GatewayContext, request: FastifyRequest, reply: FastifyReply, format: EventFormat): Promise<void> {
  const { id } = parseOr400(RunParamsSchema, request.params, 'path');
  // The two other formats take no `token` (the route's check refused it): the same schema reads what they take.
  const query = parseOr400(EventsQuerySchema, request.query, 'query');
  const header = request.headers['last-event-id'];
  const lastEventId = (Array.isArray(header) ? header[0] : header) ?? query.lastEventId;
  // One id format whether the stream came from the channel or by polling: `<offset>_<cursor>` (sse-cursor.ts).
  const resumeFrom = parseStreamId(lastEventId);
  let cursor = new EventCursor(resumeFrom?.cursor, resumeFrom?.offset);
  const raw = reply.raw;
  const { signal, dispose } = abortOnClose(ctx, reply);
  let heartbeat: NodeJS.Timeout | undefined;
  let opened = false;

  const writable = () => !raw.destroyed && !raw.writableEnded;
  const write = async (chunk: string) => {
    // A slow reader holds the watch back instead of piling events up in memory.
    if (writable() && !raw.write(chunk)) await once(raw, 'drain', { signal });
  };
  const open = (view?: RunStateView) => {
    reply.hijack();
    // The headers hooks set (CORS) go too: a hijacked reply sends only what is written here.
    raw.writeHead(200, { ...(reply.getHeaders() as OutgoingHttpHeaders), ...SSE_HEADERS, ...format.headers });
    raw.write(`retry: ${RETRY_MS}\n\n${format.start?.(view) ?? ''}`);
    opened = true;
    heartbeat = setInterval(() => writable() && raw.write(': heartbeat\n\n'), ctx.heartbeatMs);
  };

  try {
    // A stream with a channel; a watcher that resumes goes on from its id's offset, skipping what it had by polling.
    if (ctx.stream) {
      const handle = ctx.agents.handle(id);
      // From the server alone: a state query per attaching watcher costs the worker a workflow task each, and times
      // out when a hundred attach at once.
      const closed = await ctx.agents.client.workflow
        .getHandle(id)
        .describe()
        .then(
          (d) => d.status.name !== 'RUNNING',
          (err: unknown) => {
            throw err instanceof WorkflowNotFoundError ? new AgentRunNotFoundError(id) : err;
          },
        );
      const head = resumeFrom || query.from === 'now' ? await ctx.stream.head(id).catch(() => null) : null;
      // No id this stream sent is past its end: replaying to such an id would send lower ids than it, and taking it as
      // caught up would hide events the watcher never had. Refused before anything is sent, as a bad parameter is.
      if (resumeFrom && isPastHead(resumeFrom.offset, head)) {
        throw new HttpError(
          400,
          'invalid_input',
          `Last-Event-ID ${lastEventId!.trim()} is past the end of this run's stream (its last event is ${head}): not an id this stream sent; reconnect without it to read the run from the start`,
          { head },
        );
      }
      const after = resumeFrom ? resumeFrom.offset : query.from === 'now' ? (head ?? START) : START;
      // Only a format that opens with the state (AG-UI's snapshot) reads it here: a reconnect otherwise costs no query.
      const view = format.startsWithState ? await handle.state({ signal }) : undefined;
      const fallback = await serveLive(ctx.stream, id, after, closed, ctx.attachWaitMs ?? 3_000, {
        open: () => opened || open(view),
        write: (type, eventId, data) => write(format.event(type, eventId, data)),
        state: () => handle.state({ signal }),
        // Started, task scheduled, started, then completed (or failed): a worker has run the workflow's first task.
        taken: () => ctx.agents.client.workflow.getHandle(id).describe().then((d) => d.historyLength >= 4),
        degraded: () => (ctx.degradedChecks ? ctx.degradedChecks.read(id, () => modelCallDegraded(ctx.agents.client.workflow, id), signal) : Promise.resolve(false)),
        signal,
      }, resumeFrom?.cursor);
      if (!fallback) return;
      if (!opened) open(view);
      request.log.warn({ run: id, reason: fallback.reason }, 'SSE stream degraded to polling the state');
      cursor = new EventCursor(fallback.cursor, fallback.offset);
      await write(format.event('stream', cursor.id, { status: 'degraded', reason: fallback.reason }));
    }
    const handle = ctx.agents.handle(id);
    // Every watcher of the run that polls shares the reads (shared-state.ts): fifty cost the worker what one does.
    const run = { workflowId: id, state: ({ signal: own }: { signal?: AbortSignal }) => ctx.states.read(id, () => handle.state(), own) };
    await watchRun(
      run,
      async (event) => {
        for (const e of cursor.next(event)) await write(format.event(e.type, e.id, e.data));
      },
      {
        signal,
        intervalMs: ctx.pollIntervalMs,
        onView: (view) => {
          if (!opened) open(view);
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
      const e = cursor.error(http?.code ?? 'internal', http?.message ?? 'internal error');
      await write(format.event(e.type, e.id, e.data)).catch(() => undefined);
    }
  } finally {
    clearInterval(heartbeat);
    dispose();
    if (opened && format.end && writable()) raw.write(format.end());
    if (opened || signal.aborted) raw.end();
  }
}
