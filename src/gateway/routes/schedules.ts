/**
 * Agent schedules: `/v1/schedules` over `AgentClient.schedules`. A schedule created by a signed identity belongs to its
 * tenant, and so does every run it starts; another tenant's schedule is no schedule at all (404, as one that does not
 * exist), and never in its list. Roles as for runs: a viewer reads, an operator creates, pauses, triggers and deletes.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AgentScheduleNotFoundError } from '../../client';
import { ScheduleViewSchema } from '../../common/schedule';
import type { GatewayContext } from '../context';
import { callerTenant, ownerOf } from '../identity';
import { answer, ScheduleDeletedSchema, ScheduleListSchema, ScheduleTriggeredSchema } from '../responses';
import { CreateScheduleBodySchema, parseOr400, ScheduleListQuerySchema, ScheduleNoteBodySchema, ScheduleParamsSchema, TriggerScheduleBodySchema } from '../schemas';

export function registerScheduleRoutes(app: FastifyInstance, { agents }: GatewayContext): void {
  const { schedules } = agents;

  /** The schedule the path names, once it is known to be the caller's tenant's (the service's: any). */
  async function scheduleOf(request: FastifyRequest): Promise<string> {
    const { scheduleId } = parseOr400(ScheduleParamsSchema, request.params, 'path');
    const tenant = callerTenant(request.caller);
    if (tenant !== null && (await schedules.tenantOf(scheduleId)) !== tenant) throw new AgentScheduleNotFoundError(scheduleId);
    return scheduleId;
  }

  app.post('/v1/schedules', async (request, reply) => {
    const body = parseOr400(CreateScheduleBodySchema, request.body, 'schedule');
    const owner = ownerOf(request.caller);
    // The body goes as given (the run input unresolved), as `AgentClient.schedules.create` sends it.
    const view = await schedules.create(request.body as typeof body, owner ? { owner } : {});
    reply.code(201).header('location', `/v1/schedules/${encodeURIComponent(view.scheduleId)}`);
    return answer(ScheduleViewSchema, view);
  });

  app.get('/v1/schedules', async (request) => {
    const { limit } = parseOr400(ScheduleListQuerySchema, request.query, 'query');
    const tenant = callerTenant(request.caller);
    return answer(ScheduleListSchema, { schedules: await schedules.list({ ...(limit !== undefined ? { limit } : {}), ...(tenant !== null ? { tenant } : {}) }) });
  });

  app.get('/v1/schedules/:scheduleId', async (request) => answer(ScheduleViewSchema, await schedules.describe(await scheduleOf(request))));

  for (const name of ['pause', 'unpause'] as const) {
    app.post(`/v1/schedules/:scheduleId/${name}`, async (request) => {
      const scheduleId = await scheduleOf(request);
      const { note } = parseOr400(ScheduleNoteBodySchema, request.body ?? {}, `${name} input`);
      return answer(ScheduleViewSchema, await schedules[name](scheduleId, note));
    });
  }

  app.post('/v1/schedules/:scheduleId/trigger', async (request, reply) => {
    const scheduleId = await scheduleOf(request);
    const { overlap } = parseOr400(TriggerScheduleBodySchema, request.body ?? {}, 'trigger input');
    await schedules.trigger(scheduleId, overlap !== undefined ? { overlap } : {});
    return reply.code(202).send(answer(ScheduleTriggeredSchema, { scheduleId, triggered: true }));
  });

  app.delete('/v1/schedules/:scheduleId', async (request) => {
    const scheduleId = await scheduleOf(request);
    await schedules.delete(scheduleId);
    return answer(ScheduleDeletedSchema, { scheduleId, deleted: true });
  });
}
