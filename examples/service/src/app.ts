/** The HTTP API: start a run, stream what it does as Server-Sent Events, read its state. */
import { AgentRunNotFoundError, InvalidAgentInputError, type AgentClient } from 'durable-agent-worker/client';
import Fastify, { type FastifyInstance } from 'fastify';

export function buildApp(agents: AgentClient): FastifyInstance {
  const app = Fastify({ logger: true });
  app.setErrorHandler((err, _request, reply) => {
    const status = err instanceof InvalidAgentInputError ? 400 : err instanceof AgentRunNotFoundError ? 404 : 500;
    return reply.code(status).send({ error: err instanceof Error ? err.message : String(err) });
  });

  app.post<{ Body: { prompt?: string } }>('/runs', async (request, reply) => {
    const prompt = request.body?.prompt ?? '';
    const run = await agents.start({ prompt });
    return reply.code(201).send({ id: run.workflowId });
  });

  app.get<{ Params: { id: string } }>('/runs/:id', async (request) => agents.handle(request.params.id).state());

  // One SSE event per watch event (transition, text, approval, end); the stream ends with the run.
  app.get<{ Params: { id: string } }>('/runs/:id/events', async (request, reply) => {
    // The watch stops when the HTTP client goes away.
    const stop = new AbortController();
    reply.raw.once('close', () => stop.abort());
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    try {
      await agents.handle(request.params.id).watch(
        (event) => {
          reply.raw.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
        },
        { signal: stop.signal },
      );
    } catch (err) {
      if (!stop.signal.aborted) reply.raw.write(`event: error\ndata: ${JSON.stringify({ message: String(err) })}\n\n`);
    } finally {
      reply.raw.end();
    }
  });

  return app;
}
