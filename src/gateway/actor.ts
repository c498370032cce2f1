/**
 * Who the gateway's caller is, as the run records it (`by` of each control, common/actor.ts). Until the gateway
 * authenticates people (issue 52, part 1: `request.caller`), every caller holds the gateway's one token: the service.
 */
import type { FastifyRequest } from 'fastify';
import { SERVICE_ACTOR, type Actor } from '../common/actor';

/** The actor a control sent through this request is recorded as. */
export function actorOf(_request: FastifyRequest): Actor {
  return SERVICE_ACTOR;
}
