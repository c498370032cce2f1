/**
 * Who sent a control (approve, reject, edit, a message, pause, resume, abort, a budget's extension): carried as `by` in
 * each signal's and update's payload, so history holds it, and recorded by the run beside each decision and in its
 * `controls` log (docs/approvals.md, "Who decided").
 */
import { z } from 'zod';

export const ActorSchema = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('service') }).strict().describe('A backend with the service credentials (the gateway\'s token, the library without a `by`).'),
    z
      .object({ kind: z.literal('user'), sub: z.string().min(1).max(200), tenant: z.string().min(1).max(200).optional() })
      .strict()
      .describe('A person the gateway authenticated: their subject and tenant.'),
    z.object({ kind: z.literal('operator'), name: z.string().min(1).max(200) }).strict().describe('An operator at the CLI (their login name) or `temporal` directly.'),
  ])
  .describe('Who sent a control: absent in a payload means the service.');

export type Actor = z.infer<typeof ActorSchema>;

/** A control that names no one was sent with the service's credentials. */
export const SERVICE_ACTOR: Actor = Object.freeze({ kind: 'service' }) as Actor;

/** How an actor is shown on a line: `service`, `user alice (acme)`, `operator bob`. */
export function actorLabel(a: Actor | undefined): string {
  if (!a || a.kind === 'service') return 'service';
  if (a.kind === 'user') return `user ${a.sub}${a.tenant ? ` (${a.tenant})` : ''}`;
  return `operator ${a.name}`;
}
