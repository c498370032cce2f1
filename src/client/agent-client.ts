/** `AgentClient`: connects to Temporal, starts runs, forks them, lists them and hands out `AgentRunHandle`s. */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { createDataConverter, type CodecSettings } from '../codec';
import { codecSettings, observabilitySettings, temporalSettings, tenantBurstSettings, type MemorySettings, type TemporalSettings } from '../config';
import type { MemoryStore } from '../memory';
import { AgentMemory } from './memory';
import { BackgroundQueue } from './background-queue';
import { clientConnectionOptions, tlsFailureReason } from '../config/connection';
import { tracingClientInterceptors } from '../observability/client-tracing';
import { WORKFLOW_TYPE } from '../common/constants';
import { parseAgentRunInput, type AgentRunInput } from '../common/input';
import { InvalidAgentInputError } from './errors';
import { forkInput, type WhatIfOptions } from './fork';
import { AgentRunHandle } from './handle';
import { listRuns, type AgentRunSummary, type ListOptions } from './listing';
import { runTenant, type RunOwner } from './owner';
import { runStartFields } from './run-memo';
import { AgentSchedules } from './schedules';
import { TenantBurst, type TenantBurstOptions } from './tenant-burst';
import { searchRuns, type RunListEntry, type RunListFilter } from './run-list';
import { diffSnapshots, type SnapshotDiff } from './time-travel';


/** Options of `AgentClient.start`. */
export interface StartOptions {
  /** @default `agent-<12 hex chars>` */
  workflowId?: string;
  /**
   * The tenant the run belongs to and who started it (`AgentTenant` search attribute, `agentOwner` memo); its children
   * inherit it. A fork without one inherits the forked run's. @default none: a run of no tenant, which only the service sees
   */
  owner?: RunOwner;
}

/**
 * The data converter agent clients and workers share: encryption (AGENT_ENCRYPTION_KEYS) and the claim check
 * (AGENT_CLAIM_CHECK, AGENT_BLOB_DIR). Pass it to `new Client({ dataConverter })` when wrapping your own client with
 * `new AgentClient`. @default settings `codecSettings()`, read from the environment
 */
export const agentDataConverter = (settings: CodecSettings = codecSettings()): DataConverter => createDataConverter(settings);

/** Options of `AgentClient.connect`. */
export interface ConnectOptions {
  /** Must match the workers' (same keys, same blob store), or payloads cannot be read. @default `agentDataConverter()` */
  dataConverter?: DataConverter;
  /**
   * Where `AgentClient.memory` reads and writes memories: a store of yours, or the settings of one to open on first use.
   * Must be the workers' store. @default `memorySettings()` (AGENT_MEMORY, else ./.agent/memory.sqlite)
   */
  memory?: MemoryStore | MemorySettings;
  /**
   * Start each run's trace here and pass it to the workflow in headers.
   * @default on when the environment configures tracing (AGENT_TRACING, OTEL_EXPORTER_OTLP_ENDPOINT)
   */
  tracing?: boolean;
  /**
   * Runs a tenant may start per window through this client at the priority it asks for; its further runs start in the
   * background (priority 8), behind the other tenants' on the task queue and in the provider budget. `false`: never.
   * @default `AGENT_TENANT_BURST`, else 100 a minute
   */
  tenantBurst?: TenantBurstOptions | false;
}

/** Typed entry point to `agentRun` workflows. Create with `AgentClient.connect()`, or wrap an existing `Client`. */
export class AgentClient {
  /**
   * Connects to Temporal. Settings not given come from `temporalSettings()` in src/config: TEMPORAL_ADDRESS,
   * TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, and TLS, mTLS and API key by envconfig's conventions (TEMPORAL_API_KEY,
   * TEMPORAL_TLS_*, temporal.toml profiles); the options not given, from the environment likewise.
   */
  static async connect(settings: Partial<TemporalSettings> = {}, options: ConnectOptions = {}): Promise<AgentClient> {
    const temporal = { ...temporalSettings(), ...definedOnly(settings) };
    let connection: Connection;
    try {
      connection = await Connection.connect(clientConnectionOptions(temporal));
    } catch (err) {
      // A refused TLS handshake surfaces as a deadline; the handshake itself says why.
      const why = (await tlsFailureReason(clientConnectionOptions(temporal)).catch(() => undefined)) ?? (err instanceof Error ? err.message : String(err));
      throw new Error(`cannot connect to Temporal at ${temporal.address}: ${why}`, { cause: err });
    }
    const dataConverter = options.dataConverter ?? agentDataConverter();
    const tracing = options.tracing ?? observabilitySettings().tracing !== 'off';
    const interceptors = { workflow: tracingClientInterceptors(tracing) };
    return new AgentClient(new Client({ connection, namespace: temporal.namespace, dataConverter, interceptors }), temporal.taskQueue, connection, options.memory, options);
  }

  /**
   * Agent runs on a schedule (cron or interval) over Temporal Schedules: `create`, `list`, `describe`, `pause`,
   * `unpause`, `trigger`, `delete`. Their runs go to this client's task queue.
   */
  readonly schedules: AgentSchedules;

  /** Memories across runs (docs/memory.md): put, get, list, delete and search by namespace, in the workers' store. */
  readonly memory: AgentMemory;

  /** Each tenant's burst of starts at its own priority (`ConnectOptions.tenantBurst`); null: none. */
  readonly tenantBurst: TenantBurst | null;

  /** Where background runs start: the fleet's background task queue while a worker polls it. */
  private readonly background: BackgroundQueue;

  /**
   * Wraps an existing client; `close()` then closes `ownedConnection` only, if given, and the memory store if it opened it.
   * `memory`: as `ConnectOptions.memory`; `options.tenantBurst`: as `ConnectOptions.tenantBurst`.
   */
  constructor(
    readonly client: Client,
    readonly taskQueue: string,
    private readonly ownedConnection?: Connection,
    memory?: MemoryStore | MemorySettings,
    options: Pick<ConnectOptions, 'tenantBurst'> = {},
  ) {
    this.memory = new AgentMemory(memory);
    this.schedules = new AgentSchedules(client, taskQueue);
    const burst = options.tenantBurst ?? tenantBurstSettings();
    this.tenantBurst = burst ? new TenantBurst(burst) : null;
    this.background = new BackgroundQueue(client, taskQueue);
  }

  /**
   * Validates the input and starts a run, with the `AgentState` search attribute set to IDLE so it is filterable at once.
   * Throws `InvalidAgentInputError` (and starts nothing) on bad input; Temporal's `WorkflowExecutionAlreadyStartedError`
   * if a run with this id is still open.
   */
  async start(input: AgentRunInput, opts: StartOptions = {}): Promise<AgentRunHandle> {
    const parsed = parseAgentRunInput(input);
    if (!parsed.ok) throw new InvalidAgentInputError(parsed.error);
    const workflowId = opts.workflowId ?? `agent-${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    // A run that belongs to a tenant draws on the fleet's quota as that tenant, whatever its input said.
    if (opts.owner?.tenant) input = { ...input, tenant: opts.owner.tenant };
    // A tenant past its burst starts this run in the background, behind the other tenants' runs.
    const priority = this.tenantBurst ? this.tenantBurst.priorityOf(input.tenant, input.priority) : input.priority;
    if (priority !== input.priority) input = { ...input, priority };
    // The input goes as given, not resolved: defaults stay the worker's concern, and a strict schema that later drops
    // a defaulted field still accepts old histories on replay. The resolved limits are in the `state` query.
    // A background run starts on the background task queue while a worker polls it (docs/quota.md).
    const taskQueue = await this.background.taskQueueOf(priority);
    const handle = await this.client.workflow.start(WORKFLOW_TYPE, { taskQueue, workflowId, args: [input], ...runStartFields(input, opts.owner) });
    return new AgentRunHandle(handle, handle.firstExecutionRunId, taskQueue);
  }

  /**
   * Time travel: a new run that carries on from step `fromStep` of another, with the snapshot it had right after that
   * step (conversation included). The original is untouched; the fork's `state().origin` names it. Step 0 is the
   * run before its start: a fork from it starts at once, a fresh run of the same input. A step the run does not hold
   * rejects with `AgentStepNotFoundError`, its last (ended) step and a negative one with `InvalidAgentInputError`.
   * A what-if fork (`edits`) starts from the step edited, and reuses the original's recorded model answers until its
   * requests differ from the original's (`replay`; the fork's `usage.replayedCalls` counts them).
   */
  async fork(workflowId: string, fromStep: number, opts: StartOptions & WhatIfOptions = {}): Promise<AgentRunHandle> {
    const fork = await forkInput(this.handle(workflowId), workflowId, fromStep, { edits: opts.edits, replay: opts.replay });
    // A fork stays with the tenant of the run it forks, whoever asks for it.
    const tenant = await runTenant(this.client, workflowId);
    const owner = tenant ? { tenant, startedBy: opts.owner?.startedBy ?? null } : opts.owner;
    return this.start(fork.input, { workflowId: opts.workflowId ?? fork.workflowId, ...(owner ? { owner } : {}) });
  }

  /** The tenant of the run with this id (`AgentTenant`), null for none; rejects with `AgentRunNotFoundError` for no such run. */
  async tenantOf(workflowId: string): Promise<string | null> {
    return runTenant(this.client, workflowId);
  }

  /**
   * What-if forks side by side: what differs between two runs' states now (conversation included), e.g. a run and a
   * fork of it, each change with its path as `AgentRunHandle.diff` has it.
   */
  async diffRuns(from: string, to: string, steps: { from?: number; to?: number } = {}): Promise<SnapshotDiff> {
    // One after the other, as `diff` asks its two steps; each run as it is now unless a step of it is named.
    const at = (id: string, step: number | undefined) => (step === undefined ? this.handle(id).state({ includeMessages: true }) : this.handle(id).snapshotAt(step, { includeMessages: true }));
    const a = await at(from, steps.from);
    const b = await at(to, steps.to);
    return { ...diffSnapshots(a, b), runs: { from, to } };
  }

  /** A handle to the latest run with this workflow id. Nothing is checked until a method is called. */
  handle(workflowId: string): AgentRunHandle {
    return new AgentRunHandle(this.client.workflow.getHandle(workflowId), undefined, this.taskQueue);
  }

  /**
   * Agent runs in visibility as the server orders them (its SQL store takes no ORDER BY): open runs first, newest
   * first, then closed runs, the most recently closed first. Optionally only those in one `AgentState`.
   */
  async list(opts: ListOptions = {}): Promise<AgentRunSummary[]> {
    return listRuns(this.client, opts);
  }

  /**
   * The list the gateway's `GET /v1/runs` answers, with its search: `q` (text in the id or the prompt), `agent`,
   * `since`/`until` (start time), `parent` and `forkOf`, and what each run's memo holds (prompt, agent, cost).
   */
  async search(filter: RunListFilter = {}): Promise<RunListEntry[]> {
    return searchRuns(this.client, filter);
  }

  /** Closes the connection if `connect` opened it. */
  async close(): Promise<void> {
    await this.memory.close();
    await this.ownedConnection?.close();
  }
}

/** The fields of `o` that are set: `{ address: undefined }` from a caller leaves the default in place. */
const definedOnly = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
