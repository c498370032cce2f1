/**
 * Request schemas of the gateway: bodies are the client's own zod schemas, so HTTP validates exactly what
 * `AgentClient` does; query strings and path parameters are the gateway's. The OpenAPI document is built from these.
 */
import { z } from 'zod';
import { AbortInputSchema, ApproveInputSchema, parseWith, runInputSchemas, SendMessageInputSchema } from '../common/input';
import { ScheduleIdSchema } from '../common/schedule';
export { CreateScheduleInputSchema as CreateScheduleBodySchema, ScheduleNoteSchema as ScheduleNoteBodySchema, TriggerScheduleInputSchema as TriggerScheduleBodySchema } from '../common/schedule';
import { AgentState } from '../common/states';
import { MemoryKeySchema, MemoryListQuerySchema, MemoryNamespaceSchema } from '../common/memory';
import { HttpError } from './errors';

/**
 * The body of `POST /v1/runs`: the `agentRun` input without `resume`, which only the workflow (continue-as-new) and
 * `fork` set. A forged snapshot from outside would skip the checks the input schema makes.
 */
export const StartRunBodySchema = runInputSchemas().AgentRunInputSchema.omit({ resume: true });
export { AbortInputSchema as AbortBodySchema, ApproveInputSchema as ApproveBodySchema, SendMessageInputSchema as SendMessageBodySchema };

const flag = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');

/**
 * A run's workflow id, as the gateway takes one everywhere (path, query, bodies): what `POST /v1/runs` accepts and the
 * ids it and fork make (`agent-<random>`, `<id>-fork-<step>-<hex>`, a sub-agent's `<parent>/<agent>-<n>`).
 */
export const RunIdSchema = z.string().regex(/^[A-Za-z0-9._:@/-]{1,200}$/, 'must be 1-200 characters of [A-Za-z0-9._:@/-]');
const workflowIdSchema = RunIdSchema;

/** A step as a path or query parameter: digits only, so that a missing or wrong one is named as such, not as `NaN`. */
const stepNumber = z
  .preprocess(
    (v) => (typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : v),
    z.number({ error: (issue) => (issue.input === undefined ? 'required: a step number (0, 1, ...; see `agent history`)' : 'must be a step number (0, 1, ...; see `agent history`)') }).int().min(0),
  )
  .meta({ type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

/** Query strings are strict, as bodies are: a misspelt parameter (`?statee=PAUSED`) is refused, not ignored. */
const query = <S extends z.ZodRawShape>(shape: S) => z.strictObject(shape);

export const StartRunQuerySchema = query({
  workflowId: workflowIdSchema
    .optional()
    .describe('Workflow id for an idempotent start (409 `already_started` while a run with it is open). Default `agent-<random>`.'),
});
export const MessagesQuerySchema = query({ messages: flag.optional().describe('`1` or `true` includes the conversation (it can be large).') });
export const ListQuerySchema = query({
  state: z
    .enum(Object.values(AgentState) as [AgentState, ...AgentState[]])
    .optional()
    .describe('Only runs whose `AgentState` is this.'),
  limit: z.coerce.number().int().min(1).max(1_000).optional().describe('Most runs returned (default 20).'),
  q: z.string().min(1).max(200).optional().describe('Text in the workflow id or the prompt, any case (filtered by the gateway over at most 1,000 runs).'),
  agent: z.string().min(1).max(100).optional().describe('Runs of this named agent (filtered by the gateway).'),
  since: z.iso.datetime({ offset: true }).optional().describe('Started at or after this time (ISO 8601).'),
  until: z.iso.datetime({ offset: true }).optional().describe('Started at or before this time (ISO 8601).'),
  parent: workflowIdSchema.optional().describe('Children of this workflow (sub-agents), by the server\'s ParentWorkflowId.'),
  forkOf: RunIdSchema.optional().describe('Forks of this run (filtered by the gateway).'),
  schedule: ScheduleIdSchema.optional().describe("Runs this schedule started, by the server's TemporalScheduledById."),
});
export const ScheduleParamsSchema = z.object({ scheduleId: ScheduleIdSchema.describe("The schedule's id.") });
export const ScheduleListQuerySchema = query({ limit: z.coerce.number().int().min(1).max(1_000).optional().describe('Most schedules returned (default 100).') });
export const RunParamsSchema = z.object({ id: RunIdSchema.describe("The run's workflow id; URL-encode it (sub-agent ids contain `/`).") });
export const StepParamsSchema = RunParamsSchema.extend({ step: stepNumber });
export const DiffQuerySchema = query({ from: stepNumber.describe('The earlier step.'), to: stepNumber.describe('The later step.') });
/** `GET /v1/runs/:id/diff?against=<id>`: two runs side by side (a run and a what-if fork of it) instead of two steps. */
export const RunsDiffQuerySchema = query({ against: workflowIdSchema.describe('The run to compare this one with, as it is now.') });
/** The query of the three stream routes. A new EventSource cannot set `Last-Event-ID`, so a page that reopens one passes it here. */
export const StreamQuerySchema = query({
  lastEventId: z.string().optional().describe('Resume after this event id, as `Last-Event-ID` does, for a new EventSource (which cannot set the header); the header wins.'),
  from: z
    .enum(['start', 'now'])
    .optional()
    .describe('`now`: a stream served from the stream channel starts with the next event instead of the run\'s first (a polled stream ignores it). Default `start`.'),
});
/** `/events` also takes a stream token, since a browser's EventSource cannot send the Authorization header. */
export const EventsQuerySchema = StreamQuerySchema.extend({
  token: z.string().optional().describe('A stream token from `POST /v1/runs/{id}/stream-token` for this run, instead of the bearer token (for an EventSource).'),
}).strict();
const NoQuerySchema = query({});
/** `/v1/memory/:namespace` and `/v1/memory/:namespace/keys/:key` (routes/memory.ts). */
export const MemoryNamespaceParamsSchema = z.object({ namespace: MemoryNamespaceSchema });
export const MemoryKeyParamsSchema = MemoryNamespaceParamsSchema.extend({ key: MemoryKeySchema });

/**
 * Each route's query parameters, by method and route: the gateway refuses any other with 400 naming it, and the OpenAPI
 * document lists exactly these. A route not here takes none.
 */
export const ROUTE_QUERIES: Readonly<Record<string, z.ZodObject>> = {
  'POST /v1/runs': StartRunQuerySchema,
  'GET /v1/runs': ListQuerySchema,
  'GET /v1/runs/:id': MessagesQuerySchema,
  'GET /v1/runs/:id/steps/:step': MessagesQuerySchema,
  // Two steps of the run (`from`, `to`), or with `against` a step of each of two runs; each defaults (routes/time-travel.ts).
  'GET /v1/runs/:id/diff': DiffQuerySchema.partial().extend(RunsDiffQuerySchema.partial().shape),
  'GET /v1/runs/:id/events': EventsQuerySchema,
  'GET /v1/runs/:id/ui-message-stream': StreamQuerySchema,
  'GET /v1/runs/:id/ag-ui': StreamQuerySchema,
  'GET /v1/memory/:namespace': MemoryListQuerySchema,
  'GET /v1/schedules': ScheduleListQuerySchema,
};

/** The query schema of a route (`GET /v1/runs`): the one in `ROUTE_QUERIES`, else none. */
export const routeQuery = (method: string, url: string): z.ZodObject => ROUTE_QUERIES[`${method === 'HEAD' ? 'GET' : method} ${url}`] ?? NoQuerySchema;

/** Throws a 400 naming each query parameter `schema` does not take, and what it takes: checked before anything else is. */
export function refuseUnknownParameters(schema: z.ZodObject, value: unknown, route: string): void {
  const given = value && typeof value === 'object' ? Object.keys(value) : [];
  const known = Object.keys(schema.shape);
  const unknown = given.filter((name) => !known.includes(name));
  if (!unknown.length) return;
  const names = unknown.map((n) => `"${n}"`).join(', ');
  const takes = known.length ? `it takes ${known.join(', ')}` : 'it takes none';
  throw new HttpError(400, 'invalid_input', `Invalid query: unknown parameter${unknown.length > 1 ? 's' : ''} ${names} for ${route} (${takes})`);
}

/** The body of `POST /v1/runs/:id/fork`, as `AgentClient.fork` takes it. */
export const ForkBodySchema = z
  .object({
    /** The step to carry on from: 0 is the run before its start (a fresh run of the same input); the last, where it ended, is refused. */
    fromStep: z.number().int().min(0),
    /** The new run's workflow id. @default `<id>-fork-<step>-<6 hex chars>` */
    workflowId: workflowIdSchema.optional(),
    /** A what-if fork's edits of the step it starts from (`AgentClient.fork`'s `edits`). */
    edits: z
      .object({
        toolResults: z.record(z.string().min(1), z.string()).optional().describe('Tool results by tool call id: one in the conversation is replaced, one made later is replaced when it comes.'),
        message: z.string().min(1).optional().describe('A user message for the next model call.'),
        model: z.string().min(1).optional().describe('The model from the fork on.'),
        systemPrompt: z.string().min(1).optional().describe('The system prompt from the fork on.'),
      })
      .strict()
      .optional(),
    /** Reuse the original's recorded model answers while the fork's requests are the same. @default true with `edits` */
    replay: z.boolean().optional(),
  })
  .strict();

/** Parses or throws a 400 whose message names each bad field, e.g. `Invalid query: limit: Too small: ...`. */
export function parseOr400<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const parsed = parseWith(schema, value, what);
  if (!parsed.ok) throw new HttpError(400, 'invalid_input', parsed.error);
  return parsed.value;
}
