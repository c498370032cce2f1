/**
 * The chaos harness, `npm run chaos -- [--runs N] [--concurrency C] [--duration-limit S] [--seed X] [--short] [--keep]`.
 * Runs agent runs on its own dev server, scripted model and worker process while it kill -9s the worker
 * and the server, then checks that every run completed with the right answer, that no model call was sent
 * again beyond those in flight at a crash, that no side effect was done twice and that no history shows
 * nondeterminism. Prints `chaos.*` lines, writes them as JSON to chaos/results/, exits 1 on any problem.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { ensureTemporalCli } from '../scripts/lib/temporal-cli';
import { agentDataConverter } from '../src/client';
import { codecSettings } from '../src/config';
import { startScriptedModel } from '../src/scripted-model';
import { effectFigures } from './effects';
import { historyFigures } from './histories';
import { ChaosMonkey } from './monkey';
import { chaosOptions, parseChaosArgs, type ChaosOptions } from './options';
import { freePort } from '../scripts/lib/free-port';
import { buildReport, formatReport, type ChaosReport } from './report';
import { RequestTracker, type TrackedRequest } from './requests';
import { resendFigures } from './resends';
import { seededRng } from './rng';
import { runPool, type RunOutcome } from './runs';
import { CHAOS_FILE, CHAOS_FILE_CONTENT, CHAOS_SCRIPT, chaosScript, promptFields } from './script';
import { ServerProcess } from './server-process';
import { WorkerProcess } from './worker-process';

const ROOT = path.resolve(__dirname, '..');
const noop = () => undefined;
const quietBundler = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };
const PROGRESS_EVERY_MS = 15_000;

export async function runChaos(partial: Partial<ChaosOptions> = {}): Promise<ChaosReport> {
  const options = chaosOptions(partial);
  const log = options.log;
  const startedAt = Date.now();
  const elapsed = () => `${((Date.now() - startedAt) / 1000).toFixed(1)}s`;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-chaos-'));
  const files = {
    db: path.join(dir, 'temporal.sqlite'),
    serverLog: path.join(dir, 'server.log'),
    workerLog: path.join(dir, 'worker.log'),
    ledger: path.join(dir, 'tool-ledger.sqlite'),
    effects: path.join(dir, 'effects.jsonl'),
    bundle: path.join(dir, 'workflow-bundle.js'),
    blobs: path.join(dir, 'blobs'),
    workspace: path.join(dir, 'workspace'),
  };
  mkdirSync(files.workspace);
  writeFileSync(path.join(files.workspace, CHAOS_FILE), CHAOS_FILE_CONTENT);
  log(`chaos: ${options.short ? 'short' : 'full'} form, ${options.runs} runs, ${options.concurrency} at a time, seed ${options.seed}, files in ${dir}`);

  const cleanup: Array<() => Promise<unknown> | void> = [];
  let report: ChaosReport | undefined;
  try {
    const server = new ServerProcess({ port: await freePort(), dbFile: files.db, logFile: files.serverLog, cliPath: await ensureTemporalCli() });
    cleanup.push(() => server.stop());
    await server.start();
    const model = await startScriptedModel();
    cleanup.push(() => model.close());
    model.register(CHAOS_SCRIPT, chaosScript);
    const tracker = new RequestTracker(model);
    cleanup.push(() => tracker.stop());
    const taskQueue = `chaos-${options.seed}`;
    const env = workerEnv(files, server.address, taskQueue, model.url);
    // The client decodes what the worker encodes (claim check, encryption if configured), and the bundle carries its converters.
    const dataConverter = agentDataConverter(codecSettings(env));
    const { payloadConverterPath, failureConverterPath } = dataConverter;
    const bundle = await bundleWorkflowCode({ workflowsPath: require.resolve('../src/workflows'), payloadConverterPath, failureConverterPath, logger: quietBundler });
    writeFileSync(files.bundle, bundle.code);
    const worker = new WorkerProcess(env, files.workerLog);
    cleanup.push(() => worker.kill9());
    const connection = await Connection.connect({ address: server.address });
    cleanup.push(() => connection.close());
    const client = new Client({ connection, dataConverter });
    const monkey = new ChaosMonkey({ worker, server, tracker, rng: seededRng(options.seed), options, elapsed });

    const minimumEvents = eventsForMinimum(options);
    const runIds = Array.from({ length: options.runs }, (_, i) => `chaos-${options.seed}-${String(i + 1).padStart(4, '0')}`);
    const outcomes: RunOutcome[] = [];
    const progress = setInterval(() => log(`[${elapsed()}] ${progressLine(outcomes, options.runs, monkey)}`), PROGRESS_EVERY_MS);
    monkey.start();
    try {
      await runPool({
        client,
        taskQueue,
        runIds,
        tokenOf: (runId) => createHash('sha256').update(runId).digest('hex').slice(0, 12),
        concurrency: options.concurrency,
        deadline: startedAt + options.durationLimitS * 1000,
        runTimeoutMs: options.durationLimitS * 1000,
        // Runs are released at a steady pace across the minimum chaos (and one event more), so kills find runs in
        // flight and the last run starts only once the minimum chaos has happened, however fast the machine is.
        released: (index) => monkey.progress() >= ((index + 1) * (minimumEvents + 1)) / options.runs,
        shouldGiveUp: () => monkey.fatal !== undefined,
        onOutcome: (o) => {
          outcomes.push(o);
          if (o.status !== 'completed' || !o.correct) log(`[${elapsed()}] ${o.runId} ${o.status}${o.reason ? `: ${o.reason}` : ''}`);
        },
      });
    } finally {
      clearInterval(progress);
      await monkey.stop();
    }
    log(`[${elapsed()}] chaos stopped: ${progressLine(outcomes, options.runs, monkey)}; reading histories`);
    await worker.kill9(); // the ledger is read next, and no run is left to serve
    const requests = tracker.all();
    writeFileSync(path.join(dir, 'model-requests.json'), JSON.stringify(requests.map(requestSummary), null, 1));
    writeFileSync(path.join(dir, 'chaos-events.json'), JSON.stringify(monkey.events, null, 1));
    const completed = outcomes.filter((o) => o.status === 'completed').map((o) => o.runId);
    const started = outcomes.filter((o) => o.status !== 'not-started').map((o) => o.runId);
    report = buildReport({
      mode: options.short ? 'short' : 'full',
      seed: options.seed,
      concurrency: options.concurrency,
      startedAt,
      outcomes: sortById(outcomes),
      resends: resendFigures(requests, monkey.events.crashes),
      effects: effectFigures(files.effects, files.ledger, completed),
      histories: await historyFigures(client, started),
      events: monkey.events,
      minimum: options.minimum,
    });
    if (!report.pass || options.keepDir) report.dir = dir;
    writeResults(options.resultsFile, report);
    return report;
  } finally {
    for (const step of cleanup.reverse()) await Promise.resolve(step()).catch(() => undefined);
    if (report && !report.dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** How many chaos events the schedule needs to reach the minimum worker kills and server restarts. */
function eventsForMinimum(options: ChaosOptions): number {
  const { workerKills, serverRestarts } = options.minimum;
  for (let events = 0; ; events++) {
    const restarts = options.serverRestartAt.filter((at) => at < events).length;
    if (events - restarts >= workerKills && restarts >= Math.min(serverRestarts, options.serverRestartAt.length)) return events;
  }
}

/** The worker's whole configuration: its own task queue, ledger and workspace in the temp dir. */
function workerEnv(files: Record<string, string>, address: string, taskQueue: string, modelUrl: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TASK_QUEUE: taskQueue,
    LLM_BASE_URL: modelUrl,
    LLM_API_KEY: 'scripted',
    LLM_MODEL: CHAOS_SCRIPT,
    AGENT_WORKSPACE: files.workspace,
    AGENT_LEDGER: files.ledger,
    AGENT_BLOB_DIR: files.blobs,
    CHAOS_EFFECTS_FILE: files.effects,
    CHAOS_WORKFLOW_BUNDLE: files.bundle,
  };
}

function writeResults(resultsFile: string, report: ChaosReport): void {
  const file = path.resolve(ROOT, resultsFile);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
}

function progressLine(outcomes: RunOutcome[], total: number, monkey: ChaosMonkey): string {
  const done = outcomes.filter((o) => o.status === 'completed').length;
  const crashes = monkey.events.crashes;
  const kills = crashes.filter((c) => c.kind === 'worker').length;
  return `completed ${done}/${total}, other outcomes ${outcomes.length - done}, worker kills ${kills}, server restarts ${crashes.length - kills}`;
}

/** What the figures use of a model request, kept in the temp dir for a closer look. */
const requestSummary = (r: TrackedRequest) => ({
  index: r.index,
  run: promptFields(r.body)?.runId,
  step: r.body?.messages?.length,
  receivedAt: r.receivedAt,
  completedAt: r.completedAt,
  closedAt: r.closedAt,
});

const sortById = (outcomes: RunOutcome[]) => [...outcomes].sort((a, b) => a.runId.localeCompare(b.runId));

async function main(): Promise<void> {
  // Exiting through process.exit runs the exit hooks that kill the worker and server processes.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
  const options = parseChaosArgs(process.argv.slice(2));
  const report = await runChaos(options);
  console.log(`\n${formatReport(report)}`);
  if (report.dir) console.log(`chaos.dir: ${report.dir}`);
  console.log(`chaos.results_file: ${options.resultsFile}`);
  process.exitCode = report.pass ? 0 : 1;
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
