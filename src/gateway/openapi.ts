/**
 * The OpenAPI 3.1 document of the gateway, written by hand; request bodies come from the zod schemas the routes
 * validate with, and the state view from its zod schema in common/view.ts (`z.toJSONSchema`), so the document cannot
 * drift from what the gateway accepts or what a run answers.
 */
import { z } from 'zod';
import { AgentState } from '../common/states';
import { PendingApprovalSchema, RunStateViewSchema, RunUsageSchema, TransitionRecordSchema } from '../common/view';
import { AbortBodySchema, ApproveBodySchema, ForkBodySchema, routeQuery, SendMessageBodySchema, StartRunBodySchema } from './schemas';
import type { SseEvent } from './sse-cursor';

type Json = Record<string, unknown>;

/** A request body's JSON schema: the schema's input side (defaults are optional), without the `$schema` marker. */
export function bodySchema(schema: z.ZodType): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Json;
  return rest;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const jsonContent = (schema: Json) => ({ 'application/json': { schema } });
const ok = (description: string, schema: Json) => ({ description, content: jsonContent(schema) });
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [String(s), { $ref: `#/components/responses/E${s}` }]));
const body = (schema: z.ZodType, required = true) => ({ required, content: jsonContent(bodySchema(schema)) });

const idParam = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'The run\'s workflow id; URL-encode it (sub-agent ids contain `/`).',
  schema: { type: 'string', minLength: 1 },
};
const lastEventIdHeader = { name: 'Last-Event-ID', in: 'header', description: 'Resume after this event id.', schema: { type: 'string' } };
const agentStates = Object.values(AgentState);

const ERROR_RESPONSES: Record<number, string> = {
  400: 'Invalid input: the message names each bad field, or the query parameter the route does not take; on an event stream, also a `Last-Event-ID` past the end of the run\'s stream (`head` is its last id).',
  413: 'The body is larger than the gateway\'s limit, 1 MiB (1,048,576 bytes) unless the gateway was built with another `bodyLimit`; `limitBytes` says it.',
  415: 'The body is not JSON: `Content-Type` must be `application/json`.',
  401: 'Missing or wrong bearer token (or, on the event stream, a stream token that expired, is for another run or was altered: the message says which).',
  404: 'No run with this id (`run_not_found`), or no such step (`step_not_found`).',
  409: 'The run has ended (`run_ended`: `state` is how it ended, e.g. `ABORTED`, when the server still has its result, `executionStatus` Temporal\'s status of its workflow execution, e.g. `COMPLETED`), refused the control (`update_rejected`: `message` is the run\'s reason, `update` the control), or is already running (`already_started`).',
  422: 'The run failed (`run_failed`): `message` is the workflow\'s reason, `failureType` its failure type, `result` its counters when known.',
  503: 'The Temporal server is unavailable.',
  504:
    'No worker answered the state query in time (`query_timeout`), or no run took a control by its deadline (`control_timeout`: nothing was ' +
    'recorded and the run refuses it later; `workerPolling` false means no worker polls `taskQueue`).',
};

/**
 * The state view's schemas, generated from the zod schemas in common/view.ts (the output side: every field the view
 * always has is required, none other is allowed); the parts other responses share become components of their own.
 */
export function viewSchemas(): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  registry.add(RunUsageSchema, { id: 'Usage' });
  registry.add(PendingApprovalSchema, { id: 'PendingApproval' });
  registry.add(TransitionRecordSchema, { id: 'Transition' });
  registry.add(RunStateViewSchema, { id: 'RunState' });
  const { schemas: generated } = z.toJSONSchema(registry, { io: 'output', uri: (id) => `#/components/schemas/${id}`, override: withoutSafeIntegerBounds }) as {
    schemas: Record<string, Json>;
  };
  return Object.fromEntries(Object.entries(generated).map(([id, { $schema: _dialect, $id: _id, ...schema }]) => [id, schema]));
}

/** zod gives every integer JavaScript's safe range as bounds: noise in a document, said once here instead. */
function withoutSafeIntegerBounds({ jsonSchema }: { jsonSchema: Json }): void {
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
  // An ISO 8601 regex of 400 characters says no more than `format: date-time`.
  if (jsonSchema.format === 'date-time') delete jsonSchema.pattern;
}

/**
 * The query parameters of a route (`GET /v1/runs/:id`), from the zod schema the gateway checks its query with
 * (`ROUTE_QUERIES`): the document lists exactly what the gateway takes, and it refuses the rest.
 */
export function queryParameters(method: string, route: string): Json[] {
  const { properties = {}, required = [] } = z.toJSONSchema(routeQuery(method, route), { io: 'input', override: withoutSafeIntegerBounds }) as {
    properties?: Record<string, Json>;
    required?: string[];
  };
  return Object.entries(properties).map(([name, { description, ...schema }]) => ({
    name,
    in: 'query',
    ...(required.includes(name) ? { required: true } : {}),
    ...(description ? { description } : {}),
    schema,
  }));
}

const schemas: Record<string, Json> = {
  Error: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: { code: { type: 'string' }, message: { type: 'string' } },
        additionalProperties: true,
      },
    },
  },
  RunStarted: {
    type: 'object',
    required: ['workflowId', 'runId'],
    properties: { workflowId: { type: 'string' }, runId: { type: 'string' } },
  },
  ...viewSchemas(),
  RunResult: {
    type: 'object',
    required: ['status', 'answer', 'reason', 'lastText', 'partialText', 'usage', 'loops', 'toolCalls'],
    properties: {
      status: { enum: ['COMPLETED', 'ABORTED'] },
      answer: { type: ['string', 'null'] },
      reason: { type: ['string', 'null'] },
      lastText: { type: ['string', 'null'], description: "The model's last complete message: for an aborted run, what it had said." },
      partialText: { type: ['string', 'null'], description: 'The text a model call had streamed when the run ended in the middle of it; null otherwise.' },
      usage: ref('Usage'),
      loops: { type: 'integer' },
      toolCalls: { type: 'integer' },
    },
  },
  RunList: {
    type: 'object',
    required: ['runs'],
    properties: {
      runs: {
        type: 'array',
        items: {
          type: 'object',
          required: ['workflowId', 'runId', 'executionStatus', 'startTime'],
          properties: {
            workflowId: { type: 'string' },
            runId: { type: 'string' },
            executionStatus: {
              type: 'string',
              description: "Temporal's status of the run's workflow execution: RUNNING, COMPLETED (also for an ABORTED run), FAILED, TERMINATED, CONTINUED_AS_NEW, ...",
            },
            agentState: { enum: agentStates, description: 'The run\'s own state, as of its last transition (the `AgentState` search attribute).' },
            startTime: { type: 'string', format: 'date-time' },
            closeTime: { type: 'string', format: 'date-time', description: 'Only once the run has closed.' },
            durationMs: { type: ['integer', 'null'], description: 'Closed runs: from start to close.' },
            prompt: { type: ['string', 'null'], description: 'The prompt (first 1,000 characters), from the memo `AgentClient.start` sets.' },
            agent: { type: ['string', 'null'] },
            origin: { type: ['object', 'null'], description: 'A fork: the run and step it carries on from.' },
            parentWorkflowId: { type: ['string', 'null'], description: 'A child run (sub-agent): its parent.' },
            costUsd: { type: ['number', 'null'], description: 'As of the run\'s last stored copy (waiting for a person, or ended).' },
            totalTokens: { type: ['integer', 'null'] },
          },
        },
      },
    },
  },
  StepList: {
    type: 'object',
    required: ['steps'],
    properties: {
      steps: {
        type: 'array',
        description: 'Each step is one state change, numbered from 1 (step 0 is the run before its start). A run that continued as new lists its recent end.',
        items: { allOf: [ref('Transition'), { type: 'object', required: ['step'], properties: { step: { type: 'integer' } } }] },
      },
    },
  },
  SnapshotDiff: {
    type: 'object',
    required: ['from', 'to', 'changes', 'changed'],
    properties: {
      from: { type: 'integer' },
      to: { type: 'integer' },
      changes: {
        type: 'array',
        description: 'Every difference between the two state views (with messages), at the deepest path where they differ; `transitions` and `stateSince` are left out.',
        items: {
          type: 'object',
          required: ['path', 'kind'],
          properties: {
            path: { type: 'string', description: 'A field, then `.key` and `[index]` down to what differs, e.g. `messages[3]`, `usage.totalTokens`.' },
            kind: { enum: ['added', 'removed', 'changed'] },
            before: { description: 'The value at `from` (not for `added`).' },
            after: { description: 'The value at `to` (not for `removed`).' },
          },
        },
      },
      changed: {
        type: 'array',
        description: 'Top-level fields that differ, with both values whole (`messages` left out).',
        items: { type: 'object', required: ['field'], properties: { field: { type: 'string' }, before: {}, after: {} } },
      },
      addedMessages: { type: 'array', items: { type: 'object' }, description: 'Messages at `to` and not at `from`, when the conversation only grew.' },
    },
  },
  RunForked: {
    type: 'object',
    required: ['workflowId', 'runId', 'forkedFrom'],
    properties: {
      workflowId: { type: 'string' },
      runId: { type: 'string' },
      forkedFrom: { type: 'object', required: ['workflowId', 'step'], properties: { workflowId: { type: 'string' }, step: { type: 'integer' } } },
    },
  },
  SignalSent: {
    type: 'object',
    required: ['workflowId', 'signal', 'sent', 'state', 'pauseRequested'],
    properties: {
      workflowId: { type: 'string' },
      signal: { enum: ['abort', 'pause', 'resume'], description: 'The control the run took.' },
      sent: { const: true },
      state: { enum: [...agentStates, null], description: 'The run\'s state right after it took the control; null when it went as a signal.' },
      pauseRequested: { type: 'boolean', description: 'A pause waits for the work in flight to end.' },
      delivery: { const: 'signal', description: 'Present when the run has no such update (a sub-agent pattern, or a worker from before control updates): sent as a signal, applied at its next step, no deadline.' },
    },
  },
  ApproveResult: {
    type: 'object',
    required: ['toolCallId', 'approved', 'remaining'],
    properties: { toolCallId: { type: 'string' }, approved: { type: 'boolean' }, remaining: { type: 'integer', description: 'Approvals still outstanding.' } },
  },
  StreamToken: {
    type: 'object',
    required: ['workflowId', 'token', 'expiresAt'],
    properties: { workflowId: { type: 'string' }, token: { type: 'string' }, expiresAt: { type: 'string', format: 'date-time' } },
  },
  SendMessageResult: {
    type: 'object',
    required: ['queued'],
    properties: {
      queued: { type: 'integer', description: 'Messages waiting for the next model call.' },
      interrupted: { type: 'boolean', description: 'With `interrupt` only: whether the run cut its work short for the message (false: only queued).' },
    },
  },
};

/**
 * Every event kind the stream sends, with its data. Keyed by the stream's own event type, so a kind added to
 * `WatchEvent` fails the type check until it is described here.
 */
const SSE_EVENTS: Record<SseEvent['type'], string> = {
  transition: '`{ type, step, transition: { from, to, event, at } }`',
  text: '`{ type, text, callNumber, attempt, at? }`, the text streamed since the previous `text` of that call and attempt; `at` (from the channel): the characters of the call before it',
  restart: '`{ type, callNumber, attempt }`, the call was retried: discard its text',
  resume: '`{ type, callNumber, attempt, chars, after }` (from the channel), the call was retried and goes on with its first `chars` characters, streamed up to offset `after`: keep them, and the text of `attempt` that follows extends them',
  approval: '`{ type, pending: [...] }`, tool calls that started waiting for approval',
  approvalReminder: '`{ type, at, deadline, onTimeout, toolCallIds }`, an approval wait reached `approval.reminderAt` of its window undecided (once per wait): escalate here',
  toolStart: '`{ type, step, toolCallId, name, arguments, at }`',
  toolEnd: '`{ type, step, toolCallId, name, ok, durationMs, output, at, rejected? }`; `rejected`: a person rejected the call (it never ran)',
  retry: '`{ type, retry: { activity, attempt, lastFailure, nextAttemptAt } }`, once per attempt of a retried activity',
  end: '`{ type, state }`, the final view; the stream closes',
  error: '`{ error: { code, message } }`, the watch failed; the stream closes',
  gap: '`{ reason, state }`, events were lost to this watcher (it read too slowly, or the channel no longer has them): redraw from `state`; newer events follow',
  stream: "`{ status: 'degraded', reason }`, the stream channel cannot serve this run: the events that follow come from polling the state",
};

const SSE_DESCRIPTION = [
  'Server-Sent Events, each with `data:` one JSON object and `id:` its offset `<n>-<n>` in the run\'s stream when the gateway has a stream channel,',
  'else (and after a `stream` degraded event) a resume cursor `<step>.<callNumber>.<attempt>.<chars>`. `?from=now` starts a channel stream at the next event.',
  `Events: ${Object.entries(SSE_EVENTS).map(([type, data]) => `\`${type}\` ${data}`).join('; ')}.`,
  'Reconnecting with `Last-Event-ID` (or `?lastEventId=`) sends only transitions after that step and text after that',
  'many characters. A `: heartbeat` comment comes every 15 s. A browser\'s EventSource, which cannot send the',
  'Authorization header, passes a token from `POST /v1/runs/{id}/stream-token` as `?token=`. See docs/gateway.md.',
].join(' ');

function buildDocument(): Json {
  const signal = (name: string, summary: string, requestBody?: Json) => ({
    post: {
      operationId: `${name}Run`,
      summary,
      parameters: [idParam],
      ...(requestBody ? { requestBody } : {}),
      responses: {
        '202': ok('The run took the control (a pause takes effect before its next piece of work).', ref('SignalSent')),
        ...errors(400, 401, 404, 409, 503, 504),
      },
    },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Durable agent gateway',
      version: '1.0.0',
      description: 'HTTP access to `agentRun` workflows for services and front ends without a Temporal client.',
    },
    security: [{ bearer: [] }],
    paths: {
      '/healthz': {
        get: { operationId: 'health', summary: 'Liveness', security: [], responses: { '200': ok('The gateway is up.', { type: 'object', properties: { status: { const: 'ok' } } }) } },
      },
      '/openapi.json': {
        get: { operationId: 'openapi', summary: 'This document', security: [], responses: { '200': ok('OpenAPI 3.1 document.', { type: 'object' }) } },
      },
      '/v1/runs': {
        post: {
          operationId: 'startRun',
          summary: 'Start a run',
          parameters: queryParameters('POST', '/v1/runs'),
          requestBody: body(StartRunBodySchema),
          responses: { '201': ok('Started; `Location` is the run\'s URL.', ref('RunStarted')), ...errors(400, 401, 409, 503) },
        },
        get: {
          operationId: 'listRuns',
          summary: 'List runs: open runs first (newest first), then closed runs (most recently closed first)',
          parameters: queryParameters('GET', '/v1/runs'),
          responses: { '200': ok('Runs.', ref('RunList')), ...errors(400, 401, 503) },
        },
      },
      '/v1/runs/{id}': {
        get: {
          operationId: 'getRunState',
          summary: 'The run\'s state view',
          parameters: [idParam, ...queryParameters('GET', '/v1/runs/:id')],
          responses: { '200': ok('State view.', ref('RunState')), ...errors(400, 401, 404, 503, 504) },
        },
      },
      '/v1/runs/{id}/result': {
        get: {
          operationId: 'getRunResult',
          summary: 'Wait for the run to end',
          description: 'Holds the request until the run ends. 200 for COMPLETED and ABORTED, 422 `run_failed` for a failed run.',
          parameters: [idParam],
          responses: { '200': ok('The run\'s result.', ref('RunResult')), ...errors(401, 404, 422, 503) },
        },
      },
      '/v1/runs/{id}/events': {
        get: {
          operationId: 'streamRunEvents',
          summary: 'Follow the run (Server-Sent Events)',
          description: SSE_DESCRIPTION,
          security: [{ bearer: [] }, { streamToken: [] }],
          parameters: [idParam, lastEventIdHeader, ...queryParameters('GET', '/v1/runs/:id/events')],
          responses: { '200': { description: 'An event stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...errors(401, 404, 503, 504) },
        },
      },
      '/v1/runs/{id}/ui-message-stream': {
        get: {
          operationId: 'streamRunUiMessages',
          summary: 'Follow the run as the Vercel AI SDK\'s UI message stream (protocol v1), for useChat',
          description: [
            'The events of `GET /v1/runs/{id}/events` mapped to UI message chunks (`x-vercel-ai-ui-message-stream: v1`): `start` (messageId: the run id),',
            'one step per model call with its `text-start`/`text-delta`/`text-end`, `tool-input-available`, `tool-output-available` or `tool-output-error` (dynamic tools),',
            '`tool-approval-request`, `data-restart` before the text of a retried model call, `finish`, `abort` or `error` at the end, then `[DONE]`. Retries, gaps and degraded notices are transient `data-*` parts.',
            'The last chunk of each event carries the event\'s id; a `Last-Event-ID` resumes after it.',
          ].join(' '),
          parameters: [idParam, lastEventIdHeader, ...queryParameters('GET', '/v1/runs/:id/ui-message-stream')],
          responses: { '200': { description: 'A UI message stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...errors(401, 404, 503, 504) },
        },
      },
      '/v1/runs/{id}/ag-ui': {
        get: {
          operationId: 'streamRunAgUi',
          summary: 'Follow the run as AG-UI events, for @ag-ui/client',
          description: [
            'The events of `GET /v1/runs/{id}/events` mapped to AG-UI events, one per `data:` line (threadId and runId: the run id): `RUN_STARTED` and a `STATE_SNAPSHOT`',
            '(the state view) when the stream opens, `TEXT_MESSAGE_START`/`CONTENT`/`END` per model call and attempt, `TOOL_CALL_START`/`ARGS`/`END` once per call and `TOOL_CALL_RESULT`,',
            '`STEP_FINISHED`/`STEP_STARTED` (stepName: the state) and a `STATE_DELTA` of `/state`, `/stateSince` and `/step` per transition, `CUSTOM` `approval`, `restart`, `retry`, `gap`',
            '(followed by a `STATE_SNAPSHOT`) and `stream` (degraded), and at the end a `STATE_SNAPSHOT`, then `RUN_FINISHED` (outcome `success` with the answer as `result`, or `cancelled`)',
            'or `RUN_ERROR` (`run_failed`, or the stream error\'s code). The last AG-UI event of each run event carries its id; a `Last-Event-ID` resumes after it. See docs/gateway.md.',
          ].join(' '),
          parameters: [idParam, lastEventIdHeader, ...queryParameters('GET', '/v1/runs/:id/ag-ui')],
          responses: { '200': { description: 'An AG-UI event stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...errors(401, 404, 503, 504) },
        },
      },
      '/v1/runs/{id}/stream-token': {
        post: {
          operationId: 'createStreamToken',
          summary: 'A short-lived token for this run\'s event stream, for browsers',
          description: 'The token is accepted as `?token=` by `GET /v1/runs/{id}/events` of this run only, until `expiresAt` (5 minutes by default). It is signed with a key derived from the gateway token, so any gateway with that token accepts it.',
          parameters: [idParam],
          responses: { '201': ok('Issued.', ref('StreamToken')), ...errors(400, 401, 404, 503) },
        },
      },
      '/v1/runs/{id}/steps/{step}': {
        get: {
          operationId: 'getRunStep',
          summary: 'Time travel: the run\'s state right after a step',
          parameters: [idParam, { name: 'step', in: 'path', required: true, schema: { type: 'integer', minimum: 0 } }, ...queryParameters('GET', '/v1/runs/:id/steps/:step')],
          responses: { '200': ok('State view at the step.', ref('RunState')), ...errors(400, 401, 404, 503) },
        },
      },
      '/v1/runs/{id}/steps': {
        get: {
          operationId: 'listRunSteps',
          summary: 'Time travel: the run\'s steps (its state changes), for diff and fork',
          parameters: [idParam],
          responses: { '200': ok('Steps, oldest first.', ref('StepList')), ...errors(400, 401, 404, 503, 504) },
        },
      },
      '/v1/runs/{id}/diff': {
        get: {
          operationId: 'diffRunSteps',
          summary: 'Time travel: what changed in the run between two steps',
          parameters: [idParam, ...queryParameters('GET', '/v1/runs/:id/diff')],
          responses: { '200': ok('Each added, removed or changed value with its path.', ref('SnapshotDiff')), ...errors(400, 401, 404, 503) },
        },
      },
      '/v1/runs/{id}/fork': {
        post: {
          operationId: 'forkRun',
          summary: 'Time travel: start a new run from the run\'s state right after a step',
          description:
            'The new run carries the snapshot of that step (conversation included) and its `origin` names the run and step. Step 0 is the ' +
            'run before its start: a fork from it is a fresh run of the same input. The last step, where the run ended, is refused ' +
            '(400 `invalid_input`); a step the run does not hold is 404 `step_not_found`.',
          parameters: [idParam],
          requestBody: body(ForkBodySchema),
          responses: { '201': ok('Started; `Location` is the new run\'s URL.', ref('RunForked')), ...errors(400, 401, 404, 409, 503) },
        },
      },
      '/v1/machine': {
        get: {
          operationId: 'getMachine',
          summary: 'The state machine\'s table: its rows (event, guard, target) and, for each state, the events it accepts and the states each may lead to',
          responses: {
            '200': ok('The table.', {
              type: 'object',
              required: ['initial', 'terminal', 'transitions', 'rows'],
              properties: {
                initial: { type: 'string' },
                terminal: { type: 'array', items: { type: 'string' } },
                transitions: { type: 'object', description: 'For each state, the events it accepts and the states each may lead to (derived from `rows`).' },
                rows: {
                  type: 'array',
                  description: "Each edge of the machine's rows, in the order the machine tries them: the first row whose guard holds wins.",
                  items: {
                    type: 'object',
                    required: ['from', 'event', 'guard', 'to'],
                    properties: {
                      from: { type: 'string' },
                      event: { type: 'string' },
                      guard: { type: ['string', 'null'], description: 'The named guard of the row; null: the row always matches.' },
                      to: { type: 'string' },
                      via: { type: 'string', description: 'The entry row (a model step\'s limit, budget, pause or compaction) this edge detours through.' },
                    },
                  },
                },
              },
            }),
            ...errors(401),
          },
        },
      },
      '/v1/runs/{id}/activities': {
        get: {
          operationId: 'listRunActivities',
          summary: 'The run\'s activities from its history: each model call\'s latency, tokens and model; each tool\'s and compaction\'s time',
          parameters: [idParam],
          responses: { '200': ok('Activities, oldest first.', { type: 'object', required: ['activities'], properties: { activities: { type: 'array', items: { type: 'object' } } } }), ...errors(400, 401, 404, 503) },
        },
      },
      '/v1/runs/{id}/abort': signal('abort', 'Abort the run (work in flight is cancelled; the run ends ABORTED)', body(AbortBodySchema, false)),
      '/v1/runs/{id}/pause': signal('pause', 'Pause the run before its next piece of work'),
      '/v1/runs/{id}/resume': signal('resume', 'Resume a paused run (or cancel a pending pause)'),
      '/v1/runs/{id}/approvals': {
        post: {
          operationId: 'approveToolCall',
          summary: 'Approve or reject a tool call waiting for approval',
          parameters: [idParam],
          requestBody: body(ApproveBodySchema),
          responses: { '200': ok('Decided.', ref('ApproveResult')), ...errors(400, 401, 404, 409, 503, 504) },
        },
      },
      '/v1/runs/{id}/messages': {
        post: {
          operationId: 'sendMessage',
          summary: 'Queue a user message for the model\'s next call, or with `interrupt` stop the work in flight for it',
          parameters: [idParam],
          requestBody: body(SendMessageBodySchema),
          responses: { '200': ok('Queued.', ref('SendMessageResult')), ...errors(400, 401, 404, 409, 503, 504) },
        },
      },
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'The gateway\'s GATEWAY_TOKEN.' },
        streamToken: { type: 'apiKey', in: 'query', name: 'token', description: 'A token from `POST /v1/runs/{id}/stream-token`, for that run\'s event stream only.' },
      },
      schemas,
      responses: Object.fromEntries(
        Object.entries(ERROR_RESPONSES).map(([status, description]) => [`E${status}`, ok(description, ref('Error'))]),
      ),
    },
  };
}

/**
 * Every route under /v1 answers 400 to a query parameter it does not take. Every POST reads its body before its route
 * runs, whether the route uses one or not (pause, resume): each answers 413 to a body over the limit and 415 to one
 * that is not JSON (the gateway has no other parser).
 */
function withCommonErrors(doc: Json): Json {
  for (const [route, path] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const operation of Object.values(path)) if (route.startsWith('/v1/')) Object.assign(operation.responses as Json, errors(400));
    if (path.post) Object.assign(path.post.responses as Json, errors(413, 415));
  }
  return doc;
}

let cached: Json | undefined;
/** The document, built once. */
export const openApiDocument = (): Json => (cached ??= withCommonErrors(buildDocument()));
