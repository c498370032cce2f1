/**
 * Agent schedules: Temporal Schedules whose action starts an `agentRun` with a fixed input, on a cron expression or an
 * interval. The one description of what `AgentClient.schedules` takes and answers, the gateway's `/v1/schedules`
 * bodies and answers, and the types of both (docs/schedules.md).
 */
import { z } from 'zod';
import { runInputSchemas } from './input';

/** What Temporal does when a schedule's time comes while a run it started is still open (Temporal's `ScheduleOverlapPolicy`). */
export const OVERLAP_POLICIES = ['SKIP', 'BUFFER_ONE', 'BUFFER_ALL', 'CANCEL_OTHER', 'TERMINATE_OTHER', 'ALLOW_ALL'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

const int = () => z.number().int();
const timestamp = () => z.string().meta({ format: 'date-time' });
const DAY_MS = 24 * 3_600_000;

/** A schedule's id, as a path segment takes it: its runs' workflow ids are `<scheduleId>-<the time it was due>`. */
export const ScheduleIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'must be 1-100 characters of [A-Za-z0-9._-], starting with a letter or digit');

/** The input of each run the schedule starts: what `POST /v1/runs` takes (no `resume`, which only forks and continuations set). */
export const ScheduledRunInputSchema = runInputSchemas().AgentRunInputSchema.omit({ resume: true });

export const OverlapPolicySchema = z
  .enum(OVERLAP_POLICIES)
  .describe(
    'When a run is due while one the schedule started is still open: SKIP it (the default), BUFFER_ONE (start it when the open one ends; one at most), BUFFER_ALL, CANCEL_OTHER (cancel the open one, then start), TERMINATE_OTHER, ALLOW_ALL (start it beside).',
  );

/** `AgentClient.schedules.create`'s options and the body of `POST /v1/schedules`. Exactly one of `cron` and `intervalMs`. */
export const CreateScheduleInputSchema = z
  .strictObject({
    scheduleId: ScheduleIdSchema.describe("The schedule's id; its runs' workflow ids are `<scheduleId>-<the time each was due>`."),
    cron: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('A cron expression: 5 fields (minute hour day-of-month month day-of-week), 6 (with year) or 7 (with seconds first), or `@daily`, `@hourly`, ...; the server checks it.'),
    timezone: z.string().min(1).max(100).optional().describe('With `cron`: the IANA time zone it reads its hours in, e.g. `Europe/Paris`. Default UTC.'),
    intervalMs: int().min(1_000).max(366 * DAY_MS).multipleOf(1_000).optional().describe('Every this many milliseconds (whole seconds), counted from the Unix epoch plus `offsetMs`.'),
    offsetMs: int().min(0).max(366 * DAY_MS).multipleOf(1_000).optional().describe('With `intervalMs`: the offset into each interval, below it (whole seconds). Default 0.'),
    jitterMs: int().min(0).max(DAY_MS).optional().describe('Each run starts up to this much later, at random, so that many schedules due at once do not start together. Default 0.'),
    overlap: OverlapPolicySchema.optional(),
    catchupWindowMs: int()
      .min(10_000)
      .max(366 * DAY_MS)
      .optional()
      .describe("How late a run missed while the server was down may still start once it is back (at least 10 s). Default the server's, one year."),
    paused: z.boolean().optional().describe('Created paused: no run starts until it is unpaused (a trigger still starts one).'),
    note: z.string().max(1_000).optional().describe('Why it is paused, or any note; `describe` shows it.'),
    input: ScheduledRunInputSchema.describe("Each run's input, as `POST /v1/runs` takes it, checked when the schedule is created."),
  })
  .superRefine((o, ctx) => {
    if ((o.cron === undefined) === (o.intervalMs === undefined)) {
      ctx.addIssue({ code: 'custom', path: o.cron === undefined ? ['cron'] : ['intervalMs'], message: 'give exactly one of cron and intervalMs' });
    }
    if (o.timezone !== undefined && o.cron === undefined) ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'applies to a cron expression only: give cron' });
    if (o.offsetMs !== undefined && (o.intervalMs === undefined || o.offsetMs >= o.intervalMs)) {
      ctx.addIssue({ code: 'custom', path: ['offsetMs'], message: 'needs intervalMs, and must be below it' });
    }
  });
export type CreateScheduleInput = z.input<typeof CreateScheduleInputSchema>;

/** The body of `POST /v1/schedules/:scheduleId/pause` and `/unpause`. */
export const ScheduleNoteSchema = z.strictObject({ note: z.string().max(1_000).optional().describe('Why; `describe` shows it.') });
/** The body of `POST /v1/schedules/:scheduleId/trigger`. */
export const TriggerScheduleInputSchema = z.strictObject({ overlap: OverlapPolicySchema.optional().describe("This run's overlap policy instead of the schedule's.") });

/** When a schedule starts its runs, as it was created. */
export const ScheduleSpecViewSchema = z.object({
  cron: z.string().nullable(),
  timezone: z.string().nullable(),
  intervalMs: int().nullable(),
  offsetMs: int().nullable(),
  jitterMs: int(),
});

/** A run a schedule started. */
export const ScheduledRunSchema = z.object({
  workflowId: z.string(),
  scheduledAt: timestamp().describe('When it was due, jitter included.'),
  startedAt: timestamp().describe('When the schedule started it.'),
});

/** `describe`'s answer: the schedule, its state and what it has done. */
export const ScheduleViewSchema = z.object({
  scheduleId: z.string(),
  spec: ScheduleSpecViewSchema,
  overlap: z.enum(OVERLAP_POLICIES),
  catchupWindowMs: int(),
  paused: z.boolean(),
  note: z.string().nullable(),
  input: z.looseObject({ prompt: z.string() }).describe("Each run's input, as the schedule was created with it."),
  tenant: z.string().nullable().describe('The tenant its runs belong to (`AgentTenant`); null: none, the service\'s.'),
  createdBy: z.string().nullable().describe('The `sub` of the identity that created it; null: the service.'),
  nextRunTimes: z.array(timestamp()).describe('The next times it is due (at most 5).'),
  recentRuns: z.array(ScheduledRunSchema).describe('The runs it started last (triggers included), oldest first.'),
  runningRuns: z.array(z.string()).describe('Workflow ids of its runs still open.'),
  runsStarted: int(),
  skippedOverlap: int().describe('Runs not started for the overlap policy.'),
  missedCatchupWindow: int().describe('Runs not started because they were later than the catch-up window.'),
  createdAt: timestamp(),
  updatedAt: timestamp().nullable(),
});
export type ScheduleView = z.output<typeof ScheduleViewSchema>;

/** One schedule in a list (from visibility: it can lag a create or delete by a moment). */
export const ScheduleListEntrySchema = z.object({
  scheduleId: z.string(),
  spec: ScheduleSpecViewSchema.nullable().describe('Null for a schedule this package did not create.'),
  paused: z.boolean(),
  note: z.string().nullable(),
  prompt: z.string().nullable().describe("The runs' prompt (first 1,000 characters)."),
  agent: z.string().nullable(),
  tenant: z.string().nullable(),
  nextRunTimes: z.array(timestamp()),
  recentRuns: z.array(ScheduledRunSchema),
});
export type ScheduleListEntry = z.output<typeof ScheduleListEntrySchema>;
