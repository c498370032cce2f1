/**
 * Who the gateway's caller is, as the run records it (`by` of each control, common/actor.ts): a person signed in with
 * a JWT by their `sub` and tenant; the gateway's own token (and a stream token, which sends no control) as the service.
 */
import type { FastifyRequest } from 'fastify';
import { SERVICE_ACTOR, type Actor } from '../common/actor';

/** The actor a control sent through this request is recorded as. */
export function actorOf(request: FastifyRequest): Actor {
  const caller = request.caller;
  return caller.kind === 'user' ? { kind: 'user', sub: caller.sub, tenant: caller.tenant } : SERVICE_ACTOR;
}
