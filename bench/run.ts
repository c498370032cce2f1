/**
 * `npm run bench`: the same agent workload on the floor (a plain loop), this product, LangGraph.js and Temporal's
 * `@temporalio/ai-sdk`, and its figures: (a) durable overhead per step, (b) a long run, (c) 1,000 concurrent runs,
 * (d) a worker restart, (e) the live stream to 1-100 watchers (bench/figure-e.ts), (f) and (i) the provider's quota
 * (bench/lib/quota-figure.ts), (g) time to the first token (bench/first-token.ts), (h) runs parked for approval
 * (bench/parked-runs.ts). Writes bench/results/<timestamp>.json, bench/results/latest.json and bench/results/latest.md.
 *
 *   npm run bench                      # everything, full size (long; needs a quiet machine)
 *   npm run bench -- --quick           # small sizes, a few minutes
 *   npm run bench -- --figures c --systems ours --profiles baseline,slots,quiet
 *   npm run bench -- --figures e                # the live stream alone: embedded hub, Redis, LangGraph (a few minutes)
 *   npm run bench -- --help
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { BENCH_DIR, cpuTimeMs, spawnChild, stopChild, type Child } from './lib/ipc';
import { LoadMonitor, machineInfo } from './lib/machine';
import { markdownReport } from './report';
import { stopBenchStack, type HistoryBytes, type ServerKind } from './lib/temporal';
import { percentile, STEP_WINDOW_HALF, windowMedian } from './lib/stats';
import { readTimes, stepTimes, writeWorkspace, type Arrival } from './lib/workload';
import { PEER_WORKER_OPTIONS } from './lib/peer-worker';
import { PROFILES, TUNED } from './profiles';
import { AiSdkSystem, FloorSystem, LangGraphSystem, OursSystem, TemporalFloorSystem, type BenchSystem, type Restart, type RunSpec } from './systems';
import { meanOfBatches, medianRestart, VIEW_BYTES_GOAL, type BenchResults, type FigureA, type FigureB, type FigureBLong, type FigureC, type FigureD } from './report';
import { startSampler, stretch, type LongSample } from './lib/long-run';
import { DEFAULT_SCENARIOS, figureE } from './figure-e';
import { figureF, figureI } from './lib/quota-figure';
import { figureG } from './first-token';
import { figureH } from './parked-runs';

const SYSTEMS = ['floor', 'ours', 'langgraph', 'temporal-ai-sdk', 'temporal-floor'] as const;
type SystemName = (typeof SYSTEMS)[number];
/** `temporal-floor` (what a server round trip a step costs by itself) is what issue 26's goals measure the product against. */
const DEFAULT_SYSTEMS: SystemName[] = ['floor', 'ours', 'langgraph', 'temporal-ai-sdk', 'temporal-floor'];

interface Options {
  quick: boolean;
  figures: string[];
  systems: SystemName[];
  servers: ServerKind[];
  /** (g) and (h): where they run; `servers` unless `--gh-server` says otherwise. */
  ghServers: ServerKind[];
  profiles: string[];
  toolBytes: number;
  overheadRuns: number;
  overheadSteps: number;
  longSteps: number;
  loniRuns: number;
  longAt: number[];
  /** (b): the provider's context window in tokens, which the product's runs declare; absent: none. */
  contextWindow?: number;
  longSampleMs: number;
  concRuns: number;
  concPasses: number;
  concSteps: number;
  concLatency: number;
  restartLatency: number;
  restartAtCall: number;
  restartWaitS: number;
  restarts: number;
  langgraphDurability: 'sync' | 'async' | 'exit';
  eChunks: number;
  eGapMs: number;
  eIdleMs: number;
  fRuns: number;
  gStarts: number;
  gFirstTokenMs: number;
  gProviders: Array<'stub' | 'real'>;
  hRuns: number;
  hApprove: number;
  fTokensPerMinute: number;
  fWorkers: number;
  iFlood: number;
  iRuns: number;
  iTokensPerMinute: number;
  out: string;
}

function parseOptions(argv: string[]): Options {
  const list = (s: string) => s.split(',').map((x) => x.trim()).filter(Boolean);
  const program = new Command('bench')
    .option('--quick', 'small sizes: a few minutes instead of the full run', false)
    .option('--figures <list>', 'which figures: a (overhead), b (long run), c (concurrency), d (restart), e (live stream), f (provider quota), i (fair share of the quota among tenants)', 'a,b,c,d,e,f,i')
    .option('--server <list>', 'where the Temporal systems run: dev (a dev server on SQLite per system), stack (npm run stack\'s PostgreSQL cluster), or both', 'dev')
    .option('--systems <list>', `which systems: ${SYSTEMS.join(', ')}`, DEFAULT_SYSTEMS.join(','))
    .option('--profiles <list>', `tuning profiles of this product: ${Object.keys(PROFILES).join(', ')}`, `before,${TUNED}`)
    .option('--tool-bytes <n>', 'characters each tool call returns', '1024')
    .option('--overhead-runs <n>', '(a) sequential runs at zero model latency')
    .option('--overhead-steps <n>', '(a) steps per run')
    .option('--long-steps <n>', '(b) steps of the long run')
    .option('--long-runs <n>', '(b) long runs a system; each step\'s time is their median')
    .option('--context-window <tokens>', '(b) the provider refuses a request over this many tokens (about 4 characters each), and the product\'s runs declare it, so they compact')
    .option('--long-sample-ms <ms>', '(b) how often the long run\'s progress, CPU and worker RSS are sampled', '2000')
    .option('--long-10k', '(b) issue 51\'s run: 10,000 model calls (--long-steps 9999, --long-runs 1), --tool-bytes 5000 and --context-window 32768 unless given; use with --figures b --systems ours', false)
    .option('--conc-runs <n>', '(c) concurrent runs')
    .option('--conc-passes <n>', '(c) batches a system, the systems in the default order, then reversed, and so on (A B B A); the figure is their mean', '2')
    .option('--conc-steps <n>', '(c) steps per run')
    .option('--conc-latency <ms>', '(c) model latency', '500')
    .option('--restart-latency <ms>', '(d) model latency', '1000')
    .option('--restart-at-call <n>', '(d) the model call during which the worker goes down', '5')
    .option('--restart-wait-s <s>', '(d) longest wait for the resumed run\'s next step', '120')
    .option('--restarts <n>', '(d) restarts of each kind a system; the figure is their median (a system that does not resume in time is tried once)', '3')
    .option('--langgraph-durability <mode>', 'LangGraph durability: sync, async or exit', 'sync')
    .option('--e-chunks <n>', '(e) text chunks a run streams', '60')
    .option('--e-gap-ms <ms>', '(e) time between two chunks', '100')
    .option('--e-idle-ms <ms>', '(e) how long idle watchers are measured', '5000')
    .option('--f-runs <n>', '(f) runs sharing the provider')
    .option('--f-tokens-per-minute <n>', '(f) the provider\'s limit, and the budget\'s')
    .option('--i-flood <n>', '(i) runs of the tenant that floods the budget', '500')
    .option('--i-runs <n>', '(i) runs of the other tenant, timed', '10')
    .option('--i-tokens-per-minute <n>', '(i) the provider\'s limit, and the budget\'s', '200000')
    .option('--g-starts <n>', '(g) starts of each path, one after another')
    .option('--g-first-token-ms <ms>', '(g) the stub provider\'s delay to its first chunk', '100')
    .option('--g-providers <list>', '(g) stub (a fixed first-token delay), real (llama.cpp with SmolLM2-135M), or both', 'stub,real')
    .option('--gh-server <list>', '(g) and (h): where they run, if not where --server says (a full run: --server dev --gh-server dev,stack)')
    .option('--h-runs <n>', '(h) runs parked waiting for approval on one worker')
    .option('--h-approve <n>', '(h) of them approved at random once parked')
    .option('--f-workers <n>', '(f) worker processes sharing the budget', '2')
    .option('--out <dir>', 'results directory', path.join(BENCH_DIR, 'results'))
    .option('--report <json>', 'only rewrite the markdown tables of a results file (next to it) and exit')
    .parse(argv);
  const o = program.opts();
  const quick = Boolean(o.quick);
  const num = (v: string | undefined, full: number, small: number) => (v === undefined ? (quick ? small : full) : Number(v));
  // 10,000 model calls: 9,999 tool steps and the answer, the most a run's `maxLoops` allows.
  const tenK = Boolean(o.long10k);
  const longSteps = tenK && o.longSteps === undefined ? 9_999 : num(o.longSteps, 500, 100);
  const contextWindow = o.contextWindow !== undefined ? Number(o.contextWindow) : tenK ? 32_768 : undefined;
  const systems = list(o.systems) as SystemName[];
  for (const s of systems) if (!SYSTEMS.includes(s)) throw new Error(`unknown system ${s}`);
  const serverList = (value: string, option: string): ServerKind[] => {
    const kinds = list(value);
    for (const s of kinds) if (s !== 'dev' && s !== 'stack') throw new Error(`${option}: unknown server ${s}: dev or stack`);
    return kinds as ServerKind[];
  };
  const servers = serverList(o.server, '--server');
  const ghServers = o.ghServer === undefined ? servers : serverList(o.ghServer, '--gh-server');
  const profiles = list(o.profiles);
  for (const p of profiles) if (!PROFILES[p]) throw new Error(`unknown profile ${p}; known: ${Object.keys(PROFILES).join(', ')}`);
  return {
    quick,
    figures: list(o.figures),
    systems,
    servers,
    ghServers,
    profiles,
    toolBytes: tenK && program.getOptionValueSource('toolBytes') === 'default' ? 5_000 : Number(o.toolBytes),
    overheadRuns: num(o.overheadRuns, 5, 2),
    overheadSteps: num(o.overheadSteps, 50, 20),
    longSteps,
    loniRuns: tenK && o.longRuns === undefined ? 1 : num(o.longRuns, 3, 1),
    longAt: [10, Math.round(longSteps / 5), longSteps],
    ...(contextWindow ? { contextWindow } : {}),
    longSampleMs: Number(o.longSampleMs),
    concRuns: num(o.concRuns, 1_000, 100),
    concPasses: Number(o.concPasses),
    concSteps: num(o.concSteps, 5, 3),
    concLatency: Number(o.concLatency),
    restartLatency: Number(o.restartLatency),
    restartAtCall: Number(o.restartAtCall),
    restartWaitS: Number(o.restartWaitS),
    restarts: Number(o.restarts),
    langgraphDurability: o.langgraphDurability,
    eChunks: Number(o.eChunks),
    eGapMs: Number(o.eGapMs),
    eIdleMs: Number(o.eIdleMs),
    // (f): the quota's ideal is (runs x ~300 tokens - a minute's tokens) / tokens a minute: 2 minutes full, 1 quick.
    fRuns: num(o.fRuns, 1_000, 100),
    gStarts: num(o.gStarts, 200, 20),
    gFirstTokenMs: Number(o.gFirstTokenMs),
    gProviders: list(o.gProviders) as Options['gProviders'],
    hRuns: num(o.hRuns, 10_000, 500),
    hApprove: num(o.hApprove, 1_000, 100),
    fTokensPerMinute: num(o.fTokensPerMinute, 100_000, 15_000),
    fWorkers: Number(o.fWorkers),
    iFlood: Number(o.iFlood),
    iRuns: Number(o.iRuns),
    iTokensPerMinute: Number(o.iTokensPerMinute),
    out: o.out,
  };
}

const log = (msg: string) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);
let seq = 0;
const runId = (tag: string) => `${tag}-${process.pid}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

/**
 * The systems to measure: each entry builds a fresh instance (fresh worker and database; a fresh dev server, or the
 * bench's cluster) per figure. A Temporal system runs once per `--server`; on the cluster its label ends in `@stack`.
 */
function systemFactories(opts: Options): Array<{ label: string; make: () => BenchSystem }> {
  const out: Array<{ label: string; make: () => BenchSystem }> = [];
  const onServers = (label: string, make: () => OursSystem | TemporalFloorSystem | AiSdkSystem) => {
    for (const kind of opts.servers)
      out.push({
        label: kind === 'dev' ? label : `${label}@${kind}`,
        make: () => Object.assign(make(), { serverKind: kind }),
      });
  };
  for (const s of opts.systems) {
    if (s === 'floor') out.push({ label: 'floor', make: () => new FloorSystem() });
    if (s === 'ours') for (const p of opts.profiles) onServers(`ours:${p}`, () => new OursSystem(PROFILES[p]));
    if (s === 'langgraph') out.push({ label: `langgraph:${opts.langgraphDurability}`, make: () => new LangGraphSystem({ durability: opts.langgraphDurability }) });
    if (s === 'temporal-floor') onServers('temporal-floor', () => new TemporalFloorSystem());
    if (s === 'temporal-ai-sdk') onServers('temporal-ai-sdk', () => new AiSdkSystem({ workerOptions: PEER_WORKER_OPTIONS }));
  }
  return out;
}

const PEERS: Record<string, { dir: string; probe: string }> = {
  langgraph: { dir: 'peers', probe: '@langchain/langgraph' },
  'temporal-ai-sdk': { dir: 'peers/temporal-ai-sdk', probe: '@temporalio/ai-sdk' },
};

/**
 * Installs a peer's own node_modules from its lockfile on first use (`npm ci --prefix bench/...`), apart from the
 * project's tree. Returns why the peer cannot run, if it cannot; the bench then skips it and goes on with the others.
 */
function ensurePeer(system: string): string | undefined {
  const peer = PEERS[system];
  if (!peer) return undefined;
  const dir = path.join(BENCH_DIR, peer.dir);
  if (existsSync(path.join(dir, 'node_modules', peer.probe))) return undefined;
  log(`installing ${system} into ${path.relative(process.cwd(), dir)}/node_modules (npm ci)`);
  const npm = (command: string) => spawnSync('npm', [command, '--prefix', dir, '--no-audit', '--no-fund'], { stdio: 'inherit', timeout: 15 * 60_000 });
  let r = npm('ci');
  if (r.status !== 0) {
    // As .ci/run does for the project: `npm ci` refuses a lock without other platforms' optional binaries (@swc/core),
    // which this registry does not serve; `npm install` takes the lock's versions. The lock is put back as it was.
    const lockFile = path.join(dir, 'package-lock.json');
    const lock = readFileSync(lockFile, 'utf8');
    log(`npm ci failed; installing ${system} with npm install`);
    r = npm('install');
    writeFileSync(lockFile, lock);
  }
  if (r.status === 0 && existsSync(path.join(dir, 'node_modules', peer.probe))) return undefined;
  return `npm ci and npm install --prefix ${path.relative(process.cwd(), dir)} failed (exit ${r.status ?? r.signal}): the peer needs its packages from the npm registry`;
}

async function main(): Promise<void> {
  const reportOf = new Command().allowUnknownOption().allowExcessArguments().option('--report <json>').parse(process.argv).opts().report as string | undefined;
  if (reportOf) {
    const md = markdownReport(JSON.parse(readFileSync(reportOf, 'utf8')) as BenchResults);
    writeFileSync(reportOf.replace(/\.json$/, '.md'), md);
    console.log(md);
    return;
  }
  const opts = parseOptions(process.argv);
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  const workspace = path.join(scratch, 'workspace');
  writeWorkspace(workspace, opts.toolBytes);
  const load = new LoadMonitor();
  load.start();
  const results: BenchResults = {
    startedAt: new Date().toISOString(),
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    machine: machineInfo(),
    options: { ...opts },
    skipped: {},
    errors: {},
    a: {},
    b: {},
    c: {},
    d: {},
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: saving the figures so far`);
      save();
      process.exit(130);
    });
  }
  const model: Child = await spawnChild(path.join(BENCH_DIR, 'lib/model-process.ts'), { runtime: 'tsx' });
  const modelUrl = await model.call<string>('url');
  const ctx = { model, modelUrl, workspace, scratch, restartWaitMs: opts.restartWaitS * 1000 };
  const drain = () => model.call<Arrival[]>('drain');

  /** The systems to run, each peer installed on first use; a peer that cannot be is recorded as skipped and left out. */
  const runnable = () =>
    systemFactories(opts).filter(({ label }) => {
      const missing = ensurePeer(label.split(/[:@]/)[0]);
      if (missing) results.skipped[label] = missing;
      return !missing;
    });
  /** Records a system's failure in a figure (the first line also in the log); the bench goes on. */
  const failed = (figure: string, label: string, err: unknown, when = 'failed') => {
    const msg = err instanceof Error ? err.message : String(err);
    log(`${figure}: ${label} ${when}: ${msg.split('\n')[0]}`);
    results.errors[`${figure}:${label}`] = msg.slice(0, 2_000);
  };

  /** Runs `fn` on a fresh started instance of each system, then stops it; a failure is recorded and the bench goes on. */
  const each = async (figure: string, fn: (sys: BenchSystem, label: string) => Promise<void>, reversed = false) => {
    const systems = runnable();
    for (const { label, make } of reversed ? systems.reverse() : systems) {
      const sys = make();
      log(`${figure}: ${label}`);
      const t0 = performance.now();
      try {
        await sys.start(ctx);
        await drain();
        await fn(sys, label);
      } catch (err) {
        failed(figure, label, err);
      } finally {
        await sys.stop().catch((err: unknown) => log(`stopping ${label}: ${String(err)}`));
        log(`${figure}: ${label} took ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      }
    }
  };

  /**
   * (b) at scale: what a long run's samples say at its start and its end, the size of its view early and at the end
   * (asserted under 64 KB here), `agent history` of the whole chain, and the server's log about its history size.
   */
  const longFigure = async (
    sys: BenchSystem,
    label: string,
    run: RunSpec,
    samples: LongSample[],
    bytes: HistoryBytes | undefined,
    viewEarly: { bytes: number; call: number } | undefined,
    summariesBefore: number,
  ): Promise<FigureBLong> => {
    const width = Math.max(50, Math.round(run.steps / 20));
    const [first, last] = [opts.longAt[0], run.steps];
    const early = stretch(samples, first, first + width);
    const late = stretch(samples, last - width, last);
    const middle = stretch(samples, opts.longAt[1] - width / 2, opts.longAt[1] + width / 2);
    const perStep = opts.longAt.map((k) => {
      const values: number[] = [];
      for (let j = Math.max(1, k - STEP_WINDOW_HALF); j <= Math.min(run.steps, k + STEP_WINDOW_HALF); j++) if (bytes?.perStep.has(j)) values.push(bytes.perStep.get(j)!);
      return { step: k, bytes: percentile(values, 50) };
    });
    const viewBytesEnd = sys.viewBytes ? await sys.viewBytes(run.runId).catch((err: unknown) => failed('b', label, err, 'view query failed')) : undefined;
    if (typeof viewBytesEnd === 'number') {
      const ok = viewBytesEnd < VIEW_BYTES_GOAL;
      log(`b: ${label} ASSERT the state view at the end is under ${VIEW_BYTES_GOAL} bytes: ${viewBytesEnd} bytes, ${ok ? 'ok' : 'FAILED'}`);
      if (!ok) results.errors[`b:${label}:view`] = `the state view at the end of the run is ${viewBytesEnd} bytes, over ${VIEW_BYTES_GOAL}`;
    }
    let history: FigureBLong['history'];
    if (sys.historySteps) {
      const t0 = performance.now();
      try {
        const steps = await sys.historySteps(run.runId);
        history = { steps: steps.length, first: steps[0]?.step ?? NaN, last: steps.at(-1)?.step ?? NaN, ms: performance.now() - t0 };
        log(`b: ${label} agent history: steps ${history.first} to ${history.last} (${history.steps}) in ${(history.ms / 1000).toFixed(1)} s`);
      } catch (err) {
        failed('b', label, err, 'agent history failed');
      }
    }
    const warnings = sys.historySizeWarnings?.(run.runId);
    const rss = samples.map((s) => s.rssBytes).filter((v): v is number => v !== undefined);
    const summaries = (await model.call<{ summaries: number }>('progress', { runId: run.runId })).summaries - summariesBefore;
    const long: FigureBLong = {
      toolBytes: opts.toolBytes,
      ...(opts.contextWindow ? { contextWindowTokens: opts.contextWindow } : {}),
      ...(bytes?.counted !== undefined ? { compactions: bytes.counted } : {}),
      summaryCalls: summaries,
      ...(early ? { early } : {}),
      ...(late ? { late } : {}),
      ...(middle ? { middle } : {}),
      ...(rss.length ? { peakSampledRssBytes: Math.max(...rss) } : {}),
      peakRssBytes: sys.peakRss(),
      bytesMedianAt: perStep,
      ...(bytes ? { largestRunEvents: bytes.largestRunEvents, largestRunBytes: bytes.largestRunBytes } : {}),
      historySizeWarnings: warnings === undefined ? null : warnings.slice(0, 20),
      ...(viewEarly ? { viewBytesEarly: viewEarly.bytes, viewBytesEarlyAtCall: viewEarly.call } : {}),
      ...(typeof viewBytesEnd === 'number' ? { viewBytesEnd } : {}),
      ...(history ? { history } : {}),
      samples,
    };
    const cpu = (x: typeof early) => (x ? Object.values(x.cpuPerStepMs).reduce((t, v) => t + v, 0).toFixed(2) : 'n/a');
    const mib = (v: number | undefined) => (v === undefined ? 'n/a' : (v / 2 ** 20).toFixed(0));
    log(
      `b: ${label} long run: CPU a step ${cpu(early)} ms (steps ${early?.fromCall}-${early?.toCall}) -> ${cpu(late)} ms (steps ${late?.fromCall}-${late?.toCall}); ` +
        `worker RSS ${mib(early?.rssBytes)} -> ${mib(middle?.rssBytes)} (step ${opts.longAt[1]}) -> ${mib(late?.rssBytes)} MiB; bytes a step ${perStep.map((p) => p.bytes).join(' -> ')}; ` +
        `${long.compactions ?? '?'} compactions; history-size warnings: ${warnings === undefined ? 'log not read' : warnings.length}`,
    );
    return long;
  };

  /**
   * Figure (a) in rounds: every system is started (and warmed) at once, and each round runs one run on each system in
   * turn, the order rotated every round. Systems measured one after another saw different minutes of the machine (their
   * CPU a step moved by 20-50% between invocations of the same code); in rounds, a slow minute falls on all of them.
   * CPU a step is each system's total over its rounds; the per-round figures are kept for the ratios' spread.
   */
  const figureA = async () => {
    const started: Array<{ sys: BenchSystem; label: string }> = [];
    const acc = new Map<string, { steps: number[]; rounds: Array<Record<string, number>> }>();
    try {
      for (const { label, make } of runnable()) {
        const sys = make();
        log(`a: starting ${label}`);
        started.push({ sys, label });
        try {
          await sys.start(ctx);
          await drain();
          await sys.runBatch([{ runId: runId('warm'), steps: 3 }]); // first run pays for caches, connections and JIT
          await drain();
          acc.set(label, { steps: [], rounds: [] });
        } catch (err) {
          failed('a', label, err, 'failed to start');
        }
      }
      const running = started.filter(({ label }) => acc.has(label));
      for (let round = 0; round < opts.overheadRuns; round++) {
        for (let i = 0; i < running.length; i++) {
          const { sys, label } = running[(i + round) % running.length];
          const a = acc.get(label);
          if (!a) continue; // failed in an earlier round
          const pids = sys.pids();
          const cpuBefore = Object.fromEntries(Object.entries(pids).map(([role, pid]) => [role, cpuTimeMs(pid)]));
          const run = { runId: runId('a'), steps: opts.overheadSteps };
          try {
            const r = await sys.runBatch([run]);
            if (r.failures.length) throw new Error(`run failed: ${r.failures.join('; ')}`);
          } catch (err) {
            failed('a', label, err, `failed in round ${round + 1}`);
            acc.delete(label);
            continue;
          }
          // CPU per step does not depend on how busy the rest of the machine is, unlike the wall-clock step time.
          a.rounds.push(Object.fromEntries(Object.entries(pids).map(([role, pid]) => [role, (cpuTimeMs(pid) - cpuBefore[role]) / run.steps])));
          a.steps.push(...(stepTimes(await drain()).get(run.runId) ?? []));
        }
        log(`a: round ${round + 1} of ${opts.overheadRuns} done`);
      }
      for (const [label, { steps, rounds }] of acc) {
        const roles = Object.keys(rounds[0] ?? {});
        const cpuPerStepMs = Object.fromEntries(roles.map((role) => [role, rounds.reduce((t, r) => t + r[role], 0) / rounds.length]));
        const fig: FigureA = {
          steps: steps.length,
          p50: percentile(steps, 50),
          p99: percentile(steps, 99),
          mean: steps.reduce((x, y) => x + y, 0) / steps.length,
          cpuPerStepMs,
          cpuPerStepMsByRound: rounds,
        };
        results.a[label] = fig;
        log(`a: ${label} p50 ${fig.p50.toFixed(2)} ms, p99 ${fig.p99.toFixed(2)} ms over ${fig.steps} steps; CPU per step ${JSON.stringify(cpuPerStepMs)}`);
      }
    } finally {
      for (const { sys, label } of started) await sys.stop().catch((err: unknown) => log(`stopping ${label}: ${String(err)}`));
    }
  };

  try {
    if (opts.figures.includes('a')) {
      await model.call('configure', { latencyMs: 0 });
      await figureA();
    }

    if (opts.figures.includes('b')) {
      await model.call('configure', { latencyMs: 0, contextWindowTokens: opts.contextWindow });
      await each('b', async (sys, label) => {
        // As in (a): the first run pays for caches, connections and JIT, which would otherwise land on the early steps.
        await sys.runBatch([{ runId: runId('warm'), steps: 3 }]);
        await drain();
        // Several long runs, the figure their median at each step: one run's medians moved the ratio from 0.83x to
        // 1.22x between two full runs of the same code (BENCHMARKS.md, issue 26's fifth round).
        let fig: FigureB | undefined;
        const stepMsByRun: number[][] = [];
        const phasesByRun: Array<Array<{ providerReadMs: number; roundTripMs?: number; restMs: number }>> = [];
        for (let i = 0; i < opts.loniRuns; i++) {
          const run: RunSpec = { runId: runId('b'), steps: opts.longSteps, ...(opts.contextWindow ? { contextWindowTokens: opts.contextWindow } : {}) };
          // The first run is sampled as it goes (progress, CPU, RSS) when it is a long one, and its view read early on.
          const sampled = i === 0 && (opts.longSteps >= 1_000 || opts.contextWindow !== undefined);
          const summariesBefore = sampled ? (await model.call<{ summaries: number }>('progress', { runId: run.runId })).summaries : 0;
          let viewEarly: { bytes: number; call: number } | undefined;
          const sampler = sampled
            ? startSampler({
                everyMs: opts.longSampleMs,
                pids: sys.pids(),
                rssOf: 'worker' in sys.pids() ? 'worker' : 'runner',
                progress: async () => (await model.call<{ call: number }>('progress', { runId: run.runId })).call,
                at: sys.viewBytes
                  ? {
                      call: 10,
                      run: async () => {
                        const call = (await model.call<{ call: number }>('progress', { runId: run.runId })).call;
                        const bytes = await sys.viewBytes!(run.runId).catch(() => undefined);
                        if (bytes !== undefined) viewEarly = { bytes, call };
                      },
                    }
                  : undefined,
              })
            : undefined;
          const batch = await sys.runBatch([run], { timeoutMs: 60 * 60_000 }).finally(() => sampler?.stop());
          const samples = await sampler?.stop();
          // A run that fails part way (a peer hitting a server limit) still reports the steps it made, and why it stopped.
          const arrivals = await drain();
          const times = stepTimes(arrivals).get(run.runId) ?? [];
          const reads = readTimes(arrivals).get(run.runId) ?? [];
          const roundTrips = sys.roundTrips
            ? await sys.roundTrips(run.runId).catch((err: unknown) => {
                results.errors[`b:${label}:round-trips`] = String(err).slice(0, 500);
                return undefined;
              })
            : undefined;
          // What is neither, step by step: the system's model call and tool, and the request's way to the model server.
          const rest = times.map((t, i) => t - (reads[i] ?? NaN) - (roundTrips ? (roundTrips[i] ?? NaN) : 0));
          // BENCH_STEPS_DIR=<dir>: every step's time, model-server read and round trip of each long run, for looking closer.
          if (process.env.BENCH_STEPS_DIR) writeFileSync(path.join(process.env.BENCH_STEPS_DIR, `b-steps-${label.replace(/[^\w@-]/g, '_')}-${run.runId}.json`), JSON.stringify({ times, reads, roundTrips }));
          phasesByRun.push(
            opts.longAt.map((k) => ({
              providerReadMs: windowMedian(reads, k, STEP_WINDOW_HALF),
              ...(roundTrips ? { roundTripMs: windowMedian(roundTrips, k, STEP_WINDOW_HALF) } : {}),
              restMs: windowMedian(rest, k, STEP_WINDOW_HALF),
            })),
          );
          if (!fig) {
            const bytes = sys.persistedBytes
              ? await sys.persistedBytes(run.runId).catch((err: unknown) => {
                  results.errors[`b:${label}:bytes`] = String(err).slice(0, 500);
                  return undefined;
                })
              : undefined;
            fig = {
              steps: run.steps,
              completedSteps: times.length,
              wallMs: batch.endedAt - batch.startedAt,
              at: opts.longAt.map((k) => ({ step: k, stepMs: NaN, bytes: bytes?.perStep.get(k) ?? 0 })),
              totalBytes: bytes?.totalBytes ?? 0,
              runs: bytes?.runs ?? 1,
              largestRecordBytes: bytes?.largestEventBytes ?? 0,
            };
            if (samples) fig.long = await longFigure(sys, label, run, samples, bytes, viewEarly, summariesBefore);
          }
          stepMsByRun.push(opts.longAt.map((k) => windowMedian(times, k, STEP_WINDOW_HALF)));
          log(`b: ${label} run ${i + 1}/${opts.loniRuns}: ${opts.longAt.map((k, j) => `step ${k}: ${stepMsByRun[i][j].toFixed(1)} ms`).join(', ')}`);
          if (batch.failures.length || times.length < run.steps) {
            fig.completedSteps = Math.min(fig.completedSteps, times.length);
            fig.failure = batch.failures.join('; ').slice(0, 500) || `run ${i + 1} made ${times.length} of ${run.steps} steps`;
            break;
          }
        }
        if (!fig) return;
        fig.at = fig.at.map((x, j) => ({ ...x, stepMs: percentile(stepMsByRun.map((r) => r[j]), 50) }));
        fig.lastToFirstByRun = stepMsByRun.map((r) => r[r.length - 1] / r[0]);
        // NaN where no run knew it (percentile of nothing).
        const medianOf = (values: Array<number | undefined>) => percentile(values.filter((v): v is number => Number.isFinite(v)), 50);
        fig.phases = opts.longAt.map((step, j) => {
          const providerReadMs = medianOf(phasesByRun.map((r) => r[j].providerReadMs));
          const roundTripMs = medianOf(phasesByRun.map((r) => r[j].roundTripMs));
          const restMs = medianOf(phasesByRun.map((r) => r[j].restMs));
          return { step, providerReadMs, ...(Number.isFinite(roundTripMs) ? { roundTripMs } : {}), restMs };
        });
        results.b[label] = fig;
        log(`b: ${label} ${fig.at.map((x) => `step ${x.step}: ${x.stepMs.toFixed(1)} ms ${x.bytes} B`).join(', ')}`);
      });
    }

    if (opts.figures.includes('c')) {
      await model.call('configure', { latencyMs: opts.concLatency });
      // One batch a system, minutes apart, moved a system's wall time by up to about 20% from one pass to the next (BENCHMARKS.md,
      // issue 26, fourth round); 1,000-run batches cannot share the machine, so each system runs several, in A B B A order.
      const batches: Record<string, FigureC[]> = {};
      const concBatch = (pass: number) => async (sys: BenchSystem, label: string) => {
        await sys.runBatch([{ runId: runId('warm'), steps: 1 }]);
        await drain();
        const runs = Array.from({ length: opts.concRuns }, () => ({ runId: runId('c'), steps: opts.concSteps }));
        const pids = sys.pids();
        const cpuBefore = Object.fromEntries(Object.entries(pids).map(([role, pid]) => [role, cpuTimeMs(pid)]));
        const batch = await sys.runBatch(runs, { startConcurrency: 200, timeoutMs: 60 * 60_000 });
        const rss = sys.peakRss();
        const cpuPerStepMs = Object.fromEntries(
          Object.entries(pids).map(([role, pid]) => [role, (cpuTimeMs(pid) - cpuBefore[role]) / (opts.concRuns * opts.concSteps)]),
        );
        const arrivals = await drain();
        const wallMs = batch.endedAt - batch.startedAt;
        // Every run makes steps + 1 model calls one after another, each at least the model latency; all runs in parallel.
        const idealMs = (opts.concSteps + 1) * opts.concLatency;
        const fig: FigureC = {
          runs: opts.concRuns,
          steps: opts.concSteps,
          latencyMs: opts.concLatency,
          completed: batch.completed,
          failures: batch.failures.slice(0, 5),
          wallMs,
          idealMs,
          throughput: (batch.completed / wallMs) * 1000,
          idealThroughput: (opts.concRuns / idealMs) * 1000,
          efficiency: idealMs / wallMs,
          peakRssBytes: rss ?? 0,
          modelCalls: arrivals.length,
          cpuPerStepMs,
        };
        (batches[label] ??= []).push(fig);
        results.c[label] = meanOfBatches(batches[label]);
        const cpu = Object.values(cpuPerStepMs).reduce((a, b) => a + b, 0);
        log(
          `c: ${label} pass ${pass + 1}/${opts.concPasses}: ${fig.completed}/${fig.runs} in ${(wallMs / 1000).toFixed(1)} s (${(fig.efficiency * 100).toFixed(0)}% of ideal), ` +
            `CPU ${cpu.toFixed(1)} ms a step, RSS ${(fig.peakRssBytes / 2 ** 20).toFixed(0)} MiB`,
        );
      };
      for (let pass = 0; pass < opts.concPasses; pass++) await each('c', concBatch(pass), pass % 2 === 1);
    }

    if (opts.figures.includes('d')) {
      await model.call('configure', { latencyMs: opts.restartLatency });
      await each('d', async (sys, label) => {
        if (!sys.restartDuring) {
          results.d[label] = { note: 'not durable: a restart loses the run' };
          return;
        }
        const fig: FigureD = {};
        const modes: Array<'crash' | 'graceful'> = sys instanceof LangGraphSystem ? ['crash'] : ['crash', 'graceful'];
        for (const mode of modes) {
          // One restart is one sample of a process start, which moves by a few hundred ms from one minute to the next.
          const runs: Restart[] = [];
          for (let i = 0; i < opts.restarts; i++) {
            const r = await sys.restartDuring({ runId: runId(`d-${mode}`), steps: opts.restartAtCall + 2 }, opts.restartAtCall, mode);
            runs.push(r);
            log(`d: ${label} ${mode} ${i + 1}/${opts.restarts}: next step ${r.spawnToNextStepMs?.toFixed(0) ?? `not within ${r.notResumedWithinMs} ms`} after spawn (ready after ${r.spawnToReadyMs.toFixed(0)} ms)`);
            await drain();
            if (r.spawnToNextStepMs === null) break; // it waits out a timeout: once says so
          }
          fig[mode] = medianRestart(runs);
          fig.runs = [...(fig.runs ?? []), ...runs];
        }
        results.d[label] = fig;
      });
    }

    if (opts.figures.includes('e')) {
      // The product with the embedded default and with Redis; LangGraph, the peer that streams, beside them.
      const systems = [...(opts.systems.includes('ours') ? ['hub', 'redis'] : []), ...(opts.systems.includes('langgraph') && !ensurePeer('langgraph') ? ['langgraph'] : [])];
      results.e = await figureE({ systems, chunks: opts.eChunks, gapMs: opts.eGapMs, thinkMs: 1_500, scenarios: DEFAULT_SCENARIOS, idleWatchers: 100, idleMs: opts.eIdleMs, scratch, log });
    }
    if (opts.figures.includes('f')) {
      try {
        results.f = await figureF({ runs: opts.fRuns, tokensPerMinute: opts.fTokensPerMinute, promptChars: 1_000, workers: opts.fWorkers, log });
      } catch (err) {
        results.errors.f = String(err instanceof Error ? (err.stack ?? err.message) : err).slice(0, 2_000);
        log(`f failed: ${String(err).split('\n')[0]}`);
      }
    }
    /** A figure measured on each server, its failure on one recorded and the others still measured. */
    async function perServer<T>(figure: 'g' | 'h', measure: (server: ServerKind) => Promise<T>): Promise<Partial<Record<ServerKind, T>>> {
      const out: Partial<Record<ServerKind, T>> = {};
      for (const server of opts.ghServers) {
        try {
          out[server] = await measure(server);
        } catch (err) {
          results.errors[`${figure}:${server}`] = String(err instanceof Error ? (err.stack ?? err.message) : err).slice(0, 2_000);
          log(`${figure} ${server} failed: ${String(err).split('\n')[0]}`);
        }
      }
      return out;
    }
    if (opts.figures.includes('g')) {
      const langgraph = opts.systems.includes('langgraph') && !ensurePeer('langgraph');
      results.g = await perServer('g', (server) => figureG({ starts: opts.gStarts, firstTokenMs: opts.gFirstTokenMs, providers: opts.gProviders, server, langgraph, scratch, log }));
    }
    if (opts.figures.includes('h')) results.h = await perServer('h', (server) => figureH({ runs: opts.hRuns, approve: opts.hApprove, server, log }));
    if (opts.figures.includes('i')) {
      try {
        results.i = await figureI({ flood: opts.iFlood, runs: opts.iRuns, tokensPerMinute: opts.iTokensPerMinute, floodPromptChars: 4_000, promptChars: 1_000, log });
      } catch (err) {
        results.errors.i = String(err instanceof Error ? (err.stack ?? err.message) : err).slice(0, 2_000);
        log(`i failed: ${String(err).split('\n')[0]}`);
      }
    }
  } finally {
    await stopChild(model);
    await stopBenchStack().catch((err: unknown) => log(`stopping the bench's cluster: ${String(err)}`));
    save();
    rmSync(scratch, { recursive: true, force: true });
  }

  /** Writes what there is so far; also on Ctrl-C, so a long run that is stopped keeps its finished figures. */
  function save(): void {
    results.load = load.stop();
    results.endedAt = new Date().toISOString();
    mkdirSync(opts.out, { recursive: true });
    const stamp = results.startedAt.replace(/[:.]/g, '-');
    const json = JSON.stringify(results, null, 2);
    writeFileSync(path.join(opts.out, `${stamp}.json`), json);
    writeFileSync(path.join(opts.out, 'latest.json'), json);
    const md = markdownReport(results);
    writeFileSync(path.join(opts.out, 'latest.md'), md);
    writeFileSync(path.join(opts.out, `${stamp}.md`), md);
    console.log(`\n${md}`);
    log(`results in ${path.relative(process.cwd(), opts.out)}/latest.{json,md}`);
  }
}


main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
