/**
 * The agent worker as a library: `createAgentWorker` polls the `agent-runs` task queue for workflow and activity tasks.
 * With no LLM_API_KEY and no LLM_BASE_URL it serves the project's scripted model in-process. The process is
 * `src/bin/worker.ts` (`npm run worker`).
 */
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import OpenAI from 'openai';
import { createActivities, readableErrorBodies, SqliteToolLedger, type ActivityDeps, type AgentDefinition, type Tool } from './activities';
import { connectMcpServers, parseMcpServers, type McpServerInfo, type McpTools } from './activities/tools/mcp';
import { createConversationStore, createDataConverter } from './codec';
import { usesScriptedModel, workerConfig, type WorkerConfig } from './config';
import { nativeConnectionOptions } from './connection';
import { configuredTracing, tracingWorkerOptions, type Tracing } from './observability/tracing';
import { DEMO_SCRIPT_NAME, startScriptedModel, type ScriptedModel } from './scripted-model';
import { workflowCode } from './workflow-bundle';

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
  | 'maxConcurrentLocalActivityExecutions'
  | 'workflowTaskPollerBehavior'
  | 'activityTaskPollerBehavior'
> {
  return {
    activities: createActivities(deps),
    // Cancellation reaches an activity on its next heartbeat; keep that within a second so abort is prompt.
    maxHeartbeatThrottleInterval: '1 second',
    // A model call waits on the network, not the CPU: the SDK's 100 slots would cap a worker at 100 calls in flight
    // whatever its CPU. Workflow task slots stay at the SDK's 40: more only queue work in a CPU-bound worker.
    maxConcurrentActivityTaskExecutions: 1_000,
    maxConcurrentLocalActivityExecutions: 1_000,
    workflowTaskPollerBehavior: { type: 'autoscaling', minimum: 2, maximum: 100, initial: 10 },
    activityTaskPollerBehavior: { type: 'autoscaling', minimum: 2, maximum: 100, initial: 10 },
  };
}

/** A graceful stop (SIGTERM, a deploy) lets the model calls in flight finish this long before cancelling them. */
export const SHUTDOWN_GRACE_TIME = '30 seconds';

export function openAIClient(llm: { baseURL: string; apiKey?: string }): OpenAI {
  // Temporal owns retries (classified by error kind); the client must not retry behind its back. readableErrorBodies:
  // error bodies the client cannot read (Gemini's root array, vLLM 0.4's top-level message) are classified all the same.
  return new OpenAI({ baseURL: llm.baseURL, apiKey: llm.apiKey ?? 'not-needed', maxRetries: 0, timeout: 10 * 60_000, fetch: readableErrorBodies() });
}

export interface AgentWorker {
  worker: Worker;
  /** Set when the worker serves the scripted model because no real endpoint is configured. */
  scriptedModelUrl?: string;
  model: string;
  /** MCP servers connected at start (AGENT_MCP_SERVERS or AGENT_MCP_CONFIG), with the registry names of their tools. */
  mcpServers: McpServerInfo[];
  /** Runs until `shutdown()`, then closes the connection, the scripted model and the MCP clients. */
  run(): Promise<void>;
  shutdown(): void;
}

/**
 * A worker configured by `config` (by default read from the environment: `workerConfig()` in config.ts), with any extra
 * tools beside the built-in and MCP ones, and named agents (`extra.agents`, see `defineAgent`). `extra.tracing` replaces
 * the tracing the config asks for, and stays the caller's to shut down.
 */
export async function createAgentWorker(config: WorkerConfig = workerConfig(), extra: { tools?: Tool[]; agents?: AgentDefinition[]; tracing?: Tracing } = {}): Promise<AgentWorker> {
  const { temporal, llm } = config;
  let scripted: ScriptedModel | undefined;
  if (usesScriptedModel(llm)) scripted = await startScriptedModel();
  const baseURL = scripted?.url ?? llm.baseURL ?? 'https://api.openai.com/v1';
  const model = llm.model ?? (scripted ? DEMO_SCRIPT_NAME : DEFAULT_MODEL);
  const ledger = new SqliteToolLedger(config.ledgerFile);
  // TLS, mTLS and API keys by envconfig's conventions (TEMPORAL_API_KEY, TEMPORAL_TLS_*, temporal.toml profiles).
  const connection = await NativeConnection.connect(nativeConnectionOptions(temporal));
  let mcp: McpTools | undefined;
  let ownTracing: Tracing | undefined;
  const release = async () => {
    await connection.close();
    await scripted?.close();
    await mcp?.close();
    await ownTracing?.shutdown();
    ledger.close();
  };
  try {
    const servers = config.mcpServers;
    mcp = await connectMcpServers(servers ? parseMcpServers(servers.value, servers.source) : []);
    ownTracing = extra.tracing ? undefined : configuredTracing(config.observability);
    const tracing = extra.tracing ?? ownTracing;
    const dataConverter = createDataConverter(config.codecs);
    const bundleDir = config.workflowBundleDir;
    const worker = await Worker.create({
      connection,
      namespace: temporal.namespace,
      taskQueue: temporal.taskQueue,
      ...workflowCode(bundleDir, tracing !== undefined),
      shutdownGraceTime: SHUTDOWN_GRACE_TIME,
      // Large payloads (the conversation every model call carries) go to the blob store; history keeps references.
      dataConverter,
      ...(tracing ? tracingWorkerOptions(tracing, bundleDir === undefined) : {}),
      ...agentWorkerOptions({
        openai: openAIClient({ baseURL, apiKey: llm.apiKey }),
        defaultModel: model,
        contextWindowTokens: llm.contextWindowTokens,
        workspace: config.workspace,
        tools: [...(extra.tools ?? []), ...mcp.tools],
        agents: extra.agents,
        ledger,
        conversations: createConversationStore(dataConverter, config.codecs.claimCheck),
      }),
    });
    return {
      worker,
      model,
      scriptedModelUrl: scripted?.url,
      mcpServers: mcp.servers,
      async run() {
        try {
          await worker.run();
        } finally {
          await release();
        }
      },
      shutdown: () => worker.shutdown(),
    };
  } catch (err) {
    await release();
    throw err;
  }
}
