/**
 * Request schemas of the gateway: bodies are the client's own zod schemas, so HTTP validates exactly what
 * `AgentClient` does; query strings and path parameters are the gateway's. The OpenAPI document is built from these.
 */
import { z } from 'zod';
import { AbortInputSchema, AgentRunInputSchema, ApproveInputSchema, parseWith, SendMessageInputSchema } from '../common/input';
import { AgentState } from '../common/states';
import { HttpError } from './errors';

/**
 * The body of `POST /v1/runs`: the `agentRun` input without `resume`, which only the workflow (continue-as-new) and
 * `fork` set. A forged snapshot from outside would skip the checks the input schema makes.
 */
export const StartRunBodySchema = AgentRunInputSchema.omit({ resume: true });
export { AbortInputSchema as AbortBodySchema, ApproveInputSchema as ApproveBodySchema, SendMessageInputSchema as SendMessageBodySchema };

const flag = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');

const workflowIdSchema = z.string().regex(/^[A-Za-z0-9._:@/-]{1,200}$/, 'must be 1-200 characters of [A-Za-z0-9._:@/-]');

export const StartRunQuerySchema = z.object({
  /** Idempotent start: a second POST with the same id while the run is open is refused with 409. @default `agent-<12 hex chars>` */
  workflowId: workflowIdSchema.optional(),
});
export const MessagesQuerySchema = z.object({ messages: flag.optional() });
export const ListQuerySchema = z.object({
  state: z.enum(Object.values(AgentState) as [AgentState, ...AgentState[]]).optional(),
  limit: z.coerce.number().int().min(1).max(1_000).optional(),
  /** Text in the workflow id or the prompt, any case. */
  q: z.string().trim().min(1).max(200).optional(),
  /** The named agent the run was started with. */
  agent: z.string().min(1).max(100).optional(),
  /** Started at or after / before this time (ISO 8601). */
  since: z.iso.datetime({ offset: true }).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
  /** Children of this workflow (sub-agents), by the server's ParentWorkflowId. */
  parent: workflowIdSchema.optional(),
  /** Forks of this run. */
  forkOf: z.string().min(1).max(200).optional(),
});
export const RunParamsSchema = z.object({ id: z.string().min(1) });
export const StepParamsSchema = RunParamsSchema.extend({ step: z.coerce.number().int().min(0) });
const stepNumber = z.coerce.number().int().min(0);
export const DiffQuerySchema = z.object({ from: stepNumber, to: stepNumber });
/** The body of `POST /v1/runs/:id/fork`, as `AgentClient.fork` takes it. */
export const ForkBodySchema = z
  .object({
    /** The step to carry on from: 0 is the run before its start (a fresh run of the same input); the last, where it ended, is refused. */
    fromStep: z.number().int().min(0),
    /** The new run's workflow id. @default `<id>-fork-<step>-<6 hex chars>` */
    workflowId: workflowIdSchema.optional(),
  })
  .strict();

/** Parses or throws a 400 whose message names each bad field, e.g. `Invalid query: limit: Too small: ...`. */
export function parseOr400<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const parsed = parseWith(schema, value, what);
  if (!parsed.ok) throw new HttpError(400, 'invalid_input', parsed.error);
  return parsed.value;
}
