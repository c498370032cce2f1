/**
 * Figure (f), issue 26: many runs share one provider that enforces tokens per minute and answers 429 above it. The
 * same batch runs twice on the product as it is deployed (worker processes from `src/bin/worker.ts` on a dev
 * server): without a budget, and with the fleet's budget in Redis (`LLM_TOKENS_PER_MINUTE`). Reported: 429s received,
 * runs completed and failed, the batch's wall time against the quota's ideal, and the retry budget the 429s spent.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { freePort } from '../../scripts/lib/free-port';
import { MAX_PROVIDER_FAILURES } from '../../src/activities/model';
import { AgentClient } from '../../src/client';
import { buildWorkflowBundles } from '../../src/worker/workflow-bundle';
import { BENCH_DIR, PROJECT_ROOT, spawnChild, stopChild, type Child } from './ipc';
import { QUOTA_MODEL } from './quota-model-process';
import { startBenchServer, waitForTaskQueue } from './temporal';

export interface FigureFOptions {
  runs: number;
  /** The provider's limit, and the budget's. */
  tokensPerMinute: number;
  /** Characters of each run's prompt: with the system prompt, about a quarter of them are the call's tokens. */
  promptChars: number;
  /** Worker processes sharing the budget. */
  workers: number;
  log: (line: string) => void;
}

export interface FigureFRow {
  budget: boolean;
  runs: number;
  completed: number;
  /** Runs that did not complete, by status. */
  failed: Record<string, number>;
  wallMs: number;
  /** Requests that reached the provider, and those it answered 429. */
  requests: number;
  rateLimited: number;
  /** Runs that got at least one 429, and the most one call got: each 429 spends one of MAX_PROVIDER_FAILURES. */
  runsWith429: number;
  max429sPerRun: number;
}

export interface FigureF {
  runs: number;
  tokensPerMinute: number;
  tokensPerRun: number;
  /** The least time the provider's quota allows: a minute's tokens at once, then the rest at its rate. */
  idealMs: number;
  retryBudget: number;
  rows: FigureFRow[];
}

export async function figureF(o: FigureFOptions): Promise<FigureF> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-f-'));
  const bundles = path.join(dir, 'bundles');
  await buildWorkflowBundles(bundles);
  const redisPort = await freePort();
  const redis = await startRedis(redisPort);
  const rows: FigureFRow[] = [];
  let tokensPerRun = 0;
  try {
    for (const budget of [false, true]) {
      const server = await startBenchServer();
      const model = await spawnChild(path.join(BENCH_DIR, 'lib/quota-model-process.ts'), { runtime: 'tsx', env: { BENCH_QUOTA_TPM: String(o.tokensPerMinute) } });
      const taskQueue = `bench-f-${budget ? 'budget' : 'none'}-${process.pid}`;
      const workers: ChildProcess[] = [];
      try {
        const modelUrl = await model.call<string>('url');
        const env: NodeJS.ProcessEnv = {
          ...process.env,
          TEMPORAL_ADDRESS: server.address,
          TEMPORAL_TASK_QUEUE: taskQueue,
          LLM_BASE_URL: modelUrl,
          LLM_API_KEY: 'bench',
          LLM_MODEL: QUOTA_MODEL,
          AGENT_WORKFLOW_BUNDLE_DIR: bundles,
          AGENT_BLOB_DIR: path.join(dir, `blobs-${budget}`),
          AGENT_WORKSPACE: path.join(dir, 'workspace'),
          AGENT_STREAM_URL: 'off',
          ...(budget ? { LLM_TOKENS_PER_MINUTE: String(o.tokensPerMinute), AGENT_QUOTA_REDIS_URL: `redis://127.0.0.1:${redisPort}`, LLM_QUOTA_NAME: `bench-${process.pid}` } : {}),
        };
        mkdirSync(env.AGENT_WORKSPACE!, { recursive: true });
        for (let i = 0; i < o.workers; i++) {
          const log = openSync(path.join(dir, `worker-${budget}-${i}.log`), 'a');
          workers.push(
            spawn(process.execPath, ['--import', 'tsx', 'src/bin/worker.ts'], {
              cwd: PROJECT_ROOT,
              env: { ...env, AGENT_LEDGER: path.join(dir, `ledger-${budget}-${i}.sqlite`) },
              stdio: ['ignore', log, log],
            }),
          );
          closeSync(log);
        }
        await waitForPollers(server.client, taskQueue, o.workers);
        o.log(`f: ${budget ? 'with' : 'without'} the budget: ${o.runs} runs, ${o.workers} workers, the provider at ${o.tokensPerMinute} tokens a minute`);
        const agents = new AgentClient(server.client, taskQueue);
        const prompt = (i: number) => `Run ${i}. ${'Summarise this line of text. '.repeat(Math.ceil(o.promptChars / 29))}`.slice(0, o.promptChars);
        const ids = new Set<string>();
        const t0 = Date.now();
        for (let i = 0; i < o.runs; i += 50) {
          const batch = Array.from({ length: Math.min(50, o.runs - i) }, (_, k) => i + k);
          const handles = await Promise.all(batch.map((n) => agents.start({ prompt: prompt(n), maxOutputTokens: 16 }, { workflowId: `f-${budget ? 'b' : 'n'}-${process.pid}-${n}` })));
          for (const h of handles) ids.add(h.workflowId);
        }
        const done = await waitForTaskQueue(server.client, taskQueue, ids, 60 * 60_000);
        const stats = await model.call<{ requests: number; rateLimited: number; max429sPerRun: number; runsWith429: number; tokensPerRequest: number }>('stats');
        tokensPerRun ||= stats.tokensPerRequest;
        const failed = Object.fromEntries(Object.entries(done.statuses).filter(([s]) => s !== 'COMPLETED'));
        const row: FigureFRow = {
          budget,
          runs: o.runs,
          completed: done.statuses.COMPLETED ?? 0,
          failed,
          wallMs: done.lastCloseMs - t0,
          requests: stats.requests,
          rateLimited: stats.rateLimited,
          runsWith429: stats.runsWith429,
          max429sPerRun: stats.max429sPerRun,
        };
        rows.push(row);
        o.log(`f: ${budget ? 'with' : 'without'} the budget: ${row.completed}/${row.runs} completed in ${(row.wallMs / 1000).toFixed(1)} s, ${row.rateLimited} of ${row.requests} requests answered 429`);
      } finally {
        await Promise.all(workers.map((w) => stopProcess(w)));
        await stopChild(model as Child);
        await server.stop();
      }
    }
  } finally {
    redis.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  const total = o.runs * tokensPerRun;
  return {
    runs: o.runs,
    tokensPerMinute: o.tokensPerMinute,
    tokensPerRun,
    idealMs: (Math.max(0, total - o.tokensPerMinute) / o.tokensPerMinute) * 60_000,
    retryBudget: MAX_PROVIDER_FAILURES,
    rows,
  };
}

async function startRedis(port: number): Promise<ChildProcess> {
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  proc.on('error', () => undefined);
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(50)) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) return proc;
  }
  proc.kill('SIGKILL');
  throw new Error('figure (f) needs redis-server (apt-get install redis-server)');
}

async function waitForPollers(client: Client, taskQueue: string, n: number): Promise<void> {
  for (const deadline = Date.now() + 180_000; Date.now() < deadline; await sleep(500)) {
    // Activity pollers (type 2): a worker polls for them once it is ready for model calls.
    const res = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue }, taskQueueType: 2 });
    if ((res.pollers?.length ?? 0) >= n) return;
  }
  throw new Error(`${n} workers did not poll ${taskQueue} within 180 s`);
}

async function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  const timer = setTimeout(() => p.kill('SIGKILL'), 40_000);
  await exited;
  clearTimeout(timer);
}

export interface FigureIOptions {
  /** Runs of the tenant that floods the budget. */
  flood: number;
  /** Runs of the other tenant, timed alone and during the flood. */
  runs: number;
  /** The provider's limit, and the budget's. */
  tokensPerMinute: number;
  /** Characters of a flood run's prompt, and of a timed run's. */
  floodPromptChars: number;
  promptChars: number;
  log: (line: string) => void;
}

export interface FigureI {
  flood: number;
  runs: number;
  tokensPerMinute: number;
  floodPromptChars: number;
  promptChars: number;
  /** The timed runs alone on the idle budget, from the first start to the last result: before the flood, and after it. */
  aloneMs: number;
  aloneAfterMs: number;
  /** The same runs started during the flood, as their own tenant (fair share). */
  ownTenantMs: number;
  /** The same runs started at the same moment in the flooding tenant: one queue, as every run had before issue 52. */
  sameTenantMs: number;
  /** The flood's runs, from its first start to its last close. */
  floodMs: number;
  completed: number;
  total: number;
  /** Where the timed runs' time went, a run's mean: alone before the flood, as their own tenant during it, alone after. */
  breakdown: { alone: TimeBreakdown; ownTenant: TimeBreakdown; aloneAfter: TimeBreakdown };
}

/**
 * Where a run's time went, from its history, summed over the run: its workflow tasks and activity tasks waiting on the
 * task queue (scheduled to started), its workflow tasks in the worker (started to completed), and its activities
 * (started to closed: the budget's wait and the model call or the tool).
 */
export interface TimeBreakdown {
  workflowQueueMs: number;
  /** The part of `workflowQueueMs` on the worker's sticky queue, which Temporal Server 1.32 never dispatches fairly. */
  stickyQueueMs: number;
  workflowTaskMs: number;
  activityQueueMs: number;
  activityMs: number;
}

const msOf = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number => (t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : 0);

/** The mean of `TimeBreakdown` over these runs. */
async function breakdownOf(client: Client, ids: string[]): Promise<TimeBreakdown> {
  const sum: TimeBreakdown = { workflowQueueMs: 0, stickyQueueMs: 0, workflowTaskMs: 0, activityQueueMs: 0, activityMs: 0 };
  for (const id of ids) {
    const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const at = new Map(events.map((e) => [Number(e.eventId), msOf(e.eventTime)]));
    const since = (eventId: unknown, now: number) => now - (at.get(Number(eventId)) ?? now);
    const sticky = new Set(events.filter((e) => e.workflowTaskScheduledEventAttributes?.taskQueue?.kind === temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_STICKY).map((e) => Number(e.eventId)));
    for (const e of events) {
      const now = msOf(e.eventTime);
      if (e.workflowTaskStartedEventAttributes) {
        const { scheduledEventId } = e.workflowTaskStartedEventAttributes;
        sum.workflowQueueMs += since(scheduledEventId, now);
        if (sticky.has(Number(scheduledEventId))) sum.stickyQueueMs += since(scheduledEventId, now);
      }
      else if (e.workflowTaskCompletedEventAttributes) sum.workflowTaskMs += since(e.workflowTaskCompletedEventAttributes.startedEventId, now);
      else if (e.activityTaskStartedEventAttributes) sum.activityQueueMs += since(e.activityTaskStartedEventAttributes.scheduledEventId, now);
      else if (e.activityTaskCompletedEventAttributes) sum.activityMs += since(e.activityTaskCompletedEventAttributes.startedEventId, now);
      else if (e.activityTaskFailedEventAttributes) sum.activityMs += since(e.activityTaskFailedEventAttributes.startedEventId, now);
    }
  }
  const n = Math.max(1, ids.length);
  return { workflowQueueMs: sum.workflowQueueMs / n, stickyQueueMs: sum.stickyQueueMs / n, workflowTaskMs: sum.workflowTaskMs / n, activityQueueMs: sum.activityQueueMs / n, activityMs: sum.activityMs / n };
}

/**
 * Figure (i), issue 52: fair share of the fleet's budget and of the task queue. One worker process
 * (`src/bin/worker.ts`) under the budget in Redis; a provider that enforces the same tokens a minute. After `runs`
 * runs that warm the worker, `runs` runs of tenant `b` alone; then tenant `a` starts `flood` runs of large prompts, and
 * once they all wait (the last of them have called the model, then 5 s), `runs` of tenant `b` and `runs` more of
 * tenant `a` (the small prompts of `b`) start at once; once
 * the flood is over, `runs` of `b` alone again. Reported: how long the timed runs took alone (before and after: on a
 * machine others load, the two bracket the flood's load), as their own tenant during the flood, and in the flooding
 * tenant (behind its own queue); and where the time of `b`'s runs went (`TimeBreakdown`).
 */
export async function figureI(o: FigureIOptions): Promise<FigureI> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-g-'));
  const bundles = path.join(dir, 'bundles');
  await buildWorkflowBundles(bundles);
  const redisPort = await freePort();
  const redis = await startRedis(redisPort);
  const server = await startBenchServer();
  const model = await spawnChild(path.join(BENCH_DIR, 'lib/quota-model-process.ts'), { runtime: 'tsx', env: { BENCH_QUOTA_TPM: String(o.tokensPerMinute) } });
  const taskQueue = `bench-g-${process.pid}`;
  let worker: ChildProcess | undefined;
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      LLM_BASE_URL: await model.call<string>('url'),
      LLM_API_KEY: 'bench',
      LLM_MODEL: QUOTA_MODEL,
      AGENT_WORKFLOW_BUNDLE_DIR: bundles,
      AGENT_BLOB_DIR: path.join(dir, 'blobs'),
      AGENT_WORKSPACE: path.join(dir, 'workspace'),
      AGENT_STREAM_URL: 'off',
      AGENT_LEDGER: path.join(dir, 'ledger.sqlite'),
      LLM_TOKENS_PER_MINUTE: String(o.tokensPerMinute),
      AGENT_QUOTA_REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      LLM_QUOTA_NAME: `bench-g-${process.pid}`,
    };
    mkdirSync(env.AGENT_WORKSPACE!, { recursive: true });
    const log = openSync(path.join(dir, 'worker.log'), 'a');
    worker = spawn(process.execPath, ['--import', 'tsx', 'src/bin/worker.ts'], { cwd: PROJECT_ROOT, env, stdio: ['ignore', log, log] });
    closeSync(log);
    await waitForPollers(server.client, taskQueue, 1);
    const agents = new AgentClient(server.client, taskQueue);
    const text = (tag: string, chars: number) => `${tag}. ${'Summarise this line of text. '.repeat(Math.ceil(chars / 29))}`.slice(0, chars);
    let completed = 0;
    let total = 0;
    const ids = (label: string, n: number) => Array.from({ length: n }, (_, i) => `g-${label}-${process.pid}-${i}`);
    /** Starts `n` runs of `tenant` and resolves with the time from the first start to the last result. */
    const timed = async (label: string, tenant: string, n: number, chars: number): Promise<number> => {
      const t0 = Date.now();
      const handles = await Promise.all(ids(label, n).map((workflowId, i) => agents.start({ prompt: text(`${label} ${i}`, chars), maxOutputTokens: 16, tenant }, { workflowId })));
      total += n;
      const ends = await Promise.all(handles.map((h) => h.result().then((r) => ((completed += r.status === 'COMPLETED' ? 1 : 0), Date.now()), () => Date.now())));
      return Math.max(...ends) - t0;
    };
    // A fresh worker's first runs load the workflow bundle and warm its code: not the time alone of a fleet.
    await timed('warm', 'w', o.runs, o.promptChars);
    await sleep(5_000);
    o.log(`i: ${o.runs} runs of tenant b alone, the budget at ${o.tokensPerMinute} tokens a minute`);
    const aloneMs = await timed('alone', 'b', o.runs, o.promptChars);
    o.log(`i: alone ${(aloneMs / 1000).toFixed(2)} s; tenant a floods with ${o.flood} runs of ${o.floodPromptChars} characters`);
    const f0 = Date.now();
    const flood: Array<Promise<unknown>> = [];
    for (let i = 0; i < o.flood; i += 50) {
      const batch = Array.from({ length: Math.min(50, o.flood - i) }, (_, k) => i + k);
      const handles = await Promise.all(batch.map((n) => agents.start({ prompt: text(`flood ${n}`, o.floodPromptChars), maxOutputTokens: 16, tenant: 'a' }, { workflowId: `g-flood-${process.pid}-${n}` })));
      for (const h of handles) flood.push(h.result().then((r) => void (completed += r.status === 'COMPLETED' ? 1 : 0), () => undefined));
    }
    total += o.flood;
    // Until the flood's calls wait in the budget's queue: its last runs' model calls have started (the worker has run
    // the flood's 500 first workflow tasks: 28 to 43 s on 2 cores, BENCHMARKS.md), then 5 s more.
    const lastOfFlood = Array.from({ length: Math.min(5, o.flood) }, (_, k) => `g-flood-${process.pid}-${o.flood - 1 - k}`);
    const calling = async (id: string) => ((await server.client.workflow.getHandle(id).fetchHistory()).events ?? []).some((e) => e.activityTaskStartedEventAttributes);
    for (const deadline = Date.now() + 180_000; Date.now() < deadline && !(await Promise.all(lastOfFlood.map(calling))).every(Boolean); ) await sleep(500);
    o.log(`i: the flood's last runs call the model ${((Date.now() - f0) / 1000).toFixed(1)} s after its first start`);
    await sleep(5_000);
    o.log(`i: ${o.runs} runs of tenant b and ${o.runs} of tenant a start during the flood`);
    const [ownTenantMs, sameTenantMs] = await Promise.all([timed('own', 'b', o.runs, o.promptChars), timed('same', 'a', o.runs, o.promptChars)]);
    await Promise.all(flood);
    const floodMs = Date.now() - f0;
    o.log(`i: own tenant ${(ownTenantMs / 1000).toFixed(2)} s (${(ownTenantMs / aloneMs).toFixed(2)}x the run alone before), in the flooding tenant ${(sameTenantMs / 1000).toFixed(1)} s; the flood took ${(floodMs / 1000).toFixed(1)} s`);
    // The budget's minute refills from the flood's last calls before the second measure alone.
    await sleep(60_000);
    const aloneAfterMs = await timed('after', 'b', o.runs, o.promptChars);
    o.log(`i: alone again after the flood ${(aloneAfterMs / 1000).toFixed(2)} s`);
    const breakdown = {
      alone: await breakdownOf(server.client, ids('alone', o.runs)),
      ownTenant: await breakdownOf(server.client, ids('own', o.runs)),
      aloneAfter: await breakdownOf(server.client, ids('after', o.runs)),
    };
    return { flood: o.flood, runs: o.runs, tokensPerMinute: o.tokensPerMinute, floodPromptChars: o.floodPromptChars, promptChars: o.promptChars, aloneMs, aloneAfterMs, ownTenantMs, sameTenantMs, floodMs, completed, total, breakdown };
  } finally {
    if (worker) await stopProcess(worker);
    await stopChild(model as Child);
    await server.stop();
    redis.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
