/** Reading how a run went and what it can do: `/v1/machine` (the state machine's table) and `/v1/runs/:id/activities`. */
import type { FastifyInstance } from 'fastify';
import { isGrpcServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { AgentRunNotFoundError } from '../../client';
import { TERMINAL_STATES } from '../../common/states';
import { tableEdges, transitionTable } from '../../machine/machine';
import type { GatewayContext } from '../context';
import { runActivities } from '../run-activities';
import { parseOr400, RunParamsSchema } from '../schemas';
import { ActivityListSchema, answer, MachineSchema } from '../responses';

export function registerInspectRoutes(app: FastifyInstance, { agents }: GatewayContext): void {
  // The machine's own table, so that a picture of it is drawn from what the workflow runs, never from a copy.
  // `rows`: each edge with the event and the guard of the row it comes from (`via`: the entry row it detoured through).
  const rows = tableEdges().map(({ from, event, guard, to, via }) => ({ from, event, guard, to, ...(via ? { via } : {}) }));
  const machine = answer(MachineSchema, { initial: 'IDLE', terminal: [...TERMINAL_STATES], transitions: transitionTable(), rows });
  app.get('/v1/machine', async () => machine);

  app.get('/v1/runs/:id/activities', async (request) => {
    const { id } = parseOr400(RunParamsSchema, request.params, 'path');
    try {
      return answer(ActivityListSchema, { activities: await runActivities(agents.client, id) });
    } catch (err) {
      // Reading the history of a run that never existed is a gRPC NOT_FOUND, not the SDK's WorkflowNotFoundError.
      throw err instanceof WorkflowNotFoundError || isNotFound(err) ? new AgentRunNotFoundError(id) : err;
    }
  });
}

const GRPC_NOT_FOUND = 5;
const isNotFound = (err: unknown): boolean => {
  const grpc = (err as { cause?: unknown } | null)?.cause ?? err;
  return (isGrpcServiceError(grpc) && grpc.code === GRPC_NOT_FOUND) || (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND);
};
