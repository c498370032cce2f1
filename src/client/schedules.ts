/**
 * `AgentClient.schedules`: agent runs on a schedule, over Temporal Schedules (the public `client.schedule` API). A
 * schedule's action starts `agentRun` with one input, checked when the schedule is created, and with the start fields
 * `AgentClient.start` gives a run (run-memo.ts), its owner's tenant included. Temporal sets `TemporalScheduledById` on
 * each run it starts, which the run list shows as `scheduleId`. See docs/schedules.md.
 */
import {
  isGrpcServiceError,
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ServiceError,
  type Client,
  type ScheduleDescription,
  type ScheduleExecutionResult,
  type ScheduleSpecDescription,
  type ScheduleSummary,
} from '@temporalio/client';
import { AGENT_OWNER_MEMO, AGENT_SCHEDULE_MEMO, AGENT_TENANT_SEARCH_ATTRIBUTE, WORKFLOW_TYPE } from '../common/constants';
import { parseAgentRunInput, parseWith, type AgentRunInput } from '../common/input';
import {
  CreateScheduleInputSchema,
  OVERLAP_POLICIES,
  ScheduleIdSchema,
  type CreateScheduleInput,
  type OverlapPolicy,
  type ScheduleListEntry,
  type ScheduleView,
} from '../common/schedule';
import { AgentScheduleExistsError, AgentScheduleNotFoundError, InvalidAgentInputError } from './errors';
import { agentTenantKey, ownerStartOptions, type RunOwner } from './owner';
import { runStartFields } from './run-memo';

/** Options of `AgentSchedules.create`. */
export interface CreateScheduleOptions {
  /**
   * The tenant the schedule and every run it starts belong to, and who created it (as `AgentClient.start`'s `owner`).
   * @default none: a schedule of no tenant, which only the service sees
   */
  owner?: RunOwner;
}

/** Options of `AgentSchedules.list`. */
export interface ListSchedulesOptions {
  /** Only the schedules of this tenant (`AgentTenant`). @default every tenant's */
  tenant?: string;
  /** Most schedules returned. @default 100 */
  limit?: number;
}

/** The memo a schedule keeps of how it was created (the server keeps a cron only compiled into calendars). */
interface ScheduleMemo {
  cron?: string;
  timezone?: string;
  intervalMs?: number;
  offsetMs?: number;
  prompt?: string;
  agent?: string | null;
}

const GRPC_INVALID_ARGUMENT = 3;
const DEFAULT_LIST_LIMIT = 100;
const NEXT_RUN_TIMES = 5;

/** Agent schedules of one namespace; their runs go to the client's task queue. */
export class AgentSchedules {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  /**
   * Creates a schedule that starts a run of `options.input` on its cron expression or interval. Throws
   * `InvalidAgentInputError` naming the field (the input's as `input.<field>`) and creates nothing on bad options, a
   * cron or time zone the server refuses included; `AgentScheduleExistsError` if the id is taken.
   */
  async create(options: CreateScheduleInput, opts: CreateScheduleOptions = {}): Promise<ScheduleView> {
    const parsed = parseWith(CreateScheduleInputSchema, options, 'schedule');
    if (!parsed.ok) throw new InvalidAgentInputError(parsed.error);
    // The input's rules across its fields (approval.tools among tools), which its schema alone does not state.
    const run = parseAgentRunInput(options.input);
    if (!run.ok) throw new InvalidAgentInputError(run.error.replace(/^Invalid agentRun input: /, 'Invalid schedule: input: '));
    const o = parsed.value;
    // As `start` sends it: as given, defaults left to the worker; a tenant's runs draw on the quota as that tenant.
    const input: AgentRunInput = { ...(options.input as AgentRunInput), ...(opts.owner?.tenant ? { tenant: opts.owner.tenant } : {}) };
    const owned = ownerStartOptions(opts.owner);
    const memo: ScheduleMemo = { prompt: input.prompt.slice(0, 1_000), agent: input.agent ?? null, ...definedOnly({ cron: o.cron, timezone: o.timezone, intervalMs: o.intervalMs, offsetMs: o.offsetMs }) };
    try {
      await this.client.schedule.create({
        scheduleId: o.scheduleId,
        spec: {
          ...(o.cron !== undefined ? { cronExpressions: [o.cron], ...(o.timezone ? { timezone: o.timezone } : {}) } : { intervals: [{ every: o.intervalMs!, offset: o.offsetMs ?? 0 }] }),
          jitter: o.jitterMs ?? 0,
        },
        // Temporal appends the time each run is due to this id: `<scheduleId>-2026-12-02T06:00:00Z`.
        action: { type: 'startWorkflow', workflowType: WORKFLOW_TYPE, workflowId: o.scheduleId, taskQueue: this.taskQueue, args: [input], ...runStartFields(input, opts.owner) },
        policies: { overlap: o.overlap ?? 'SKIP', ...(o.catchupWindowMs !== undefined ? { catchupWindow: o.catchupWindowMs } : {}) },
        state: { paused: o.paused ?? false, ...(o.note !== undefined ? { note: o.note } : {}) },
        memo: { [AGENT_SCHEDULE_MEMO]: memo, ...owned.memo },
        typedSearchAttributes: owned.typedSearchAttributes,
      });
    } catch (err) {
      if (err instanceof ScheduleAlreadyRunning) throw new AgentScheduleExistsError(o.scheduleId);
      throw refusedSpec(err, o.cron !== undefined ? (o.timezone !== undefined ? 'cron or timezone' : 'cron') : 'intervalMs') ?? err;
    }
    return this.describe(o.scheduleId);
  }

  /** The schedule, its state and what it has done. Throws `AgentScheduleNotFoundError` when there is no agent schedule with this id. */
  async describe(scheduleId: string): Promise<ScheduleView> {
    return scheduleView(await this.described(scheduleId));
  }

  /**
   * Agent schedules (those whose action starts `agentRun`), from visibility: a schedule just created or deleted can
   * take a moment to appear in or leave the list.
   */
  async list(opts: ListSchedulesOptions = {}): Promise<ScheduleListEntry[]> {
    const limit = opts.limit ?? DEFAULT_LIST_LIMIT;
    if (!Number.isInteger(limit) || limit < 1) throw new InvalidAgentInputError('Invalid list options: limit: must be a positive integer');
    const quote = (v: string) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
    const query = opts.tenant !== undefined ? `${AGENT_TENANT_SEARCH_ATTRIBUTE}=${quote(opts.tenant)}` : undefined;
    const rows: ScheduleListEntry[] = [];
    for await (const s of this.client.schedule.list({ pageSize: 100, ...(query ? { query } : {}) })) {
      if (s.action?.workflowType !== WORKFLOW_TYPE) continue;
      rows.push(listEntry(s));
      if (rows.length >= limit) break;
    }
    return rows;
  }

  /** The tenant of the schedule (its `AgentTenant`), null for none. Throws `AgentScheduleNotFoundError` for no such schedule. */
  async tenantOf(scheduleId: string): Promise<string | null> {
    return (await this.described(scheduleId)).typedSearchAttributes.get(agentTenantKey) ?? null;
  }

  /** Pauses the schedule: no run starts on its times until `unpause` (a trigger still starts one). Runs already open go on. */
  async pause(scheduleId: string, note?: string): Promise<ScheduleView> {
    await this.described(scheduleId);
    await this.client.schedule.getHandle(scheduleId).pause(note ?? 'paused');
    return this.describe(scheduleId);
  }

  /** Unpauses the schedule: runs start on its next times (those missed while paused do not start). */
  async unpause(scheduleId: string, note?: string): Promise<ScheduleView> {
    await this.described(scheduleId);
    await this.client.schedule.getHandle(scheduleId).unpause(note ?? 'unpaused');
    return this.describe(scheduleId);
  }

  /**
   * Starts a run now, paused or not, under the schedule's overlap policy or `overlap`. The run shows in `describe`'s
   * `recentRuns` once the schedule has started it (a moment later; with SKIP, not at all while one of its runs is open).
   */
  async trigger(scheduleId: string, opts: { overlap?: OverlapPolicy } = {}): Promise<void> {
    if (opts.overlap !== undefined && !(OVERLAP_POLICIES as readonly string[]).includes(opts.overlap)) {
      throw new InvalidAgentInputError(`Invalid trigger: overlap: must be one of ${OVERLAP_POLICIES.join(', ')}`);
    }
    const { policies } = await this.described(scheduleId);
    // The SDK's trigger defaults to ALLOW_ALL; the schedule's own policy is what its runs are promised.
    await this.client.schedule.getHandle(scheduleId).trigger(opts.overlap ?? policies.overlap);
  }

  /** Deletes the schedule; runs it started go on. */
  async delete(scheduleId: string): Promise<void> {
    await this.described(scheduleId);
    await this.client.schedule.getHandle(scheduleId).delete().catch((err: unknown) => {
      throw err instanceof ScheduleNotFoundError ? new AgentScheduleNotFoundError(scheduleId) : err;
    });
  }

  /** The server's description of an agent schedule; `AgentScheduleNotFoundError` for none, or one that starts no agent run. */
  private async described(scheduleId: string): Promise<ScheduleDescription> {
    const id = parseWith(ScheduleIdSchema, scheduleId, 'schedule id');
    if (!id.ok) throw new InvalidAgentInputError(id.error);
    const d = await this.client.schedule
      .getHandle(scheduleId)
      .describe()
      .catch((err: unknown) => {
        throw err instanceof ScheduleNotFoundError ? new AgentScheduleNotFoundError(scheduleId) : err;
      });
    if (d.action.workflowType !== WORKFLOW_TYPE) throw new AgentScheduleNotFoundError(scheduleId);
    return d;
  }
}

/** The server's refusal of a spec (a cron it cannot read, an unknown time zone) as bad input naming the field. */
function refusedSpec(err: unknown, field: string): InvalidAgentInputError | undefined {
  // The SDK turns "Invalid schedule spec" into a TypeError; other refusals arrive as the gRPC error they are.
  if (err instanceof TypeError) return new InvalidAgentInputError(`Invalid schedule: ${field}: ${err.message}`);
  const cause = err instanceof ServiceError ? err.cause : err;
  if (isGrpcServiceError(cause) && cause.code === GRPC_INVALID_ARGUMENT) return new InvalidAgentInputError(`Invalid schedule: ${field}: ${cause.details}`);
  return undefined;
}

const iso = (d: Date) => d.toISOString();
const recentRun = (a: ScheduleExecutionResult) => ({ workflowId: a.action.workflow.workflowId, scheduledAt: iso(a.scheduledAt), startedAt: iso(a.takenAt) });

/** The spec as it was created (the memo), with what only the server holds (jitter, time zone); the server's intervals for a schedule created elsewhere. */
function specView(memo: ScheduleMemo | undefined, spec: ScheduleSpecDescription | undefined): ScheduleView['spec'] {
  const interval = spec?.intervals?.[0];
  return {
    cron: memo?.cron ?? null,
    timezone: spec?.timezone || memo?.timezone || null,
    intervalMs: memo?.intervalMs ?? (memo?.cron === undefined && interval ? Number(interval.every) : null),
    offsetMs: memo?.offsetMs ?? (memo?.cron === undefined && interval ? Number(interval.offset ?? 0) : null),
    jitterMs: spec?.jitter ?? 0,
  };
}

function scheduleView(d: ScheduleDescription): ScheduleView {
  const memo = d.memo?.[AGENT_SCHEDULE_MEMO] as ScheduleMemo | undefined;
  const owner = d.memo?.[AGENT_OWNER_MEMO] as { startedBy?: string | null } | undefined;
  const overlap = d.policies.overlap as string;
  return {
    scheduleId: d.scheduleId,
    spec: specView(memo, d.spec),
    overlap: (OVERLAP_POLICIES as readonly string[]).includes(overlap) ? (overlap as OverlapPolicy) : 'SKIP',
    catchupWindowMs: d.policies.catchupWindow,
    paused: d.state.paused,
    note: d.state.note || null,
    input: (d.action.args?.[0] ?? { prompt: '' }) as ScheduleView['input'],
    tenant: d.typedSearchAttributes.get(agentTenantKey) ?? null,
    createdBy: owner?.startedBy ?? null,
    nextRunTimes: d.info.nextActionTimes.slice(0, NEXT_RUN_TIMES).map(iso),
    recentRuns: d.info.recentActions.map(recentRun),
    runningRuns: d.info.runningActions.map((a) => a.workflow.workflowId),
    runsStarted: d.info.numActionsTaken,
    skippedOverlap: d.info.numActionsSkippedOverlap,
    missedCatchupWindow: d.info.numActionsMissedCatchupWindow,
    createdAt: iso(d.info.createdAt),
    updatedAt: d.info.lastUpdatedAt ? iso(d.info.lastUpdatedAt) : null,
  };
}

function listEntry(s: ScheduleSummary): ScheduleListEntry {
  const memo = s.memo?.[AGENT_SCHEDULE_MEMO] as ScheduleMemo | undefined;
  return {
    scheduleId: s.scheduleId,
    spec: memo || s.spec ? specView(memo, s.spec) : null,
    paused: s.state.paused,
    note: s.state.note || null,
    prompt: memo?.prompt ?? null,
    agent: memo?.agent ?? null,
    tenant: s.typedSearchAttributes?.get(agentTenantKey) ?? null,
    nextRunTimes: s.info.nextActionTimes.slice(0, NEXT_RUN_TIMES).map(iso),
    recentRuns: s.info.recentActions.map(recentRun),
  };
}

const definedOnly = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
