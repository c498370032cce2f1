/** Time travel over a run's steps, as `agent history`, `diff` and `fork` do: `/steps`, `/steps/:step`, `/diff`, `/fork`. */
import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from '../context';
import { RunStateViewSchema } from '../../common/view';
import { answer, RunForkedSchema, SnapshotDiffSchema, StepListSchema } from '../responses';
import { DiffQuerySchema, ForkBodySchema, MessagesQuerySchema, parseOr400, RunParamsSchema, RunsDiffQuerySchema, StepParamsSchema } from '../schemas';

export function registerTimeTravelRoutes(app: FastifyInstance, { agents }: GatewayContext): void {
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
    // Two runs side by side (`?against=`), or two steps of one (`?from=&to=`).
    if (typeof request.query === 'object' && request.query !== null && 'against' in request.query) {
      const { against } = parseOr400(RunsDiffQuerySchema, request.query, 'query');
      return answer(SnapshotDiffSchema, await agents.diffRuns(id, against));
    }
    const { from, to } = parseOr400(DiffQuerySchema, request.query, 'query');
    return answer(SnapshotDiffSchema, await agents.handle(id).diff(from, to));
  });

  app.post('/v1/runs/:id/fork', async (request, reply) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    const { fromStep, workflowId, edits, replay } = parseOr400(ForkBodySchema, request.body ?? {}, 'fork input');
    const run = await agents.fork(id, fromStep, { workflowId, edits, replay });
    reply.code(201).header('location', `/v1/runs/${encodeURIComponent(run.workflowId)}`);
    return answer(RunForkedSchema, { workflowId: run.workflowId, runId: run.runId!, forkedFrom: { workflowId: id, step: fromStep } });
  });
}
