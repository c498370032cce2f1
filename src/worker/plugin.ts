/**
 * The agent as a Temporal plugin (`@temporalio/plugin`, experimental in the SDK): a team that already runs a worker
 * adds `plugins: [agentPlugin({ tools, agents })]` and that worker serves `agentRun` runs too. On a worker it adds the
 * workflow code (unless the worker has its own), the activities, the data converter and the worker options the agent
 * needs; on a client (`new Client({ plugins })`) the same data converter. The `AgentState` and `AgentTenant` search
 * attributes are the namespace's, not a client's: register them once (`temporal operator search-attribute create --name
 * AgentState --type Keyword`, the same for AgentTenant), or `start` and the run's upserts fail.
 */
import type { DataConverter } from '@temporalio/common';
import { SimplePlugin } from '@temporalio/plugin';
import type { NativeConnection, ReplayWorkerOptions, Worker, WorkerOptions, WorkflowBundleOption } from '@temporalio/worker';
import type OpenAI from 'openai';
import { type ActivityDeps, type AgentDefinition, type Critic, type Tool, type ToolLedger, type ToolPolicy } from '../activities';
import type { RunHooks } from '../stream/hooks';
import type { InflightActivities } from '../activities/inflight';
import { createConversationStore, createDataConverter } from '../codec';
import type { ConversationStore } from '../codec/conversation-store';
import { codecSettings, llmSettings, workspaceDir } from '../config';
import { agentWorkerOptions, DEFAULT_MODEL, openAIClient } from './worker';
import { bundleAtBoot } from './workflow-bundle';
import type { MemoryStore } from '../memory';
import type { ProviderBudget } from '../quota';
import { streamSinks } from '../stream/sinks';

export const AGENT_PLUGIN_NAME = 'durable-agent-worker';

export interface AgentPluginOptions {
  /**
   * The model endpoint of the agent's model calls, or a ready client in `openai`.
   * @default the environment's (`LLM_BASE_URL`, `LLM_API_KEY`, `LLM_MODEL`, `LLM_CONTEXT_WINDOW_TOKENS`); with only a key, OpenAI
   */
  llm?: { baseURL?: string; apiKey?: string; model?: string; contextWindowTokens?: number };
  /** A configured OpenAI-compatible client instead of `llm`'s endpoint; it should not retry (`maxRetries: 0`): Temporal does. */
  openai?: OpenAI;
  /** Tools beside the built-in file tools. */
  tools?: Tool[];
  /** Named agents (`defineAgent`) that runs may start with `agent: "<name>"`. */
  agents?: AgentDefinition[];
  /** Decides on each tool call before it runs: allow, deny, approval, or rewritten arguments (docs/tool-policy.md). */
  toolPolicy?: ToolPolicy;
  /** Critics by name that a run chooses with `critique: { custom: 'name' }` (`Critic`). */
  critics?: Record<string, Critic>;
  /** Lifecycle hooks on every run: `onTransition`, `onRunEnd`; their failures never fail a run. */
  hooks?: RunHooks;
  /** Root of the built-in file tools. @default `AGENT_WORKSPACE`, else ./workspace */
  workspace?: string;
  /** Durable record of side-effecting tool calls (`SqliteToolLedger`); without one such tools run on every attempt. */
  ledger?: ToolLedger;
  /** Memories across runs (`SqliteMemoryStore`, `PostgresMemoryStore`), yours to close: runs that name `remember` and `recall` get them. */
  memory?: MemoryStore;
  /**
   * The journal of this worker's activity attempts in flight (`new InflightActivities(ledgerFile)`): the plugin adds its
   * interceptor, and when the worker starts it hands back the attempts a crashed worker process on this host left, so
   * they are retried at once instead of at their heartbeat timeout (with the worker's `connection` option; without
   * one, the interceptor only). Yours to close after the worker stops.
   */
  inflight?: InflightActivities;
  /** Where chained conversations live; without one every model call carries the whole conversation. */
  conversations?: ConversationStore;
  /** The fleet's provider budget (`RedisBudget.connect(...)`), yours to close; without one calls reserve nothing. */
  budget?: ProviderBudget;
  /**
   * The agent's data converter, merged over the worker's and the client's own (`SimplePlugin`: the plugin's fields win).
   * `false` leaves theirs alone. @default the environment's codecs (`AGENT_ENCRYPTION_KEYS`, `AGENT_CLAIM_CHECK`, ...)
   */
  dataConverter?: DataConverter | false;
  /** Prebuilt workflow code (`npm run build:workflows`) instead of bundling the sources when the worker starts. */
  workflowBundle?: WorkflowBundleOption;
  /** Activity settings for tests and tuning (ActivityDeps). */
  streamIdleTimeoutMs?: number;
  degradedHeartbeatMs?: number;
}

/** The agent's plugin for `Worker.create({ plugins })` and `new Client({ plugins })`; see the module comment. */
export function agentPlugin(options: AgentPluginOptions = {}): AgentPlugin {
  return new AgentPlugin(options);
}

export class AgentPlugin extends SimplePlugin {
  private readonly deps: () => ActivityDeps;

  constructor(private readonly agentOptions: AgentPluginOptions) {
    const codecs = agentOptions.dataConverter === undefined ? codecSettings() : undefined;
    const dataConverter = codecs ? createDataConverter(codecs) : agentOptions.dataConverter || undefined;
    super({ name: AGENT_PLUGIN_NAME, ...(dataConverter ? { dataConverter } : {}) });
    // As the agent's own worker does: with the environment's claim check, chained conversations live in its blob store.
    const conversations = agentOptions.conversations ?? (codecs && dataConverter ? createConversationStore(dataConverter, codecs.claimCheck) : undefined);
    // Resolved when a worker is configured, so a client-only plugin reads no LLM settings.
    this.deps = () => activityDeps({ ...agentOptions, conversations });
  }

  /**
   * The worker's options with the agent's added: its activities (appended to the worker's), its workflow code when the
   * worker has none, and the agent's worker tuning where the worker sets none. A worker with workflow code of its own
   * keeps it: re-export `agentRun` (and `planExecute`, `agentPipeline`) from that code for the worker to run agents.
   */
  override configureWorker(options: WorkerOptions): WorkerOptions {
    const configured = super.configureWorker(options);
    const { activities, ...tuning } = agentWorkerOptions(this.deps());
    const { inflight } = this.agentOptions;
    if (inflight) this.recovery = { connection: configured.connection, namespace: configured.namespace ?? 'default' };
    return {
      ...tuning,
      ...configured,
      ...this.workflowCode(configured),
      activities: { ...(configured.activities ?? {}), ...activities },
      sinks: { ...tuning.sinks, ...configured.sinks },
      ...(inflight ? { interceptors: inflight.addTo(configured.interceptors) } : {}),
    };
  }

  private recovery?: { connection?: NativeConnection; namespace: string };

  /** Hands back what a crashed worker process on this host left in flight (`inflight`), then runs the worker. */
  override async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    const { inflight } = this.agentOptions;
    if (inflight && this.recovery?.connection) await inflight.recover(this.recovery.connection, this.recovery.namespace);
    return super.runWorker(worker, next);
  }

  override configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const configured = super.configureReplayWorker(options);
    // The workflow calls its `stream` sink at every step; unregistered, each call would log an error while replaying.
    return { ...configured, ...this.workflowCode(configured), sinks: { ...streamSinks(undefined), ...configured.sinks } };
  }

  private workflowCode(options: Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle'>): Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle' | 'bundlerOptions'> {
    if (options.workflowsPath !== undefined || options.workflowBundle !== undefined) return {};
    return this.agentOptions.workflowBundle ? { workflowBundle: this.agentOptions.workflowBundle } : bundleAtBoot();
  }
}

function activityDeps(o: AgentPluginOptions): ActivityDeps {
  // Given settings are taken whole: a key from the environment must not go to an endpoint it was not meant for.
  const llm = o.llm ?? llmSettings();
  if (!o.openai && !llm.baseURL && !llm.apiKey) {
    throw new Error('agentPlugin: no model endpoint: pass llm: { baseURL, apiKey?, model? } or openai, or set LLM_BASE_URL or LLM_API_KEY');
  }
  return {
    openai: o.openai ?? openAIClient({ baseURL: llm.baseURL ?? 'https://api.openai.com/v1', apiKey: llm.apiKey }),
    defaultModel: llm.model ?? DEFAULT_MODEL,
    ...(llm.contextWindowTokens !== undefined ? { contextWindowTokens: llm.contextWindowTokens } : {}),
    workspace: o.workspace ?? workspaceDir(),
    tools: o.tools,
    agents: o.agents,
    ...(o.toolPolicy ? { toolPolicy: o.toolPolicy } : {}),
    ...(o.critics ? { critics: o.critics } : {}),
    ...(o.hooks ? { hooks: o.hooks } : {}),
    ledger: o.ledger,
    ...(o.memory ? { memory: o.memory } : {}),
    conversations: o.conversations,
    budget: o.budget,
    streamIdleTimeoutMs: o.streamIdleTimeoutMs,
    degradedHeartbeatMs: o.degradedHeartbeatMs,
  };
}
