/**
 * The agent worker as a library: `createAgentWorker` polls the `agent-runs` task queue for workflow and activity tasks.
 * Configured by one options object over the environment (src/config). With no LLM_API_KEY and no LLM_BASE_URL it serves
 * the project's scripted model in-process. The process is `src/bin/worker.ts` (`npm run worker`).
 */
import os from 'node:os';
import path from 'node:path';
import { NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import OpenAI from 'openai';
import { Providers, type ProviderConfig } from '../activities/providers';
import { createActivities, ModelCallsInFlight, readableErrorBodies, withoutRedirects, SqliteToolLedger, type ActivityDeps, type AgentDefinition, type Critic, type Tool, type ToolPolicy } from '../activities';
import { InflightActivities, type RecoveryReport } from '../activities/inflight';
import { heartbeatThrottleMs } from '../activities/model';
import type { McpServerInfo, McpTools } from '../activities/tools/mcp';
import { createConversationStore, createDataConverter, ENCRYPTED_FAILURE_CONVERTER_PATH, FsBlobStore, startRetentionSweeps } from '../codec';
import { streamSettings, usesScriptedModel, workerConfig, type CodecSettings, type McpServersSource, type MemorySettings, type TemporalSettings, type VersioningSettings, type WorkerConfig } from '../config';
import { nativeConnectionOptions, tlsFailureReason } from '../config/connection';
import { configuredTracing, tracingWorkerOptions, type Tracing } from '../observability/tracing';
import { DEMO_SCRIPT_NAME, startScriptedModel, type ScriptedModel } from '../scripted-model';
import { assertSearchAttributes } from '../config/search-attributes';
import { discoveredGateway, gatewayRuntimeDir, type GatewayAddress, type ServedRuns } from '../stream/discovery';
import { helloRefusal, httpTarget, liveStream, type LiveStream, type WorkerHello } from '../stream/publisher';
import type * as RedisModule from '../stream/redis';
import type { RedisChannel } from '../stream/redis';
import { streamSinks } from '../stream/sinks';
import type { RunHooks } from '../stream/hooks';
import { httpStopRelay, type StopRelay } from '../stream/stops';
import type * as RedisStopsModule from '../stream/redis-stops';
import type { ProviderBudget } from '../quota';
import type { RedisBudget } from '../quota/redis-budget';
import type { RedisKeyCooldowns } from '../quota/redis-cooldowns';
import { bundleAgentWorkflows, workflowCode } from './workflow-bundle';
import { backgroundTaskQueue } from '../common/fairness';
import { openMemoryStore, type MemoryStore } from '../memory';

/** Used when neither the run nor `LLM_MODEL` names a model. */
export const DEFAULT_MODEL = 'gpt-4o-mini';

/** Options every agent worker needs; callers add connection, task queue and workflow code. */
export function agentWorkerOptions(
  deps: ActivityDeps,
): Pick<
  WorkerOptions,
  | 'activities'
  | 'maxHeartbeatThrottleInterval'
  | 'maxConcurrentActivityTaskExecutions'
  | 'maxConcurrentWorkflowTaskExecutions'
  | 'maxConcurrentLocalActivityExecutions'
  | 'workflowTaskPollerBehavior'
  | 'activityTaskPollerBehavior'
  | 'sinks'
> {
  // One for the activities and the sink both: a run's workflow task stops the model call it cancels when it runs here.
  const callsInFlight = deps.callsInFlight ?? new ModelCallsInFlight();
  return {
    activities: createActivities({ ...deps, callsInFlight }),
    sinks: streamSinks(deps.stream, callsInFlight, deps.hooks),
    // Cancellation reaches an activity only in a heartbeat's reply: every beat of a model call must reach the server.
    maxHeartbeatThrottleInterval: heartbeatThrottleMs(deps.modelHeartbeatMs, deps.degradedHeartbeatMs),
    // A model call waits on the network, not the CPU: the SDK's 100 slots would cap a worker at 100 calls in flight
    // whatever its CPU.
    maxConcurrentActivityTaskExecutions: 1_000,
    // Workflow tasks need the worker's one workflow thread: those beyond it queue inside the worker, in arrival order,
    // where the task queue's fair order by tenant no longer holds (WORKFLOW_TASK_SLOTS).
    maxConcurrentWorkflowTaskExecutions: WORKFLOW_TASK_SLOTS,
    maxConcurrentLocalActivityExecutions: 1_000,
    workflowTaskPollerBehavior: { type: 'autoscaling', minimum: 2, maximum: 100, initial: 10 },
    activityTaskPollerBehavior: { type: 'autoscaling', minimum: 2, maximum: 100, initial: 10 },
  };
}

/**
 * Workflow tasks a worker holds at once: the SDK's 40 (`AGENT_WORKFLOW_TASK_SLOTS` sets another). Fewer keep a
 * backlog on the server's task queue, in its priority and fair order, instead of inside a busy worker in arrival order,
 * but a burst of 1,000 runs took 1.14x as long with 8; with the background on its own queue (BACKGROUND_WORKFLOW_TASK_SLOTS),
 * another tenant's runs during one tenant's flood took 1.6x to 2.2x their time alone with 40, 1.6x with 8
 * (BENCHMARKS.md, figures (i) and (c)).
 */
export const WORKFLOW_TASK_SLOTS = 40;

/**
 * Workflow tasks of background runs (`priority` 8 and 9, a tenant past its burst) a worker holds at once, on their own
 * task queue (`backgroundTaskQueue`): a batch's tasks wait on the server instead of in front of another tenant's in
 * the worker (BENCHMARKS.md, figure (i)). `AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS` sets another; 0 polls none.
 */
export const BACKGROUND_WORKFLOW_TASK_SLOTS = 2;

/** Background runs a worker keeps in memory between their workflow tasks at most (about 1.2 MB each): fewer than its own runs. */
export const BACKGROUND_CACHED_RUNS = 250;

/** A graceful stop (SIGTERM, a deploy) lets the model calls in flight finish this long before cancelling them. */
export const SHUTDOWN_GRACE_TIME = '30 seconds';

export function openAIClient(llm: { baseURL: string; apiKey?: string }): OpenAI {
  // Temporal owns retries (classified by error kind); the client must not retry behind its back. readableErrorBodies:
  // error bodies the client cannot read (Gemini's root array, vLLM 0.4's top-level message) are classified all the same.
  // withoutRedirects: a long run's request body is sent without the copy that following a redirect needs.
  return new OpenAI({ baseURL: llm.baseURL, apiKey: llm.apiKey ?? 'not-needed', maxRetries: 0, timeout: 10 * 60_000, fetch: readableErrorBodies(withoutRedirects()) });
}

export interface AgentWorker {
  worker: Worker;
  /**
   * The worker of the background task queue (`backgroundTaskQueue`), created by `run()` once `worker` polls; absent
   * until then, and with `backgroundTaskSlots` 0.
   */
  backgroundWorker?: Worker;
  /** Set when the worker serves the scripted model because no real endpoint is configured. */
  scriptedModelUrl?: string;
  model: string;
  /** MCP servers connected at start (AGENT_MCP_SERVERS or AGENT_MCP_CONFIG), with the registry names of their tools. */
  mcpServers: McpServerInfo[];
  /** The settings the worker runs with: the options over the environment. */
  config: WorkerConfig;
  /**
   * What the worker found at start of the activities a crashed worker process on this host left in flight (recorded
   * beside the tool ledger), and handed back to the server for an immediate retry instead of their heartbeat timeout.
   */
  recovered: RecoveryReport;
  /** Runs until `shutdown()` (or SIGINT, SIGTERM), then closes the connection it opened, the scripted model and the MCP clients. */
  run(): Promise<void>;
  /** Starts a graceful shutdown; does nothing once the worker is stopping. */
  shutdown(): void;
}

/**
/** Which model the worker calls; every field not given comes from the environment (LLM_*). */
export interface ModelOptions {
  /** An OpenAI-compatible endpoint. Without it and without `apiKey`, the worker serves the offline scripted model. @default LLM_BASE_URL */
  baseURL?: string;
  /** @default LLM_API_KEY */
  apiKey?: string;
  /** Several keys of the default provider, tried in turn when one is refused or out of quota. @default LLM_API_KEY's comma-separated keys */
  apiKeys?: string[];
  /** Named providers a run reaches with `provider/model`, each with its base URL and keys. @default LLM_PROVIDERS */
  providers?: Record<string, ProviderConfig>;
  /** The model of runs that name none. @default LLM_MODEL, else `gpt-4o-mini` (the scripted model: `scripted-demo`) */
  name?: string;
  /** The context window of the models this worker calls. @default LLM_CONTEXT_WINDOW_TOKENS, else a table of known models */
  contextWindowTokens?: number;
}

/** Where Temporal is: the fields not given come from the environment (TEMPORAL_*, temporal.toml). */
export type ConnectionSettings = Partial<Pick<TemporalSettings, 'address' | 'apiKey' | 'tls' | 'metadata'>>;

/**
 * Options of `createAgentWorker`. Everything is optional: what is not given comes from `config`, else from the
 * environment (`env`, read by `workerConfig()` in src/config), so `createAgentWorker()` is the `npm run worker` process.
 */
export interface AgentWorkerOptions {
  /** Your tools (`defineTool`), beside the built-in file tools and the MCP servers' tools. */
  tools?: Tool[];
  /** Named agents (`defineAgent`): a run may name one (`agent`) instead of repeating its instructions and tools. */
  agents?: AgentDefinition[];
  /** Decides on each tool call before it runs: allow, deny, approval, or rewritten arguments (docs/tool-policy.md). */
  toolPolicy?: ToolPolicy;
  /**
   * Critics by name that a run chooses with `critique: { custom: 'name' }`: each is given the model critic's request
   * and answers its decision (`Critic`). A run naming one this worker lacks fails at its start, naming those it has.
   */
  critics?: Record<string, Critic>;
  /** Lifecycle hooks on every run: `onTransition` (each state change), `onRunEnd` (once); their failures never fail a run. */
  hooks?: RunHooks;
  /** The environment settings are read from. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Every setting at once, as `workerConfig()` reads them; the options below override it. @default workerConfig(env) */
  config?: WorkerConfig;
  /** An open `NativeConnection` (yours to close), or where to connect. @default TEMPORAL_ADDRESS and its TLS, API key */
  connection?: NativeConnection | ConnectionSettings;
  /** @default TEMPORAL_NAMESPACE, else `default` */
  namespace?: string;
  /** Clients must start runs on the same task queue. @default TEMPORAL_TASK_QUEUE, else `agent-runs` */
  taskQueue?: string;
  /**
   * Workflow tasks of background runs held at once, polled on `backgroundTaskQueue(taskQueue)` by a second `Worker`;
   * 0 polls none (clients then start those runs on `taskQueue`). @default AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS, else 2
   */
  backgroundTaskSlots?: number;
  /** The model endpoint, or just the default model's name. */
  model?: ModelOptions | string;
  /** The directory the built-in file tools are confined to. @default AGENT_WORKSPACE, else ./workspace */
  workspace?: string;
  /** The durable ledger of side-effecting tool calls (SQLite). @default AGENT_LEDGER, else ./.agent/tool-ledger.sqlite */
  ledgerFile?: string;
  /**
   * Where the `remember` and `recall` tools keep memories across runs (docs/memory.md): a store of yours (yours to
   * close), or the settings of one to open. @default AGENT_MEMORY, else the SQLite file ./.agent/memory.sqlite
   */
  memory?: MemoryStore | MemorySettings;
  /** Encryption and claim check; clients must use the same (`agentDataConverter(codecs)`). @default `codecSettings(env)` */
  codecs?: CodecSettings;
  /** Prebuilt workflow bundles (`agent-build-workflows DIR`, `npm run build:workflows`); unset, the worker bundles its workflow code at boot. @default AGENT_WORKFLOW_BUNDLE_DIR */
  workflowBundleDir?: string;
  /** Where runs' live streams go; replaces AGENT_STREAM_REDIS_URL and AGENT_STREAM_URL. */
  stream?: LiveStream;
  /**
   * How a stop of a model call reaches the worker that holds it when that is another worker (stream/stops.ts).
   * @default the configured stream's (Redis pub/sub, or the gateway's hub); none when `stream` is given
   */
  stopRelay?: StopRelay;
  /**
   * The fleet's provider budget every model call, critic and compaction reserves from; replaces the one the settings
   * ask for (LLM_TOKENS_PER_MINUTE, LLM_REQUESTS_PER_MINUTE, LLM_MAX_CONCURRENT_REQUESTS with AGENT_QUOTA_REDIS_URL).
   */
  budget?: ProviderBudget;
  /** Replaces the tracing the config asks for (AGENT_TRACING), and stays the caller's to shut down. */
  tracing?: Tracing;
  /**
   * Worker Deployment Versioning: this worker is version `buildId` of `deploymentName`, and runs are PINNED to the
   * version they started on unless `defaultBehavior` says otherwise. `false` turns off what the environment sets.
   * @default AGENT_DEPLOYMENT_NAME, AGENT_BUILD_ID, AGENT_VERSIONING_BEHAVIOR; unset, unversioned
   */
  versioning?: (Omit<VersioningSettings, 'defaultBehavior'> & Partial<Pick<VersioningSettings, 'defaultBehavior'>>) | false;
}

const isNativeConnection = (c: AgentWorkerOptions['connection']): c is NativeConnection => c instanceof NativeConnection;
const isMemorySettings = (m: MemoryStore | MemorySettings): m is MemorySettings => 'kind' in m && (m.kind === 'sqlite' || m.kind === 'postgres');

/** A worker with no MCP servers: none connected, nothing to close (and the MCP SDK not loaded). */
const NO_MCP: McpTools = { tools: [], servers: [], close: async () => undefined };

/** Connects the configured MCP servers; the MCP SDK (about 150 ms to load) is loaded only then. */
async function connectConfiguredMcp(servers: McpServersSource): Promise<McpTools> {
  const { connectMcpServers, parseMcpServers } = await import('../activities/tools/mcp');
  return connectMcpServers(parseMcpServers(servers.value, servers.source));
}

/** What a worker's stream warnings tell the operator to set, for a gateway URL given (`AGENT_STREAM_URL`) or the default. */
const streamAdvice = (url: string, given: boolean) =>
  given
    ? `Check that the gateway at ${url} is up (AGENT_STREAM_URL), or set AGENT_STREAM_URL=off to publish nothing.`
    : `Nothing was configured, and no gateway of this task queue announced itself on this host (${gatewayRuntimeDir()}), so the worker publishes to the default ${url}: start the gateway on this host (npm run gateway), or set AGENT_STREAM_URL to your gateway's URL (http://<host>:<its GATEWAY_PORT>) and AGENT_STREAM_TOKEN to its GATEWAY_TOKEN, AGENT_STREAM_REDIS_URL when it uses Redis, or AGENT_STREAM_URL=off to publish nothing.`;

/** The gateway a worker without Redis publishes to, and whether it was configured (`AGENT_STREAM_URL`) or is the default. */
export interface StreamGateway {
  /** Where it is now: the gateway found for the worker's runs, else the configured or default URL. */
  where: () => GatewayAddress;
  /** The configured URL, or the default when nothing was configured. */
  configuredUrl: string;
  given: boolean;
}

/**
 * The gateway a worker without Redis publishes to: the one configured (`AGENT_STREAM_URL`), or, at the defaults, the
 * gateway that announced itself on this host for the worker's `runs` (stream/discovery.ts), else the default URL.
 * `undefined` with Redis or `AGENT_STREAM_URL=off`. One per worker: its stream, stop relay and start check share it.
 */
export function streamGateway(env: NodeJS.ProcessEnv, runs?: ServedRuns): StreamGateway | undefined {
  const settings = streamSettings(env);
  if (settings.redisUrl || !settings.gatewayUrl) return undefined;
  const fixed = { url: settings.gatewayUrl, ...(settings.token ? { token: settings.token } : {}) };
  const where = settings.gatewayDefault && runs ? discoveredGateway(runs, fixed, env) : () => fixed;
  return { where, configuredUrl: settings.gatewayUrl, given: !settings.gatewayDefault };
}

/**
 * The live stream the environment asks for: Redis (`AGENT_STREAM_REDIS_URL`), the gateway's hub (`AGENT_STREAM_URL`,
 * by default the local gateway's), or none (`AGENT_STREAM_URL=off`). `hello`: who the worker is, which it tells the
 * gateway's hub every 10 s (its health route names the workers it has not heard from).
 */
export function configuredStream(env: NodeJS.ProcessEnv, opened: (channel: RedisChannel) => void, hello?: WorkerHello, gateway = streamGateway(env)): LiveStream | undefined {
  const settings = streamSettings(env);
  // The runtime's logger, read when a line is written: JSON lines with AGENT_LOG_FORMAT=json, like the worker's own.
  const log = { warn: (m: string, meta?: Record<string, unknown>) => Runtime.instance().logger.warn(m, meta), info: (m: string, meta?: Record<string, unknown>) => Runtime.instance().logger.info(m, meta) };
  if (settings.redisUrl) {
    let reported = false;
    const onError = (err: Error) => {
      if (!reported) log.warn(`stream channel (redis): ${err.message}`);
      reported = true;
    };
    // Loaded only when configured, as are MCP, the fleet budget and tracing: a worker's start is a restarted run's wait.
    const { RedisChannel } = require('../stream/redis') as typeof RedisModule;
    const channel = RedisChannel.open({ url: settings.redisUrl, onError });
    opened(channel);
    return liveStream(channel, log);
  }
  if (!gateway) return undefined;
  const url = gateway.where().url;
  const found = url !== gateway.configuredUrl;
  const name = `stream channel (the gateway at ${url}${found ? ', found on this host' : gateway.given ? '' : ', the default'})`;
  const advice = streamAdvice(url, gateway.given || found);
  return liveStream(httpTarget(gateway.where), log, { name, advice, ...(hello ? { hello } : {}) });
}

/**
 * The stop relay of the configured stream (stream/stops.ts): Redis pub/sub beside Redis Streams, the gateway's hub
 * beside the hub, none without a channel.
 */
export function configuredStopRelay(env: NodeJS.ProcessEnv, gateway = streamGateway(env)): StopRelay | undefined {
  const settings = streamSettings(env);
  if (settings.redisUrl) {
    const { redisStopRelay } = require('../stream/redis-stops') as typeof RedisStopsModule;
    return redisStopRelay(settings.redisUrl);
  }
  return gateway ? httpStopRelay(gateway.where) : undefined;
}

/**
 * Refuses to start a worker whose gateway answers but refuses it (its token, or a URL that is no gateway's hub): the
 * error says what to set. A gateway that does not answer is no reason (it may be starting): the worker starts degraded.
 */
export async function checkStreamTarget(hello: WorkerHello, gateway: StreamGateway | undefined): Promise<void> {
  if (!gateway) return;
  const refusal = await helloRefusal(httpTarget(gateway.where), hello, gateway.where().url);
  if (refusal) throw new Error(`the worker cannot publish its runs' streams: ${refusal}`);
}

/** The worker's Temporal identity, as the SDK makes it by default: the gateway's health route names workers by it. */
export const defaultWorkerIdentity = (): string => `${process.pid}@${os.hostname()}`;

/** The settings a worker runs with: `options` over `options.config`, else over the environment. Pure but for reading `env`. */
export function resolveWorkerConfig(options: AgentWorkerOptions = {}): WorkerConfig {
  const base = options.config ?? workerConfig(options.env ?? process.env);
  const model: ModelOptions = typeof options.model === 'string' ? { name: options.model } : (options.model ?? {});
  const connection = isNativeConnection(options.connection) ? {} : (options.connection ?? {});
  const { name, ...given } = model;
  // A key given in code replaces the environment's list, and a list given in code its first key.
  const keys = given.apiKeys ?? (given.apiKey !== undefined ? [given.apiKey] : undefined);
  const llm = keys ? { ...given, apiKey: given.apiKey ?? keys[0], apiKeys: keys } : given;
  return {
    ...base,
    temporal: { ...base.temporal, ...definedOnly({ ...connection, namespace: options.namespace, taskQueue: options.taskQueue }) },
    llm: { ...base.llm, ...definedOnly({ ...llm, model: name }) },
    ...definedOnly({ workspace: options.workspace, ledgerFile: options.ledgerFile, codecs: options.codecs, workflowBundleDir: options.workflowBundleDir, backgroundTaskSlots: options.backgroundTaskSlots }),
    ...(options.memory && isMemorySettings(options.memory) ? { memory: options.memory } : {}),
    versioning: options.versioning === false ? undefined : options.versioning ? { defaultBehavior: 'PINNED', ...options.versioning } : base.versioning,
  };
}

/** The SDK's deployment options for `versioning`; none for an unversioned worker. */
export function deploymentOptions(versioning: VersioningSettings | undefined): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!versioning) return {};
  const { deploymentName, buildId, defaultBehavior } = versioning;
  return { workerDeploymentOptions: { version: { deploymentName, buildId }, useWorkerVersioning: true, defaultVersioningBehavior: defaultBehavior } };
}

/** The fields of `o` that are set: `{ taskQueue: undefined }` leaves the default in place. */
const definedOnly = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/**
 * A worker for agent runs, configured by `options` over the environment (see `AgentWorkerOptions`), with the built-in
 * file tools, the MCP servers' tools and yours. `await worker.run()` polls until `shutdown()` or SIGINT/SIGTERM.
 */
export async function createAgentWorker(options: AgentWorkerOptions = {}): Promise<AgentWorker> {
  const config = resolveWorkerConfig(options);
  const { temporal, llm } = config;
  let scripted: ScriptedModel | undefined;
  if (usesScriptedModel(llm)) scripted = await startScriptedModel({ demoPaceMs: llm.scriptedPaceMs, recordBodies: false, maxRecordedRequests: 1_000 });
  const baseURL = scripted?.url ?? llm.baseURL ?? 'https://api.openai.com/v1';
  const model = llm.model ?? (scripted ? DEMO_SCRIPT_NAME : DEFAULT_MODEL);
  const ledger = new SqliteToolLedger(config.ledgerFile);
  // Beside the ledger, as durable as it: an in-memory ledger has no next process to hand anything to.
  const inflight = config.ledgerFile === ':memory:' ? undefined : new InflightActivities(config.ledgerFile);
  const given = isNativeConnection(options.connection) ? options.connection : undefined;
  let mcp: McpTools | undefined;
  let ownTracing: Tracing | undefined;
  let connection: NativeConnection | undefined;
  let channel: RedisChannel | undefined;
  let ownBudget: RedisBudget | undefined;
  let ownCooldowns: RedisKeyCooldowns | undefined;
  let stopSweeps: (() => void) | undefined;
  let ownMemory: MemoryStore | undefined;
  let stopRelay: StopRelay | undefined;
  let live: LiveStream | undefined;
  const release = async () => {
    stopSweeps?.();
    if (!options.stream) live?.close();
    await channel?.close();
    if (!options.stopRelay) await stopRelay?.close();
    await ownBudget?.close();
    await ownCooldowns?.close();
    if (!given) await connection?.close();
    await scripted?.close();
    await mcp?.close();
    await ownTracing?.shutdown();
    ledger.close();
    inflight?.close();
    await ownMemory?.close();
  };
  try {
    // TLS, mTLS and API keys by envconfig's conventions (TEMPORAL_API_KEY, TEMPORAL_TLS_*, temporal.toml profiles).
    connection = given ?? (await NativeConnection.connect(nativeConnectionOptions(temporal)).catch(async (err: unknown) => {
      // A refused TLS handshake surfaces as a transport error; the handshake itself says why.
      const why = await tlsFailureReason(nativeConnectionOptions(temporal)).catch(() => undefined);
      throw why ? new Error(`cannot connect to Temporal at ${temporal.address}: ${why}`, { cause: err }) : err;
    }));
    // Before anything slow (MCP servers, the workflow bundle): the handed-back attempts are queued while this worker boots.
    const recovered = (await inflight?.recover(connection, temporal.namespace)) ?? { handedBack: [], alreadyEnded: 0, failed: [] };
    // A missing attribute would fail every run's first workflow task, over and over, with a terse server error.
    if (!(await assertSearchAttributes(connection.operatorService, temporal.namespace))) {
      console.warn(`worker: could not list the search attributes of namespace ${temporal.namespace} (no permission); make sure AgentState and AgentTenant (Keyword) are registered`);
    }
    const servers = config.mcpServers;
    mcp = servers ? await connectConfiguredMcp(servers) : NO_MCP;
    ownTracing = options.tracing ? undefined : configuredTracing(config.observability);
    const tracing = options.tracing ?? ownTracing;
    const dataConverter = createDataConverter(config.codecs);
    const bundleDir = config.workflowBundleDir;
    const backgroundSlots = config.backgroundTaskSlots ?? BACKGROUND_WORKFLOW_TASK_SLOTS;
    // Two workers bundle the sources once, here, not once each at their creation.
    const converters = { payloadConverterPath: dataConverter.payloadConverterPath, failureConverterPath: dataConverter.failureConverterPath };
    const code = bundleDir === undefined && backgroundSlots > 0 ? { workflowBundle: await bundleAgentWorkflows({ tracing: tracing !== undefined, converters }) } : workflowCode(bundleDir, tracing !== undefined, dataConverter.failureConverterPath === ENCRYPTED_FAILURE_CONVERTER_PATH);
    const traced = tracing ? tracingWorkerOptions(tracing, 'workflowsPath' in code) : undefined;
    const identity = defaultWorkerIdentity();
    const hello = { identity, taskQueue: temporal.taskQueue };
    // The runs this worker works: a gateway that announced itself on this host for the same is found at the defaults.
    const runs = { temporalAddress: temporal.address, namespace: temporal.namespace, taskQueue: temporal.taskQueue };
    const env = options.env ?? process.env;
    const gateway = options.stream ? undefined : streamGateway(env, runs);
    if (!options.stream) await checkStreamTarget(hello, gateway);
    live = options.stream ?? configuredStream(env, (c) => (channel = c), hello, gateway);
    stopRelay = options.stopRelay ?? (options.stream ? undefined : configuredStopRelay(env, gateway));
    if (!options.budget && config.quota) {
      const { RedisBudget } = await import('../quota/redis-budget');
      ownBudget = await RedisBudget.connect({ ...config.quota, url: config.quota.redisUrl });
    }
    // The fleet's Redis (the quota's) keeps the keys' cooldowns too, for every worker and across restarts.
    if (config.quota && (llm.apiKeys || llm.providers)) {
      const { RedisKeyCooldowns } = await import('../quota/redis-cooldowns');
      ownCooldowns = await RedisKeyCooldowns.connect({ url: config.quota.redisUrl });
    }
    const budget = options.budget ?? ownBudget;
    const memory = options.memory && !isMemorySettings(options.memory) ? options.memory : (ownMemory = await openMemoryStore(config.memory));
    const workerOptions = agentWorkerOptions({
      openai: openAIClient({ baseURL, apiKey: llm.apiKey }),
      ...(llm.apiKeys || llm.providers ? { providers: Providers.fromConfig(openAIClient, { baseURL, apiKeys: llm.apiKeys }, llm.providers, llm.keyCooldownMs, ownCooldowns) } : {}),
      defaultModel: model,
      contextWindowTokens: llm.contextWindowTokens,
      workspace: config.workspace,
      tools: [...(options.tools ?? []), ...mcp.tools],
      agents: options.agents,
      ...(options.toolPolicy ? { toolPolicy: options.toolPolicy } : {}),
      ...(options.critics ? { critics: options.critics } : {}),
      ...(options.hooks ? { hooks: options.hooks } : {}),
      ledger,
      memory,
      conversations: createConversationStore(dataConverter, config.codecs.claimCheck),
      stream: live,
      budget,
      callsInFlight: new ModelCallsInFlight(undefined, stopRelay),
    });
    const shared: WorkerOptions = {
      connection,
      namespace: temporal.namespace,
      taskQueue: temporal.taskQueue,
      identity,
      ...code,
      ...deploymentOptions(config.versioning),
      shutdownGraceTime: SHUTDOWN_GRACE_TIME,
      // Large payloads (the conversation every model call carries) go to the blob store; history keeps references.
      dataConverter,
      ...traced,
      ...(inflight ? { interceptors: inflight.addTo(traced?.interceptors) } : {}),
      ...workerOptions,
      sinks: { ...traced?.sinks, ...workerOptions.sinks },
    };
    const cached = config.cachedRuns;
    const worker = await Worker.create({
      ...shared,
      ...(config.workflowTaskSlots !== undefined ? { maxConcurrentWorkflowTaskExecutions: config.workflowTaskSlots } : {}),
      ...(cached !== undefined ? { maxCachedWorkflows: cached } : {}),
      ...(config.workflowThreads !== undefined ? { workflowThreadPoolSize: config.workflowThreads } : {}),
    });
    // The background's own workflow thread, slots and cache: its tasks never wait in front of the fleet's queue's.
    // Created once the fleet's worker polls (`run`): a restarted worker resumes its runs first (0.3 to 0.6 s sooner).
    const createBackground =
      backgroundSlots > 0
        ? () =>
            Worker.create({
              ...shared,
              taskQueue: backgroundTaskQueue(temporal.taskQueue),
              maxConcurrentWorkflowTaskExecutions: backgroundSlots,
              maxCachedWorkflows: Math.min(cached ?? BACKGROUND_CACHED_RUNS, BACKGROUND_CACHED_RUNS),
            })
        : undefined;
    const retention = config.retention;
    if (retention?.enabled) {
      const { claimCheck } = config.codecs;
      stopSweeps = startRetentionSweeps({
        connection,
        namespace: temporal.namespace,
        taskQueue: temporal.taskQueue,
        payloadCodecs: dataConverter.payloadCodecs ?? [],
        ...(claimCheck.enabled ? { store: new FsBlobStore(claimCheck.blobDir) } : {}),
        ...(config.ledgerFile !== ':memory:' ? { ledger } : {}),
        ...(retention.retentionMs !== undefined ? { retentionMs: retention.retentionMs } : {}),
        graceMs: retention.graceMs,
        intervalMs: retention.intervalMs,
        markerFile: path.join(claimCheck.enabled ? claimCheck.blobDir : path.dirname(config.ledgerFile), '.retention-last'),
        log: { info: (m, meta) => Runtime.instance().logger.info(m, meta), warn: (m, meta) => Runtime.instance().logger.warn(m, meta) },
      });
    }
    const workers = [worker];
    const stopAll = () => workers.forEach((w) => w.getState() === 'RUNNING' && w.shutdown());
    const agent: AgentWorker = {
      worker,
      model,
      config,
      recovered,
      scriptedModelUrl: scripted?.url,
      mcpServers: mcp.servers,
      async run() {
        // One worker that stops (or fails) stops the other; what they share is released once both have stopped.
        const running = [worker.run().finally(stopAll)];
        try {
          if (createBackground) {
            const background = await createBackground().catch((err: unknown) => {
              stopAll();
              throw err;
            });
            workers.push(background);
            agent.backgroundWorker = background;
            running.push(background.run().finally(stopAll));
            // Stopped while it was created: it stops at once.
            if (worker.getState() !== 'RUNNING') stopAll();
          }
          const ended = await Promise.allSettled(running);
          const failed = ended.find((e) => e.status === 'rejected');
          if (failed) throw failed.reason;
        } finally {
          await Promise.allSettled(running);
          await release();
        }
      },
      // The SDK already shuts down on SIGINT and SIGTERM; a second shutdown would throw.
      shutdown: stopAll,
    };
    return agent;
  } catch (err) {
    await release();
    throw err;
  }
}
