/** The results file's shape, and the markdown tables made from it. */
import type { FigureE } from './figure-e';
import type { FigureG } from './first-token';
import type { FigureH } from './parked-runs';
import type { FigureF, FigureI, TimeBreakdown } from './lib/quota-figure';
import type { Restart } from './systems';
import type { LoadSummary, MachineInfo } from './lib/machine';
import { STEP_WINDOW_HALF } from './lib/stats';
import type { LongSample, Stretch } from './lib/long-run';

export interface FigureA {
  steps: number;
  p50: number;
  p99: number;
  mean: number;
  /** CPU ms per step by process role (worker or runner, Temporal server); independent of other load on the machine. */
  cpuPerStepMs: Record<string, number>;
  /** The same, for each round: (a) runs the systems in rounds, one run each a round (bench/run.ts, figureA). */
  cpuPerStepMsByRound?: Array<Record<string, number>>;
}

export interface FigureB {
  steps: number;
  /** Steps the run made; fewer than `steps` when it failed part way. */
  completedSteps: number;
  failure?: string;
  wallMs: number;
  /** Per-step time (median of the steps within STEP_WINDOW_HALF of it; with several runs, the median of theirs) and bytes persisted by that step (first run). */
  at: Array<{ step: number; stepMs: number; bytes: number }>;
  /** Each run's last step time against its first (absent in results from before several runs). */
  lastToFirstByRun?: number[];
  /**
   * The step at each of `at`'s steps by part, medians as for `stepMs`: the model server reading and parsing the request
   * (every system's), the durable round trip between model calls (systems with a history), and the rest of the step
   * (the system's model call and tool, the request's way to the model server). Absent in results from before 2026-11-27.
   */
  phases?: Array<{ step: number; providerReadMs: number; roundTripMs?: number; restMs: number }>;
  totalBytes: number;
  /** Runs in the chain (continue-as-new), or 1. */
  runs: number;
  largestRecordBytes: number;
  /** (b) at scale (`--long-10k`, or `--context-window`): what the first run's samples, view, history and server log say. */
  long?: FigureBLong;
}

/** (b) at scale, issue 51's goals: the run's end against its start, from samples taken while it ran. */
export interface FigureBLong {
  toolBytes: number;
  /** The provider's context window, which the run declared; absent: none. */
  contextWindowTokens?: number;
  /** The product's compactions across the chain (compactContext activities), and the summaries the provider wrote for them. */
  compactions?: number;
  summaryCalls: number;
  /** CPU ms a step by role and the worker's RSS over a stretch of steps near the start and near the end (`stretch`). */
  early?: Stretch;
  late?: Stretch;
  /** The same around `at`'s middle step: the worker's RSS once its heap has grown to its working set. */
  middle?: Stretch;
  /** The most the worker's RSS was in any sample, and its VmHWM at the end. */
  peakSampledRssBytes?: number;
  peakRssBytes?: number;
  /** History bytes a step, the median of the steps within STEP_WINDOW_HALF of each of `at`'s steps. */
  bytesMedianAt: Array<{ step: number; bytes: number }>;
  /** The most events and bytes of one run of the chain (the server warns at 10,240 events or 10 MB a run). */
  largestRunEvents?: number;
  largestRunBytes?: number;
  /** The server's log lines about this run's history size; null: the log could not be read. */
  historySizeWarnings: string[] | null;
  /** Bytes of the state view (the `state` query, JSON) early in the run and at its end. */
  viewBytesEarly?: number;
  viewBytesEarlyAtCall?: number;
  viewBytesEnd?: number;
  /** `agent history --json` of the run: how many steps, the first and the last, and how long it took. */
  history?: { steps: number; first: number; last: number; ms: number };
  /** Samples every `--long-sample-ms`: the run's call, CPU by role, the worker's RSS. */
  samples: LongSample[];
}

/** Issue 51: the view of a run of 10,000 calls under 64 KB. */
export const VIEW_BYTES_GOAL = 64 * 1024;

export interface FigureC {
  runs: number;
  steps: number;
  latencyMs: number;
  completed: number;
  failures: string[];
  wallMs: number;
  idealMs: number;
  throughput: number;
  idealThroughput: number;
  efficiency: number;
  peakRssBytes: number;
  modelCalls: number;
  /** CPU ms per step by process role over the whole batch (start, steps, completion). */
  cpuPerStepMs: Record<string, number>;
  /** With several passes (`--conc-passes`): each batch as measured; the fields above are their mean (RSS: the most). */
  batches?: FigureC[];
}

/** One figure (c) from a system's batches: wall time and CPU a step averaged, throughput from the mean wall time. */
export function meanOfBatches(figs: FigureC[]): FigureC {
  const [first] = figs;
  if (figs.length === 1) return first;
  const mean = (of: (f: FigureC) => number) => figs.reduce((sum, f) => sum + of(f), 0) / figs.length;
  const wallMs = mean((f) => f.wallMs);
  const completed = Math.min(...figs.map((f) => f.completed));
  const roles = Object.keys(first.cpuPerStepMs);
  return {
    ...first,
    completed,
    failures: figs.flatMap((f) => f.failures).slice(0, 5),
    wallMs,
    throughput: (completed / wallMs) * 1000,
    efficiency: first.idealMs / wallMs,
    peakRssBytes: Math.max(...figs.map((f) => f.peakRssBytes)),
    modelCalls: mean((f) => f.modelCalls),
    cpuPerStepMs: Object.fromEntries(roles.map((role) => [role, mean((f) => f.cpuPerStepMs[role] ?? 0)])),
    batches: figs,
  };
}

/** What `@stack` in a system's label means, under the tables that have such systems. */
const STACK_NOTE =
  '`@stack`: on `npm run stack`\'s cluster (Temporal Server 1.32.2, all services in one process, on PostgreSQL 15 with advanced visibility, on this machine); without it, on the `temporal` CLI\'s dev server (SQLite). On the stack the server\'s CPU is the Temporal Server\'s, and PostgreSQL\'s (the postmaster and its backends) is its own column.';

/** `crash` and `graceful`: the median of the restarts of that kind (`runs`, each as measured). */
export type FigureD = { crash?: Restart; graceful?: Restart; runs?: Restart[]; note?: string };

/** The median restart of several of one kind: each time its own median; not resumed counts as slower than any. */
export function medianRestart(runs: Restart[]): Restart {
  const mid = <T>(xs: T[]) => xs[Math.floor((xs.length - 1) / 2)];
  const next = mid(runs.map((r) => r.spawnToNextStepMs ?? Infinity).sort((a, b) => a - b));
  const waited = runs.find((r) => r.notResumedWithinMs)?.notResumedWithinMs;
  return {
    mode: runs[0].mode,
    spawnToNextStepMs: Number.isFinite(next) ? next : null,
    ...(Number.isFinite(next) || waited === undefined ? {} : { notResumedWithinMs: waited }),
    spawnToReadyMs: mid(runs.map((r) => r.spawnToReadyMs).sort((a, b) => a - b)),
  };
}

export interface BenchResults {
  startedAt: string;
  endedAt?: string;
  command: string;
  machine: MachineInfo;
  options: Record<string, unknown>;
  load?: LoadSummary;
  skipped: Record<string, string>;
  errors: Record<string, string>;
  a: Record<string, FigureA>;
  b: Record<string, FigureB>;
  c: Record<string, FigureC>;
  d: Record<string, FigureD>;
  e?: FigureE;
  f?: FigureF;
  /** By server kind. */
  g?: Partial<Record<'dev' | 'stack', FigureG>>;
  /** By server kind. */
  h?: Partial<Record<'dev' | 'stack', FigureH>>;
  i?: FigureI;
}

const ms = (x: number | null | undefined, digits = 1) => (x == null || Number.isNaN(x) ? 'n/a' : `${x.toFixed(digits)}`);
const kb = (bytes: number) => (bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : bytes >= 1e3 ? `${(bytes / 1e3).toFixed(1)} kB` : `${bytes} B`);
const percent = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? 'n/a' : `${(x * 100).toFixed(x < 0.1 ? 1 : 0)}%`);

/** The share of the ideal that `cores` allow at the batch's CPU per step (agent process plus server), at most 100%. */
export function cpuCeiling(c: FigureC, cores: number): number | undefined {
  const cpu = (c.cpuPerStepMs?.worker ?? c.cpuPerStepMs?.runner ?? 0) + (c.cpuPerStepMs?.server ?? 0) + (c.cpuPerStepMs?.database ?? 0);
  if (!cpu) return undefined;
  const demand = (c.runs * 1000) / c.latencyMs;
  return Math.min(1, (cores * 1000) / cpu / demand);
}

const row = (cells: Array<string | number>) => `| ${cells.join(' | ')} |`;

export function markdownReport(r: BenchResults): string {
  const o = r.options as Record<string, any>;
  const out: string[] = [];
  const m = r.machine;
  out.push(`## Results of \`${r.command}\``, '');
  out.push(`${r.startedAt} to ${r.endedAt ?? '?'}; ${m.nproc} cores (${m.cpuModel}), ${m.memoryGiB} GiB, node ${m.node}, ${m.platform}, ${m.temporalCli ?? 'temporal CLI unknown'}.`);
  if (r.load) out.push(`Load average (1 min) during the run: ${r.load.min} to ${r.load.max}, mean ${r.load.mean} (${r.load.atStart} at the start) on ${m.nproc} cores.`);
  out.push(`Workload: every step is one model call (streamed, tool call only) and one \`readFile\` of ${o.toolBytes} characters; the last call answers.`, '');

  const floorA = r.a.floor;
  const onStack = [...Object.keys(r.a), ...Object.keys(r.c)].some((l) => l.endsWith('@stack'));
  if (Object.keys(r.a).length) {
    out.push(`### (a) Durable overhead per step at zero model latency (${o.overheadRuns} rounds of one ${o.overheadSteps}-step run on each system, in rotated order, after a warm-up run)`, '');
    out.push(
      row(['system', 'step p50 ms', 'step p99 ms', 'overhead p50 ms', 'overhead p99 ms', 'CPU ms/step: agent process', 'CPU ms/step: Temporal server', ...(onStack ? ['CPU ms/step: PostgreSQL'] : [])]),
      row(['---', '---:', '---:', '---:', '---:', '---:', '---:', ...(onStack ? ['---:'] : [])]),
    );
    for (const [label, a] of Object.entries(r.a)) {
      const over = (x: number, f: number | undefined) => (f === undefined || label === 'floor' ? '-' : ms(x - f, 2));
      const cpu = a.cpuPerStepMs ?? {};
      out.push(row([label, ms(a.p50, 2), ms(a.p99, 2), over(a.p50, floorA?.p50), over(a.p99, floorA?.p99), ms(cpu.worker ?? cpu.runner, 2), cpu.server === undefined ? '-' : ms(cpu.server, 2), ...(onStack ? [cpu.database === undefined ? '-' : ms(cpu.database, 2)] : [])]));
    }
    out.push('', 'The model server\'s CPU is the same for every system and is not counted. CPU time depends much less on the rest of the machine\'s load than step times do.');
    if (onStack) out.push(STACK_NOTE);
    out.push('');
  }

  if (Object.keys(r.b).length) {
    const at = Object.values(r.b)[0]?.at.map((x) => x.step) ?? [];
    const loniRuns = Number(o.loniRuns ?? 1);
    out.push(`### (b) ${loniRuns > 1 ? `${loniRuns} long runs` : 'One long run'} of ${o.longSteps} steps at zero model latency, after a warm-up run`, '');
    out.push(
      `Step time is the median of the steps within ${STEP_WINDOW_HALF} of step k (fewer at the end of the run)${loniRuns > 1 ? ', and the median of the runs\' (each run\'s ratio is in the goals below)' : ''}. Bytes: history events of step k for Temporal systems (as the server stores them), checkpoint and write blobs of step k for LangGraph (first run).`,
      '',
    );
    out.push(
      row(['system', ...at.map((k) => `ms @${k}`), `@${at.at(-1)} / @${at[0]}`, ...at.map((k) => `bytes @${k}`), 'total persisted', 'runs (CAN)', 'wall s']),
      row(['---', ...at.map(() => '---:'), '---:', ...at.map(() => '---:'), '---:', '---:', '---:']),
    );
    for (const [label, b] of Object.entries(r.b)) {
      const first = b.at[0]?.stepMs;
      const last = b.at.at(-1)?.stepMs;
      out.push(
        row([
          label,
          ...b.at.map((x) => ms(x.stepMs)),
          first && last ? `${(last / first).toFixed(2)}x` : 'n/a',
          // No bytes at all means they could not be read (the run's history was over the server's limits).
          ...b.at.map((x) => (label === 'floor' ? '-' : b.totalBytes ? kb(x.bytes) : 'n/a')),
          label === 'floor' ? '-' : b.totalBytes ? kb(b.totalBytes) : 'n/a',
          b.runs,
          ms(b.wallMs / 1000),
        ]),
      );
    }
    for (const [label, b] of Object.entries(r.b)) if (b.failure) out.push('', `${label} stopped after ${b.completedSteps} of ${b.steps} steps: ${b.failure}`);
    out.push('');
    out.push(...longRunReport(r.b));
    const floor = r.b.floor;
    if (floor) {
      out.push(
        `Every system's step includes the model call, whose request carries the whole conversation (about 1.2 kB more each step), and the floor's own step grows with it. Durable overhead at step k is the system's step time minus the floor's at the same step:`,
        '',
        row(['system', ...at.map((k) => `overhead ms @${k}`), `@${at.at(-1)} / @${at[0]}`]),
        row(['---', ...at.map(() => '---:'), '---:']),
      );
      for (const [label, b] of Object.entries(r.b)) {
        if (label === 'floor') continue;
        const over = b.at.map((x, i) => (Number.isFinite(x.stepMs) && Number.isFinite(floor.at[i]?.stepMs) ? x.stepMs - floor.at[i].stepMs : NaN));
        const ratio = over[0] > 0 && Number.isFinite(over.at(-1)!) ? `${(over.at(-1)! / over[0]).toFixed(2)}x` : 'n/a';
        out.push(row([label, ...over.map((x) => ms(x)), ratio]));
      }
      out.push('');
    }
    const phased = Object.entries(r.b).filter(([, b]) => b.phases?.length);
    if (phased.length) {
      out.push(
        `The step by part, medians as above. Model server: reading and parsing the request, which carries the whole conversation (the model server's clock; part of every system's step). Round trip: from one model call's activity completing to the next one's starting, from the run's history (the server's clock): the workflow task that schedules the next call and the server's dispatch of both tasks, nothing the activities do. The rest: the step less both, step by step: the system's model call and tool, and the request's way to the model server.`,
        '',
        row(['system', ...at.map((k) => `model server ms @${k}`), ...at.map((k) => `round trip ms @${k}`), `round trip @${at.at(-1)} / @${at[0]}`, ...at.map((k) => `rest ms @${k}`)]),
        row(['---', ...at.map(() => '---:'), ...at.map(() => '---:'), '---:', ...at.map(() => '---:')]),
      );
      for (const [label, b] of phased) {
        const phases = b.phases!;
        const trips = phases.map((p) => p.roundTripMs ?? NaN);
        const first = trips[0];
        const last = trips.at(-1)!;
        const ratio = first > 0 && Number.isFinite(last) ? `${(last / first).toFixed(2)}x` : '-';
        out.push(row([label, ...phases.map((p) => ms(p.providerReadMs, 2)), ...trips.map((t) => (Number.isFinite(t) ? ms(t, 2) : '-')), ratio, ...phases.map((p) => ms(p.restMs, 2))]));
      }
      out.push('');
    }
  }

  if (Object.keys(r.c).length) {
    const c0 = Object.values(r.c)[0];
    out.push(
      `### (c) ${c0.runs} concurrent runs of ${c0.steps} steps at ${c0.latencyMs} ms model latency`,
      '',
      `Ideal: every run makes ${c0.steps + 1} model calls one after another and each takes at least ${c0.latencyMs} ms, and all runs go in parallel, so the batch cannot end before (steps + 1) x latency = ${c0.idealMs} ms: ideal throughput = runs / ((steps + 1) x latency) = ${c0.idealThroughput.toFixed(1)} runs/s. Measured: from the first start request to the last run's close.`,
      '',
      `% of floor: the system's throughput as a share of the floor's (the plain loop with no durability) in the same run, which is what a 2-core machine allows at all; the issue's goal is 50%.`,
      '',
      ...(c0.batches ? [`Each row is the mean of ${c0.batches.length} batches of the system, run in passes over the systems in alternating order (A B B A): one batch a system, minutes apart, moved by up to about 20% from one pass to the next on this machine. Throughput is from the mean wall time; peak RSS is the most of any batch.`, ''] : []),
      `CPU ceiling: the most this machine's ${m.nproc} cores allow at the CPU a step cost in this batch, as a share of the ideal: ${m.nproc} x 1000 / (CPU ms per step, agent process + Temporal server) steps/s against the ${(c0.runs * 1000 / c0.latencyMs).toFixed(0)} steps/s that ${c0.runs} runs at ${c0.latencyMs} ms ask for. It leaves out the model server's CPU, so it is an upper bound.`,
      '',
    );
    out.push(
      row(['system', 'completed', 'wall s', 'runs/s', '% of floor', '% of ideal', 'CPU ceiling', 'peak RSS MiB', 'CPU ms/step: agent process', 'CPU ms/step: Temporal server', ...(onStack ? ['CPU ms/step: PostgreSQL'] : [])]),
      row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', ...(onStack ? ['---:'] : [])]),
    );
    const floorThroughput = r.c.floor?.throughput;
    for (const [label, c] of Object.entries(r.c)) {
      const cpu = c.cpuPerStepMs ?? {};
      out.push(
        row([
          label,
          `${c.completed}/${c.runs}`,
          ms(c.wallMs / 1000, 2),
          ms(c.throughput, 1),
          floorThroughput && label !== 'floor' ? percent(c.throughput / floorThroughput) : '-',
          percent(c.efficiency),
          percent(cpuCeiling(c, m.nproc)),
          ms(c.peakRssBytes / 2 ** 20, 0),
          ms(cpu.worker ?? cpu.runner, 1),
          cpu.server === undefined ? '-' : ms(cpu.server, 1),
          ...(onStack ? [cpu.database === undefined ? '-' : ms(cpu.database, 1)] : []),
        ]),
      );
    }
    if (onStack) out.push('', STACK_NOTE);
    out.push('');
  }

  if (Object.keys(r.d).length) {
    out.push(
      `### (d) Worker restart during model call #${o.restartAtCall} (${o.restartLatency} ms model latency)`,
      '',
      'From spawning the new worker (or runner) to the run\'s next model call arriving. Crash: `kill -9` while the call is at the model, so that call is made again. Graceful: SIGTERM, the worker lets the call finish, and the next call is the resumed run\'s next step. ' +
        `Each cell is the median of ${o.restarts ?? 1} restarts of that kind (one, for a system that did not resume in time), with the range of the restarts in brackets.`,
      '',
    );
    out.push(row(['system', 'crash: to next step ms', 'crash: process ready ms', 'graceful: to next step ms', 'graceful: process ready ms']), row(['---', '---:', '---:', '---:', '---:']));
    for (const [label, d] of Object.entries(r.d)) {
      if (d.note) out.push(row([label, d.note, '', '', '']));
      else {
        const next = (x: Restart | undefined) => (x?.spawnToNextStepMs == null && x?.notResumedWithinMs ? `> ${x.notResumedWithinMs}` : ms(x?.spawnToNextStepMs ?? undefined, 0));
        const range = (mode: Restart['mode'], of: (x: Restart) => number | null) => {
          const xs = (d.runs ?? []).filter((x) => x.mode === mode).map(of);
          return xs.length > 1 && xs.every((x) => x !== null) ? ` (${ms(Math.min(...(xs as number[])), 0)} to ${ms(Math.max(...(xs as number[])), 0)})` : '';
        };
        const cells = (mode: Restart['mode']) => [next(d[mode]) + range(mode, (x) => x.spawnToNextStepMs), ms(d[mode]?.spawnToReadyMs, 0) + range(mode, (x) => x.spawnToReadyMs)];
        out.push(row([label, ...cells('crash'), ...cells('graceful')]));
      }
    }
    out.push('');
  }

  if (r.e && Object.keys(r.e).length) out.push(...figureEReport(r.e, o), '');
  if (r.f) out.push(...figureFReport(r.f), '');
  for (const g of Object.values(r.g ?? {})) if (g) out.push(...figureGReport(g), '');
  for (const h of Object.values(r.h ?? {})) if (h) out.push(...figureHReport(h), '');
  if (r.i) out.push(...figureIReport(r.i), '');

  const ours = Object.keys({ ...r.a, ...r.c }).filter((l) => l.startsWith('ours:'));
  const peers = Object.keys({ ...r.a, ...r.c }).filter((l) => !l.startsWith('ours:') && l !== 'floor');
  if (ours.length && peers.length) {
    out.push('### Ratios, this product to each peer', '');
    out.push(row(['ours', 'peer', 'overhead p50', 'overhead p99', 'throughput', 'peak RSS']), row(['---', '---', '---:', '---:', '---:', '---:']));
    for (const o1 of ours) {
      for (const p of peers) {
        const ratio = (x: number | undefined, y: number | undefined) => (x === undefined || y === undefined || !y ? 'n/a' : `${(x / y).toFixed(2)}x`);
        const overA = (l: string, q: 'p50' | 'p99') => (r.a[l] && floorA ? r.a[l][q] - floorA[q] : undefined);
        out.push(
          row([
            o1,
            p,
            ratio(overA(o1, 'p50'), overA(p, 'p50')),
            ratio(overA(o1, 'p99'), overA(p, 'p99')),
            ratio(r.c[o1]?.throughput, r.c[p]?.throughput),
            ratio(r.c[o1]?.peakRssBytes, r.c[p]?.peakRssBytes),
          ]),
        );
      }
    }
    out.push('', 'Below 1x is better for overhead and RSS, above 1x is better for throughput.', '');
  }

  out.push(...issue26Goals(r));
  for (const [label, why] of Object.entries(r.skipped)) out.push(`- skipped ${label}: ${why}`);
  for (const [what, err] of Object.entries(r.errors)) out.push(`- error in ${what}: ${err.split('\n')[0]}`);
  return out.join('\n') + '\n';
}

/** The goals of issue 26 for figures (a) to (d), each against `temporal-floor` (an empty Temporal agent) where it has one. */
/** (b) at scale: the run's start against its end, and issue 51's goals, for each system that has `long`. */
function longRunReport(figures: Record<string, FigureB>): string[] {
  const out: string[] = [];
  const mib = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : `${(bytes / 2 ** 20).toFixed(0)} MiB`);
  const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && b > 0 && Number.isFinite(a) ? a / b : NaN);
  const x = (v: number) => (Number.isFinite(v) ? `${v.toFixed(2)}x` : 'n/a');
  const mark = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? '**met**' : '**not met**');
  const roles = (c: Record<string, number> | undefined) => (c ? Object.entries(c).map(([role, v]) => `${role} ${v.toFixed(2)}`).join(', ') : 'n/a');
  for (const [label, b] of Object.entries(figures)) {
    const l = b.long;
    if (!l) continue;
    const first = b.at[0];
    const last = b.at.at(-1)!;
    const stepRatio = ratio(last.stepMs, first.stepMs);
    const cpu = (s: Stretch | undefined) => (s ? Object.values(s.cpuPerStepMs).reduce((t, v) => t + v, 0) : undefined);
    const cpuRatio = ratio(cpu(l.late), cpu(l.early));
    const bytesRatio = ratio(l.bytesMedianAt.at(-1)?.bytes, l.bytesMedianAt[0]?.bytes);
    // The heap grows to its working set over the first steps: RSS is flat if the end holds what the middle did.
    const rssRatio = ratio(l.late?.rssBytes, l.middle?.rssBytes);
    out.push(
      `#### ${label}: ${b.steps + 1} model calls, ${l.toolBytes}-character tool outputs, ${l.contextWindowTokens ? `a ${l.contextWindowTokens}-token context window the provider enforces` : 'no context window'}`,
      '',
      `${b.completedSteps} of ${b.steps} steps in ${(b.wallMs / 1000).toFixed(0)} s; ${b.runs} runs in the chain; ${l.compactions ?? 'n/a'} compactions (${l.summaryCalls} summaries written); the largest run of the chain ${l.largestRunEvents ?? 'n/a'} events, ${l.largestRunBytes === undefined ? 'n/a' : kb(l.largestRunBytes)}.`,
      '',
      row(['goal', 'start', 'end', 'end / start', 'goal met']),
      row(['---', '---:', '---:', '---:', '---']),
      row([`step time within 1.2x (ms, steps ${first.step} and ${last.step})`, ms(first.stepMs), ms(last.stepMs), x(stepRatio), mark(Number.isFinite(stepRatio) ? stepRatio <= STEP_GOALS.longRatio : undefined)]),
      row([
        `CPU a step within 1.2x (ms, all processes; steps ${l.early ? `${l.early.fromCall}-${l.early.toCall}` : '?'} and ${l.late ? `${l.late.fromCall}-${l.late.toCall}` : '?'})`,
        `${ms(cpu(l.early), 2)} (${roles(l.early?.cpuPerStepMs)})`,
        `${ms(cpu(l.late), 2)} (${roles(l.late?.cpuPerStepMs)})`,
        x(cpuRatio),
        mark(Number.isFinite(cpuRatio) ? cpuRatio <= STEP_GOALS.longRatio : undefined),
      ]),
      row([`history bytes a step flat (median of ${2 * STEP_WINDOW_HALF + 1} steps; within 1.2x)`, kb(l.bytesMedianAt[0]?.bytes ?? 0), kb(l.bytesMedianAt.at(-1)?.bytes ?? 0), x(bytesRatio), mark(Number.isFinite(bytesRatio) ? bytesRatio <= STEP_GOALS.longRatio : undefined)]),
      row([
        `worker RSS flat (within 1.2x; start: steps ${l.middle ? `${l.middle.fromCall}-${l.middle.toCall}` : '?'}, after ${mib(l.early?.rssBytes)} at steps ${l.early ? `${l.early.fromCall}-${l.early.toCall}` : '?'})`,
        mib(l.middle?.rssBytes),
        mib(l.late?.rssBytes),
        x(rssRatio),
        mark(Number.isFinite(rssRatio) ? rssRatio <= STEP_GOALS.longRatio : undefined),
      ]),
      row(['no history-size warning from the server', '', l.historySizeWarnings === null ? 'log not read' : `${l.historySizeWarnings.length} lines`, '', mark(l.historySizeWarnings === null ? undefined : l.historySizeWarnings.length === 0)]),
      row([`state view under ${VIEW_BYTES_GOAL / 1024} KB (bytes; early at call ${l.viewBytesEarlyAtCall ?? '?'})`, l.viewBytesEarly ?? 'n/a', l.viewBytesEnd ?? 'n/a', x(ratio(l.viewBytesEnd, l.viewBytesEarly)), mark(l.viewBytesEnd === undefined ? undefined : l.viewBytesEnd < VIEW_BYTES_GOAL)]),
      row(['`agent history` lists step 1', '', l.history ? `steps ${l.history.first} to ${l.history.last} (${l.history.steps}) in ${(l.history.ms / 1000).toFixed(1)} s` : 'n/a', '', mark(l.history ? l.history.first === 1 : undefined)]),
      '',
      `Worker RSS: peak sampled ${mib(l.peakSampledRssBytes)}, VmHWM ${mib(l.peakRssBytes)}; ${l.samples.length} samples.`,
      '',
    );
  }
  return out;
}

export const STEP_GOALS = { overheadRatio: 1.2, cpuRatio: 1.2, longRatio: 1.2, throughputShare: 0.85, peakRssBytes: 1024 ** 3, restartMs: 1_500 };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};

/** Issue 26's goals for each of this product's systems that ran beside `temporal-floor`, measured and marked met or not. */
export function issue26Goals(r: BenchResults): string[] {
  const floorSys = 'temporal-floor';
  const ours = [...new Set([...Object.keys(r.a), ...Object.keys(r.b), ...Object.keys(r.c), ...Object.keys(r.d)])].filter((l) => l.startsWith('ours:') && !l.endsWith('@stack'));
  if (!ours.length) return [];
  const mark = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? '**met**' : '**not met**');
  const x = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? 'n/a' : `${v.toFixed(2)}x`);
  const agent = (c: Record<string, number> | undefined) => c?.worker ?? c?.runner;
  const out = ['### The goals of issue 26', '', row(['goal', ...ours]), row(['---', ...ours.map(() => '---')])];
  const cells = (f: (label: string) => string) => ours.map(f);
  const floorA = r.a.floor;
  const tfA = r.a[floorSys];
  out.push(
    row([
      '(a) overhead p50 within 1.2x of temporal-floor\'s',
      ...cells((l) => {
        const a = r.a[l];
        if (!a || !tfA || !floorA) return mark(undefined);
        const ratio = (a.p50 - floorA.p50) / (tfA.p50 - floorA.p50);
        return `${ms(a.p50 - floorA.p50, 2)} against ${ms(tfA.p50 - floorA.p50, 2)} ms: ${x(ratio)}, ${mark(tfA.p50 > floorA.p50 && ratio <= STEP_GOALS.overheadRatio)}`;
      }),
    ]),
    row([
      '(a) agent process CPU a step within 1.2x of temporal-floor\'s',
      ...cells((l) => {
        const a = r.a[l];
        const ours1 = agent(a?.cpuPerStepMs);
        const theirs = agent(tfA?.cpuPerStepMs);
        if (ours1 === undefined || theirs === undefined) return mark(undefined);
        const byRound = (a.cpuPerStepMsByRound ?? []).map((c, i) => (agent(c) ?? NaN) / (agent(tfA.cpuPerStepMsByRound?.[i]) ?? NaN)).filter(Number.isFinite);
        const spread = byRound.length ? ` (rounds: median ${x(median(byRound))}, ${x(Math.min(...byRound))} to ${x(Math.max(...byRound))})` : '';
        return `${ms(ours1, 2)} against ${ms(theirs, 2)} ms: ${x(ours1 / theirs)}${spread}, ${mark(ours1 / theirs <= STEP_GOALS.cpuRatio)}`;
      }),
    ]),
    row([
      '(b) step 500 within 1.2x of step 10',
      ...cells((l) => {
        const b = r.b[l];
        const first = b?.at[0]?.stepMs;
        const last = b?.at.at(-1)?.stepMs;
        if (!b || !first || !last || b.completedSteps < b.steps) return mark(b ? false : undefined);
        const byRun = b.lastToFirstByRun && b.lastToFirstByRun.length > 1 ? ` (by run: ${b.lastToFirstByRun.map(x).join(', ')})` : '';
        return `${ms(last, 1)} against ${ms(first, 1)} ms: ${x(last / first)}${byRun}, ${mark(last / first <= STEP_GOALS.longRatio)}`;
      }),
    ]),
    row([
      '(c) throughput at least 85% of temporal-floor\'s',
      ...cells((l) => {
        const c = r.c[l];
        const tf = r.c[floorSys];
        if (!c || !tf) return mark(undefined);
        const share = c.throughput / tf.throughput;
        // Pass by pass, each system's batch against the floor's of the same pass.
        const passes = c.batches && tf.batches ? c.batches.map((b, i) => (tf.batches![i] ? percent(b.throughput / tf.batches![i].throughput) : undefined)).filter(Boolean) : [];
        const byPass = passes.length > 1 ? ` (by pass: ${passes.join(', ')})` : '';
        return `${c.throughput.toFixed(1)} against ${tf.throughput.toFixed(1)} runs/s: ${percent(share)}${byPass}, ${mark(c.completed === c.runs && share >= STEP_GOALS.throughputShare)}`;
      }),
    ]),
    row([
      '(c) peak RSS at most 1 GiB',
      ...cells((l) => {
        const c = r.c[l];
        return c ? `${(c.peakRssBytes / 2 ** 20).toFixed(0)} MiB, ${mark(c.peakRssBytes <= STEP_GOALS.peakRssBytes)}` : mark(undefined);
      }),
    ]),
    row([
      '(d) restart within 1.5 s: graceful / crash, to the next step',
      ...cells((l) => {
        const d = r.d[l];
        const g = d?.graceful?.spawnToNextStepMs;
        const c = d?.crash?.spawnToNextStepMs;
        if (g == null || c == null) return mark(undefined);
        return `${ms(g, 0)} / ${ms(c, 0)} ms: ${mark(g <= STEP_GOALS.restartMs && c <= STEP_GOALS.restartMs)}`;
      }),
    ]),
  );
  out.push('', '(f) has its own goals above. Overhead is a step\'s p50 less the plain loop\'s (`floor`) in the same run.', '');
  return out;
}

/** The goals of issue 26 for figure (f): no run fails for quota, at most 1% of requests 429, within 1.2x of the ideal. */
export const F_GOALS = { failedRuns: 0, rateLimitedShare: 0.01, idealRatio: 1.2 };

/** Figure (f)'s table, without and with the fleet's budget, and its goals for the budget marked met or not. */
export function figureFReport(f: FigureF): string[] {
  const out = [
    `### (f) ${f.runs} runs share one provider quota of ${f.tokensPerMinute.toLocaleString('en')} tokens a minute`,
    '',
    `Each run is one model call of about ${f.tokensPerRun} tokens (prompt and answer, as the provider counts them), so the batch needs ${(f.runs * f.tokensPerRun).toLocaleString('en')} tokens; the provider (the scripted model) enforces its limit as a bucket of a minute's tokens refilled continuously and answers 429 with retry-after above it. Ideal: a minute's tokens at once, then the rest at the limit's rate: ${ms(f.idealMs / 1000, 1)} s. The product runs as deployed: worker processes (\`src/bin/worker.ts\`) on a dev server; with the budget they share \`LLM_TOKENS_PER_MINUTE\` in Redis. A call's retry budget is ${f.retryBudget} provider failures.`,
    '',
    row(['budget', 'completed', 'not completed', 'wall s', 'x ideal', 'requests', '429s', '429 share', 'runs with a 429', 'most 429s a run']),
    row(['---', '---:', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
  ];
  for (const r of f.rows) {
    const failed = Object.entries(r.failed).map(([s, n]) => `${n} ${s}`).join(', ') || '0';
    out.push(row([r.budget ? 'fleet budget' : 'none', `${r.completed}/${r.runs}`, failed, ms(r.wallMs / 1000, 1), f.idealMs ? `${(r.wallMs / f.idealMs).toFixed(2)}x` : 'n/a', r.requests, r.rateLimited, percent(r.requests ? r.rateLimited / r.requests : 0), r.runsWith429, `${r.max429sPerRun} of ${f.retryBudget}`]));
  }
  const b = f.rows.find((r) => r.budget);
  if (b) {
    const mark = (ok: boolean) => (ok ? 'met' : 'not met');
    out.push(
      '',
      `Goals with the budget: 0 runs failed for quota: ${mark(b.completed === b.runs)}; at most 1% of requests 429: ${mark(b.requests > 0 && b.rateLimited / b.requests <= F_GOALS.rateLimitedShare)}; within 1.2x of the ideal: ${mark(f.idealMs > 0 && b.wallMs / f.idealMs <= F_GOALS.idealRatio)}.`,
    );
  }
  return out;
}

/** The goals of issue 24 for figure (e). */
export const E_GOALS = { oneP50: 50, oneP95: 150, manyP95: 250, idleMsPerS: 1, flatRatio: 1.25 };

/** Figure (e)'s table and its goals, each marked met or not. */
export function figureEReport(e: FigureE, o: Record<string, any>): string[] {
  const out = [`### (e) Live stream: token delay from the provider to SSE clients, and CPU (${o.eChunks ?? 60} chunks ${o.eGapMs ?? 100} ms apart a run)`, ''];
  out.push(
    'Delay: when a watcher read a token minus when the provider sent it, for tokens sent once every watcher of the run was attached. CPU: ms over the whole scenario (start, attach, stream, end) by process, from /proc; "a run" is everything but the gateway, per run, while the run streams to its attached watchers. Scenarios of one run are run 3 times (delays pooled, CPU the median).',
    '',
  );
  out.push(row(['system', 'runs x watchers', 'p50 ms', 'p95 ms', 'max ms', 'complete', 'CPU ms: worker / runner', 'gateway', 'server', 'broker', 'CPU ms a watcher', 'CPU ms a run']), row(['---', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']));
  for (const [label, sys] of Object.entries(e)) {
    if (sys.error) out.push(row([label, `error: ${sys.error.split('\n')[0]}`, '', '', '', '', '', '', '', '', '', '']));
    for (const x of sys.scenarios) {
      const c = x.cpuMs;
      out.push(
        row([label, `${x.runs} x ${x.watchersPerRun}`, ms(x.p50, 0), ms(x.p95, 0), ms(x.max, 0), `${x.complete}/${(x.repeat ?? 1) * x.runs * x.watchersPerRun}`, ms(c.worker ?? c.runner, 0), ms(c.gateway, 0), ms(c.server, 0), ms(c.redis, 0), ms(x.cpuPerWatcherMs, 1), ms(x.runCostMs, 0)]),
      );
    }
  }
  out.push('', row(['system', 'idle watchers', 'CPU ms a second per idle watcher', 'by process']), row(['---', '---:', '---:', '---']));
  for (const [label, sys] of Object.entries(e)) {
    if (sys.idle) out.push(row([label, sys.idle.watchers, ms(sys.idle.cpuMsPerSecondPerWatcher, 3), Object.entries(sys.idle.byProcess).map(([k, v]) => `${k} ${v.toFixed(3)}`).join(', ')]));
  }
  out.push('', 'Goals (issue 24):', '');
  for (const [label, sys] of Object.entries(e)) {
    if (label === 'langgraph' || sys.error) continue;
    const at = (runs: number, w: number) => sys.scenarios.find((x) => x.runs === runs && x.watchersPerRun === w);
    const one = at(1, 1);
    const hundred = at(1, 100);
    const mark = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'met' : 'NOT met');
    const flat = one && hundred ? hundred.runCostMs / one.runCostMs : undefined;
    out.push(
      `- ${label}: one watcher p50 <= ${E_GOALS.oneP50} ms and p95 <= ${E_GOALS.oneP95} ms: ${mark(one && one.p50 <= E_GOALS.oneP50 && one.p95 <= E_GOALS.oneP95)}` +
        `; 100 watchers p95 <= ${E_GOALS.manyP95} ms with every token and end: ${mark(hundred && hundred.p95 <= E_GOALS.manyP95 && hundred.complete === (hundred.repeat ?? 1) * 100)}` +
        `; idle watcher <= ${E_GOALS.idleMsPerS} ms CPU/s: ${mark(sys.idle && sys.idle.cpuMsPerSecondPerWatcher <= E_GOALS.idleMsPerS)}` +
        `; a run's cost flat in its watchers (1 x 100 over 1 x 1, without the gateway: ${flat?.toFixed(2) ?? 'n/a'}x, goal <= ${E_GOALS.flatRatio}x): ${mark(flat === undefined ? undefined : flat <= E_GOALS.flatRatio)}`,
    );
  }
  return out;
}

/** The goal of issue 52 for figure (i): a tenant's runs during another's flood take at most 1.2x their time alone. */
export const I_GOAL = 1.2;

export function figureIReport(g: FigureI): string[] {
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  // Older results have no second measure alone.
  const alone = g.aloneAfterMs === undefined ? g.aloneMs : (g.aloneMs + g.aloneAfterMs) / 2;
  const x = (ms: number, digits = 2) => `${(ms / alone).toFixed(digits)}x`;
  const b = g.breakdown;
  const ms = (v: number) => `${Math.round(v).toLocaleString('en')} ms`;
  // Older results have no sticky part.
  const row = (label: string, t: TimeBreakdown) => `| ${label} | ${ms(t.workflowQueueMs)} | ${t.stickyQueueMs === undefined ? 'n/a' : ms(t.stickyQueueMs)} | ${ms(t.activityQueueMs)} | ${ms(t.workflowTaskMs)} | ${ms(t.activityMs)} |`;
  return [
    `### (i) fair share: ${g.runs} runs of one tenant while another floods the budget with ${g.flood} runs (${g.tokensPerMinute.toLocaleString('en')} tokens a minute)`,
    '',
    '| the timed runs | time | against alone (the mean of before and after) |',
    '| --- | --- | --- |',
    `| alone, on the idle budget, before the flood | ${s(g.aloneMs)} | ${x(g.aloneMs)} |`,
    ...(g.aloneAfterMs === undefined ? [] : [`| alone again, after the flood | ${s(g.aloneAfterMs)} | ${x(g.aloneAfterMs)} |`]),
    `| their own tenant, during the flood | ${s(g.ownTenantMs)} | ${x(g.ownTenantMs)} |`,
    `| in the flooding tenant (behind its own 500) | ${s(g.sameTenantMs)} | ${x(g.sameTenantMs, 1)} |`,
    '',
    ...(b
      ? [
          'Where a timed run\'s time went (a run\'s mean, from its history; summed over its steps):',
          '',
          '| the timed runs | workflow tasks on the task queue | of which on the sticky queue | activity tasks on the task queue | workflow tasks in the worker | activities (the budget\'s wait, the call) |',
          '| --- | ---: | ---: | ---: | ---: | ---: |',
          row('alone, before', b.alone),
          row('their own tenant, during the flood', b.ownTenant),
          row('alone, after', b.aloneAfter),
          '',
        ]
      : []),
    `Flood prompts ${g.floodPromptChars.toLocaleString('en')} characters, timed runs ${g.promptChars.toLocaleString('en')}; the flood took ${s(g.floodMs)}; ${g.completed} of ${g.total} runs completed.`,
    `Goal: at most ${I_GOAL}x alone as their own tenant: ${g.ownTenantMs / alone <= I_GOAL ? 'met' : 'not met'}.`,
  ];
}

/** The goal of issue 54 for figure (g) on the dev server: what the product adds to the provider's first token, in ms. */
export const G_GOAL = { p50: 25, p95: 50 };

export function figureGReport(g: FigureG): string[] {
  const out = [`### (g) Time to the first token, ${g.server === 'dev' ? 'dev server' : 'the stack'}: from the send to the first token at a watcher`, ''];
  out.push('| provider | path | p50 | p95 | max | adds p50 | adds p95 | to the provider p50 | back p50 | starts |', '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [kind, p] of Object.entries(g.providers)) {
    if (p.error) out.push(`| ${kind} | failed: ${p.error.split('\n')[0]} | | | | | | | | |`);
    for (const [name, x] of Object.entries(p.paths)) {
      const added = p.added[name];
      out.push(`| ${kind} | ${name} | ${x.p50} | ${x.p95} | ${x.max} | ${added ? added.p50 : ''} | ${added ? added.p95 : ''} | ${x.toProvider?.p50 ?? ''} | ${x.toWatcher?.p50 ?? ''} | ${x.n}${x.errors.length ? ` (${x.errors.length} errors: ${x.errors[0]})` : ''} |`);
    }
  }
  const stub = g.providers.stub;
  const phased = Object.entries(stub?.paths ?? {}).filter(([, x]) => x.phases);
  if (phased.length) {
    out.push('', 'The product\'s way to the stub provider, p50 of each part, from the run\'s history:', '');
    out.push('| path | start recorded | first workflow task queued | first workflow task run | model activity queued | activity to the request |', '| --- | ---: | ---: | ---: | ---: | ---: |');
    for (const [name, x] of phased) {
      const p = x.phases!;
      out.push(`| ${name} | ${p.start.toFixed(0)} | ${p.firstTaskQueued.toFixed(0)} | ${p.firstTaskRun.toFixed(0)} | ${p.activityQueued.toFixed(0)} | ${p.request.toFixed(0)} |`);
    }
  }
  out.push('', `The stub answers its first chunk ${g.firstTokenMs} ms after a request. Times in ms.`);
  if (g.server === 'dev' && stub?.added.gateway) {
    const met = Object.entries(stub.added).filter(([k]) => k !== 'langgraph').every(([, a]) => a.p50 <= G_GOAL.p50 && a.p95 <= G_GOAL.p95);
    out.push(`Goal (dev server): the product adds at most ${G_GOAL.p50} ms at p50 and ${G_GOAL.p95} ms at p95: ${met ? 'met' : 'not met'}.`);
  }
  return out;
}

/** The goals of issue 54 for figure (h): the worker under 1 GB with every run parked; approval to the next request p95 (dev server). */
export const H_GOAL = { workerRssMb: 1_024, approvalP95Ms: 250 };

export function figureHReport(h: FigureH): string[] {
  const a = h.approvals;
  const rss = (x: FigureH['workerRssMb']) => `${x.idle} / ${x.parked} / ${x.peak} / ${x.afterApprovals}`;
  const out = [
    `### (h) Parked runs, ${h.server === 'dev' ? 'dev server' : 'the stack'}: ${h.runs.toLocaleString('en')} runs waiting for approval on one worker, then ${a.n.toLocaleString('en')} approved at random`,
    '',
    '| measure | value |',
    '| --- | --- |',
    `| parking them all | ${(h.parkedInMs / 1000).toFixed(0)} s (${h.endedWhileParking} ended instead) |`,
    `| worker RSS MB: idle / parked / peak / after the approvals | ${rss(h.workerRssMb)} |`,
    `| server RSS MB: idle / parked / peak / after the approvals | ${rss(h.serverRssMb)} |`,
    `| sticky cache: its bound, and the runs it held once all were parked | ${h.cacheSize} / ${h.cachedWhenParked} |`,
    `| approval to the next model request, ms: p50 / p95 / max | ${a.p50} / ${a.p95} / ${a.max} |`,
    `| the approve update alone, ms: p50 / p95 | ${Math.round(a.updateP50)} / ${Math.round(a.updateP95)} |`,
    `| workflow tasks out of the cache / in it, during the approvals | ${a.cacheMisses} / ${a.cacheHits}${a.fromEvicted ? ' (approvals among the runs parked before the cache\'s last)' : ' (the cache held every run)'} |`,
    `| approved runs completed | ${h.completed} of ${a.n}${a.failed ? ` (${a.failed} approvals failed: ${a.errors[0] ?? ''})` : ''} |`,
    '',
    `Load average when parked ${h.load.parked.map((x) => x.toFixed(1)).join(', ')}; at the end ${h.load.end.map((x) => x.toFixed(1)).join(', ')}.`,
  ];
  const workerMet = h.workerRssMb.peak < H_GOAL.workerRssMb;
  const approvalMet = a.p95 < H_GOAL.approvalP95Ms;
  out.push(`Goals: worker under ${H_GOAL.workerRssMb} MB: ${workerMet ? 'met' : 'not met'}; approval to the next request p95 under ${H_GOAL.approvalP95Ms} ms${h.server === 'dev' ? '' : ' (set for the dev server)'}: ${approvalMet ? 'met' : 'not met'}.`);
  return out;
}
