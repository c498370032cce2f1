/** Steering a run: abort, pause and resume (signals, 202), approvals and messages (updates, 200 or 409 with the reason). */
import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from '../context';
import { AbortBodySchema, ApproveBodySchema, parseOr400, RunParamsSchema, SendMessageBodySchema } from '../schemas';

export function registerControlRoutes(app: FastifyInstance, { agents }: GatewayContext): void {
  const run = (params: unknown) => agents.handle(parseOr400(RunParamsSchema, params, 'path').id);

  app.post('/v1/runs/:id/abort', async (request, reply) => {
    const handle = run(request.params);
    const { reason } = parseOr400(AbortBodySchema, request.body ?? {}, 'abort input');
    await handle.abort(reason);
    return reply.code(202).send({ workflowId: handle.workflowId, signal: 'abort', sent: true });
  });

  for (const name of ['pause', 'resume'] as const) {
    app.post(`/v1/runs/:id/${name}`, async (request, reply) => {
      const handle = run(request.params);
      await handle[name]();
      return reply.code(202).send({ workflowId: handle.workflowId, signal: name, sent: true });
    });
  }

  app.post('/v1/runs/:id/approvals', async (request) => {
    const handle = run(request.params);
    return handle.approve(parseOr400(ApproveBodySchema, request.body, 'approve input'));
  });

  app.post('/v1/runs/:id/messages', async (request) => {
    const handle = run(request.params);
    return handle.sendMessage(parseOr400(SendMessageBodySchema, request.body, 'sendMessage input').text);
  });
}
