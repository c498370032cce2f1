/**
 * Who is calling: the one typed value the auth hook puts on every authenticated request (`request.caller`), for the
 * routes (tenant checks, roles) and for what records who did what. See docs/security.md.
 */

/** The roles a signed identity may hold, weakest first: each can do what the ones before it can. */
export const ROLES = ['viewer', 'operator', 'approver'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The authenticated caller.
 * - `service`: the gateway's own `GATEWAY_TOKEN` (or authentication off, `GATEWAY_INSECURE=1`): sees every tenant, may do everything.
 * - `user`: a JWT checked against the issuer's JWKS: `sub` the caller, `tenant` the tenant claim, `roles` the known roles it holds.
 * - `stream`: a stream token from `POST /v1/runs/:id/stream-token`, good for that run's event stream only; `tenant`
 *   is the tenant of the user it was issued to (null: issued to the service).
 */
export type Caller =
  | { kind: 'service' }
  | { kind: 'user'; sub: string; tenant: string; roles: Role[] }
  | { kind: 'stream'; workflowId: string; tenant: string | null };

/** The service caller: one value, since it carries nothing. */
export const SERVICE_CALLER: Caller = Object.freeze({ kind: 'service' });

/** The tenant whose runs the caller may see; null: every tenant (the service). */
export const callerTenant = (caller: Caller): string | null => (caller.kind === 'service' ? null : caller.tenant);

/** The owner a run this caller starts gets (`AgentClient.start`'s `owner`); undefined for the service: no tenant. */
export const ownerOf = (caller: Caller): { tenant: string; startedBy: string } | undefined =>
  caller.kind === 'user' ? { tenant: caller.tenant, startedBy: caller.sub } : undefined;

/**
 * Whether the caller holds `role` or a stronger one. The service holds every role; a stream token only `viewer`, and
 * only on the stream of its run (the auth hook takes it nowhere else).
 */
export function hasRole(caller: Caller, role: Role): boolean {
  if (caller.kind === 'service') return true;
  if (caller.kind === 'stream') return role === 'viewer';
  return caller.roles.some((held) => ROLES.indexOf(held) >= ROLES.indexOf(role));
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook (auth.ts) before any route runs; the service on public routes and with authentication off. */
    caller: Caller;
  }
}
