/** Starting runs, reading them and waiting for them: `/v1/runs`, `/v1/runs/:id`, `/result` (time travel: `time-travel.ts`). */
import { setMaxListeners } from 'node:events';
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { AgentRunNotFoundError, runFailure } from '../../client';
import type { AgentRunInput } from '../../common/input';
import { abortOnClose, type GatewayContext } from '../context';
import { HttpError } from '../errors';
import { callerTenant, ownerOf, type Caller } from '../identity';
import { searchRuns } from '../../client/run-list';
import { answer, RunListSchema, RunResultSchema, RunStartedSchema } from '../responses';
import { RunStateViewSchema } from '../../common/view';
import { ListQuerySchema, MessagesQuerySchema, parseOr400, RunParamsSchema, StartRunBodySchema, StartRunQuerySchema } from '../schemas';

export function registerRunRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const { agents } = ctx;

  app.post('/v1/runs', async (request, reply) => {
    const { workflowId } = parseOr400(StartRunQuerySchema, request.query, 'query');
    parseOr400(StartRunBodySchema, request.body, 'agentRun input');
    if (workflowId !== undefined) await refuseOthersId(ctx, request.caller, workflowId);
    const owner = ownerOf(request.caller);
    // The body goes as given, as `AgentClient.start` sends it: defaults stay the worker's concern.
    const run = await agents.start(request.body as AgentRunInput, { workflowId, ...(owner ? { owner } : {}) });
    reply.code(201).header('location', `/v1/runs/${encodeURIComponent(run.workflowId)}`);
    return answer(RunStartedSchema, { workflowId: run.workflowId, runId: run.runId! });
  });

  app.get('/v1/runs', async (request) => {
    const filter = parseOr400(ListQuerySchema, request.query, 'query');
    // An empty window holds no runs: a valid query with an empty answer (the document cannot say "since <= until").
    if (filter.since && filter.until && Date.parse(filter.since) > Date.parse(filter.until)) return answer(RunListSchema, { runs: [] });
    const tenant = callerTenant(request.caller);
    const runs = await searchRuns(agents.client, { ...filter, ...(tenant !== null ? { tenant } : {}) });
    return answer(RunListSchema, { runs: runs as z.input<typeof RunListSchema>['runs'] });
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

/**
 * A workflow id is one space for every tenant: a signed identity may not start a run under the id of another tenant's
 * run, even a closed one (the id would then lead that tenant to this run). Refused as a run still open is, so that
 * nothing more is told than that the id is taken.
 */
export async function refuseOthersId(ctx: GatewayContext, caller: Caller, workflowId: string): Promise<void> {
  const tenant = callerTenant(caller);
  if (tenant === null) return;
  const owner = await ctx.agents.tenantOf(workflowId).catch((err: unknown) => {
    if (err instanceof AgentRunNotFoundError) return tenant;
    throw err;
  });
  if (owner !== tenant) throw new HttpError(409, 'already_started', `an agent run with id ${workflowId} is already running`);
}
