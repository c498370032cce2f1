/** The Temporal side of the bench: a dev server per system, workflow bundles, and history bytes per step. */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { optionalTsToDate } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, type BundleOptions } from '@temporalio/worker';
import { startDevServer } from '../../scripts/lib/dev-server';
import { offsetPorts, stackDown, stackUp } from '../../scripts/lib/stack/stack';
import { freePort } from '../../scripts/lib/free-port';
import { executionStatus, rawExecutions } from '../../src/client/listing';
import { closeSafeConnectionPlugin } from '../../src/config/connection';


export interface ServerTuning {
  /** Extra `--sqlite-pragma NAME=VALUE` settings, applied after the project's (WAL, synchronous=normal). */
  pragmas?: string[];
  /** `--dynamic-config-value KEY=VALUE` settings. */
  dynamicConfig?: string[];
  /** Environment of the server process: the Go runtime's `GOGC`, `GOMAXPROCS`. */
  env?: Record<string, string>;
}

/** `dev`: a dev server (SQLite) per system and figure. `stack`: the PostgreSQL-backed cluster of `npm run stack`, one for the bench run. */
export type ServerKind = 'dev' | 'stack';

export interface BenchServer {
  address: string;
  /** The processes whose CPU is the server's: the Temporal Server, and PostgreSQL (the postmaster and its backends) on the stack. */
  pids: { server: number; database?: number };
  client: Client;
  connection: Connection;
  /** The Temporal Server's log (warnings and errors on the dev server; the cluster's is shared by the bench's systems). */
  logFile?: string;
  stop(): Promise<void>;
}

/**
 * A headless dev server on a free port with a fresh SQLite file, as the project starts it, plus `tuning`; or, for
 * `stack`, a connection to the bench's cluster (`tuning` is the dev server's and does not apply).
 */
export async function startBenchServer(tuning: ServerTuning = {}, dataConverter?: DataConverter, kind: ServerKind = 'dev'): Promise<BenchServer> {
  if (kind === 'stack') return connectBenchStack(dataConverter);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-temporal-'));
  const dbFile = path.join(dir, 'temporal.sqlite');
  const extraArgs = [
    ...(tuning.pragmas ?? []).flatMap((p) => ['--sqlite-pragma', p]),
    ...(tuning.dynamicConfig ?? []).flatMap((d) => ['--dynamic-config-value', d]),
  ];
  const logFile = path.join(dir, 'server.log');
  const handle = await startDevServer({ port: await freePort(), headless: true, dbFile, extraArgs, env: tuning.env, logFile });
  const stopPerf = process.env.BENCH_SERVER_PERF ? recordServerCpu(handle.pid, process.env.BENCH_SERVER_PERF) : undefined;
  const connection = await Connection.connect({ address: handle.address, plugins: [closeSafeConnectionPlugin] });
  const client = new Client({ connection, dataConverter });
  return {
    address: handle.address,
    pids: { server: handle.pid },
    client,
    connection,
    logFile,
    async stop() {
      await connection.close().catch(() => undefined);
      await stopPerf?.();
      await handle.stop();
      // The SQLite file and the log: 50-100 MB a system, which every full run used to leave in the temp folder.
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The bench's cluster: `npm run stack`'s PostgreSQL and Temporal Server with no agent workers of their own (each system
 * brings its worker, as on the dev server), in the bench's scratch directory, on the stack's ports moved by 2000 so a
 * stack the user runs is left alone. Started on first use; `stopBenchStack` ends it with the bench.
 */
let benchStack: Promise<{ address: string; pids: BenchServer['pids']; logFile: string }> | undefined;
let benchStackDir: string | undefined;
export const BENCH_STACK_PORT_SHIFT = 2_000;

async function connectBenchStack(dataConverter?: DataConverter): Promise<BenchServer> {
  benchStack ??= (async () => {
    benchStackDir = mkdtempSync(path.join(os.tmpdir(), 'bench-stack-'));
    chmodSync(benchStackDir, 0o755); // PostgreSQL runs as its own user and must reach its data directory inside
    const ports = offsetPorts(BENCH_STACK_PORT_SHIFT);
    const up = await stackUp({
      dir: benchStackDir,
      ports,
      namespace: 'default',
      taskQueue: 'bench-unused',
      workers: 0,
      workerScript: 'src/bin/worker.ts',
      // Set, so that the stack starts no scripted model: each system's worker calls the bench's model.
      workerEnv: { LLM_BASE_URL: 'http://127.0.0.1:1/v1' },
      // The cluster alone: each system brings its own worker, and nothing here opens the gateway, the codec server or the UI.
      services: false,
      log: () => undefined,
    });
    const { temporal: server, postgres } = up.state.processes;
    return { address: up.address, pids: { server: server.pid, database: postgres.pid }, logFile: server.log };
  })();
  const { address, pids, logFile } = await benchStack;
  const connection = await Connection.connect({ address, plugins: [closeSafeConnectionPlugin] });
  const client = new Client({ connection, dataConverter });
  return {
    address,
    pids,
    client,
    connection,
    logFile,
    async stop() {
      await connection.close().catch(() => undefined);
    },
  };
}

/** Stops the bench's cluster, if it started one, and removes its data. */
export async function stopBenchStack(): Promise<void> {
  if (!benchStack) return;
  await benchStack.catch(() => undefined);
  benchStack = undefined;
  if (benchStackDir) {
    await stackDown(benchStackDir, () => undefined);
    rmSync(benchStackDir, { recursive: true, force: true });
    benchStackDir = undefined;
  }
}

/**
 * `BENCH_SERVER_PERF=<dir>`: samples the dev server's CPU with Linux `perf` (call stacks by frame pointer, which Go
 * keeps) from the moment it is ready until the bench stops it, into `<dir>/server-<pid>.data`. The dev server has no
 * pprof endpoint; `bench/server-profile` reads the file against the binary's Go symbol table.
 */
function recordServerCpu(pid: number, dir: string): () => Promise<void> {
  mkdirSync(dir, { recursive: true });
  const perf = spawn('perf', ['record', '-F', '997', '-g', '-p', String(pid), '-o', path.join(dir, `server-${pid}.data`)], { stdio: 'ignore' });
  perf.on('error', (err) => console.error(`BENCH_SERVER_PERF: cannot run perf (apt install linux-perf): ${err.message}`));
  const exited = new Promise<void>((resolve) => perf.once('close', () => resolve()));
  return async () => {
    perf.kill('SIGINT'); // perf writes its file on SIGINT
    await Promise.race([exited, sleep(30_000)]);
  };
}

/**
 * The product's src/ at a git commit, exported into bench/.scratch (inside the project, so that its imports resolve
 * to the project's node_modules); returns its path. Measures earlier code beside today's in the same run.
 */
export function srcAt(ref: string): string {
  const root = path.resolve(__dirname, '../..');
  const dir = path.join(root, 'bench/.scratch', `src-${ref}`);
  if (prepared.has(dir)) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = execFileSync('git', ['-C', root, 'archive', ref, 'src'], { maxBuffer: 256 * 1024 * 1024 });
  execFileSync('tar', ['-x', '--strip-components=1', '-C', dir], { input: archive });
  prepared.add(dir);
  return dir;
}

const prepared = new Set<string>();

/**
 * Builds the product's workflow bundle once (as a deploy would) and writes it to a file a worker can load.
 * `interceptorModules`: workflow interceptor modules to bundle with today's src/ (bench experiments).
 */
export async function buildOursBundle(srcDir?: string, interceptorModules: string[] = []): Promise<string> {
  const noop = () => undefined;
  const logger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };
  // Bundled as that code's own workers bundle it: with its bundleAgentWorkflows (preloaded modules) where it has one.
  const src = srcDir ?? path.resolve(__dirname, '../../src');
  const { code } = interceptorModules.length
    ? await bundleWorkflowCode({
        workflowsPath: path.join(src, 'workflows'),
        workflowInterceptorModules: interceptorModules,
        preloadModules: [...(requireBundleModule(src) as { PRELOAD_MODULES: string[] }).PRELOAD_MODULES],
        logger,
      })
    : await (ownBundler(src)?.({ logger }) ?? bundleWorkflowCode({ workflowsPath: path.join(src, 'workflows'), logger }));
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-bundle-')), 'workflows.js');
  writeFileSync(file, code);
  return file;
}

type Bundler = (o: { logger: BundleOptions['logger'] }) => Promise<{ code: string }>;

/** That src/'s `bundleAgentWorkflows`, or undefined for code from before it (bundled with the SDK's defaults). */
function ownBundler(src: string): Bundler | undefined {
  try {
    return (requireBundleModule(src) as { bundleAgentWorkflows?: Bundler }).bundleAgentWorkflows;
  } catch {
    return undefined;
  }
}

/**
 * That src/'s workflow-bundle module: `worker/workflow-bundle` since the rooms of issue 29, `workflow-bundle` before.
 * A miss here bundled today's code with the SDK's defaults (ES2017, object spread as helper calls) without a word.
 */
function requireBundleModule(src: string): unknown {
  for (const candidate of [path.join(src, 'worker', 'workflow-bundle'), path.join(src, 'workflow-bundle')]) {
    try {
      require.resolve(candidate);
    } catch {
      continue;
    }
    return require(candidate);
  }
  throw new Error(`no workflow-bundle module under ${src}`);
}

/** Every run of a workflow id, oldest first, following continue-as-new back from the latest. */
export async function historyChain(client: Client, workflowId: string): Promise<temporal.api.history.v1.IHistory[]> {
  const histories = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = await fetchHistory(client, workflowId, runId);
    histories.unshift(history);
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return histories;
}

/** The whole history of one run, in small pages: a history of large events (inline conversations) can exceed gRPC's message limit in one. */
async function fetchHistory(client: Client, workflowId: string, runId: string): Promise<temporal.api.history.v1.IHistory> {
  const events: temporal.api.history.v1.IHistoryEvent[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      maximumPageSize: 20,
      nextPageToken,
    });
    events.push(...(page.history?.events ?? []));
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { events };
}

export interface HistoryBytes {
  /** Bytes of the history events each step added, by step number (1-based). */
  perStep: Map<number, number>;
  totalBytes: number;
  totalEvents: number;
  runs: number;
  largestEventBytes: number;
  /** The most events and bytes of one run of the chain: what the server's history limits (warn at 10,240 events or 10 MB) apply to. */
  largestRunEvents: number;
  largestRunBytes: number;
  /** Activities of `countActivity` scheduled across the chain (the product's compactions), when asked. */
  counted?: number;
}

/**
 * History bytes per step, as test/long-run-500.test.ts counts them: every event from the k-th scheduling of the model
 * activity up to the next one belongs to step k. Encoded as the server stores them (claim-check references, not blobs).
 */
export function historyBytesPerStep(histories: temporal.api.history.v1.IHistory[], modelActivity: string, countActivity?: string): HistoryBytes {
  const perStep = new Map<number, number>();
  let call = 0;
  let totalBytes = 0;
  let totalEvents = 0;
  let largestEventBytes = 0;
  let largestRunEvents = 0;
  let largestRunBytes = 0;
  let counted = 0;
  for (const history of histories) {
    let runBytes = 0;
    for (const event of history.events ?? []) {
      const activity = event.activityTaskScheduledEventAttributes?.activityType?.name;
      if (activity === modelActivity) call++;
      if (countActivity && activity === countActivity) counted++;
      const bytes = temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
      totalBytes += bytes;
      runBytes += bytes;
      totalEvents++;
      largestEventBytes = Math.max(largestEventBytes, bytes);
      if (call > 0) perStep.set(call, (perStep.get(call) ?? 0) + bytes);
    }
    largestRunEvents = Math.max(largestRunEvents, history.events?.length ?? 0);
    largestRunBytes = Math.max(largestRunBytes, runBytes);
  }
  return { perStep, totalBytes, totalEvents, runs: histories.length, largestEventBytes, largestRunEvents, largestRunBytes, ...(countActivity ? { counted } : {}) };
}

/** An event's time (the server's clock) in ms since the epoch, to the microsecond the server gives. */
const eventMs = (e: temporal.api.history.v1.IHistoryEvent): number => Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;

/**
 * The durable round trip of each step of a run, from its histories (the server's clock): from model call k's activity
 * completing to call k + 1's activity starting, at index k - 1. It holds the workflow task that takes the result and
 * schedules the next call, and the server's dispatch of both tasks; nothing of what the activities do.
 */
export function roundTripsPerStep(histories: temporal.api.history.v1.IHistory[], modelActivity: string): number[] {
  const started: number[] = [];
  const completed: number[] = [];
  let calls = 0;
  histories.forEach((history, run) => {
    // Event ids start again in each run of a chain (continue-as-new).
    const callOf = new Map<string, number>();
    const key = (id: unknown) => `${run}:${String(id)}`;
    for (const event of history.events ?? []) {
      if (event.activityTaskScheduledEventAttributes?.activityType?.name === modelActivity) callOf.set(key(event.eventId), calls++);
      const start = callOf.get(key(event.activityTaskStartedEventAttributes?.scheduledEventId));
      if (event.activityTaskStartedEventAttributes && start !== undefined) started[start] = eventMs(event);
      const end = callOf.get(key(event.activityTaskCompletedEventAttributes?.scheduledEventId));
      if (event.activityTaskCompletedEventAttributes && end !== undefined) completed[end] = eventMs(event);
    }
  });
  return completed.slice(0, -1).map((at, k) => (started[k + 1] ?? NaN) - at);
}

/** Waits until no workflow on `taskQueue` is running; returns the latest close time (server clock) and the statuses of the runs in `ids`. */
export async function waitForTaskQueue(
  client: Client,
  taskQueue: string,
  ids: Set<string>,
  timeoutMs: number,
): Promise<{ lastCloseMs: number; statuses: Record<string, number>; closeTimes: Map<string, number> }> {
  const deadline = Date.now() + timeoutMs;
  const query = `TaskQueue="${taskQueue}"`;
  for (;;) {
    // Runs of earlier batches on this queue are closed, so "none running" means this batch is done once it is all there.
    const { count: running } = await client.workflow.count(`${query} AND ExecutionStatus="Running"`);
    const { count: all } = await client.workflow.count(query);
    if (all >= ids.size && running === 0) break;
    if (Date.now() > deadline) throw new Error(`${running} of ${all} runs on ${taskQueue} still running after ${timeoutMs} ms`);
    await sleep(200);
  }
  const statuses: Record<string, number> = {};
  const closeTimes = new Map<string, number>();
  let lastCloseMs = 0;
  // The raw listing: the product's runs write their stored state into the memo with the worker's codec, which this
  // client, with a plain converter, could not decode.
  for await (const e of rawExecutions(client, query)) {
    const status = executionStatus(e);
    const workflowId = e.execution?.workflowId ?? '';
    // Continue-as-new closes earlier runs of the same id; the latest run's close is the end of the agent run.
    if (status === 'CONTINUED_AS_NEW' || !ids.has(workflowId)) continue;
    statuses[status] = (statuses[status] ?? 0) + 1;
    const close = optionalTsToDate(e.closeTime)?.getTime() ?? 0;
    closeTimes.set(workflowId, close);
    lastCloseMs = Math.max(lastCloseMs, close);
  }
  return { lastCloseMs, statuses, closeTimes };
}
