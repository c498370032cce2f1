/** Time travel over a run's steps, as `agent history`, `diff` and `fork` do: `/steps`, `/steps/:step`, `/diff`, `/fork`. */
import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from '../context';
import { ownerOf } from '../identity';
import { refuseOthersId } from './runs';
import { RunStateViewSchema } from '../../common/view';
import { answer, RunForkedSchema, SnapshotDiffSchema, StepListSchema } from '../responses';
import { ForkBodySchema, MessagesQuerySchema, parseOr400, routeQuery, RunParamsSchema, StepParamsSchema } from '../schemas';

export function registerTimeTravelRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const { agents } = ctx;
  app.get('/v1/runs/:id/steps', async (request) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    return answer(StepListSchema, { steps: await agents.handle(id).steps() });
  });

  app.get('/v1/runs/:id/steps/:step', async (request) => {
    const { id, step } = parseOr400(StepParamsSchema, request.params, 'path');
    const { messages } = parseOr400(MessagesQuerySchema, request.query, 'query');
    return answer(RunStateViewSchema, await agents.handle(id).snapshotAt(step, { includeMessages: messages ?? false }));
  });

  app.get('/v1/runs/:id/diff', async (request) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    // Two steps of one run (`from` defaults to 0, `to` to the run's step now), or two runs side by side (`against`:
    // `from` is a step of this run, `to` of the other, each as it is now when not named).
    const { from, to, against } = parseOr400(routeQuery('GET', '/v1/runs/:id/diff'), request.query, 'query') as { from?: number; to?: number; against?: string };
    if (against !== undefined) return answer(SnapshotDiffSchema, await agents.diffRuns(id, against, { from, to }));
    const run = agents.handle(id);
    return answer(SnapshotDiffSchema, await run.diff(from ?? 0, to ?? (await run.state()).step));
  });

  app.post('/v1/runs/:id/fork', async (request, reply) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    const { fromStep, workflowId, edits, replay } = parseOr400(ForkBodySchema, request.body ?? {}, 'fork input');
    if (workflowId !== undefined) await refuseOthersId(ctx, request.caller, workflowId);
    const owner = ownerOf(request.caller);
    const run = await agents.fork(id, fromStep, { workflowId, edits, replay, ...(owner ? { owner } : {}) });
    reply.code(201).header('location', `/v1/runs/${encodeURIComponent(run.workflowId)}`);
    return answer(RunForkedSchema, { workflowId: run.workflowId, runId: run.runId!, forkedFrom: { workflowId: id, step: fromStep } });
  });
}
