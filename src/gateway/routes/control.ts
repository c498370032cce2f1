/**
 * Steering a run: abort, pause and resume (202 with where the run stands), approvals and messages (200); each an
 * update with the gateway's deadline: 409 when the run refuses it, 504 when no run took it in time.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { actorOf } from '../actor';
import type { GatewayContext } from '../context';
import { answer, ApproveResultSchema, SendMessageResultSchema, SignalSentSchema } from '../responses';
import { AbortBodySchema, ApproveBodySchema, parseOr400, RunParamsSchema, SendMessageBodySchema } from '../schemas';

export function registerControlRoutes(app: FastifyInstance, { agents, controlTimeoutMs }: GatewayContext): void {
  const run = (params: unknown) => agents.handle(parseOr400(RunParamsSchema, params, 'path').id);
  // Each control names its caller (`by`), whom the run records beside the decision.
  const opts = (request: FastifyRequest) => ({ timeoutMs: controlTimeoutMs, by: actorOf(request) });

  app.post('/v1/runs/:id/abort', async (request, reply) => {
    const handle = run(request.params);
    const { reason } = parseOr400(AbortBodySchema, request.body ?? {}, 'abort input');
    const result = await handle.abort(reason, opts(request));
    return reply.code(202).send(answer(SignalSentSchema, { workflowId: handle.workflowId, signal: 'abort', sent: true, ...result }));
  });

  for (const name of ['pause', 'resume'] as const) {
    app.post(`/v1/runs/:id/${name}`, async (request, reply) => {
      const handle = run(request.params);
      const result = await handle[name](opts(request));
      return reply.code(202).send(answer(SignalSentSchema, { workflowId: handle.workflowId, signal: name, sent: true, ...result }));
    });
  }

  app.post('/v1/runs/:id/approvals', async (request) => {
    const handle = run(request.params);
    return answer(ApproveResultSchema, await handle.approve(parseOr400(ApproveBodySchema, request.body, 'approve input'), opts(request)));
  });

  app.post('/v1/runs/:id/messages', async (request) => {
    const handle = run(request.params);
    const { text, interrupt } = parseOr400(SendMessageBodySchema, request.body, 'sendMessage input');
    return answer(SendMessageResultSchema, await handle.sendMessage(text, { ...opts(request), interrupt }));
  });
}
