/**
 * `npm run stack`: the production shape of the product as plain processes on one machine. PostgreSQL, the Temporal
 * Server (all services in one process, advanced visibility on PostgreSQL) configured by the server's own template
 * with the settings docker-compose.yml gives its `temporal` service, the search attributes, Redis for the live
 * stream, the scripted model unless LLM_* says otherwise, two workers sharing a workspace, a tool ledger and a blob
 * store as compose replicas do, the codec server, the gateway and the Temporal UI. With TLS (tls.ts) the frontend
 * serves it and every process connects through TEMPORAL_TLS_*. What runs is recorded in `<dir>/state.json`; `up`
 * starts only what is not running, `down` stops everything, PostgreSQL last, and keeps the data.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { DEFAULT_TASK_QUEUE } from '../../../src/common/constants';
import { DEMO_SCRIPT_NAME } from '../../../src/scripted-model';
import { buildWorkflowBundles } from '../../../src/worker/workflow-bundle';
import { ensureSearchAttributes, isPortOpen } from '../dev-server';
import { PROJECT_ROOT } from '../temporal-cli';
import { initPostgres, isPostgresReady, POSTGRES_PASSWORD, POSTGRES_USER, postgresBinDir, startPostgres, stopPostgres, type PostgresLayout, type PostgresStopMode } from './postgres';
import { isRunning, spawnDetached, stopProcess, waitUntil, type ProcessRecord } from './processes';
import { ensureTemporalServer, type TemporalServerPaths } from './temporal-server-build';
import { ensureTemporalUi } from './temporal-ui-build';
import { clientTlsEnv, ensureCertificates, serverTlsEnv, TLS_SERVER_NAME, tlsFiles, tlsModeFrom, type TlsFiles, type TlsMode } from './tls';
import { clientConnectionOptions, closeSafeInterceptors } from '../../../src/config/connection';
import { temporalSettings } from '../../../src/config';

/** Every port the stack listens on, all on 127.0.0.1. */
export interface StackPorts {
  postgres: number;
  /** The frontend's gRPC port: where clients, workers and the `agent` CLI connect. */
  frontend: number;
  frontendHttp: number;
  frontendMembership: number;
  history: number;
  historyMembership: number;
  matching: number;
  matchingMembership: number;
  /** The server's internal worker service (archival, system workflows), not an agent worker. */
  internalWorker: number;
  internalWorkerMembership: number;
  /** The scripted model, when the workers use it. */
  scriptedModel: number;
  /** Redis: the live-stream channel of the workers and the gateway (AGENT_STREAM_REDIS_URL). */
  redis: number;
  /** The HTTP gateway (`src/bin/gateway.ts`) and its web page at /ui. */
  gateway: number;
  /** The codec server, for the Temporal UI and the CLI's --codec-endpoint. */
  codecServer: number;
  /** The Temporal Web UI (the dev server's UI port). */
  ui: number;
}

/** The Temporal Server's own defaults (docker.yaml), with the frontend where the dev server has it. */
export const DEFAULT_PORTS: StackPorts = {
  postgres: 55432,
  frontend: 7233,
  frontendHttp: 7243,
  frontendMembership: 6933,
  history: 7234,
  historyMembership: 6934,
  matching: 7235,
  matchingMembership: 6935,
  internalWorker: 7239,
  internalWorkerMembership: 6939,
  scriptedModel: 8787,
  redis: 6379,
  gateway: 8080,
  codecServer: 8081,
  ui: 8233,
};

export interface StackOptions {
  /** Data, logs and state. @default <clone>/.stack */
  dir: string;
  ports: StackPorts;
  /** @default TEMPORAL_NAMESPACE or 'default' */
  namespace: string;
  /** @default TEMPORAL_TASK_QUEUE or 'agent-runs' */
  taskQueue: string;
  /** @default 2 */
  workers: number;
  /** The worker's entry point, relative to the clone; the production tier adds a tool to the real worker. @default src/bin/worker.ts */
  workerScript: string;
  /** More environment for the workers (LLM_*, AGENT_*), over this process's own. */
  workerEnv: NodeJS.ProcessEnv;
  /** TLS on the frontend (`tls`), with client certificates required (`mtls`). @default off */
  tls?: TlsMode;
  /** The codec server, the gateway and the Temporal UI; false: the cluster and its workers only. @default true */
  services?: boolean;
  log: (line: string) => void;
}

const READY_TIMEOUT_MS = { postgres: 60_000, temporal: 120_000, worker: 120_000 };
const STOP_GRACE_MS = { worker: 40_000, temporal: 20_000, other: 5_000 };
/** Stopped in this order by `down` (clients before what they use), then PostgreSQL. */
const STOP_ORDER = ['ui', 'gateway', 'codec-server', 'worker-*', 'scripted-model', 'temporal', 'redis'];
/** Compose's TEMPORAL_NAMESPACE_RETENTION default. */
const NAMESPACE_RETENTION = '72h';

/** The Temporal Server's ports: it stores its membership ports in a PostgreSQL smallint, so these stay below 32768. */
const SERVER_PORT_NAMES = ['frontend', 'frontendHttp', 'frontendMembership', 'history', 'historyMembership', 'matching', 'matchingMembership', 'internalWorker', 'internalWorkerMembership'] as const;
export const MAX_SERVER_PORT = 32_767;
const maxPort = (name: string) => ((SERVER_PORT_NAMES as readonly string[]).includes(name) ? MAX_SERVER_PORT : 65_535);

/** `DEFAULT_PORTS` moved by `offset` (STACK_PORT_OFFSET), so a second stack runs beside the first. */
export function offsetPorts(offset: number, base: StackPorts = DEFAULT_PORTS): StackPorts {
  const moved = Object.fromEntries(Object.entries(base).map(([name, port]) => [name, port + offset])) as unknown as StackPorts;
  const out = Object.entries(moved).filter(([name, port]) => port < 1 || port > maxPort(name));
  if (out.length) {
    throw new Error(
      `STACK_PORT_OFFSET=${offset} moves ${out.map(([name, port]) => `${name} to ${port}`).join(', ')}: ports must be within 1..65535, ` +
        `and the Temporal Server's below ${MAX_SERVER_PORT + 1} (it keeps membership ports in a smallint)`,
    );
  }
  return moved;
}

/**
 * Options from the environment: STACK_PORT_OFFSET adds a whole number to every default port (a second stack beside
 * the first), then TEMPORAL_PORT moves the frontend (as for `npm run server`) and STACK_POSTGRES_PORT PostgreSQL.
 */
export function stackOptionsFromEnv(env: NodeJS.ProcessEnv = process.env, args: string[] = []): StackOptions {
  const port = (name: string, fallback: number) => {
    const raw = env[name]?.trim();
    if (!raw) return fallback;
    const n = Number(raw);
    const max = name === 'TEMPORAL_PORT' ? MAX_SERVER_PORT : 65_535;
    if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${name} must be a port number up to ${max}${max === MAX_SERVER_PORT ? ' (the server keeps ports in a smallint)' : ''}, got "${raw}"`);
    return n;
  };
  const rawOffset = env.STACK_PORT_OFFSET?.trim();
  if (rawOffset && !/^-?\d+$/.test(rawOffset)) throw new Error(`STACK_PORT_OFFSET must be a whole number of ports to add to every default port, got "${rawOffset}"`);
  const base = offsetPorts(rawOffset ? Number(rawOffset) : 0);
  return {
    dir: path.join(PROJECT_ROOT, '.stack'),
    ports: { ...base, frontend: port('TEMPORAL_PORT', base.frontend), postgres: port('STACK_POSTGRES_PORT', base.postgres) },
    namespace: env.TEMPORAL_NAMESPACE?.trim() || 'default',
    taskQueue: env.TEMPORAL_TASK_QUEUE?.trim() || DEFAULT_TASK_QUEUE,
    workers: 2,
    workerScript: 'src/bin/worker.ts',
    workerEnv: {},
    tls: tlsModeFrom(args, env),
    log: (line) => console.log(line),
  };
}

/** What `state.json` holds: the options of the `up` that wrote it and the processes it started. */
export interface StackState {
  ports: StackPorts;
  namespace: string;
  taskQueue: string;
  /** Absent in states written before TLS: off. */
  tls?: TlsMode;
  processes: Record<string, ProcessRecord>;
}

function layout(dir: string, ports: StackPorts) {
  const logs = path.join(dir, 'logs');
  const postgres: PostgresLayout = {
    root: path.join(dir, 'postgres'),
    data: path.join(dir, 'postgres', 'data'),
    sockets: path.join(dir, 'postgres', 'run'),
    log: path.join(logs, 'postgres.log'),
    initLog: path.join(logs, 'initdb.log'),
    port: ports.postgres,
  };
  return {
    dir,
    logs,
    state: path.join(dir, 'state.json'),
    postgres,
    bundles: path.join(dir, 'workflow-bundles'),
    workspace: path.join(dir, 'workspace'),
    agentState: path.join(dir, 'agent'),
    redis: path.join(dir, 'redis'),
    secrets: path.join(dir, 'secrets.json'),
  };
}

export function readState(dir: string): StackState | undefined {
  try {
    return JSON.parse(readFileSync(path.join(dir, 'state.json'), 'utf8')) as StackState;
  } catch {
    return undefined;
  }
}

function writeState(dir: string, state: StackState): void {
  writeFileSync(path.join(dir, 'state.json'), `${JSON.stringify(state, null, 2)}\n`);
}

export interface StackUpResult {
  state: StackState;
  address: string;
  /** Names of the processes this call started (empty when everything already ran). */
  started: string[];
  timings: Record<string, number>;
}

/** Brings up whatever is not running, in order, and returns once every part answers. */
export async function stackUp(opts: StackOptions): Promise<StackUpResult> {
  const previous = readState(opts.dir);
  // A running stack keeps its ports: the state's, not the caller's, while anything of it runs.
  const running = previous && Object.values(previous.processes).some(isRunning);
  // States from before a port was added take that port from the options.
  const ports = running ? { ...opts.ports, ...previous.ports } : opts.ports;
  const tls = running ? (previous.tls ?? 'off') : (opts.tls ?? 'off');
  const l = layout(opts.dir, ports);
  mkdirSync(l.logs, { recursive: true });
  const state: StackState = { ports, namespace: opts.namespace, taskQueue: opts.taskQueue, tls, processes: running ? previous.processes : {} };
  const started: string[] = [];
  const timings: Record<string, number> = {};
  const timed = async <T>(name: string, fn: () => Promise<T> | T): Promise<T> => {
    const t0 = Date.now();
    try {
      return await fn();
    } finally {
      timings[name] = Date.now() - t0;
    }
  };
  const save = () => writeState(opts.dir, state);

  const serverPorts = [ports.frontend, ports.frontendHttp, ports.frontendMembership, ports.history, ports.historyMembership, ports.matching, ports.matchingMembership, ports.internalWorker, ports.internalWorkerMembership];
  const llmSet = ['LLM_BASE_URL', 'LLM_API_KEY'].some((k) => (opts.workerEnv[k] ?? process.env[k])?.trim());
  // Every port checked before anything starts, so a refusal leaves nothing half up.
  if (!isRunning(state.processes.postgres)) await refuseTakenPorts('PostgreSQL', [ports.postgres]);
  if (!isRunning(state.processes.temporal)) await refuseTakenPorts('the Temporal Server', serverPorts, ports.frontend);
  if (!llmSet && !isRunning(state.processes['scripted-model'])) await refuseTakenPorts('the scripted model', [ports.scriptedModel]);
  for (const [name, port] of [['redis', ports.redis], ['gateway', ports.gateway], ['codec-server', ports.codecServer], ['ui', ports.ui]] as const) {
    if (!isRunning(state.processes[name])) await refuseTakenPorts(`the stack's ${name}`, [port]);
  }
  const redisServer = redisServerPath();
  const tlsFilesOf = tls === 'off' ? undefined : ensureCertificates(opts.dir);

  const server = await timed('build', () => ensureTemporalServer({ log: opts.log }));
  const ui = await timed('ui-build', () => ensureTemporalUi({ log: opts.log }));
  const bin = postgresBinDir();

  // PostgreSQL.
  if (!isRunning(state.processes.postgres)) {
    await timed('postgres', async () => {
      initPostgres(l.postgres, bin);
      state.processes.postgres = startPostgres(l.postgres, bin);
      save();
      started.push('postgres');
      await waitUntil(`PostgreSQL on 127.0.0.1:${ports.postgres}`, READY_TIMEOUT_MS.postgres, () => isPostgresReady(l.postgres, bin), l.postgres.log);
    });
  }
  await timed('schema', () => setupSchema(server, ports.postgres, l.logs));

  // Temporal Server.
  const address = `127.0.0.1:${ports.frontend}`;
  const conn = stackConnectionOptions(opts.dir, address, tls);
  if (!isRunning(state.processes.temporal)) {
    await timed('temporal', async () => {
      const log = path.join(l.logs, 'temporal.log');
      const pid = spawnDetached(server.serverPath, ['--config-file', server.configTemplate, '--allow-no-auth', 'start'], {
        cwd: opts.dir,
        env: { ...temporalServerEnv(ports), ...(tlsFilesOf ? serverTlsEnv(tls, tlsFilesOf) : {}) },
        logFile: log,
      });
      state.processes.temporal = { pid, marker: 'temporal-server', log, ports: serverPorts, startedAt: new Date().toISOString() };
      save();
      started.push('temporal');
      await waitUntil(`the Temporal frontend on ${address}`, READY_TIMEOUT_MS.temporal, async () => {
        if (!isRunning(state.processes.temporal)) throw new Error(`the Temporal Server exited during startup; log: ${log}\n${tailOf(log)}`);
        return answers(conn);
      }, log);
    });
  }
  await timed('namespace', async () => {
    await ensureNamespace(conn, opts.namespace);
    // A new namespace reaches the server's namespace cache some seconds after it is stored (10 s refresh).
    await waitUntil(`namespace ${opts.namespace} to accept search attributes`, 60_000, () =>
      ensureSearchAttributes(address, opts.namespace, { deadline: Date.now() + 30_000, tls: conn.tls }).then(
        () => true,
        (err: unknown) => {
          if (/not found/i.test(String(err))) return false;
          throw err;
        },
      ),
    );
  });

  // Redis, which the workers publish run events to and the gateway reads them from.
  if (!isRunning(state.processes.redis)) {
    await timed('redis', async () => {
      state.processes.redis = startRedis(redisServer, l.redis, ports.redis, path.join(l.logs, 'redis.log'));
      save();
      started.push('redis');
      await waitUntil(`redis on 127.0.0.1:${ports.redis}`, 30_000, () => isPortOpen(ports.redis), state.processes.redis.log);
    });
  }
  const secrets = stackSecrets(l.secrets);

  // The model the workers call, then the workers.
  if (!llmSet && !isRunning(state.processes['scripted-model'])) {
    const log = path.join(l.logs, 'scripted-model.log');
    const pid = spawnDetached(process.execPath, ['--import', 'tsx', 'scripts/scripted-model.ts'], { cwd: PROJECT_ROOT, env: { ...process.env, PORT: String(ports.scriptedModel) }, logFile: log });
    state.processes['scripted-model'] = { pid, marker: 'scripted-model', log, ports: [ports.scriptedModel], startedAt: new Date().toISOString() };
    save();
    started.push('scripted-model');
    await waitUntil(`the scripted model on 127.0.0.1:${ports.scriptedModel}`, 60_000, () => isPortOpen(ports.scriptedModel), log);
  }
  const workerNames = Array.from({ length: opts.workers }, (_, i) => `worker-${i + 1}`);
  const toStart = workerNames.filter((name) => !isRunning(state.processes[name]));
  if (toStart.length > 0) {
    // Bundled once for all of them, from today's sources, instead of by each worker at boot.
    await timed('bundle', () => buildWorkflowBundles(l.bundles));
    await timed('workers', async () => {
      const env = stackWorkerEnv({ ...opts, tls }, ports, address, llmSet);
      env.AGENT_STREAM_REDIS_URL = `redis://127.0.0.1:${ports.redis}`;
      for (const name of toStart) {
        const log = path.join(l.logs, `${name}.log`);
        const pid = spawnDetached(process.execPath, ['--import', 'tsx', opts.workerScript], { cwd: PROJECT_ROOT, env, logFile: log });
        state.processes[name] = { pid, marker: opts.workerScript, log, ports: [], startedAt: new Date().toISOString() };
        started.push(name);
      }
      save();
      await Promise.all(toStart.map((name) => waitForPoller(conn, opts.namespace, opts.taskQueue, state.processes[name])));
    });
  }

  // The codec server, the gateway and the Temporal UI: what users open.
  const clientEnv = { ...stackWorkerEnv({ ...opts, tls }, ports, address), AGENT_STREAM_REDIS_URL: `redis://127.0.0.1:${ports.redis}` };
  const uiOrigins = [`http://127.0.0.1:${ports.ui}`, `http://localhost:${ports.ui}`];
  const services: Array<{ name: string; port: number; start: () => number; marker: string }> = [
    {
      name: 'codec-server',
      port: ports.codecServer,
      marker: 'src/bin/codec-server.ts',
      start: () => spawnDetached(process.execPath, ['--import', 'tsx', 'src/bin/codec-server.ts'], {
        cwd: PROJECT_ROOT,
        env: { ...clientEnv, CODEC_SERVER_PORT: String(ports.codecServer), CODEC_SERVER_HOST: '127.0.0.1', CODEC_SERVER_TOKEN: secrets.codecServerToken, CODEC_SERVER_CORS_ORIGINS: uiOrigins.join(',') },
        logFile: path.join(l.logs, 'codec-server.log'),
      }),
    },
    {
      name: 'gateway',
      port: ports.gateway,
      marker: 'src/bin/gateway.ts',
      start: () => spawnDetached(process.execPath, ['--import', 'tsx', 'src/bin/gateway.ts'], {
        cwd: PROJECT_ROOT,
        env: { ...clientEnv, GATEWAY_PORT: String(ports.gateway), GATEWAY_HOST: '127.0.0.1', GATEWAY_TOKEN: secrets.gatewayToken },
        logFile: path.join(l.logs, 'gateway.log'),
      }),
    },
    {
      name: 'ui',
      port: ports.ui,
      marker: 'temporal-ui-server',
      start: () => spawnDetached(ui.uiServerPath, ['--root', ui.root, '--config', 'config', '--env', 'docker', 'start'], {
        cwd: opts.dir,
        env: temporalUiEnv(ports, opts.namespace, tls, tlsFilesOf),
        logFile: path.join(l.logs, 'ui.log'),
      }),
    },
  ];
  // Without services (the bench's cluster: no agent workers, so the gateway's health would never pass): the server only.
  const toServe = opts.services === false ? [] : services.filter((s) => !isRunning(state.processes[s.name]));
  if (toServe.length > 0) {
    await timed('services', async () => {
      for (const s of toServe) {
        const log = path.join(l.logs, `${s.name}.log`);
        state.processes[s.name] = { pid: s.start(), marker: s.marker, log, ports: [s.port], startedAt: new Date().toISOString() };
        started.push(s.name);
      }
      save();
      await Promise.all(toServe.map((s) => waitUntil(`the ${s.name} on 127.0.0.1:${s.port}`, 60_000, () => {
        if (!isRunning(state.processes[s.name])) throw new Error(`the ${s.name} exited during startup; log: ${state.processes[s.name].log}\n${tailOf(state.processes[s.name].log)}`);
        return isHealthy(s.port, '/healthz');
      }, state.processes[s.name].log)));
    });
  }
  save();
  return { state, address, started, timings };
}

/** The environment of the stack's workers: its server, workspace, ledger, blob store and bundles, and the model. */
export function stackWorkerEnv(opts: Pick<StackOptions, 'dir' | 'namespace' | 'taskQueue' | 'workerEnv' | 'tls'>, ports: StackPorts, address: string, llmSet = true): NodeJS.ProcessEnv {
  const l = layout(opts.dir, ports);
  // Unset: the mode of the stack running in `dir` (a worker added beside it, as the production tier does).
  const tls = opts.tls ?? readState(opts.dir)?.tls ?? 'off';
  return {
    ...process.env,
    TEMPORAL_ADDRESS: address,
    ...(tls === 'off' ? {} : clientTlsEnv(tls, tlsFiles(opts.dir))),
    TEMPORAL_NAMESPACE: opts.namespace,
    TEMPORAL_TASK_QUEUE: opts.taskQueue,
    AGENT_WORKSPACE: l.workspace,
    AGENT_LEDGER: path.join(l.agentState, 'tool-ledger.sqlite'),
    AGENT_BLOB_DIR: path.join(l.agentState, 'blobs'),
    AGENT_WORKFLOW_BUNDLE_DIR: l.bundles,
    ...(llmSet ? {} : { LLM_BASE_URL: `http://127.0.0.1:${ports.scriptedModel}/v1`, LLM_API_KEY: 'scripted', LLM_MODEL: DEMO_SCRIPT_NAME }),
    ...opts.workerEnv,
  };
}

/** The environment compose gives its `temporal` service (docker-compose.yml), plus the ports of this stack. */
export function temporalServerEnv(ports: StackPorts): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '',
    DB: 'postgres12',
    DB_PORT: String(ports.postgres),
    // The template reads the visibility store's port from POSTGRES_PORT, not DB_PORT (compose's 5432 is its default).
    POSTGRES_PORT: String(ports.postgres),
    POSTGRES_SEEDS: '127.0.0.1',
    POSTGRES_USER,
    POSTGRES_PWD: POSTGRES_PASSWORD,
    BIND_ON_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    DYNAMIC_CONFIG_FILE_PATH: path.join(PROJECT_ROOT, 'deploy', 'temporal', 'dynamicconfig', 'docker.yaml'),
    FRONTEND_GRPC_PORT: String(ports.frontend),
    FRONTEND_HTTP_PORT: String(ports.frontendHttp),
    FRONTEND_MEMBERSHIP_PORT: String(ports.frontendMembership),
    HISTORY_GRPC_PORT: String(ports.history),
    HISTORY_MEMBERSHIP_PORT: String(ports.historyMembership),
    MATCHING_GRPC_PORT: String(ports.matching),
    MATCHING_MEMBERSHIP_PORT: String(ports.matchingMembership),
    WORKER_GRPC_PORT: String(ports.internalWorker),
    WORKER_MEMBERSHIP_PORT: String(ports.internalWorkerMembership),
  };
}

/** What deploy/temporal/setup-postgres.sh does in compose: both databases, at this server version's schema. */
function setupSchema(server: TemporalServerPaths, port: number, logs: string): void {
  const logFile = path.join(logs, 'schema.log');
  const out: string[] = [];
  const tool = (db: string, ...args: string[]) => {
    const argv = ['--plugin', 'postgres12', '--ep', '127.0.0.1', '-p', String(port), '-u', POSTGRES_USER, '--db', db, ...args];
    const result = spawnSync(server.sqlToolPath, argv, { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', SQL_PASSWORD: POSTGRES_PASSWORD } });
    out.push(`$ temporal-sql-tool ${argv.join(' ')}\n${result.stdout ?? ''}${result.stderr ?? ''}`);
    writeFileSync(logFile, out.join('\n'));
    if (result.status !== 0) throw new Error(`schema setup failed: temporal-sql-tool --db ${db} ${args.join(' ')} exited ${result.status}; log: ${logFile}`);
  };
  for (const [schema, db] of [['temporal', 'temporal'], ['visibility', 'temporal_visibility']]) {
    tool(db, 'create');
    tool(db, 'setup-schema', '-v', '0.0');
    tool(db, 'update-schema', '-d', path.join(server.postgresSchemaDir, schema, 'versioned'));
  }
}

/** A port of ours held by another process is refused with its name, before anything is started. */
async function refuseTakenPorts(what: string, ports: number[], frontend?: number): Promise<void> {
  for (const port of ports) {
    if (!(await isPortOpen(port))) continue;
    const hint = port === frontend ? ' (a dev server from `npm run server`, or another stack? stop it, or set TEMPORAL_PORT)' : '';
    throw new Error(`cannot start ${what}: port ${port} on 127.0.0.1 is already in use by another process${hint}`);
  }
}

async function answers(options: ConnectionOptions): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ ...options, connectTimeout: 1_000 });
    const conn = connection;
    await conn.withDeadline(Date.now() + 2_000, () => conn.workflowService.getSystemInfo({}));
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/** The namespace compose's temporal-setup creates; a cluster on SQL has none until one is registered. */
async function ensureNamespace(conn: ConnectionOptions, namespace: string): Promise<void> {
  const connection = await Connection.connect({ ...conn, connectTimeout: 5_000 });
  try {
    const described = () => connection.workflowService.describeNamespace({ namespace }).then(() => true, () => false);
    if (await described()) return;
    try {
      await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(NAMESPACE_RETENTION) });
    } catch (err) {
      if (!/already exists|AlreadyExists/i.test(String(err))) throw err;
    }
    await waitUntil(`namespace ${namespace} to be known`, 60_000, described);
  } finally {
    await connection.close();
  }
}

/** A worker is up when the server lists it among the pollers of its task queue. */
export async function waitForPoller(conn: ConnectionOptions, namespace: string, taskQueue: string, worker: ProcessRecord): Promise<void> {
  const identity = `${worker.pid}@${os.hostname()}`;
  const connection = await Connection.connect({ ...conn, connectTimeout: 5_000 });
  try {
    await waitUntil(`worker ${identity} to poll ${taskQueue}`, READY_TIMEOUT_MS.worker, async () => {
      if (!isRunning(worker)) throw new Error(`worker ${worker.pid} exited during startup; log: ${worker.log}\n${tailOf(worker.log)}`);
      const { pollers } = await connection.workflowService.describeTaskQueue({ namespace, taskQueue: { name: taskQueue }, taskQueueType: 1 });
      return (pollers ?? []).some((p) => p.identity === identity);
    }, worker.log);
  } finally {
    await connection.close();
  }
}

function tailOf(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-3_000);
  } catch {
    return '';
  }
}

/** Stops every process of the stack: workers first, PostgreSQL last. The data stays for the next `up`. */
export async function stackDown(dir: string, log: (line: string) => void = console.log): Promise<void> {
  const state = readState(dir);
  if (!state) {
    log(`nothing to stop: no stack state in ${dir}`);
    return;
  }
  const names = Object.keys(state.processes);
  const order = STOP_ORDER.flatMap((n) => (n === 'worker-*' ? names.filter((w) => w.startsWith('worker-')) : [n])).filter((n) => state.processes[n]);
  for (const name of order) {
    const grace = name.startsWith('worker-') ? STOP_GRACE_MS.worker : name === 'temporal' ? STOP_GRACE_MS.temporal : STOP_GRACE_MS.other;
    const outcome = await stopProcess(state.processes[name], grace);
    if (outcome !== 'gone') log(`${name}: ${outcome} (pid ${state.processes[name].pid})`);
    delete state.processes[name];
    writeState(dir, state);
  }
  const pg = layout(dir, state.ports).postgres;
  if (isRunning(state.processes.postgres)) {
    stopPostgres(pg, postgresBinDir(), 'fast');
    log(`postgres: stopped (pid ${state.processes.postgres!.pid})`);
  }
  delete state.processes.postgres;
  writeState(dir, state);
}

/** Stops PostgreSQL alone, in `mode`, leaving the rest running (for fault tests). */
export function stopStackPostgres(dir: string, mode: PostgresStopMode): void {
  const state = readState(dir);
  if (!state) throw new Error(`no stack state in ${dir}`);
  stopPostgres(layout(dir, state.ports).postgres, postgresBinDir(), mode);
}

export interface ComponentStatus {
  name: string;
  running: boolean;
  pid?: number;
  ports: number[];
  log?: string;
}

/** Each recorded process and whether it runs, plus whether the frontend answers. */
export async function stackStatus(dir: string): Promise<{ components: ComponentStatus[]; address?: string; tls: TlsMode; frontendAnswers: boolean }> {
  const state = readState(dir);
  if (!state) return { components: [], tls: 'off', frontendAnswers: false };
  const components = Object.entries(state.processes).map(([name, p]) => ({ name, running: isRunning(p), pid: p.pid, ports: p.ports, log: p.log }));
  const address = `127.0.0.1:${state.ports.frontend}`;
  return { components, address, tls: state.tls ?? 'off', frontendAnswers: await answers(stackConnectionOptions(dir, address, state.tls ?? 'off')) };
}

/** Removes the stack's directory: data, logs and state (only when nothing of it runs). */
export function removeStackData(dir: string): void {
  const state = readState(dir);
  if (state && Object.values(state.processes).some(isRunning)) throw new Error(`the stack in ${dir} is running: stop it first`);
  if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
}

/** How the stack's own clients connect: through the TEMPORAL_TLS_* settings its workers get (config.ts reads them). */
export function stackConnectionOptions(dir: string, address: string, tls: TlsMode): ConnectionOptions {
  if (tls === 'off') return { address, interceptors: closeSafeInterceptors() };
  return clientConnectionOptions(temporalSettings({ TEMPORAL_ADDRESS: address, ...clientTlsEnv(tls, tlsFiles(dir)) }));
}

/** Tokens of the gateway and the codec server, made once per stack and kept in `<dir>/secrets.json` (mode 600). */
export function stackSecrets(file: string): { gatewayToken: string; codecServerToken: string } {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { gatewayToken: string; codecServerToken: string };
  } catch {
    const secrets = { gatewayToken: randomBytes(24).toString('hex'), codecServerToken: randomBytes(24).toString('hex') };
    writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
    return secrets;
  }
}

function redisServerPath(): string {
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  if (!found) throw new Error('redis-server is not installed: the stack runs Redis for the live stream (apt-get install redis-server)');
  return found;
}

/** Redis on 127.0.0.1 with its data in `dir`, append-only, so the stream survives a restart as compose's volume does. */
function startRedis(bin: string, dir: string, port: number, log: string): ProcessRecord {
  mkdirSync(dir, { recursive: true });
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', '', '--daemonize', 'no'];
  const pid = spawnDetached(bin, args, { cwd: dir, env: { PATH: process.env.PATH ?? '' }, logFile: log });
  return { pid, marker: 'redis-server', log, ports: [port], startedAt: new Date().toISOString() };
}

/** The environment compose gives its `temporal-ui` service, plus the stack's ports, loopback and TLS. */
function temporalUiEnv(ports: StackPorts, namespace: string, tls: TlsMode, files: TlsFiles | undefined): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '',
    TEMPORAL_ADDRESS: `127.0.0.1:${ports.frontend}`,
    TEMPORAL_DEFAULT_NAMESPACE: namespace,
    TEMPORAL_UI_PORT: String(ports.ui),
    TEMPORAL_CORS_ORIGINS: `http://127.0.0.1:${ports.ui},http://localhost:${ports.ui}`,
    TEMPORAL_CODEC_ENDPOINT: `http://127.0.0.1:${ports.codecServer}`,
    TEMPORAL_CODEC_INCLUDE_CREDENTIALS: 'true',
    // The UI server's own names for its client TLS (config/docker.yaml of the module), not envconfig's.
    ...(tls !== 'off' && files
      ? { TEMPORAL_TLS_CA: files.caCert, TEMPORAL_TLS_SERVER_NAME: TLS_SERVER_NAME, TEMPORAL_TLS_ENABLE_HOST_VERIFICATION: 'true', ...(tls === 'mtls' ? { TEMPORAL_TLS_CERT: files.clientCert, TEMPORAL_TLS_KEY: files.clientKey } : {}) }
      : {}),
  };
}

/** GET `route` answers 200. */
async function isHealthy(port: number, route: string): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${route}`, { signal: AbortSignal.timeout(2_000) });
    return res.ok;
  } catch {
    return false;
  }
}
