/**
 * Figure (e), the live stream (issue 24): token delay from the provider to SSE clients, and CPU by process, at 1, 10
 * and 100 watchers of one run and at 100 runs with 2 watchers each, for the embedded default (`npm run worker` and
 * `npm run gateway` with no stream variable: the worker publishes to the gateway's hub) and for Redis Streams; then
 * the CPU an idle watcher costs. The worker and the gateway are the product's own processes (src/bin), the Temporal
 * dev server and redis-server real ones; CPU is read from /proc. LangGraph.js, the peer that streams, runs the same
 * model call in its `custom` stream mode behind a plain SSE fan-out (bench/peers/langgraph-stream.mjs).
 *
 * The provider streams `chunks` chunks `gapMs` apart, each carrying the time it was sent, after `thinkMs` (time for
 * the watchers to attach); the delay of a token is when a watcher read it minus when it was sent (one clock).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createNetServer, connect } from 'node:net';
import path from 'node:path';
import { BENCH_DIR, cpuTimeMs, PROJECT_ROOT } from './lib/ipc';
import { percentile } from './lib/stats';
import { startBenchServer, type BenchServer } from './lib/temporal';

export interface FigureEOptions {
  /** Which channels: `hub` (the embedded default), `redis`; and `langgraph` for the peer. */
  systems: string[];
  chunks: number;
  gapMs: number;
  thinkMs: number;
  /** Watchers per run and runs of each scenario. */
  scenarios: Array<{ runs: number; watchers: number }>;
  /** Idle watchers of one quiet run, and how long their CPU is measured. */
  idleWatchers: number;
  idleMs: number;
  scratch: string;
  log: (msg: string) => void;
}

export interface ScenarioResult {
  runs: number;
  watchersPerRun: number;
  /** Times the scenario ran (single runs: several, their CPU the median). */
  repeat: number;
  /** Tokens read by all watchers, counted for delay once every watcher of their run was attached. */
  tokens: number;
  p50: number;
  p95: number;
  max: number;
  /** Watchers that got every token and the end (of repeat × runs × watchers). */
  complete: number;
  /** Watchers whose stream fell back to polling the state (marked `degraded`). */
  degraded: number;
  degradedBecause?: string[];
  /** The first few errors the streams ended on. */
  errors: string[];
  /** CPU ms by process over the scenario (from the first run's start to the last watcher's end; the median of the repeats). */
  cpuMs: Record<string, number>;
  /** Everything's CPU over the scenario, per watcher. */
  cpuPerWatcherMs: number;
  /** CPU of everything but the gateway (worker, server, broker) per run, once its watchers are attached: what streaming a run costs. */
  runCostMs: number;
}

export interface FigureESystem {
  scenarios: ScenarioResult[];
  idle?: { watchers: number; ms: number; cpuMsPerSecondPerWatcher: number; byProcess: Record<string, number> };
  error?: string;
}

export type FigureE = Record<string, FigureESystem>;

export const DEFAULT_SCENARIOS = [
  { runs: 1, watchers: 1 },
  { runs: 1, watchers: 10 },
  { runs: 1, watchers: 100 },
  { runs: 100, watchers: 2 },
];

const TOKEN = 'bench-figure-e';

/** Every process this figure started: killed if the bench exits before it stops them (Ctrl-C saves and exits). */
const started = new Set<number>();
process.on('exit', () => {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});
export const track = (pid: number | undefined): number => (pid !== undefined && started.add(pid), pid!);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createNetServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

/** An OpenAI-compatible provider that stamps each chunk with its send time; a prompt with "idle" waits `idleMs` first. */
export function provider(opts: Pick<FigureEOptions, 'chunks' | 'gapMs' | 'thinkMs' | 'idleMs'>): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.socket?.setNoDelay(true);
      const chunk = (delta: object, finish: string | null = null) =>
        res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
      let i = 0;
      let timer: NodeJS.Timeout | undefined;
      const start = () => {
        timer = setInterval(() => {
          if (i++ < opts.chunks) return chunk({ content: `${Date.now()};` });
          clearInterval(timer);
          chunk({}, 'stop');
          res.end('data: [DONE]\n\n');
        }, opts.gapMs);
      };
      const wait = setTimeout(start, body.includes('idle-watchers') ? 3 * opts.idleMs + 8_000 : opts.thinkMs);
      res.on('close', () => (clearTimeout(wait), clearInterval(timer)));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

interface Proc {
  name: string;
  proc: ChildProcess;
  pid: number;
}

function spawnTs(name: string, file: string, env: Record<string, string>, logDir: string): Proc {
  const out = openSync(path.join(logDir, `${name}.log`), 'a');
  const clean = { ...process.env };
  for (const k of ['AGENT_STREAM_URL', 'AGENT_STREAM_REDIS_URL', 'AGENT_STREAM_TOKEN', 'GATEWAY_INSECURE', 'TEMPORAL_ADDRESS', 'TEMPORAL_TASK_QUEUE']) delete clean[k];
  // BENCH_CPU_PROF=<dir>: a V8 CPU profile of the process (every thread) when it exits, as bench/lib/ipc.ts's children.
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : [];
  const proc = spawn(process.execPath, [...prof, '--import', 'tsx', file], { cwd: PROJECT_ROOT, env: { ...clean, ...env }, stdio: ['ignore', out, out] });
  return { name, proc, pid: track(proc.pid) };
}

async function stopProc(p: Proc | undefined): Promise<void> {
  if (p) started.delete(p.pid);
  if (!p || p.proc.exitCode !== null) return;
  p.proc.kill('SIGTERM');
  const exited = new Promise((r) => p.proc.once('exit', r));
  if (!(await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]))) p.proc.kill('SIGKILL');
}

async function waitUntil(what: string, ms: number, ok: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await ok().catch(() => false)) return;
    await sleep(200);
  }
  throw new Error(`${what} not ready after ${ms} ms`);
}

const reachable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

/** What one SSE watcher read. */
export interface Watch {
  /** [sent, read] of each token. */
  tokens: Array<[number, number]>;
  ended: boolean;
  openedAt: number;
  /** The stream said it fell back to polling the state (`event: stream`, degraded), or ended on an error. */
  degraded?: string;
  error?: string;
}

/** Reads an SSE stream of text events (`text` carries `<stamp>;` tokens) until it ends or `signal` aborts. */
async function watchSse(
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
  textOf: (event: string, data: string) => string | undefined,
  isEnd: (event: string) => boolean,
  onOpen: () => void,
): Promise<Watch> {
  const res = await fetch(url, { headers, signal }).finally(onOpen);
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
  const w: Watch = { tokens: [], ended: false, openedAt: Date.now() };
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const now = Date.now();
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
        const data = /^data: (.*)$/m.exec(block)?.[1] ?? '';
        if (isEnd(event)) w.ended = true;
        if (event === 'stream') w.degraded = (JSON.parse(data) as { reason?: string }).reason ?? 'degraded';
        if (event === 'error') w.error = data.slice(0, 300);
        const text = textOf(event, data);
        if (text) for (const stamp of text.split(';').filter(Boolean)) w.tokens.push([Number(stamp), now]);
      }
      if (w.ended) break;
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return w;
}

/** How a system under test starts a run and is watched. */
export interface Target {
  start(prompt: string): Promise<string>;
  watch(runId: string, signal: AbortSignal, onOpen?: () => void): Promise<Watch>;
  procs(): Proc[];
  /** Processes read for CPU that this module did not spawn (the dev server). */
  pids(): Record<string, number>;
}

function cpuOf(target: Target): Record<string, number> {
  return Object.fromEntries(Object.entries(target.pids()).map(([role, pid]) => [role, cpuTimeMs(pid)]));
}

const diff = (a: Record<string, number>, b: Record<string, number>) => Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? 0)]));
const sum = (r: Record<string, number>) => Object.values(r).reduce((x, y) => x + y, 0);

interface Once {
  delays: number[];
  complete: number;
  reasons: string[];
  errors: string[];
  cpuMs: Record<string, number>;
  /** CPU of everything but the gateway per run, from when every watcher was attached to the end. */
  streamingCostMs: number;
}

async function scenarioOnce(target: Target, runs: number, watchers: number, chunks: number): Promise<Once> {
  const before = cpuOf(target);
  const ids = await Promise.all(Array.from({ length: runs }, (_, i) => target.start(`stream ${i}`)));
  const controller = new AbortController();
  const timeout = setTimeout(() => controller.abort(), 120_000);
  let opened = 0;
  let attached: Record<string, number> | undefined;
  let watching: Array<Promise<Watch[]>> = [];
  const allOpen = new Promise<void>((resolve) => {
    const onOpen = () => {
      if (++opened < runs * watchers) return;
      attached = cpuOf(target);
      resolve();
    };
    watching = ids.map((id) => Promise.all(Array.from({ length: watchers }, () => target.watch(id, controller.signal, onOpen))));
  });
  await allOpen;
  const perRun = await Promise.all(watching);
  clearTimeout(timeout);
  const after = cpuOf(target);
  const streaming = diff(attached!, after);
  const o: Once = { delays: [], complete: 0, reasons: [], errors: [], cpuMs: diff(before, after), streamingCostMs: (sum(streaming) - (streaming.gateway ?? 0)) / runs };
  for (const ws of perRun) {
    // Tokens sent once every watcher of the run was attached: the attach is left out.
    const last = Math.max(...ws.map((w) => w.openedAt));
    for (const w of ws) {
      if (w.ended && w.tokens.length === chunks) o.complete++;
      if (w.degraded) o.reasons.push(w.degraded);
      if (w.error) o.errors.push(w.error);
      for (const [sent, read] of w.tokens) if (sent > last) o.delays.push(read - sent);
    }
  }
  return o;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** `repeat` times the scenario: delays pooled, deliveries summed, CPU the median (one run's CPU moves with GC and load). */
async function scenario(target: Target, runs: number, watchers: number, chunks: number, repeat: number): Promise<ScenarioResult> {
  const all: Once[] = [];
  for (let i = 0; i < repeat; i++) all.push(await scenarioOnce(target, runs, watchers, chunks));
  const delays = all.flatMap((o) => o.delays);
  const cpuMs = Object.fromEntries(Object.keys(all[0].cpuMs).map((k) => [k, median(all.map((o) => o.cpuMs[k]))]));
  const reasons = all.flatMap((o) => o.reasons);
  return {
    runs,
    watchersPerRun: watchers,
    repeat,
    tokens: delays.length,
    p50: percentile(delays, 50),
    p95: percentile(delays, 95),
    max: delays.length ? Math.max(...delays) : NaN,
    complete: all.reduce((n, o) => n + o.complete, 0),
    degraded: reasons.length,
    ...(reasons.length ? { degradedBecause: [...new Set(reasons)].slice(0, 3) } : {}),
    errors: all.flatMap((o) => o.errors).slice(0, 3),
    cpuMs,
    cpuPerWatcherMs: sum(cpuMs) / (runs * watchers),
    runCostMs: median(all.map((o) => o.streamingCostMs)),
  };
}

async function idleCost(target: Target, watchers: number, ms: number): Promise<FigureESystem['idle']> {
  const id = await target.start('idle-watchers');
  await sleep(3_000); // the run started and its model call is waiting
  const window = async () => {
    const a = cpuOf(target);
    await sleep(ms);
    return diff(a, cpuOf(target));
  };
  const quietBefore = await window();
  const controller = new AbortController();
  const watching = Array.from({ length: watchers }, () => target.watch(id, controller.signal).catch(() => undefined));
  await sleep(2_000); // attached (each attach reads the run once: not idle cost)
  const watched = await window();
  controller.abort();
  await Promise.all(watching);
  await sleep(500);
  const quietAfter = await window();
  // The same quiet run without watchers before and after: the mean of the two is what the watchers are measured against.
  const byProcess = Object.fromEntries(Object.keys(watched).map((k) => [k, (watched[k] - (quietBefore[k] + quietAfter[k]) / 2) / watchers / (ms / 1000)]));
  return { watchers, ms, cpuMsPerSecondPerWatcher: sum(byProcess), byProcess };
}

/** The product: the worker and gateway processes of `npm run worker` and `npm run gateway`, with `redisUrl` or the embedded default. */
export async function productTarget(server: BenchServer, modelUrl: string, dir: string, redis?: { url: string; pid: number }): Promise<Target & { taskQueue: string; stop(): Promise<void> }> {
  const port = await freePort();
  const taskQueue = `figure-e-${Date.now()}`;
  const common = { TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue, GATEWAY_PORT: String(port), GATEWAY_TOKEN: TOKEN, ...(redis ? { AGENT_STREAM_REDIS_URL: redis.url } : {}) };
  const gateway = spawnTs('gateway', 'src/bin/gateway.ts', common, dir);
  const worker = spawnTs(
    'worker',
    'src/bin/worker.ts',
    {
      ...common,
      LLM_BASE_URL: modelUrl,
      LLM_API_KEY: 'bench',
      LLM_MODEL: 'bench',
      LLM_CONTEXT_WINDOW_TOKENS: '128000',
      AGENT_WORKSPACE: path.join(dir, 'workspace'),
      AGENT_LEDGER: path.join(dir, 'ledger.sqlite'),
      AGENT_BLOB_DIR: path.join(dir, 'blobs'),
      AGENT_LOG_LEVEL: 'warn',
    },
    dir,
  );
  const base = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const target = {
    taskQueue,
    async start(prompt: string) {
      const res = await fetch(`${base}/v1/runs`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ prompt }) });
      if (res.status !== 201) throw new Error(`POST /v1/runs answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { workflowId: string }).workflowId;
    },
    watch: (id: string, signal: AbortSignal, onOpen = () => undefined) =>
      watchSse(`${base}/v1/runs/${id}/events`, auth, signal, (event, data) => (event === 'text' ? (JSON.parse(data) as { text: string }).text : undefined), (event) => event === 'end', onOpen),
    procs: () => [gateway, worker],
    pids: () => ({ worker: worker.pid, gateway: gateway.pid, server: server.pids.server, ...(redis ? { redis: redis.pid } : {}) }),
    async stop() {
      await Promise.all([stopProc(worker), stopProc(gateway)]);
    },
  };
  await waitUntil('gateway', 60_000, () => reachable(port));
  // A first run: the worker is polling (it bundles its workflow code at boot), and everything is warm.
  await waitUntil('worker', 180_000, async () => {
    const id = await target.start('warm');
    const w = await target.watch(id, AbortSignal.timeout(30_000));
    return w.ended;
  });
  return target;
}

/** LangGraph.js in its `custom` stream mode, served over SSE by its own process (bench/peers/langgraph-stream.mjs). */
export async function langgraphTarget(modelUrl: string, dir: string): Promise<Target & { stop(): Promise<void> }> {
  const port = await freePort();
  const out = openSync(path.join(dir, 'langgraph.log'), 'a');
  const proc = spawn(process.execPath, [path.join(BENCH_DIR, 'peers/langgraph-stream.mjs')], {
    cwd: path.join(BENCH_DIR, 'peers'),
    env: { ...process.env, BENCH_LANGGRAPH_STREAM: JSON.stringify({ port, modelUrl, dbFile: path.join(dir, 'checkpoints.sqlite') }) },
    stdio: ['ignore', out, out],
  });
  const runner: Proc = { name: 'langgraph', proc, pid: track(proc.pid) };
  const base = `http://127.0.0.1:${port}`;
  await waitUntil('langgraph peer', 60_000, () => reachable(port));
  return {
    async start(prompt) {
      const res = await fetch(`${base}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt }) });
      return ((await res.json()) as { runId: string }).runId;
    },
    watch: (id, signal, onOpen = () => undefined) =>
      watchSse(`${base}/runs/${id}/stream`, {}, signal, (event, data) => (event === 'custom' ? (JSON.parse(data) as string) : undefined), (event) => event === 'end', onOpen),
    procs: () => [runner],
    pids: () => ({ runner: runner.pid }),
    stop: () => stopProc(runner),
  };
}

async function startRedis(dir: string): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  // Not installed: this system's row fails with the reason, and the run goes on (an unhandled 'error' event would end
  // the whole bench before it writes what it measured).
  const failed = new Promise<never>((_, reject) =>
    proc.once('error', (err) => reject(new Error(`the redis row needs redis-server (apt-get install redis-server): ${err.message}`))),
  );
  const p: Proc = { name: 'redis', proc, pid: track(proc.pid) };
  await Promise.race([waitUntil('redis-server', 10_000, () => reachable(port)), failed]);
  return { url: `redis://127.0.0.1:${port}`, pid: p.pid, stop: () => stopProc(p) };
}

export async function figureE(opts: FigureEOptions): Promise<FigureE> {
  const out: FigureE = {};
  const model = await provider(opts);
  const modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
  try {
    for (const system of opts.systems) {
      const dir = path.join(opts.scratch, `figure-e-${system}`);
      mkdirSync(path.join(dir, 'workspace'), { recursive: true });
      const result: FigureESystem = { scenarios: [] };
      out[system] = result;
      let server: BenchServer | undefined;
      let redis: Awaited<ReturnType<typeof startRedis>> | undefined;
      let target: (Target & { stop(): Promise<void> }) | undefined;
      try {
        if (system === 'langgraph') {
          if (!existsSync(path.join(BENCH_DIR, 'peers/node_modules/@langchain/langgraph'))) throw new Error('bench/peers has no node_modules (npm ci --prefix bench/peers)');
          target = await langgraphTarget(modelUrl, dir);
        } else {
          server = await startBenchServer();
          track(server.pids.server);
          if (system === 'redis') redis = await startRedis(dir);
          target = await productTarget(server, modelUrl, dir, redis);
        }
        for (const s of opts.scenarios) {
          const r = await scenario(target, s.runs, s.watchers, opts.chunks, s.runs === 1 ? 3 : 1);
          result.scenarios.push(r);
          opts.log(
            `e: ${system} ${s.runs} run(s) x ${s.watchers} watcher(s): p50 ${r.p50} ms, p95 ${r.p95} ms, max ${r.max} ms, ${r.complete}/${r.repeat * s.runs * s.watchers} complete, ${r.degraded} degraded${r.degradedBecause ? ` (${r.degradedBecause.join('; ')})` : ''}${r.errors.length ? ` (errors: ${r.errors[0]})` : ''}; ` +
              `CPU ${JSON.stringify(Object.fromEntries(Object.entries(r.cpuMs).map(([k, v]) => [k, Math.round(v)])))} ms, ${r.cpuPerWatcherMs.toFixed(1)} ms a watcher, ${r.runCostMs.toFixed(0)} ms a run without the gateway`,
          );
        }
        if (opts.idleWatchers > 0) {
          result.idle = await idleCost(target, opts.idleWatchers, opts.idleMs);
          opts.log(`e: ${system} idle: ${result.idle!.cpuMsPerSecondPerWatcher.toFixed(3)} ms CPU a second per idle watcher ${JSON.stringify(result.idle!.byProcess)}`);
        }
      } catch (err) {
        result.error = err instanceof Error ? err.message : String(err);
        opts.log(`e: ${system} failed: ${result.error.split('\n')[0]}`);
      } finally {
        await target?.stop().catch(() => undefined);
        await redis?.stop().catch(() => undefined);
        await server?.stop().catch(() => undefined);
        if (server) started.delete(server.pids.server);
      }
    }
  } finally {
    model.close();
    model.closeAllConnections();
  }
  return out;
}
