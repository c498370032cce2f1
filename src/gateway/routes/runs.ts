/** Starting runs, reading them and waiting for them: `/v1/runs`, `/v1/runs/:id`, `/result` (time travel: `time-travel.ts`). */
import { setMaxListeners } from 'node:events';
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { runFailure } from '../../client';
import type { AgentRunInput } from '../../common/input';
import { abortOnClose, type GatewayContext } from '../context';
import { HttpError } from '../errors';
import { searchRuns } from '../../client/run-list';
import { answer, RunListSchema, RunResultSchema, RunStartedSchema } from '../responses';
import { RunStateViewSchema } from '../../common/view';
import { ListQuerySchema, MessagesQuerySchema, parseOr400, RunParamsSchema, StartRunBodySchema, StartRunQuerySchema } from '../schemas';

export function registerRunRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const { agents } = ctx;

  app.post('/v1/runs', async (request, reply) => {
    const { workflowId } = parseOr400(StartRunQuerySchema, request.query, 'query');
    parseOr400(StartRunBodySchema, request.body, 'agentRun input');
    // The body goes as given, as `AgentClient.start` sends it: defaults stay the worker's concern.
    const run = await agents.start(request.body as AgentRunInput, { workflowId });
    reply.code(201).header('location', `/v1/runs/${encodeURIComponent(run.workflowId)}`);
    return answer(RunStartedSchema, { workflowId: run.workflowId, runId: run.runId! });
  });

  app.get('/v1/runs', async (request) => {
    const filter = parseOr400(ListQuerySchema, request.query, 'query');
    // An empty window holds no runs: a valid query with an empty answer (the document cannot say "since <= until").
    if (filter.since && filter.until && Date.parse(filter.since) > Date.parse(filter.until)) return answer(RunListSchema, { runs: [] });
    return answer(RunListSchema, { runs: (await searchRuns(agents.client, filter)) as z.input<typeof RunListSchema>['runs'] });
  });

  app.get('/v1/runs/:id', async (request) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    const { messages } = parseOr400(MessagesQuerySchema, request.query, 'query');
    return answer(RunStateViewSchema, await agents.handle(id).state({ includeMessages: messages ?? false }));
  });

  app.get('/v1/runs/:id/result', async (request, reply) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    const { signal, dispose } = abortOnClose(ctx, reply);
    // The SDK adds one abort listener per long poll and keeps it until the request (and its signal) is done.
    setMaxListeners(Infinity, signal);
    try {
      // The long poll is cancelled with the request, not left running until the run ends.
      const result = await agents.client.connection.withAbortSignal(signal, () => agents.handle(id).result());
      return answer(RunResultSchema, result as z.input<typeof RunResultSchema>);
    } catch (err) {
      if (signal.aborted) return reply.hijack().raw.end();
      const failure = runFailure(err);
      if (failure) throw new HttpError(422, 'run_failed', failure.reason, { failureType: failure.type ?? null, result: failure.result ?? null });
      throw err;
    } finally {
      dispose();
    }
  });
}
