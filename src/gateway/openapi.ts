/**
 * The OpenAPI 3.1 document of the gateway, generated: every request body, query, path parameter, response body and
 * stream event is the zod schema the route validates with or answers through (schemas.ts, responses.ts, common/view.ts,
 * ag-ui.ts, ui-message-stream.ts), turned into JSON Schema by `z.toJSONSchema` (the input side for requests, the
 * output side for responses). This file holds only the operations' words and their wiring.
 */
import { z } from 'zod';
import { AgUiEventSchema } from './ag-ui';
import {
  ActivityListSchema,
  ApproveResultSchema,
  ErrorSchema,
  GatewayHealthSchema,
  HealthSchema,
  MachineSchema,
  OpenApiDocumentSchema,
  RunEventSchemas,
  RunForkedSchema,
  RunListSchema,
  RunResultSchema,
  RunStartedSchema,
  ScheduleDeletedSchema,
  ScheduleListSchema,
  ScheduleTriggeredSchema,
  SendMessageResultSchema,
  SignalSentSchema,
  SnapshotDiffSchema,
  StepListSchema,
  StepSchema,
  StreamTokenSchema,
} from './responses';
import { PendingApprovalSchema, RunStateViewSchema, RunUsageSchema, TransitionRecordSchema } from '../common/view';
import { ScheduleViewSchema } from '../common/schedule';
import {
  AbortBodySchema,
  ApproveBodySchema,
  CreateScheduleBodySchema,
  ForkBodySchema,
  MemoryKeyParamsSchema,
  MemoryNamespaceParamsSchema,
  routeQuery,
  RunParamsSchema,
  ScheduleNoteBodySchema,
  ScheduleParamsSchema,
  SendMessageBodySchema,
  StartRunBodySchema,
  StepParamsSchema,
  TriggerScheduleBodySchema,
} from './schemas';
import { ChunkSchema } from './ui-message-stream';
import { MemoryDeletedSchema, MemoryListSchema, MemorySchema, MemorySearchHitSchema, MemorySearchQuerySchema, MemorySearchResultSchema, MemoryWriteSchema } from '../common/memory';
import type { Role } from './identity';

type Json = Record<string, unknown>;

/** A request body's JSON schema: the schema's input side (defaults are optional), without the `$schema` marker. */
export function bodySchema(schema: z.ZodType): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input', override: withoutLongPatterns }) as Json;
  return rest;
}

/** An ISO 8601 regex of 400 characters says no more than `format: date-time`. */
function withoutLongPatterns({ jsonSchema }: { jsonSchema: Json }): void {
  if (jsonSchema.format === 'date-time') delete jsonSchema.pattern;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const jsonContent = (schema: Json) => ({ 'application/json': { schema } });
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [String(s), { $ref: `#/components/responses/E${s}` }]));

const ERROR_RESPONSES: Record<number, string> = {
  400: 'Invalid input: the message names each bad field, path parameter (a run id that is none) or query parameter the route does not take; on an event stream, also a `Last-Event-ID` past the end of the run\'s stream (`head` is its last id).',
  413: 'The body is larger than the gateway\'s limit, 1 MiB (1,048,576 bytes) unless the gateway was built with another `bodyLimit`; `limitBytes` says it.',
  415: 'The body is not JSON: `Content-Type` must be `application/json`.',
  401: 'Missing or wrong bearer token, or a JWT refused (`WWW-Authenticate: Bearer error="invalid_token", error_description` says why: expired, not yet valid, another issuer or audience, a signature that does not verify), or, on the event stream, a stream token that expired, is for another run or was altered: the message says which.',
  403: 'The caller\'s role does not allow this operation (`forbidden`): `requiredRole` names the role it needs (`x-required-role` of the operation).',
  404: 'No run with this id (`run_not_found`), which is also the answer for a run of another tenant, no such step (`step_not_found`), no memory under this key in the caller\'s tenant (`memory_not_found`), or no agent schedule with this id (`schedule_not_found`), also the answer for a schedule of another tenant.',
  409: 'The run has ended (`run_ended`: `state` is how it ended, e.g. `ABORTED`, when the server still has its result, `executionStatus` Temporal\'s status of its workflow execution, e.g. `COMPLETED`), refused the control (`update_rejected`: `message` is the run\'s reason, `update` the control), or is already running (`already_started`); or a schedule with this id exists already (`schedule_exists`).',
  422: 'The run failed (`run_failed`): `message` is the workflow\'s reason, `failureType` its failure type, `result` its counters when known.',
  503: 'The Temporal server is unavailable.',
  504:
    'No worker answered the state query in time (`query_timeout`), or no run took a control by its deadline (`control_timeout`: nothing was ' +
    'recorded and the run refuses it later; `workerPolling` false means no worker polls `taskQueue`).',
};

/**
 * The named response schemas: each a component of the document, by this name. Everything a response answers is one
 * of these or made of them; parts used once are inlined.
 */
const COMPONENTS: Record<string, z.ZodType> = {
  Error: ErrorSchema,
  Health: HealthSchema,
  GatewayHealth: GatewayHealthSchema,
  OpenApiDocument: OpenApiDocumentSchema,
  Usage: RunUsageSchema,
  PendingApproval: PendingApprovalSchema,
  Transition: TransitionRecordSchema,
  RunState: RunStateViewSchema,
  RunStarted: RunStartedSchema,
  RunResult: RunResultSchema,
  RunList: RunListSchema,
  Step: StepSchema,
  StepList: StepListSchema,
  SnapshotDiff: SnapshotDiffSchema,
  RunForked: RunForkedSchema,
  SignalSent: SignalSentSchema,
  ApproveResult: ApproveResultSchema,
  StreamToken: StreamTokenSchema,
  SendMessageResult: SendMessageResultSchema,
  Machine: MachineSchema,
  ActivityList: ActivityListSchema,
  Schedule: ScheduleViewSchema,
  ScheduleList: ScheduleListSchema,
  ScheduleTriggered: ScheduleTriggeredSchema,
  ScheduleDeleted: ScheduleDeletedSchema,
  ...Object.fromEntries(Object.entries(RunEventSchemas).map(([name, schema]) => [runEventComponent(name), schema])),
  AgUiEvent: AgUiEventSchema,
  UiMessageChunk: ChunkSchema,
  Memory: MemorySchema,
  MemoryList: MemoryListSchema,
  MemorySearchHit: MemorySearchHitSchema,
  MemorySearchResult: MemorySearchResultSchema,
  MemoryDeleted: MemoryDeletedSchema,
};

function runEventComponent(name: string): string {
  return `RunEvent${name[0]!.toUpperCase()}${name.slice(1)}`;
}

/** The response components, generated from COMPONENTS on their output side (every field always there is required, none other allowed). */
export function responseSchemas(): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(COMPONENTS)) registry.add(schema, { id });
  const { schemas: generated } = z.toJSONSchema(registry, { io: 'output', uri: (id) => `#/components/schemas/${id}`, override: withoutLongPatterns }) as {
    schemas: Record<string, Json>;
  };
  return Object.fromEntries(Object.entries(generated).map(([id, { $schema: _dialect, $id: _id, ...schema }]) => [id, schema]));
}
/** The state view's components (common/view.ts), among `responseSchemas()`. */
export const viewSchemas = (): Record<string, Json> => {
  const all = responseSchemas();
  return Object.fromEntries(['Usage', 'PendingApproval', 'Transition', 'RunState'].map((id) => [id, all[id]!]));
};

const componentOf = (schema: z.ZodType): string => {
  const found = Object.entries(COMPONENTS).find(([, s]) => s === schema);
  if (!found) throw new Error('a response schema of the gateway is not among the document\'s components (openapi.ts COMPONENTS)');
  return found[0];
};

/** A route's parameters of one kind (`path`, `query`), from the zod schema it parses them with. */
function parameters(schema: z.ZodType, where: 'path' | 'query'): Json[] {
  const { properties = {}, required = [] } = z.toJSONSchema(schema, { io: 'input', override: withoutLongPatterns }) as {
    properties?: Record<string, Json>;
    required?: string[];
  };
  return Object.entries(properties).map(([name, { description, ...schema }]) => ({
    name,
    in: where,
    ...(where === 'path' || required.includes(name) ? { required: true } : {}),
    ...(description ? { description } : {}),
    schema,
  }));
}

/**
 * The query parameters of a route (`GET /v1/runs/:id`), from the zod schema the gateway checks its query with
 * (`ROUTE_QUERIES`): the document lists exactly what the gateway takes, and it refuses the rest.
 */
export const queryParameters = (method: string, route: string): Json[] => parameters(routeQuery(method, route), 'query');

/** One SSE event as schemathesis and OpenAPI 3.1 read a `text/event-stream` schema: its fields, `data` JSON of `data`. */
const sseEvent = (data: Json, event?: string): Json => ({
  type: 'object',
  required: ['data', ...(event ? ['event'] : [])],
  properties: {
    ...(event ? { event: { const: event } } : { event: { const: 'message' } }),
    id: { type: 'string' },
    retry: { type: 'integer' },
    data: { type: 'string', contentMediaType: 'application/json', contentSchema: data },
  },
});

/** The events of each stream: `/events` names each by its kind (`event:`), the other two send plain `data:` lines. */
const STREAMS = {
  events: { oneOf: Object.keys(RunEventSchemas).map((name) => sseEvent(ref(runEventComponent(name)), name)) },
  agUi: sseEvent(ref('AgUiEvent')),
  uiMessages: {
    type: 'object',
    required: ['data'],
    properties: {
      event: { const: 'message' },
      id: { type: 'string' },
      retry: { type: 'integer' },
      // The stream ends with `data: [DONE]`, which is no JSON.
      data: { type: 'string', if: { const: '[DONE]' }, else: { contentMediaType: 'application/json', contentSchema: ref('UiMessageChunk') } },
    },
  },
};

type Method = 'get' | 'post' | 'put' | 'delete';
/** One operation: its words, and the zod schemas of what it takes and answers. */
interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  /** The path parameters' schema; none for a path without. */
  params?: z.ZodObject;
  body?: { schema: z.ZodType; required: boolean };
  /** The success status, what it means, and the schema the route answers through (or the stream's events). */
  ok: { status: number; description: string; schema: z.ZodType } | { status: 200; description: string; stream: keyof typeof STREAMS };
  errors: number[];
  /**
   * The weakest role a signed identity needs for it (`x-required-role`); the service token may do everything. The
   * auth hook enforces it from here (auth.ts). Absent only on public operations (`security: []`).
   */
  role?: Role;
  security?: Json[];
  lastEventId?: boolean;
  /** OpenAPI links from the answer to the operations a client follows next (`runId`: the new run's id in the answer). */
  links?: boolean;
}

const lastEventIdHeader = { name: 'Last-Event-ID', in: 'header', description: 'Resume after this event id.', schema: { type: 'string' } };

const SSE_DESCRIPTION = [
  'Server-Sent Events, each with `event:` its kind, `data:` one JSON object (the component `RunEvent<Kind>`) and `id:`',
  '`<offset>_<step>.<callNumber>.<attempt>.<chars>`, the same on every stream route, from the channel or polled: `<offset>` (`<n>-<n>`) the',
  'channel offset of the last event the watcher has from the channel (`0-0`: none), the rest what it has by polling.',
  '`?from=now` starts a channel stream at the next event.',
  `Events: ${Object.keys(RunEventSchemas).map((type) => `\`${type}\``).join(', ')}.`,
  'Reconnecting with `Last-Event-ID` (or `?lastEventId=`) sends only transitions after that step and text after that',
  'many characters. A `: heartbeat` comment comes every 15 s. A browser\'s EventSource, which cannot send the',
  'Authorization header, passes a token from `POST /v1/runs/{id}/stream-token` as `?token=`. See docs/gateway.md.',
].join(' ');

const control = (name: 'abort' | 'pause' | 'resume', summary: string, body?: z.ZodType): Operation => ({
  operationId: `${name}Run`,
  summary,
  role: 'operator',
  params: RunParamsSchema,
  ...(body ? { body: { schema: body, required: false } } : {}),
  ok: { status: 202, description: 'The run took the control (a pause takes effect before its next piece of work).', schema: SignalSentSchema },
  errors: [400, 401, 404, 409, 503, 504],
});

const scheduleControl = (name: 'pause' | 'unpause', summary: string): Operation => ({
  operationId: `${name}Schedule`,
  summary,
  role: 'operator',
  params: ScheduleParamsSchema,
  body: { schema: ScheduleNoteBodySchema, required: false },
  ok: { status: 200, description: 'The schedule as it is now.', schema: ScheduleViewSchema },
  errors: [400, 401, 404, 503],
});

/** Agent schedules: runs started on a cron expression or an interval (Temporal Schedules); docs/schedules.md. */
const SCHEDULE_OPERATIONS: Record<string, Partial<Record<Method, Operation>>> = {
  '/v1/schedules': {
    post: {
      operationId: 'createSchedule',
      role: 'operator',
      summary: 'Create a schedule that starts a run of one input on a cron expression or an interval',
      description:
        'Exactly one of `cron` and `intervalMs`. The input is checked as `POST /v1/runs` checks it; a cron or time zone the server cannot read is 400 naming the field. ' +
        'Each run\'s workflow id is `<scheduleId>-<the time it was due>`, and it belongs to the caller\'s tenant as a run it starts does.',
      body: { schema: CreateScheduleBodySchema, required: true },
      ok: { status: 201, description: 'Created; `Location` is the schedule\'s URL.', schema: ScheduleViewSchema },
      errors: [400, 401, 409, 503],
    },
    get: {
      operationId: 'listSchedules',
      role: 'viewer',
      summary: 'List agent schedules (from visibility: a schedule just created or deleted can take a moment to appear or leave)',
      ok: { status: 200, description: 'Schedules.', schema: ScheduleListSchema },
      errors: [400, 401, 503],
    },
  },
  '/v1/schedules/:scheduleId': {
    get: {
      operationId: 'getSchedule',
      role: 'viewer',
      summary: 'The schedule: its spec, policies, state, next times and the runs it started',
      params: ScheduleParamsSchema,
      ok: { status: 200, description: 'The schedule.', schema: ScheduleViewSchema },
      errors: [400, 401, 404, 503],
    },
    delete: {
      operationId: 'deleteSchedule',
      role: 'operator',
      summary: 'Delete the schedule (runs it started go on)',
      params: ScheduleParamsSchema,
      ok: { status: 200, description: 'Deleted.', schema: ScheduleDeletedSchema },
      errors: [400, 401, 404, 503],
    },
  },
  '/v1/schedules/:scheduleId/pause': { post: scheduleControl('pause', 'Pause the schedule: no run starts on its times until it is unpaused') },
  '/v1/schedules/:scheduleId/unpause': { post: scheduleControl('unpause', 'Unpause the schedule: runs start on its next times') },
  '/v1/schedules/:scheduleId/trigger': {
    post: {
      operationId: 'triggerSchedule',
      role: 'operator',
      summary: 'Start a run of the schedule now, paused or not',
      params: ScheduleParamsSchema,
      body: { schema: TriggerScheduleBodySchema, required: false },
      ok: { status: 202, description: 'The schedule was told to start a run.', schema: ScheduleTriggeredSchema },
      errors: [400, 401, 404, 503],
    },
  },
};

/** Every operation of the gateway, by path (Fastify's `:param` form) and method. */
export const OPERATIONS: Record<string, Partial<Record<Method, Operation>>> = {
  '/healthz': { get: { operationId: 'health', summary: 'Liveness', security: [], ok: { status: 200, description: 'The gateway is up.', schema: HealthSchema }, errors: [] } },
  '/openapi.json': {
    get: { operationId: 'openapi', summary: 'This document', security: [], ok: { status: 200, description: 'OpenAPI 3.1 document.', schema: OpenApiDocumentSchema }, errors: [] },
  },
  '/v1/runs': {
    post: {
      operationId: 'startRun',
      role: 'operator',
      summary: 'Start a run',
      body: { schema: StartRunBodySchema, required: true },
      ok: { status: 201, description: 'Started; `Location` is the run\'s URL.', schema: RunStartedSchema },
      errors: [400, 401, 409, 503],
      links: true,
    },
    get: {
      operationId: 'listRuns',
      role: 'viewer',
      summary: 'List runs: open runs first (newest first), then closed runs (most recently closed first)',
      ok: { status: 200, description: 'Runs.', schema: RunListSchema },
      errors: [400, 401, 503],
    },
  },
  '/v1/runs/:id': {
    get: { operationId: 'getRunState', role: 'viewer', summary: 'The run\'s state view', params: RunParamsSchema, ok: { status: 200, description: 'State view.', schema: RunStateViewSchema }, errors: [400, 401, 404, 503, 504] },
  },
  '/v1/runs/:id/result': {
    get: {
      operationId: 'getRunResult',
      role: 'viewer',
      summary: 'Wait for the run to end',
      description: 'Holds the request until the run ends. 200 for COMPLETED and ABORTED, 422 `run_failed` for a failed run.',
      params: RunParamsSchema,
      ok: { status: 200, description: 'The run\'s result.', schema: RunResultSchema },
      errors: [401, 404, 422, 503],
    },
  },
  '/v1/runs/:id/events': {
    get: {
      operationId: 'streamRunEvents',
      role: 'viewer',
      summary: 'Follow the run (Server-Sent Events)',
      description: SSE_DESCRIPTION,
      security: [{ bearer: [] }, { streamToken: [] }],
      params: RunParamsSchema,
      lastEventId: true,
      ok: { status: 200, description: 'An event stream.', stream: 'events' },
      errors: [401, 404, 503, 504],
    },
  },
  '/v1/runs/:id/ui-message-stream': {
    get: {
      operationId: 'streamRunUiMessages',
      role: 'viewer',
      summary: 'Follow the run as the Vercel AI SDK\'s UI message stream (protocol v1), for useChat',
      description: [
        'The events of `GET /v1/runs/{id}/events` mapped to UI message chunks (`x-vercel-ai-ui-message-stream: v1`): `start` (messageId: the run id),',
        'one step per model call with its `text-start`/`text-delta`/`text-end`, `tool-input-available`, `tool-output-available` or `tool-output-error` (dynamic tools),',
        '`tool-approval-request`, `data-restart` before the text of a retried model call, `finish`, `abort` or `error` at the end, then `[DONE]`. Retries, gaps and degraded notices are transient `data-*` parts.',
        'The last chunk of each event carries the event\'s id; a `Last-Event-ID` resumes after it.',
      ].join(' '),
      params: RunParamsSchema,
      lastEventId: true,
      ok: { status: 200, description: 'A UI message stream.', stream: 'uiMessages' },
      errors: [401, 404, 503, 504],
    },
  },
  '/v1/runs/:id/ag-ui': {
    get: {
      operationId: 'streamRunAgUi',
      role: 'viewer',
      summary: 'Follow the run as AG-UI events, for @ag-ui/client',
      description: [
        'The events of `GET /v1/runs/{id}/events` mapped to AG-UI events, one per `data:` line (threadId and runId: the run id): `RUN_STARTED` and a `STATE_SNAPSHOT`',
        '(the state view) when the stream opens, `TEXT_MESSAGE_START`/`CONTENT`/`END` per model call and attempt, `TOOL_CALL_START`/`ARGS`/`END` once per call and `TOOL_CALL_RESULT`,',
        '`STEP_FINISHED`/`STEP_STARTED` (stepName: the state) and a `STATE_DELTA` of `/state`, `/stateSince` and `/step` per transition, `CUSTOM` `approval`, `restart`, `retry`, `gap`',
        '(followed by a `STATE_SNAPSHOT`) and `stream` (degraded), and at the end a `STATE_SNAPSHOT`, then `RUN_FINISHED` (outcome `success` with the answer as `result`, or `cancelled`)',
        'or `RUN_ERROR` (`run_failed`, or the stream error\'s code). The last AG-UI event of each run event carries its id; a `Last-Event-ID` resumes after it. See docs/gateway.md.',
      ].join(' '),
      params: RunParamsSchema,
      lastEventId: true,
      ok: { status: 200, description: 'An AG-UI event stream.', stream: 'agUi' },
      errors: [401, 404, 503, 504],
    },
  },
  '/v1/runs/:id/stream-token': {
    post: {
      operationId: 'createStreamToken',
      role: 'viewer',
      summary: 'A short-lived token for this run\'s event stream, for browsers',
      description:
        'The token is accepted as `?token=` by `GET /v1/runs/{id}/events` of this run only, until `expiresAt` (5 minutes by default). It is signed with a key derived from the gateway token, so any gateway with that token accepts it.',
      params: RunParamsSchema,
      ok: { status: 201, description: 'Issued.', schema: StreamTokenSchema },
      errors: [400, 401, 404, 503],
    },
  },
  '/v1/runs/:id/steps/:step': {
    get: {
      operationId: 'getRunStep',
      role: 'viewer',
      summary: 'Time travel: the run\'s state right after a step',
      params: StepParamsSchema,
      ok: { status: 200, description: 'State view at the step.', schema: RunStateViewSchema },
      errors: [400, 401, 404, 503],
    },
  },
  '/v1/runs/:id/steps': {
    get: {
      operationId: 'listRunSteps',
      role: 'viewer',
      summary: 'Time travel: the run\'s steps (its state changes), for diff and fork',
      params: RunParamsSchema,
      ok: { status: 200, description: 'Steps, oldest first.', schema: StepListSchema },
      errors: [400, 401, 404, 503, 504],
    },
  },
  '/v1/runs/:id/diff': {
    get: {
      operationId: 'diffRunSteps',
      role: 'viewer',
      summary: 'Time travel: what changed in the run between two steps, or against another run (`?against=`, a what-if fork of it)',
      params: RunParamsSchema,
      ok: { status: 200, description: 'Each added, removed or changed value with its path.', schema: SnapshotDiffSchema },
      errors: [400, 401, 404, 503],
    },
  },
  '/v1/runs/:id/fork': {
    post: {
      operationId: 'forkRun',
      role: 'operator',
      summary: 'Time travel: start a new run from the run\'s state right after a step',
      description:
        'The new run carries the snapshot of that step (conversation included) and its `origin` names the run and step. Step 0 is the ' +
        'run before its start: a fork from it is a fresh run of the same input. The last step, where the run ended, is refused ' +
        '(400 `invalid_input`); a step the run does not hold is 404 `step_not_found`.',
      params: RunParamsSchema,
      body: { schema: ForkBodySchema, required: true },
      ok: { status: 201, description: 'Started; `Location` is the new run\'s URL.', schema: RunForkedSchema },
      errors: [400, 401, 404, 409, 503],
      links: true,
    },
  },
  '/v1/health': {
    get: {
      operationId: 'getGatewayHealth',
      role: 'operator',
      summary: "The stream's health: the gateway's channel, the task queue's workers, and which of them it has not heard from",
      ok: { status: 200, description: 'The workers, and the silent ones.', schema: GatewayHealthSchema },
      errors: [401, 403, 503],
    },
  },
  '/v1/machine': {
    get: {
      operationId: 'getMachine',
      role: 'viewer',
      summary: 'The state machine\'s table: its rows (event, guard, target) and, for each state, the events it accepts and the states each may lead to',
      ok: { status: 200, description: 'The table.', schema: MachineSchema },
      errors: [401],
    },
  },
  '/v1/runs/:id/activities': {
    get: {
      operationId: 'listRunActivities',
      role: 'viewer',
      summary: 'The run\'s activities from its history: each model call\'s latency, tokens and model; each tool\'s and compaction\'s time',
      params: RunParamsSchema,
      ok: { status: 200, description: 'Activities, oldest first.', schema: ActivityListSchema },
      errors: [400, 401, 404, 503],
    },
  },
  '/v1/runs/:id/abort': { post: control('abort', 'Abort the run (work in flight is cancelled; the run ends ABORTED)', AbortBodySchema) },
  '/v1/runs/:id/pause': { post: control('pause', 'Pause the run before its next piece of work') },
  '/v1/runs/:id/resume': { post: control('resume', 'Resume a paused run (or cancel a pending pause)') },
  '/v1/runs/:id/approvals': {
    post: {
      operationId: 'approveToolCall',
      role: 'approver',
      summary: 'Approve or reject a tool call waiting for approval',
      params: RunParamsSchema,
      body: { schema: ApproveBodySchema, required: true },
      ok: { status: 200, description: 'Decided.', schema: ApproveResultSchema },
      errors: [400, 401, 404, 409, 503, 504],
    },
  },
  '/v1/runs/:id/messages': {
    post: {
      operationId: 'sendMessage',
      role: 'operator',
      summary: 'Queue a user message for the model\'s next call, or with `interrupt` stop the work in flight for it',
      params: RunParamsSchema,
      body: { schema: SendMessageBodySchema, required: true },
      ok: { status: 200, description: 'Queued.', schema: SendMessageResultSchema },
      errors: [400, 401, 404, 409, 503, 504],
    },
  },
  '/v1/memory/:namespace': {
    get: {
      operationId: 'listMemories',
      role: 'viewer',
      summary: 'List a namespace\'s memories by key, a page at a time',
      description: 'Memories of the caller\'s tenant (the default tenant for the service). See docs/memory.md.',
      params: MemoryNamespaceParamsSchema,
      ok: { status: 200, description: 'A page of memories; `next` leads to the next.', schema: MemoryListSchema },
      errors: [400, 401],
    },
  },
  '/v1/memory/:namespace/search': {
    post: {
      operationId: 'searchMemories',
      role: 'viewer',
      summary: 'Search a namespace\'s memories: any word of the query in the key or text, stemmed, best first',
      params: MemoryNamespaceParamsSchema,
      body: { schema: MemorySearchQuerySchema, required: true },
      ok: { status: 200, description: 'Matching memories, best first.', schema: MemorySearchResultSchema },
      errors: [400, 401],
    },
  },
  '/v1/memory/:namespace/keys/:key': {
    get: {
      operationId: 'getMemory',
      role: 'viewer',
      summary: 'One memory',
      params: MemoryKeyParamsSchema,
      ok: { status: 200, description: 'The memory.', schema: MemorySchema },
      errors: [400, 401, 404],
    },
    put: {
      operationId: 'putMemory',
      role: 'operator',
      summary: 'Write a memory (created, or replaced whole with its version one higher)',
      description: 'With `idempotencyKey`, a retried write writes nothing again and answers the memory as the first left it.',
      params: MemoryKeyParamsSchema,
      body: { schema: MemoryWriteSchema, required: true },
      ok: { status: 200, description: 'The memory as written.', schema: MemorySchema },
      errors: [400, 401],
    },
    delete: {
      operationId: 'deleteMemory',
      role: 'operator',
      summary: 'Delete a memory',
      params: MemoryKeyParamsSchema,
      ok: { status: 200, description: 'Deleted.', schema: MemoryDeletedSchema },
      errors: [400, 401, 404],
    },
  },
  ...SCHEDULE_OPERATIONS,
};

/** Links from a started run to what a client does with it next; `runId` is the answer's `workflowId`. */
function runLinks(): Json {
  const runId = { id: '$response.body#/workflowId' };
  const follow: Record<string, string> = {
    GetState: 'getRunState',
    GetResult: 'getRunResult',
    ListSteps: 'listRunSteps',
    ListActivities: 'listRunActivities',
    StreamEvents: 'streamRunEvents',
    StreamAgUi: 'streamRunAgUi',
    StreamUiMessages: 'streamRunUiMessages',
    CreateStreamToken: 'createStreamToken',
    Abort: 'abortRun',
    Pause: 'pauseRun',
    Resume: 'resumeRun',
    Approve: 'approveToolCall',
    SendMessage: 'sendMessage',
    Fork: 'forkRun',
  };
  return Object.fromEntries(Object.entries(follow).map(([name, operationId]) => [name, { operationId, parameters: runId }]));
}

function operationObject(method: Method, path: string, op: Operation): Json {
  const success = 'stream' in op.ok
    ? { description: op.ok.description, content: { 'text/event-stream': { schema: STREAMS[op.ok.stream] } } }
    : { description: op.ok.description, content: jsonContent(ref(componentOf(op.ok.schema))), ...(op.links ? { links: runLinks() } : {}) };
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    ...(op.security ? { security: op.security } : {}),
    ...(op.role ? { 'x-required-role': op.role } : {}),
    parameters: [
      ...(op.params ? parameters(op.params, 'path') : []),
      ...(op.lastEventId ? [lastEventIdHeader] : []),
      ...queryParameters(method.toUpperCase(), path),
    ],
    ...(op.body ? { requestBody: { required: op.body.required, content: jsonContent(bodySchema(op.body.schema)) } } : {}),
    responses: { [String(op.ok.status)]: success, ...errors(...op.errors) },
  };
}

function buildDocument(): Json {
  const paths = Object.fromEntries(
    Object.entries(OPERATIONS).map(([path, ops]) => [
      path.replace(/:(\w+)/g, '{$1}'),
      Object.fromEntries(Object.entries(ops).map(([method, op]) => [method, operationObject(method as Method, path, op)])),
    ]),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Durable agent gateway',
      version: '1.0.0',
      description: 'HTTP access to `agentRun` workflows for services and front ends without a Temporal client.',
    },
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'The gateway\'s GATEWAY_TOKEN.' },
        streamToken: { type: 'apiKey', in: 'query', name: 'token', description: 'A token from `POST /v1/runs/{id}/stream-token`, for that run\'s event stream only.' },
      },
      schemas: responseSchemas(),
      responses: Object.fromEntries(
        Object.entries(ERROR_RESPONSES).map(([status, description]) => [`E${status}`, { description, content: jsonContent(ref('Error')) }]),
      ),
    },
  };
}

/**
 * Every route under /v1 answers 400 to a query parameter it does not take (and to a path parameter that is no id).
 * Every POST reads its body before its route runs, whether the route uses one or not (pause, resume): each answers
 * 413 to a body over the limit and 415 to one that is not JSON (the gateway has no other parser).
 */
function withCommonErrors(doc: Json): Json {
  for (const [route, path] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const operation of Object.values(path)) if (route.startsWith('/v1/')) Object.assign(operation.responses as Json, errors(400, 403));
    // PUT reads its body as POST does.
    for (const method of ['post', 'put']) if (path[method]) Object.assign(path[method].responses as Json, errors(413, 415));
  }
  return doc;
}

/**
 * The role an operation needs (`method` as Fastify gives it, `url` its route): from OPERATIONS; `service` for a route
 * that is in no operation (the workers' internal routes), which only the gateway's own token may call.
 */
export function requiredRole(method: string, url: string): Role | 'service' {
  const m = (method === 'HEAD' ? 'get' : method.toLowerCase()) as Method;
  return OPERATIONS[url]?.[m]?.role ?? 'service';
}

let cached: Json | undefined;
/** The document, built once. */
export const openApiDocument = (): Json => (cached ??= withCommonErrors(buildDocument()));
