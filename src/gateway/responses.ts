/**
 * What the gateway answers: one zod schema per response body and per event of its streams. The routes answer through
 * these (`answer`), the types are inferred from them, and the OpenAPI document is generated from them (openapi.ts).
 * The state view and its parts are common/view.ts's own schemas.
 */
import { z } from 'zod';
import {
  AgentStateSchema,
  ApprovalReminderViewSchema,
  PendingApprovalSchema,
  RetryInfoSchema,
  RunStateViewSchema,
  RunUsageSchema,
  TransitionRecordSchema,
} from '../common/view';
import { UsageSchema } from '../common/chat';
import { ScheduleListEntrySchema } from '../common/schedule';

const int = () => z.number().int();
const timestamp = () => z.string().meta({ format: 'date-time' });

/** Every error: `{ error: { code, message, ...context } }` (`limitBytes`, `state`, `executionStatus`, `head`, ...). */
export const ErrorSchema = z.object({
  error: z.looseObject({ code: z.string().describe('`invalid_input`, `run_not_found`, `run_ended`, ...'), message: z.string() }),
});
export const HealthSchema = z.object({ status: z.literal('ok') });

export const WorkerHealthSchema = z.object({
  identity: z.string().describe("The worker's Temporal identity (`<pid>@<host>` unless set)."),
  lastPolledAt: timestamp().nullable().describe("When it last polled the task queue for activities, as Temporal says; null: it said hello but polls no longer."),
  lastHelloAt: timestamp().nullable().describe("When it last said hello over the stream channel (every 10 s); null: not within a day."),
  publishing: z.boolean().describe('It said hello within the last 30 s: its runs\' text reaches this gateway\'s watchers over the channel.'),
});

export const GatewayHealthSchema = z.object({
  status: z
    .enum(['ok', 'degraded'])
    .describe('`degraded`: some worker of the task queue cannot publish to this gateway\'s channel (`silent` names them), or the gateway has none: their runs\' streams poll the state.'),
  channel: z.enum(['hub', 'redis', 'none']).describe('Where workers publish: the embedded hub, Redis (or another shared channel), or nowhere (every stream polls the state).'),
  taskQueue: z.string(),
  workers: z.array(WorkerHealthSchema).describe('The workers polling the task queue in the last 2 minutes, and those that said hello in the last 30 s.'),
  silent: z
    .array(z.string())
    .describe(
      "The workers polling the task queue that this gateway has not heard from in 30 s: they cannot publish to its channel (AGENT_STREAM_URL unset, wrong or off, the gateway's token, or AGENT_STREAM_REDIS_URL), so their runs stream degraded.",
    ),
});
/** The document itself: an OpenAPI 3.1 object. */
export const OpenApiDocumentSchema = z.looseObject({ openapi: z.string() });

export const RunStartedSchema = z.object({ workflowId: z.string(), runId: z.string() });

export const RunResultSchema = z.object({
  status: z.enum(['COMPLETED', 'ABORTED']),
  answer: z.string().nullable(),
  reason: z.string().nullable(),
  lastText: z.string().nullable().describe("The model's last complete message: for an aborted run, what it had said."),
  partialText: z.string().nullable().describe('The text a model call had streamed when the run ended in the middle of it; null otherwise.'),
  usage: RunUsageSchema,
  loops: int(),
  toolCalls: int(),
  messages: z
    .array(z.looseObject({ role: z.string() }))
    .optional()
    .describe("With `returnMessages`: the conversation in OpenAI's Chat Completions format."),
});

export const RunListEntrySchema = z.object({
  workflowId: z.string(),
  runId: z.string(),
  executionStatus: z
    .string()
    .describe("Temporal's status of the run's workflow execution: RUNNING, COMPLETED (also for an ABORTED run), FAILED, TERMINATED, CONTINUED_AS_NEW, ..."),
  agentState: AgentStateSchema.optional().describe("The run's own state, as of its last transition (the `AgentState` search attribute)."),
  startTime: timestamp(),
  closeTime: timestamp().optional().describe('Only once the run has closed.'),
  durationMs: int().nullable().describe('Closed runs: from start to close.'),
  prompt: z.string().nullable().describe('The prompt (first 1,000 characters), from the memo `AgentClient.start` sets.'),
  agent: z.string().nullable(),
  origin: z.object({ workflowId: z.string(), step: int() }).nullable().describe('A fork: the run and step it carries on from.'),
  parentWorkflowId: z.string().nullable().describe('A child run (sub-agent): its parent.'),
  scheduleId: z.string().nullable().describe('A run a schedule started: the schedule (Temporal\'s `TemporalScheduledById`).'),
  costUsd: z.number().nullable().describe("As of the run's last stored copy (waiting for a person, or ended)."),
  totalTokens: int().nullable(),
});
export const RunListSchema = z.object({ runs: z.array(RunListEntrySchema) });

/** `GET /v1/schedules`; `describe` answers the schedule itself (common/schedule.ts `ScheduleViewSchema`). */
export const ScheduleListSchema = z.object({ schedules: z.array(ScheduleListEntrySchema) });
export const ScheduleTriggeredSchema = z.object({
  scheduleId: z.string(),
  triggered: z.literal(true).describe('The schedule was told to start a run now; it shows in `recentRuns` once started (with SKIP, none starts while one of its runs is open).'),
});
export const ScheduleDeletedSchema = z.object({ scheduleId: z.string(), deleted: z.literal(true).describe('Runs it started go on.') });

export const StepSchema = TransitionRecordSchema.extend({ step: int().describe('Numbered from 1; step 0 is the run before its start.') });
export const StepListSchema = z.object({
  steps: z.array(StepSchema).describe('Each step is one state change. A run that continued as new lists its recent end.'),
});

export const SnapshotDiffSchema = z.object({
  from: int(),
  to: int(),
  changes: z
    .array(
      z.object({
        path: z.string().describe('A field, then `.key` and `[index]` down to what differs, e.g. `messages[3]`, `usage.totalTokens`.'),
        kind: z.enum(['added', 'removed', 'changed']),
        before: z.unknown().optional().describe('The value at `from` (not for `added`).'),
        after: z.unknown().optional().describe('The value at `to` (not for `removed`).'),
      }),
    )
    .describe('Every difference between the two state views (with messages), at the deepest path where they differ; `transitions` and `stateSince` are left out.'),
  changed: z
    .array(z.object({ field: z.string(), before: z.unknown(), after: z.unknown() }))
    .describe('Top-level fields that differ, with both values whole (`messages` left out).'),
  addedMessages: z.array(z.unknown()).optional().describe('Messages at `to` and not at `from`, when the conversation only grew.'),
  runs: z.object({ from: z.string(), to: z.string() }).optional().describe('With `?against=`: the two runs compared, each as it is now (`from` and `to` are then their last steps).'),
});

export const RunForkedSchema = RunStartedSchema.extend({ forkedFrom: z.object({ workflowId: z.string(), step: int() }) });

export const SignalSentSchema = z.object({
  workflowId: z.string(),
  signal: z.enum(['abort', 'pause', 'resume']).describe('The control the run took.'),
  sent: z.literal(true),
  state: AgentStateSchema.nullable().describe("The run's state right after it took the control; null when it went as a signal."),
  pauseRequested: z.boolean().describe('A pause waits for the work in flight to end.'),
  delivery: z
    .literal('signal')
    .optional()
    .describe('Present when the run has no such update (a sub-agent pattern, or a worker from before control updates): sent as a signal, applied at its next step, no deadline.'),
});

export const ApproveResultSchema = z.object({ toolCallId: z.string(), approved: z.boolean(), remaining: int().describe('Approvals still outstanding.') });
export const SendMessageResultSchema = z.object({
  queued: int().describe('Messages waiting for the next model call.'),
  interrupted: z.boolean().optional().describe('With `interrupt` only: whether the run cut its work short for the message (false: only queued).'),
});
export const StreamTokenSchema = z.object({ workflowId: z.string(), token: z.string(), expiresAt: timestamp() });

export const MachineSchema = z.object({
  initial: AgentStateSchema,
  terminal: z.array(AgentStateSchema),
  transitions: z
    .record(z.string(), z.record(z.string(), z.array(z.string()).readonly()))
    .describe('For each state, the events it accepts and the states each may lead to (derived from `rows`).'),
  rows: z
    .array(
      z.object({
        from: z.string(),
        event: z.string(),
        guard: z.string().nullable().describe('The named guard of the row; null: the row always matches.'),
        to: z.string(),
        via: z.string().optional().describe("The entry row (a model step's limit, budget, pause or compaction) this edge detours through."),
      }),
    )
    .describe("Each edge of the machine's rows, in the order the machine tries them: the first row whose guard holds wins."),
});

export const ActivityRecordSchema = z.object({
  activity: z.string().describe('`callModel`, `awaitQuota`, `executeTool`, `compactContext`, `critiqueAnswer`, ...'),
  summary: z.string().nullable().describe('The summary the workflow gave it (`model call #2 (respond)`, `tool listFiles {...}`).'),
  scheduledAt: timestamp(),
  startedAt: timestamp().nullable(),
  endedAt: timestamp().nullable(),
  latencyMs: int().nullable().describe("From the last attempt's start to its end: the call itself, without time in the task queue."),
  totalMs: int().nullable().describe('From scheduled to ended: queueing, retries and backoff included.'),
  attempt: int(),
  outcome: z.enum(['running', 'completed', 'failed', 'timed out', 'cancelled']),
  error: z.string().nullable(),
  model: z
    .object({
      callNumber: int().nullable(),
      purpose: z.string().nullable(),
      model: z.string().nullable(),
      usage: UsageSchema.nullable(),
      finishReason: z.string().nullable(),
      toolCalls: int(),
    })
    .optional()
    .describe("callModel (and compactContext, its tokens only): the call's number, purpose, the model that answered, its tokens and why it stopped."),
});
export const ActivityListSchema = z.object({ activities: z.array(ActivityRecordSchema) });

/**
 * The events of `GET /v1/runs/:id/events`, by their SSE `event:` name: each is the `data:` of that event. The watch
 * events (common/watch.ts) with transitions numbered, and the stream's own `error`, `gap` and `stream`.
 */
export const RunEventSchemas = {
  transition: z.object({ type: z.literal('transition'), step: int(), transition: TransitionRecordSchema }),
  text: z
    .object({
      type: z.literal('text'),
      text: z.string(),
      callNumber: int(),
      attempt: int(),
      at: int().optional().describe('From the channel: the characters of the call before this delta.'),
    })
    .describe('The text streamed since the previous `text` of that call and attempt.'),
  restart: z.object({ type: z.literal('restart'), callNumber: int(), attempt: int() }).describe('The call was retried: discard its text.'),
  resume: z
    .object({ type: z.literal('resume'), callNumber: int(), attempt: int(), chars: int() })
    .describe("From the channel: the call was retried and goes on with its first `chars` characters (what its last heartbeat carried)."),
  approval: z.object({ type: z.literal('approval'), pending: z.array(PendingApprovalSchema) }).describe('Tool calls that started waiting for approval.'),
  approvalReminder: ApprovalReminderViewSchema.extend({ type: z.literal('approvalReminder') }).describe(
    'An approval wait reached `approval.reminderAt` of its window undecided (once per wait).',
  ),
  toolStart: z.object({ type: z.literal('toolStart'), step: int(), toolCallId: z.string(), name: z.string(), arguments: z.string(), at: timestamp() }),
  toolEnd: z.object({
    type: z.literal('toolEnd'),
    step: int(),
    toolCallId: z.string(),
    name: z.string(),
    ok: z.boolean(),
    durationMs: int(),
    output: z.string(),
    at: timestamp(),
    rejected: z.literal(true).optional().describe('A person rejected the call (it never ran).'),
  }),
  retry: z.object({ type: z.literal('retry'), retry: RetryInfoSchema }).describe('Once per attempt of a retried activity.'),
  end: z.object({ type: z.literal('end'), state: RunStateViewSchema }).describe('The final view; the stream closes.'),
  error: ErrorSchema.describe('The watch failed; the stream closes.'),
  gap: z
    .object({ reason: z.string(), state: RunStateViewSchema })
    .describe('Events were lost to this watcher (it read too slowly, or the channel no longer has them): redraw from `state`; newer events follow.'),
  stream: z
    .object({ status: z.literal('degraded'), reason: z.string() })
    .describe('The stream channel cannot serve this run: the events that follow come from polling the state.'),
} as const;
export type RunEventName = keyof typeof RunEventSchemas;
export type RunEventData<K extends RunEventName> = z.output<(typeof RunEventSchemas)[K]>;

/**
 * Checks a value against a schema on its way out: a shape the document does not describe is a bug of the gateway, a
 * 500 here rather than a surprise in a client. Returns what the schema gives (unknown keys of plain objects dropped).
 */
export function answer<S extends z.ZodType>(schema: S, value: z.input<S>): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ResponseShapeError(parsed.error);
  return parsed.data;
}

export class ResponseShapeError extends Error {
  constructor(readonly error: z.ZodError) {
    super(`the gateway's answer is outside its schema: ${z.prettifyError(error)}`);
    this.name = 'ResponseShapeError';
  }
}
