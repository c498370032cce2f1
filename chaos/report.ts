/** The figures of one chaos run: which must be zero, the greppable block, and the JSON written to chaos/results/. */
import type { EffectFigures } from './effects';
import type { HistoryFigures } from './histories';
import type { ChaosEvents } from './monkey';
import type { ResendFigures } from './resends';
import type { RunOutcome } from './runs';

export interface ChaosReport {
  mode: 'full' | 'short';
  seed: string;
  runs: number;
  concurrency: number;
  startedAt: string;
  wallTimeS: number;
  completedCorrect: number;
  completedWrong: Array<{ runId: string; answer: string | null | undefined }>;
  failed: Array<{ runId: string; reason: string }>;
  lostOrStuck: Array<{ runId: string; status: string }>;
  runTimeS: { median: number; p95: number; max: number };
  resends: ResendFigures;
  effects: EffectFigures;
  histories: HistoryFigures;
  workerKills: number;
  serverRestarts: number;
  /** Every crash: seconds after the start, what was killed, how long a server stayed down, model calls open. */
  timeline: Array<{ atS: number; kind: 'worker' | 'server'; downS?: number; openModelCalls: number }>;
  workerStarts: number;
  unplannedWorkerExits: number;
  unplannedServerExits: number;
  /** Why the run does not pass; empty when it does. */
  problems: string[];
  pass: boolean;
  /** Temp dir with the db, logs, ledger and effects file, when kept. */
  dir?: string;
}

export interface ReportInput {
  mode: 'full' | 'short';
  seed: string;
  concurrency: number;
  startedAt: number;
  outcomes: RunOutcome[];
  resends: ResendFigures;
  effects: EffectFigures;
  histories: HistoryFigures;
  events: ChaosEvents;
  minimum: { workerKills: number; serverRestarts: number };
}

export function buildReport(input: ReportInput): ChaosReport {
  const { outcomes, resends, effects, histories, events } = input;
  const completed = outcomes.filter((o) => o.status === 'completed');
  const durations = completed.map((o) => (o.durationMs ?? 0) / 1000).sort((a, b) => a - b);
  const workerKills = events.crashes.filter((c) => c.kind === 'worker').length;
  const serverRestarts = events.crashes.filter((c) => c.kind === 'server').length;
  const report: ChaosReport = {
    mode: input.mode,
    seed: input.seed,
    runs: outcomes.length,
    concurrency: input.concurrency,
    startedAt: new Date(input.startedAt).toISOString(),
    wallTimeS: round((Date.now() - input.startedAt) / 1000),
    completedCorrect: completed.filter((o) => o.correct).length,
    completedWrong: completed.filter((o) => !o.correct).map((o) => ({ runId: o.runId, answer: o.answer })),
    failed: outcomes.filter((o) => o.status === 'failed').map((o) => ({ runId: o.runId, reason: o.reason ?? '' })),
    lostOrStuck: outcomes.filter((o) => o.status === 'stuck' || o.status === 'not-started').map((o) => ({ runId: o.runId, status: o.status })),
    runTimeS: { median: percentile(durations, 0.5), p95: percentile(durations, 0.95), max: round(durations.at(-1) ?? 0) },
    resends,
    effects,
    histories,
    workerKills,
    serverRestarts,
    timeline: events.crashes.map((c, i) => ({
      atS: round((c.at - input.startedAt) / 1000),
      kind: c.kind,
      ...(c.upAt ? { downS: round((c.upAt - c.at) / 1000) } : {}),
      openModelCalls: resends.openAtCrash[i],
    })),
    workerStarts: events.workerStarts,
    unplannedWorkerExits: events.unplannedWorkerExits.length,
    unplannedServerExits: events.unplannedServerExits,
    problems: [],
    pass: false,
  };
  report.problems = problemsOf(report, input.minimum);
  report.pass = report.problems.length === 0;
  return report;
}

function problemsOf(r: ChaosReport, minimum: ReportInput['minimum']): string[] {
  const problems: string[] = [];
  const mustBeZero: Array<[string, number]> = [
    ['runs completed with a wrong answer', r.completedWrong.length],
    ['runs failed', r.failed.length],
    ['runs lost or stuck', r.lostOrStuck.length],
    ['model calls resent beyond in-flight', r.resends.resentBeyondInFlight],
    ['side effects done twice', r.effects.effectsDoneTwice],
    ['nondeterminism errors', r.histories.nondeterminismErrors],
    ['histories that could not be read', r.histories.historyReadErrors.length],
  ];
  for (const [what, n] of mustBeZero) if (n !== 0) problems.push(`${what}: ${n}`);
  if (r.workerKills < minimum.workerKills) problems.push(`only ${r.workerKills} worker kills (want at least ${minimum.workerKills})`);
  if (r.serverRestarts < minimum.serverRestarts) problems.push(`only ${r.serverRestarts} server restarts (want at least ${minimum.serverRestarts})`);
  return problems;
}

/** One `chaos.<name>: <value>` line per figure, in a fixed order, for grep and for CI logs. */
export function formatReport(r: ChaosReport): string {
  const lines: Array<[string, string | number]> = [
    ['mode', `${r.mode} seed=${r.seed} concurrency=${r.concurrency}`],
    ['completed_correct', `${r.completedCorrect}/${r.runs}`],
    ['completed_wrong', r.completedWrong.length],
    ['failed', r.failed.length],
    ['lost_or_stuck', r.lostOrStuck.length],
    ['model_requests', r.resends.modelRequests],
    ['resent', r.resends.resent],
    ['in_flight_at_crashes', r.resends.inFlightAtCrashes],
    ['resent_beyond_in_flight', r.resends.resentBeyondInFlight],
    ['effect_lines', r.effects.effectLines],
    ['effects_done_twice', r.effects.effectsDoneTwice],
    ['unknown_outcomes', r.effects.unknownOutcomes],
    ['completed_runs_without_effect', r.effects.completedRunsWithoutEffect],
    ['nondeterminism_errors', r.histories.nondeterminismErrors],
    ['workflow_task_failures', r.histories.workflowTaskFailures],
    ['workflow_task_timeouts', r.histories.workflowTaskTimeouts],
    ['activity_retries', r.histories.activityRetries],
    ['worker_kills', r.workerKills],
    ['server_restarts', r.serverRestarts],
    ['worker_exits_unplanned', r.unplannedWorkerExits],
    ['run_time_s', `median ${r.runTimeS.median} p95 ${r.runTimeS.p95} max ${r.runTimeS.max}`],
    ['wall_time_s', r.wallTimeS],
    ['result', r.pass ? 'PASS' : `FAIL (${r.problems.join('; ')})`],
  ];
  const details = [
    ...r.failed.map((f) => `  failed ${f.runId}: ${f.reason}`),
    ...r.completedWrong.map((w) => `  wrong answer ${w.runId}: ${JSON.stringify(w.answer)}`),
    ...r.lostOrStuck.map((s) => `  ${s.status} ${s.runId}`),
    ...r.resends.unexplained.map((k) => `  resent beyond in-flight ${k}`),
    ...r.effects.doneTwiceKeys.map((k) => `  effect done twice ${k}`),
    ...r.histories.nondeterminismRuns.map((id) => `  nondeterminism in ${id}`),
  ];
  return [...lines.map(([name, value]) => `chaos.${name}: ${value}`), ...details].join('\n');
}

const round = (n: number) => Math.round(n * 10) / 10;
const percentile = (sorted: number[], p: number) => (sorted.length ? round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]) : 0);
