/**
 * The four systems as the driver sees them. Each one runs its agents in a child process of its own (a runner for the
 * in-process systems, a worker for the Temporal ones), so its peak RSS is measurable and its event loop is its own.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { tsToMs } from '@temporalio/common/lib/time';
import { claimCheckDataConverter, FsBlobStore } from '../../src/codec';
import { WORKFLOW_TYPE } from '../../src/common/constants';
import type { AgentRunInput } from '../../src/common/input';
import { stateQuery } from '../../src/common/messages';
import { AgentClient } from '../../src/client';
import { runCli } from '../../src/cli/cli';
import { BENCH_DIR, peakRss, spawnChild, stopChild, type Child } from '../lib/ipc';
import { compiledNodeArgs, compiledOursWorker, hasEarlyThread, hasHeapTuning, hasSourceMapsEntry } from '../lib/compiled';
import { buildOursBundle, historyBytesPerStep, roundTripsPerStep, srcAt, historyChain, startBenchServer, waitForTaskQueue, type BenchServer, type HistoryBytes, type ServerKind, type ServerTuning } from '../lib/temporal';
import { BENCH_MODEL, promptOf, READ_FILE_TOOL, SYSTEM_PROMPT, TOOL_NAME } from '../lib/workload';
import type { OursWorkerConfig } from './ours-worker';
import type { TemporalFloorWorkerConfig } from './temporal-floor-worker';

export interface RunSpec {
  runId: string;
  /** Tool steps; the run makes steps + 1 model calls. */
  steps: number;
  /** The provider's context window, which the run declares (`contextWindowTokens`) so that it compacts in time; this product only. */
  contextWindowTokens?: number;
}

export interface BatchResult {
  /** When the driver began starting the runs (ms, wall clock). */
  startedAt: number;
  /** When the last run ended (ms, wall clock). */
  endedAt: number;
  completed: number;
  failures: string[];
}

export interface Restart {
  /** From spawning the new process to the run's next model call arriving at the model; null if it did not within `notResumedWithinMs`. */
  spawnToNextStepMs: number | null;
  notResumedWithinMs?: number;
  /** From spawning the new process to it being ready (worker polling, runner loaded). */
  spawnToReadyMs: number;
  mode: 'crash' | 'graceful';
}

export interface SystemContext {
  model: Child;
  modelUrl: string;
  workspace: string;
  /** Where each system keeps its logs and databases. */
  scratch: string;
  /** (d): how long to wait for a restarted run's next step before reporting that it did not resume. */
  restartWaitMs: number;
}

export interface BenchSystem {
  readonly name: string;
  start(ctx: SystemContext): Promise<void>;
  runBatch(runs: RunSpec[], opts?: { startConcurrency?: number; timeoutMs?: number }): Promise<BatchResult>;
  /** Bytes the system persisted per step of one finished run. */
  persistedBytes?(runId: string): Promise<HistoryBytes>;
  /** (b): the durable round trip of each step of one finished run (roundTripsPerStep), for systems with a history. */
  roundTrips?(runId: string): Promise<number[]>;
  /** Kills (or gracefully stops) the worker while `call` of a run is at the model, starts a new one, and times the resume. */
  restartDuring?(run: RunSpec, call: number, mode: 'crash' | 'graceful'): Promise<Restart>;
  /** (b): bytes of the run's state view (the `state` query, as JSON), as a watcher reads it; this product only. */
  viewBytes?(runId: string): Promise<number>;
  /** (b): the steps `agent history` lists for the run (the CLI, `--json`); this product only. */
  historySteps?(runId: string): Promise<Array<{ step: number }>>;
  /** (b): the server's log lines about the run's history size (over its warn or error limit); undefined when the log cannot be read. */
  historySizeWarnings?(runId: string): string[] | undefined;
  /** Peak RSS (VmHWM) of the process that runs the agents, read while it lives. */
  peakRss(): number | undefined;
  /** The system's own processes, by role, for CPU accounting (the worker or runner, and the Temporal server). */
  pids(): Record<string, number>;
  stop(): Promise<void>;
}

const scratchDir = (ctx: SystemContext, name: string) => mkdtempSync(path.join(ctx.scratch, `${name}-`));

/** Awaits `fn` over `items` with at most `limit` in flight. */
export async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  });
  await Promise.all(lanes);
}

// ---------------------------------------------------------------------------------------------------------------------
// In-process systems: the floor and LangGraph run their agents inside one runner process.

interface RunnerAnswer {
  started: number;
  results: Array<{ runId: string; ok: boolean; error?: string; endedAt: number }>;
}

abstract class RunnerSystem implements BenchSystem {
  abstract readonly name: string;
  protected ctx!: SystemContext;
  protected runner!: Child;
  protected dir!: string;

  protected abstract spawnRunner(): Promise<Child>;

  async start(ctx: SystemContext): Promise<void> {
    this.ctx = ctx;
    this.dir = scratchDir(ctx, this.name);
    this.runner = await this.spawnRunner();
  }

  async runBatch(runs: RunSpec[]): Promise<BatchResult> {
    const startedAt = Date.now();
    const answer = await this.runner.call<RunnerAnswer>('runs', { runs, modelUrl: this.ctx.modelUrl, workspace: this.ctx.workspace });
    const failures = answer.results.filter((r) => !r.ok).map((r) => `${r.runId}: ${r.error}`);
    return { startedAt, endedAt: Math.max(...answer.results.map((r) => r.endedAt)), completed: answer.results.length - failures.length, failures };
  }

  peakRss(): number | undefined {
    return peakRss(this.runner.pid);
  }

  pids(): Record<string, number> {
    return { runner: this.runner.pid };
  }

  async stop(): Promise<void> {
    // Missing when the runner did not start.
    if (this.runner) await stopChild(this.runner);
  }
}

export class FloorSystem extends RunnerSystem {
  readonly name = 'floor';
  protected spawnRunner(): Promise<Child> {
    return spawnChild(path.join(BENCH_DIR, 'systems/floor.ts'), { runtime: 'tsx' });
  }
}

export interface LangGraphOptions {
  /** LangGraph's `durability`: `sync` persists each checkpoint before the next step starts (as durable as a Temporal step). */
  durability: 'sync' | 'async' | 'exit';
}

export class LangGraphSystem extends RunnerSystem {
  readonly name = 'langgraph';
  private dbFile = '';
  constructor(private readonly options: LangGraphOptions = { durability: 'sync' }) {
    super();
  }

  protected spawnRunner(): Promise<Child> {
    this.dbFile ||= path.join(this.dir, 'checkpoints.sqlite');
    return spawnChild(path.join(BENCH_DIR, 'peers/langgraph-agent.mjs'), {
      runtime: 'node',
      cwd: path.join(BENCH_DIR, 'peers'),
      env: { BENCH_LANGGRAPH: JSON.stringify({ dbFile: this.dbFile, durability: this.options.durability, model: BENCH_MODEL, system: SYSTEM_PROMPT, tool: READ_FILE_TOOL }) },
    });
  }

  async persistedBytes(runId: string): Promise<HistoryBytes> {
    const answer = await this.runner.call<{ bySuperstep: Array<[number, number]>; totalBytes: number; rows: number; largest: number }>('bytes', { threadId: runId });
    // Superstep -1 takes the input and 0 runs START; then agent k runs in superstep 2k - 1 and its tools in 2k.
    const perStep = new Map<number, number>();
    for (const [superstep, bytes] of answer.bySuperstep) {
      if (superstep < 1) continue;
      const step = Math.ceil(superstep / 2);
      perStep.set(step, (perStep.get(step) ?? 0) + bytes);
    }
    return { perStep, totalBytes: answer.totalBytes, totalEvents: answer.rows, runs: 1, largestEventBytes: answer.largest, largestRunEvents: answer.rows, largestRunBytes: answer.totalBytes };
  }

  async restartDuring(run: RunSpec, call: number): Promise<Restart> {
    const done = this.runBatch([run]).catch(() => undefined); // ends with the killed runner
    await this.ctx.model.call('waitFor', { runId: run.runId, call, after: 0 });
    this.runner.proc.kill('SIGKILL');
    await this.runner.exited;
    await done;
    const spawnedAt = Date.now();
    this.runner = await this.spawnRunner();
    const readyAt = Date.now();
    const resumed = this.runner.call<RunnerAnswer>('resume', { runs: [run], modelUrl: this.ctx.modelUrl, workspace: this.ctx.workspace });
    const next = await this.ctx.model.call<number>('waitFor', { runId: run.runId, call, after: spawnedAt });
    const answer = await resumed;
    if (!answer.results[0]?.ok) throw new Error(`langgraph resume failed: ${answer.results[0]?.error}`);
    return { mode: 'crash', spawnToNextStepMs: next - spawnedAt, spawnToReadyMs: readyAt - spawnedAt };
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Temporal systems: a dev server of their own, a worker child, and the driver as the client.

abstract class TemporalSystem implements BenchSystem {
  abstract readonly name: string;
  protected ctx!: SystemContext;
  protected server!: BenchServer;
  protected worker!: Child;
  protected dir!: string;
  protected taskQueue = '';
  protected abstract readonly modelActivity: string;
  /** Which server the system runs on (`npm run bench -- --server`). */
  serverKind: ServerKind = 'dev';

  constructor(protected readonly serverTuning: ServerTuning = {}) {}

  protected abstract spawnWorker(): Promise<Child>;
  protected abstract startRun(run: RunSpec): Promise<void>;
  protected dataConverter(): ReturnType<typeof claimCheckDataConverter> | undefined {
    return undefined;
  }

  async start(ctx: SystemContext): Promise<void> {
    this.ctx = ctx;
    this.dir = scratchDir(ctx, this.name);
    this.taskQueue = `bench-${this.name}-${path.basename(this.dir)}`;
    this.server = await startBenchServer(this.serverTuning, this.dataConverter(), this.serverKind);
    this.worker = await this.spawnWorker();
  }

  get client(): Client {
    return this.server.client;
  }

  async runBatch(runs: RunSpec[], opts: { startConcurrency?: number; timeoutMs?: number } = {}): Promise<BatchResult> {
    const startedAt = Date.now();
    const failures: string[] = [];
    if (runs.length === 1) {
      await this.startRun(runs[0]);
      try {
        await this.client.workflow.getHandle(runs[0].runId).result();
      } catch (err) {
        failures.push(`${runs[0].runId}: ${err instanceof WorkflowFailedError ? String(err.cause?.message) : String(err)}`);
      }
      const desc = await this.client.workflow.getHandle(runs[0].runId).describe();
      return { startedAt, endedAt: desc.closeTime?.getTime() ?? Date.now(), completed: 1 - failures.length, failures };
    }
    await pool(runs, opts.startConcurrency ?? 100, (run) => this.startRun(run));
    const done = await waitForTaskQueue(this.client, this.taskQueue, new Set(runs.map((r) => r.runId)), opts.timeoutMs ?? 30 * 60_000);
    for (const [status, n] of Object.entries(done.statuses)) if (status !== 'COMPLETED') failures.push(`${n} runs ${status}`);
    return { startedAt, endedAt: done.lastCloseMs, completed: done.statuses.COMPLETED ?? 0, failures };
  }

  async persistedBytes(runId: string): Promise<HistoryBytes> {
    return historyBytesPerStep(await historyChain(this.client, runId), this.modelActivity, this.countedActivity);
  }

  /** An activity whose schedulings `persistedBytes` counts (the product's compactions). */
  protected readonly countedActivity?: string;

  historySizeWarnings(runId: string): string[] | undefined {
    const file = this.server.logFile;
    if (!file || !existsSync(file)) return undefined;
    // The server logs "history size exceeds warn limit." (events or bytes) with the workflow's id, at most once a minute a run.
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => /exceeds (warn|error) limit/.test(line) && line.includes(runId));
  }

  async roundTrips(runId: string): Promise<number[]> {
    return roundTripsPerStep(await historyChain(this.client, runId), this.modelActivity);
  }

  async restartDuring(run: RunSpec, call: number, mode: 'crash' | 'graceful'): Promise<Restart> {
    await this.startRun(run);
    await this.ctx.model.call('waitFor', { runId: run.runId, call, after: 0 });
    if (mode === 'crash') {
      this.worker.proc.kill('SIGKILL');
      await this.worker.exited;
    } else {
      await stopChild(this.worker, 60_000); // the worker drains: the model call in flight completes first
    }
    const spawnedAt = Date.now();
    this.worker = await this.spawnWorker();
    const readyAt = Date.now();
    // After a crash the lost call is made again; after a graceful stop the run goes on with the next one.
    const waitMs = this.ctx.restartWaitMs;
    const next = await this.ctx.model
      .call<number>('waitFor', { runId: run.runId, call: mode === 'crash' ? call : call + 1, after: spawnedAt }, waitMs)
      .catch(() => undefined);
    if (next === undefined) {
      // Not resumed in time (an activity with no heartbeat waits out its start-to-close timeout): say so, and move on.
      await this.client.workflow.getHandle(run.runId).terminate('bench: not resumed in time');
      return { mode, spawnToNextStepMs: null, spawnToReadyMs: readyAt - spawnedAt, notResumedWithinMs: waitMs };
    }
    await this.client.workflow.getHandle(run.runId).result();
    // BENCH_D_HISTORY=1: where the time after the spawn went, by the server's clock (the history's events, ms after the spawn).
    if (process.env.BENCH_D_HISTORY) {
      const { events } = await this.client.workflow.getHandle(run.runId).fetchHistory();
      const at = (e: temporal.api.history.v1.IHistoryEvent) => tsToMs(e.eventTime) - spawnedAt;
      const around = (events ?? []).filter((e) => at(e) > -1_500 && at(e) < 3_000);
      console.error(`d: ${mode}: ready ${readyAt - spawnedAt} ms, next step ${next - spawnedAt} ms; events: ${around.map((e) => `${at(e)} ${temporal.api.enums.v1.EventType[e.eventType ?? 0]}`).join(', ')}`);
    }
    return { mode, spawnToNextStepMs: next - spawnedAt, spawnToReadyMs: readyAt - spawnedAt };
  }

  peakRss(): number | undefined {
    return peakRss(this.worker.pid);
  }

  pids(): Record<string, number> {
    return { worker: this.worker.pid, ...this.server.pids };
  }

  async stop(): Promise<void> {
    // Either may be missing when start failed part way.
    if (this.worker) await stopChild(this.worker);
    await this.server?.stop();
  }
}

/** A tuning profile of this product: worker options, server settings, and harness-only switches. */
export interface OursProfile {
  name: string;
  server?: ServerTuning;
  workerOptions?: OursWorkerConfig['workerOptions'];
  logLevel?: OursWorkerConfig['logLevel'];
  /** Build the workflow bundle once ahead of time instead of at every worker boot. */
  prebundle?: boolean;
  /** The product's src/ at this git commit instead of today's (exported into bench/.scratch): its workflows are bundled. */
  srcRef?: string;
  /** Claim-check threshold (AGENT_CLAIM_CHECK_THRESHOLD in production). @default 32768 */
  claimCheckThresholdBytes?: number;
  /** Write down activities in flight for crash recovery, as createAgentWorker does (InflightActivities). @default true */
  journal?: boolean;
  /** Flush each blob (conversation nodes, claim-checked payloads) to disk before history refers to it, as FsBlobStore does by default. @default true */
  blobFsync?: boolean;
  /** Conversation nodes appended to packs, as FsBlobStore does by default; false: a file a node. @default true */
  blobPacks?: boolean;
  /** The worker process runs its src/ (today's, or `srcRef`'s) as JavaScript, as the Docker image does, instead of TypeScript through tsx (bench/lib/compiled.ts). */
  compiled?: boolean;
  /** With `compiled`, map stack traces as the image does (compiledNodeArgs, and the entry's source-maps module). @default true */
  sourceMaps?: boolean;
  /** Start the SDK's workflow thread before the worker's modules load, as the image's entry does, where the code has it (hasEarlyThread). @default true */
  earlyThread?: boolean;
  /** Set V8's old-generation growth as the image's entry does, where the code has it (hasHeapTuning). @default true */
  heapTuning?: boolean;
  /** More node flags for the worker process (V8 heap settings, say), after the image's. */
  nodeArgs?: string[];
  /** More environment for the worker process (the Rust core's `TOKIO_WORKER_THREADS`, say). */
  env?: Record<string, string>;
  /** How often a model call heartbeats (activity deps' `modelHeartbeatMs`). @default the product's MODEL_HEARTBEAT_MS */
  modelHeartbeatMs?: number;
  /** Workflow interceptor modules bundled with today's src/ (bench experiments; implies `prebundle`). */
  workflowInterceptorModules?: string[];
}

const bundles = new Map<string, Promise<string>>();

export class OursSystem extends TemporalSystem {
  readonly name = 'ours';
  protected readonly modelActivity = 'callModel';
  protected override readonly countedActivity = 'compactContext';
  private bundlePath?: string;
  private srcDir?: string;
  private readonly blobDir = mkdtempSync(path.join(os.tmpdir(), 'bench-blobs-'));

  constructor(readonly profile: OursProfile) {
    super(profile.server);
  }

  /** The blob store goes with the system: a full run's stores held every conversation node of every batch. */
  override async stop(): Promise<void> {
    await super.stop();
    rmSync(this.blobDir, { recursive: true, force: true });
  }

  protected override dataConverter() {
    return claimCheckDataConverter({ store: new FsBlobStore(this.blobDir), thresholdBytes: this.profile.claimCheckThresholdBytes });
  }

  override async start(ctx: SystemContext): Promise<void> {
    mkdirSync(this.blobDir, { recursive: true }); // again after a stop
    const ref = this.profile.srcRef;
    if (ref) this.srcDir = srcAt(ref);
    // An earlier commit's workflows are always bundled ahead: its worker would otherwise bundle today's src/.
    const interceptors = this.profile.workflowInterceptorModules ?? [];
    if (this.profile.prebundle || ref || interceptors.length) {
      const key = [ref ?? 'HEAD', ...interceptors].join(' ');
      if (!bundles.has(key)) bundles.set(key, buildOursBundle(this.srcDir, interceptors));
      this.bundlePath = await bundles.get(key)!;
    }
    await super.start(ctx);
  }

  protected spawnWorker(): Promise<Child> {
    const config: OursWorkerConfig = {
      address: this.server.address,
      taskQueue: this.taskQueue,
      modelUrl: this.ctx.modelUrl,
      workspace: this.ctx.workspace,
      blobDir: this.blobDir,
      ...(this.profile.blobFsync === false ? { blobFsync: false } : {}),
      ...(this.profile.blobPacks === false ? { blobPacks: false } : {}),
      ledgerFile: this.profile.journal === false ? undefined : path.join(this.dir, 'tool-ledger.sqlite'),
      bundlePath: this.bundlePath,
      // A compiled worker's own ../../src is that commit's code, transpiled.
      srcDir: this.profile.compiled ? undefined : this.srcDir,
      logLevel: this.profile.logLevel,
      claimCheckThresholdBytes: this.profile.claimCheckThresholdBytes,
      workerOptions: this.profile.workerOptions,
      modelHeartbeatMs: this.profile.modelHeartbeatMs,
      sourceMaps: this.profile.sourceMaps !== false && hasSourceMapsEntry(this.srcDir),
      earlyThread: this.profile.earlyThread !== false && hasEarlyThread(this.srcDir),
      heapTuning: this.profile.heapTuning !== false && hasHeapTuning(this.srcDir),
    };
    const compiled = this.profile.compiled;
    return spawnChild(compiled ? compiledOursWorker(this.srcDir) : path.join(BENCH_DIR, 'systems/ours-worker.ts'), {
      runtime: compiled ? 'node' : 'tsx',
      nodeArgs: [...(compiled && this.profile.sourceMaps !== false ? compiledNodeArgs(this.srcDir) : []), ...(this.profile.nodeArgs ?? [])],
      env: { ...this.profile.env, BENCH_WORKER: JSON.stringify(config) },
      stdoutFile: path.join(this.dir, 'worker.log'),
    });
  }

  async viewBytes(runId: string): Promise<number> {
    const view = await this.client.workflow.getHandle(runId).query(stateQuery);
    return Buffer.byteLength(JSON.stringify(view));
  }

  async historySteps(runId: string): Promise<Array<{ step: number }>> {
    let out = '';
    let err = '';
    const code = await runCli(['history', runId, '--json'], {
      connect: async () => new AgentClient(this.client, this.taskQueue),
      out: (text) => (out += text),
      err: (text) => (err += text),
    });
    if (code !== 0) throw new Error(`agent history ${runId} exited ${code}: ${err.slice(0, 500)}`);
    return JSON.parse(out) as Array<{ step: number }>;
  }

  protected async startRun(run: RunSpec): Promise<void> {
    const input: AgentRunInput = {
      prompt: promptOf(run.runId, run.steps),
      model: BENCH_MODEL,
      systemPrompt: SYSTEM_PROMPT,
      tools: [TOOL_NAME],
      // A run's model calls are at most 10,000 (the input's bound); a long run's working time grows with it.
      limits: { maxLoops: Math.min(10_000, run.steps + 10), maxToolCalls: run.steps + 10, timeoutMs: Math.max(60 * 60_000, run.steps * 1_000) },
      ...(run.contextWindowTokens ? { contextWindowTokens: run.contextWindowTokens } : {}),
    };
    await this.client.workflow.start(WORKFLOW_TYPE, { taskQueue: this.taskQueue, workflowId: run.runId, args: [input] });
  }
}

export interface AiSdkOptions {
  /** Worker options passed through to the peer's worker. */
  workerOptions?: Record<string, unknown>;
}

/** Temporal's own `@temporalio/ai-sdk` agent: `generateText` with a tool inside a workflow, its worker on SDK 1.23.0. */
export class AiSdkSystem extends TemporalSystem {
  readonly name = 'temporal-ai-sdk';
  protected readonly modelActivity = 'invokeModel';

  constructor(
    private readonly options: AiSdkOptions = {},
    serverTuning: ServerTuning = {},
  ) {
    super(serverTuning);
  }

  protected spawnWorker(): Promise<Child> {
    const config = {
      address: this.server.address,
      taskQueue: this.taskQueue,
      modelUrl: this.ctx.modelUrl,
      workspace: this.ctx.workspace,
      workerOptions: this.options.workerOptions ?? {},
    };
    return spawnChild(path.join(BENCH_DIR, 'peers/temporal-ai-sdk/worker.mjs'), {
      runtime: 'node',
      cwd: path.join(BENCH_DIR, 'peers/temporal-ai-sdk'),
      env: { BENCH_WORKER: JSON.stringify(config) },
      stdoutFile: path.join(this.dir, 'worker.log'),
    });
  }

  protected async startRun(run: RunSpec): Promise<void> {
    await this.client.workflow.start('aiSdkAgent', {
      taskQueue: this.taskQueue,
      workflowId: run.runId,
      args: [{ prompt: promptOf(run.runId, run.steps), steps: run.steps, system: SYSTEM_PROMPT, model: BENCH_MODEL, tool: TOOL_NAME }],
    });
  }
}

/**
 * The least a Temporal agent can be (`temporal-floor-workflows.ts`): one activity a step, holding the plain loop's
 * model call and tool calls, and a workflow that only keeps the conversation. It runs on this project's SDK with the
 * product's worker options, against a dev server as the project starts it, so the gap between it and the floor is
 * what one server round trip a step costs, whatever runs inside the workflow.
 */
export class TemporalFloorSystem extends TemporalSystem {
  readonly name = 'temporal-floor';
  protected readonly modelActivity = 'step';

  protected spawnWorker(): Promise<Child> {
    const config: TemporalFloorWorkerConfig = { address: this.server.address, taskQueue: this.taskQueue, modelUrl: this.ctx.modelUrl, workspace: this.ctx.workspace };
    return spawnChild(path.join(BENCH_DIR, 'systems/temporal-floor-worker.ts'), {
      runtime: 'tsx',
      env: { BENCH_WORKER: JSON.stringify(config) },
      stdoutFile: path.join(this.dir, 'worker.log'),
    });
  }

  protected async startRun(run: RunSpec): Promise<void> {
    await this.client.workflow.start('temporalFloor', { taskQueue: this.taskQueue, workflowId: run.runId, args: [SYSTEM_PROMPT, promptOf(run.runId, run.steps)] });
  }
}
