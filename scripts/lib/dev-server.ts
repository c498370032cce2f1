import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { registerSearchAttributes, REQUIRED_SEARCH_ATTRIBUTES } from '../../src/config/search-attributes';
import { ensureTemporalCli, PROJECT_ROOT } from './temporal-cli';
import { closeSafeConnectionPlugin } from '../../src/config/connection';

const READY_TIMEOUT_MS = 60_000;

/** The local dev server's task queue read rates (per second; the server's default is 20 each). */
export const LOCAL_QUEUE_POLL_RATES = [
  'history.transferProcessorMaxPollRPS=1000',
  'history.timerProcessorMaxPollRPS=1000',
  'history.visibilityProcessorMaxPollRPS=1000',
];
/**
 * The soonest the dev server's timer queue fires a new timer, from its last read (Temporal's default is 1 s). An
 * activity retry is a timer, so the retry of an attempt a restarted worker hands back (`WorkerCrashed`, 1 ms backoff)
 * waited about a second after the crash whatever the worker did (BENCHMARKS.md, issue 26's sixth round).
 */
export const LOCAL_TIMER_SHIFT = 'history.timerProcessorMaxTimeShift="100ms"';
/**
 * Fair dispatch on the task queues: each fairness key (a run's tenant, set on its start) gets its share of the tasks,
 * instead of one queue in arrival order where a tenant's batch of 500 runs holds another's behind it (docs/quota.md,
 * "Fair share"). Off by default in Temporal Server 1.32; it implies the priority-aware matcher (on by default). One
 * partition per task queue (the default is 4): each partition keeps its own fair order, so with 4 a run of one tenant
 * started behind 80 of another's was polled after 60 of them in 2 tries of 6, with one after at most 1 (the polls of
 * test/fairness.test.ts); one partition was within the bench's noise (BENCHMARKS.md).
 */
export const LOCAL_FAIRNESS = ['matching.enableFairness=true', 'matching.numTaskqueueReadPartitions=1', 'matching.numTaskqueueWritePartitions=1'];
const POLL_INTERVAL_MS = 250;
const STOP_GRACE_MS = 10_000;
const LOG_TAIL_CHARS = 4_000;

export interface DevServerOptions {
  /** Frontend gRPC port. @default 7233 */
  port?: number;
  /** Web UI port, ignored when headless. @default 8233 */
  uiPort?: number;
  /** Disable the Web UI. @default false */
  headless?: boolean;
  /** SQLite file, relative to the project root. @default '.temporal/dev.sqlite' */
  dbFile?: string;
  /** Namespace to create and check. @default 'default' */
  namespace?: string;
  /** Server stdout and stderr go here (appended), relative to the project root. @default kept in memory */
  logFile?: string;
  /** Let the server outlive this process. @default false */
  detached?: boolean;
  /** Path of the temporal CLI. @default ensureTemporalCli() */
  cliPath?: string;
  /** Codec server the Web UI sends payloads to for decoding (`--ui-codec-endpoint`); ignored when headless. */
  uiCodecEndpoint?: string;
  /** More `start-dev` arguments after the defaults (e.g. `--sqlite-pragma`, `--dynamic-config-value`); a later pragma overrides. */
  extraArgs?: string[];
  /** More environment for the server process (Go runtime settings such as `GOGC`), over this process's own. */
  env?: Record<string, string>;
}

export interface DevServerHandle {
  /** `127.0.0.1:PORT`, ready for `Connection.connect`. */
  address: string;
  uiUrl?: string;
  pid: number;
  /** Resolves with the exit code (-1 when killed by a signal) once the server process ends, for whatever reason. */
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev` and resolves once the frontend answers and the search attributes are visible.
 * A server that exits during startup is started once more: the dev server picks free ports for its internal
 * services itself, and on a busy machine one of them can be taken before it binds it (seen once in CI as a panic
 * during startup, never reproduced in 8 starts in a row).
 */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServerHandle> {
  try {
    return await startDevServerOnce(opts);
  } catch (err) {
    if (!(err instanceof ExitedEarly)) throw err;
    console.warn(`${err.message.split('\n')[0]}; starting it once more`);
    return startDevServerOnce(opts);
  }
}

class ExitedEarly extends Error {}

async function startDevServerOnce(opts: DevServerOptions): Promise<DevServerHandle> {
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? 8233;
  const namespace = opts.namespace ?? 'default';
  const dbFile = path.resolve(PROJECT_ROOT, opts.dbFile ?? '.temporal/dev.sqlite');
  const logFile = opts.logFile ? path.resolve(PROJECT_ROOT, opts.logFile) : undefined;
  const address = `127.0.0.1:${port}`;
  const cli = opts.cliPath ?? (await ensureTemporalCli());

  // Otherwise our readiness probe could be answered by the other process and we would return a handle to it.
  for (const p of opts.headless ? [port] : [port, uiPort]) {
    if (await isPortOpen(p)) throw new Error(`Cannot start the Temporal dev server: port ${p} on 127.0.0.1 is already in use`);
  }

  mkdirSync(path.dirname(dbFile), { recursive: true });
  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(port),
    ...(opts.headless ? ['--headless'] : ['--ui-port', String(uiPort)]),
    ...(opts.uiCodecEndpoint && !opts.headless ? ['--ui-codec-endpoint', opts.uiCodecEndpoint] : []),
    '--db-filename', dbFile,
    // WAL lets the CLI and the UI read while the server writes; normal sync is safe with WAL and much faster.
    '--sqlite-pragma', 'journal_mode=wal',
    '--sqlite-pragma', 'synchronous=normal',
    // Only applied when the db file is new; ensureSearchAttributes covers an existing db.
    ...Object.entries(REQUIRED_SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
    ...(namespace === 'default' ? [] : ['--namespace', namespace]),
    '--log-level', 'warn',
    // The dev server has one history shard, and each of its task queues reads new tasks at most 20 times a second by
    // default: a run whose steps follow one another then waits up to 50 ms a step for its workflow task to be
    // dispatched, from about its 40th step on (BENCHMARKS.md). A production cluster spreads runs over many shards.
    ...[...LOCAL_QUEUE_POLL_RATES, LOCAL_TIMER_SHIFT, ...LOCAL_FAIRNESS].flatMap((setting) => ['--dynamic-config-value', setting]),
    ...(opts.extraArgs ?? []),
  ];

  const { child, logTail } = spawnServer(cli, args, logFile, opts.detached ?? false, opts.env);
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code, signal) => {
      exitCode = code ?? (signal ? -1 : null);
      resolve(exitCode);
    });
  });
  // A non-detached server must not outlive a crashed parent, or it keeps the port busy for the next run.
  const killOnExit = () => child.kill('SIGKILL');
  if (!opts.detached) process.on('exit', killOnExit);

  const stop = async (): Promise<void> => {
    process.off('exit', killOnExit);
    if (exitCode !== undefined) return;
    child.kill('SIGTERM');
    const killTimer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(killTimer);
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  let early = false;
  try {
    await waitUntil('the frontend to answer', deadline, async () => {
      if (exitCode !== undefined) {
        early = true;
        throw new Error(`server exited early (code ${exitCode})`);
      }
      return isServerUp(address, namespace);
    });
    await ensureSearchAttributes(address, namespace, { deadline });
  } catch (err) {
    await stop();
    const reason = err instanceof Error ? err.message : String(err);
    const message = `Temporal dev server on ${address} did not become ready: ${reason}\n--- server log ---\n${logTail()}`;
    throw early ? new ExitedEarly(message) : new Error(message);
  }

  return {
    address,
    uiUrl: opts.headless ? undefined : `http://127.0.0.1:${uiPort}`,
    pid: child.pid!,
    exited,
    stop,
  };
}

/** True when a Temporal frontend at `address` answers DescribeNamespace within about a second. */
export async function isServerUp(address: string, namespace = 'default'): Promise<boolean> {
  // The TCP probe fails at once on a closed port; a gRPC connect would wait out its whole timeout.
  const match = /^\[?(.*?)\]?:(\d+)$/.exec(address);
  if (match && !(await isPortOpen(Number(match[2]), match[1]))) return false;
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 1_000, plugins: [closeSafeConnectionPlugin] });
    const conn = connection;
    await conn.withDeadline(Date.now() + 1_000, () => conn.workflowService.describeNamespace({ namespace }));
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/**
 * Where the Web UI of the server at `address` is: `TEMPORAL_UI_URL`, else the UI of a server this process started,
 * else `TEMPORAL_UI_PORT` (what `npm run server` and docker compose read), else the port `start-dev` gives it by
 * default (the frontend's + 1000) if something answers there. `undefined` when none of these finds it.
 */
export async function temporalUiUrl(address: string, env: NodeJS.ProcessEnv = process.env, started?: DevServerHandle): Promise<string | undefined> {
  if (env.TEMPORAL_UI_URL?.trim()) return env.TEMPORAL_UI_URL.trim().replace(/\/+$/, '');
  if (started?.uiUrl) return started.uiUrl;
  const match = /^\[?(.*?)\]?:(\d+)$/.exec(address);
  if (!match) return undefined;
  const host = match[1] === '0.0.0.0' ? '127.0.0.1' : match[1];
  if (env.TEMPORAL_UI_PORT?.trim()) return `http://${host}:${env.TEMPORAL_UI_PORT.trim()}`;
  const uiPort = Number(match[2]) + 1000;
  return (await isPortOpen(uiPort, host)) ? `http://${host}:${uiPort}` : undefined;
}

/**
 * Registers the project's search attributes on `namespace` and waits until they are listed.
 * Needed on every start because `start-dev --search-attribute` is skipped when the db file already exists.
 * Uses the operator gRPC API rather than the CLI so TEMPORAL_* env vars and CLI profiles cannot redirect it.
 */
export async function ensureSearchAttributes(
  address: string,
  namespace = 'default',
  opts: { deadline?: number; tls?: ConnectionOptions['tls'] } = {},
): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: 5_000, ...(opts.tls != null ? { tls: opts.tls } : {}), plugins: [closeSafeConnectionPlugin] });
  try {
    await registerSearchAttributes(connection.operatorService, namespace, opts);
  } finally {
    await connection.close();
  }
}

function spawnServer(
  cli: string,
  args: string[],
  logFile: string | undefined,
  detached: boolean,
  extraEnv: Record<string, string> = {},
): { child: ChildProcess; logTail: () => string } {
  const env = { ...process.env, ...extraEnv };
  if (logFile) {
    mkdirSync(path.dirname(logFile), { recursive: true });
    const fd = openSync(logFile, 'a');
    const child = spawn(cli, args, { stdio: ['ignore', fd, fd], detached, env });
    closeSync(fd); // The child holds its own copy.
    if (detached) child.unref();
    return { child, logTail: () => excerpt(readFileSync(logFile, 'utf8')) };
  }
  if (detached) {
    // Pipes would tie the server to this process, so without a log file its output is dropped.
    const child = spawn(cli, args, { stdio: 'ignore', detached, env });
    child.unref();
    return { child, logTail: () => '(no log file given)' };
  }
  let log = '';
  const child = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const keep = (chunk: Buffer) => {
    // Enough to hold a whole panic, whose start says why (the rest is a stack trace of the server's startup).
    log = (log + chunk.toString('utf8')).slice(-64 * LOG_TAIL_CHARS);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, logTail: () => excerpt(log) };
}

/** The log's last lines, and the first lines of a panic when there is one. */
function excerpt(log: string): string {
  const panic = log.search(/^panic:|^fatal error:/m);
  const tail = log.slice(-LOG_TAIL_CHARS);
  if (panic < 0 || panic >= log.length - LOG_TAIL_CHARS) return tail;
  return `${log.slice(panic, panic + 1_500)}\n[...]\n${tail}`;
}

async function waitUntil(what: string, deadline: number, check: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (await check()) return;
    if (Date.now() >= deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(POLL_INTERVAL_MS);
  }
}

/** Whether something accepts TCP connections on `host:port` (a connect within a second). */
export function isPortOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 1_000 });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}
