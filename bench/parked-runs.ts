/**
 * Figure (h), parked runs (issue 54): `runs` runs wait for a person's approval on one worker, at the product's
 * defaults (bench/lib/parked-worker.ts: createAgentWorker, its sticky cache as the SDK sizes it). Reported: the
 * worker's and the server's RSS while they are parked; then, for `approve` runs chosen at random among those the
 * worker has most likely evicted, the time from sending the approval to that run's next model request reaching the
 * provider (the run is replayed, takes the approval, runs the approved tool, and calls the model), and whether every
 * approved run completes.
 *
 *   npx tsx bench/parked-runs.ts --runs 10000 --approve 1000 [--server dev|stack]
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { freePort } from '../scripts/lib/free-port';
import { AgentClient, type AgentRunInput } from '../src/client';
import { rawExecutions } from '../src/client/listing';
import { startScriptedModel, type ScriptContext } from '../src/scripted-model';
import { buildWorkflowBundles } from '../src/worker/workflow-bundle';
import { BENCH_DIR, currentRss, peakRss, spawnChild, stopChild } from './lib/ipc';
import { percentile } from './lib/stats';
import { startBenchServer, stopBenchStack, type ServerKind } from './lib/temporal';

export interface FigureHOptions {
  runs: number;
  approve: number;
  server: ServerKind;
  /** Runs in flight while parking them (started, their first model request not yet arrived). @default 200 */
  startConcurrency?: number;
  /** Approvals in flight at once: a modest rate, as people approve. @default 10 */
  approveConcurrency?: number;
  /** The worker's V8 heap limit (`--max-old-space-size`, MB), given to the worker alone; the SDK sizes its cache from it. */
  workerHeapMb?: number;
  log?: (line: string) => void;
}

export interface FigureH {
  runs: number;
  server: ServerKind;
  /** From the first start to every run in AWAITING_APPROVAL (the AgentState search attribute), or ended. */
  parkedInMs: number;
  /** Runs that ended instead of parking (none expected): the approvals go to the others. */
  endedWhileParking: number;
  /**
   * `idle`: polling, before any run; `parked`: all parked and settled; `peak`: the process's peak so far (VmHWM) then;
   * `afterApprovals`: once the approved runs completed.
   */
  workerRssMb: { idle: number; parked: number; peak: number; afterApprovals: number };
  serverRssMb: { idle: number; parked: number; peak: number; afterApprovals: number };
  /** Every 30 s while the runs park: how many have (or ended), and both RSS. */
  parking: Array<{ atMs: number; parked: number; workerRssMb: number; serverRssMb: number }>;
  /** The worker's sticky cache: its bound (maxCachedWorkflows), and the runs it held once all were parked. */
  cacheSize: number;
  cachedWhenParked: number;
  approvals: {
    n: number;
    /** Approval sent to the run's next model request arriving, ms. */
    p50: number;
    p95: number;
    max: number;
    /** The approve update's own round trip (the run replayed and took it), ms. */
    updateP50: number;
    updateP95: number;
    /** Chosen among the runs parked before the last `cacheSize` (most likely evicted); false: among all, the cache held them all. */
    fromEvicted: boolean;
    /** Workflow tasks the worker found out of its cache (replays) and in it, during the approvals (its Prometheus counters). */
    cacheMisses: number;
    cacheHits: number;
    failed: number;
    errors: string[];
  };
  /** Approved runs that ended COMPLETED. */
  completed: number;
  /** os.loadavg() (1, 5, 15 min) when all were parked, and at the end. */
  load: { parked: number[]; end: number[] };
}

const MODEL = 'parked-runs';
const TOOL_CALL_ID = 'needs-approval';
/** The workflow id, which the prompt carries, names the run in the provider's requests. */
const RUN_ID = /parked-\d+-\d+/;
const mb = (bytes: number | undefined) => Math.round((bytes ?? NaN) / 2 ** 20);
const shuffle = <T>(items: T[]): T[] => items.map((item) => ({ item, key: Math.random() })).sort((a, b) => a.key - b.key).map(({ item }) => item);

/** Runs `fn` over `items` with at most `n` in flight. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

/**
 * The provider: a run's first request gets a call of the guarded tool, the next (with the tool's result) a final answer.
 * Records when each run's first request arrived (the parking order), and tells each request's arrival to its waiter.
 */
async function provider() {
  const firstAt = new Map<string, number>();
  const waiters = new Map<string, (at: number) => void>();
  const arrival = (key: string) => new Promise<number>((resolve) => waiters.set(key, resolve));
  const script = ({ request, receivedAt }: ScriptContext) => {
    const messages = request.messages as Array<{ role: string }>;
    const id = RUN_ID.exec(JSON.stringify(messages))?.[0] ?? 'unknown';
    const first = !messages.some((m) => m.role === 'tool');
    if (first) firstAt.set(id, receivedAt);
    const key = `${first ? 'first' : 'next'} ${id}`;
    waiters.get(key)?.(receivedAt);
    waiters.delete(key);
    return first ? { toolCalls: [{ id: TOOL_CALL_ID, name: 'writeFile', arguments: { path: `${id}.txt`, content: 'approved' } }] } : { text: 'written' };
  };
  const model = await startScriptedModel({ recordBodies: false, maxRecordedRequests: 0, scripts: { [MODEL]: script } });
  return {
    model,
    /** Runs in the order their first request arrived: the order they parked in. */
    parkingOrder: () => [...firstAt.entries()].sort((a, b) => a[1] - b[1]).map(([id]) => id),
    /** Resolve with the arrival time of the run's first request, and of its next one; call before what causes it. */
    firstRequest: (id: string) => arrival(`first ${id}`),
    nextRequest: (id: string) => arrival(`next ${id}`),
  };
}

/** The worker's sticky cache counters and gauge from its Prometheus endpoint (summed over their label sets). */
async function stickyCache(metricsUrl: string): Promise<{ hit: number; miss: number; size: number }> {
  const text = await (await fetch(metricsUrl)).text();
  const sum = (name: string) =>
    text
      .split('\n')
      .filter((line) => line.startsWith(`temporal_sticky_cache_${name}`))
      .reduce((total, line) => total + Number(line.split(' ').pop()), 0);
  return { hit: sum('hit'), miss: sum('miss'), size: sum('size') };
}

/** Polls the count of runs matching `query` until it reaches `want`; every 30 s, `progress` is told the count. */
async function waitForCount(agents: AgentClient, query: string, want: number, timeoutMs: number, progress: (count: number) => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastProgress = Date.now();
  for (;;) {
    const { count } = await agents.client.workflow.count(query);
    if (count >= want) return;
    if (Date.now() > deadline) throw new Error(`${count} of ${want} runs match ${query} after ${timeoutMs} ms`);
    if (Date.now() - lastProgress > 30_000) (lastProgress = Date.now()), progress(count);
    await sleep(1_000);
  }
}

export async function figureH(opts: FigureHOptions): Promise<FigureH> {
  const log = opts.log ?? (() => undefined);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-h-'));
  const server = await startBenchServer({}, undefined, opts.server);
  const { model, parkingOrder, firstRequest, nextRequest } = await provider();
  const metricsPort = await freePort();
  const taskQueue = `bench-h-${process.pid}`;
  let worker: Awaited<ReturnType<typeof spawnChild>> | undefined;
  try {
    const bundles = path.join(dir, 'bundles');
    await buildWorkflowBundles(bundles); // as a deploy prebuilds them: a worker bundling at boot keeps webpack's memory
    mkdirSync(path.join(dir, 'workspace'));
    worker = await spawnChild(path.join(BENCH_DIR, 'lib/parked-worker.ts'), {
      runtime: 'tsx',
      ...(opts.workerHeapMb ? { nodeArgs: [`--max-old-space-size=${opts.workerHeapMb}`] } : {}),
      stdoutFile: path.join(dir, 'worker.log'),
      env: {
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        LLM_BASE_URL: model.url,
        LLM_API_KEY: 'bench',
        LLM_MODEL: MODEL,
        AGENT_WORKFLOW_BUNDLE_DIR: bundles,
        AGENT_WORKSPACE: path.join(dir, 'workspace'),
        AGENT_LEDGER: path.join(dir, 'ledger.sqlite'),
        AGENT_BLOB_DIR: path.join(dir, 'blobs'),
        AGENT_MEMORY: path.join(dir, 'memory.sqlite'),
        // No gateway in this figure: a worker at its defaults would publish to one that is not there.
        AGENT_STREAM_URL: 'off',
        AGENT_METRICS_PORT: `127.0.0.1:${metricsPort}`,
      },
    });
    const cacheSize = await worker.call<number>('cacheSize');
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const agents = new AgentClient(server.client, taskQueue);
    const ids = Array.from({ length: opts.runs }, (_, i) => `parked-${process.pid}-${i}`);
    const input = (id: string): AgentRunInput => ({ prompt: `Write the note of ${id}.`, model: MODEL, approval: { tools: ['writeFile'] } });
    await sleep(5_000); // the worker's start settles
    const idleRss = { worker: currentRss(worker.pid), server: currentRss(server.pids.server) };
    log(`h: starting ${opts.runs} runs on one worker (sticky cache of ${cacheSize} runs); idle: worker ${mb(idleRss.worker)} MB, server ${mb(idleRss.server)} MB`);

    const t0 = Date.now();
    const settled = `TaskQueue="${taskQueue}" AND (AgentState="AWAITING_APPROVAL" OR ExecutionStatus!="Running")`;
    // RSS as the runs park: whether the worker's levels off once its cache is full.
    const parking: FigureH['parking'] = [];
    const sampler = setInterval(() => {
      void agents.client.workflow.count(settled).then(({ count }) => {
        parking.push({ atMs: Date.now() - t0, parked: count, workerRssMb: mb(currentRss(worker!.pid)), serverRssMb: mb(currentRss(server.pids.server)) });
        log(`h: ${JSON.stringify(parking.at(-1))}`);
      }, () => undefined);
    }, 30_000);
    try {
      // A window of runs in flight, not a burst of starts: with 10,000 first workflow tasks queued at once, a task that
      // missed its sticky worker went back behind them all, for longer than a run's working time (limits.timeoutMs).
      await pool(ids, opts.startConcurrency ?? 200, async (id) => {
        const asked = firstRequest(id);
        await agents.start(input(id), { workflowId: id });
        await Promise.race([asked, sleep(120_000)]); // a run that never asks holds no slot for good
      });
      await waitForCount(agents, settled, opts.runs, 60 * 60_000, () => undefined);
    } finally {
      clearInterval(sampler);
    }
    const parkedInMs = Date.now() - t0;
    const ended = new Set<string>();
    for await (const e of rawExecutions(agents.client, `TaskQueue="${taskQueue}" AND ExecutionStatus!="Running"`)) ended.add(e.execution?.workflowId ?? '');
    await sleep(5_000); // the last workflow tasks and their garbage settle
    const parkedRss = { worker: currentRss(worker.pid), server: currentRss(server.pids.server) };
    const peak = { worker: peakRss(worker.pid), server: peakRss(server.pids.server) };
    const loadParked = os.loadavg();
    const before = await stickyCache(metricsUrl);
    log(`h: ${opts.runs} parked in ${parkedInMs} ms; worker ${mb(parkedRss.worker)} MB (peak ${mb(peak.worker)}), server ${mb(parkedRss.server)} MB (peak ${mb(peak.server)}), ${before.size} runs cached`);

    // LRU: the runs that parked last are the ones still cached; the approvals go to the others when there are enough.
    const evicted = parkingOrder().slice(0, Math.max(0, opts.runs - cacheSize)).filter((id) => !ended.has(id));
    const fromEvicted = evicted.length >= opts.approve;
    const chosen = shuffle(fromEvicted ? evicted : ids.filter((id) => !ended.has(id))).slice(0, opts.approve);
    const latencies: number[] = [];
    const updates: number[] = [];
    const errors: string[] = [];
    // The provider stamps a request's arrival with performance's clock (src/scripted-model/server.ts): the same clock
    // here, never Date.now(), which can step against it (a heap-limited run's latencies came out negative so).
    const now = () => performance.timeOrigin + performance.now();
    await pool(chosen, opts.approveConcurrency ?? 10, async (id) => {
      const arrived = nextRequest(id);
      const sent = now();
      try {
        await agents.handle(id).approve({ toolCallId: TOOL_CALL_ID, approved: true });
        updates.push(now() - sent);
        latencies.push((await arrived) - sent);
      } catch (err) {
        errors.push(`${id}: ${err instanceof Error ? err.message : String(err)}`);
      }
    });
    const after = await stickyCache(metricsUrl);
    const approved = chosen.length - errors.length;
    await waitForCount(agents, `TaskQueue="${taskQueue}" AND ExecutionStatus="Completed"`, approved, 10 * 60_000, (n) => log(`h: ${n} of ${approved} completed`)).catch((err: Error) =>
      log(`h: ${err.message}`),
    );
    const { count: completed } = await agents.client.workflow.count(`TaskQueue="${taskQueue}" AND ExecutionStatus="Completed"`);
    const result: FigureH = {
      runs: opts.runs,
      server: opts.server,
      parkedInMs,
      endedWhileParking: ended.size,
      parking,
      workerRssMb: { idle: mb(idleRss.worker), parked: mb(parkedRss.worker), peak: mb(peak.worker), afterApprovals: mb(currentRss(worker.pid)) },
      serverRssMb: { idle: mb(idleRss.server), parked: mb(parkedRss.server), peak: mb(peak.server), afterApprovals: mb(currentRss(server.pids.server)) },
      cacheSize,
      cachedWhenParked: before.size,
      approvals: {
        n: latencies.length,
        p50: Math.round(percentile(latencies, 50)),
        p95: Math.round(percentile(latencies, 95)),
        max: Math.round(Math.max(...latencies)),
        updateP50: percentile(updates, 50),
        updateP95: percentile(updates, 95),
        fromEvicted,
        cacheMisses: after.miss - before.miss,
        cacheHits: after.hit - before.hit,
        failed: errors.length,
        errors: errors.slice(0, 3),
      },
      completed,
      load: { parked: loadParked, end: os.loadavg() },
    };
    log(`h: ${latencies.length} approvals: p50 ${result.approvals.p50} ms, p95 ${result.approvals.p95} ms, max ${result.approvals.max} ms; ${result.approvals.cacheMisses} cache misses; ${completed} of ${chosen.length} completed`);
    return result;
  } finally {
    if (worker) await stopChild(worker);
    await model.close();
    await server.stop();
    await stopBenchStack();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const o = new Command('parked-runs')
    .option('--runs <n>', 'runs parked in AWAITING_APPROVAL on one worker', '10000')
    .option('--approve <n>', 'runs approved, at random among the evicted', '1000')
    .option('--server <kind>', 'dev (a dev server on SQLite) or stack (npm run stack\'s PostgreSQL cluster)', 'dev')
    .option('--worker-heap-mb <n>', 'the worker\'s V8 heap limit (--max-old-space-size), for the worker alone')
    .parse(process.argv)
    .opts<{ runs: string; approve: string; server: string; workerHeapMb?: string }>();
  if (o.server !== 'dev' && o.server !== 'stack') throw new Error(`unknown server ${o.server}: dev or stack`);
  const workerHeapMb = o.workerHeapMb === undefined ? undefined : Number(o.workerHeapMb);
  if (workerHeapMb !== undefined && !(Number.isInteger(workerHeapMb) && workerHeapMb >= 128)) throw new Error(`--worker-heap-mb ${o.workerHeapMb}: a whole number of MB, at least 128`);
  const result = await figureH({ runs: Number(o.runs), approve: Number(o.approve), server: o.server, ...(workerHeapMb ? { workerHeapMb } : {}), log: (line) => console.error(line) });
  console.log(JSON.stringify(result, null, 2));
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
