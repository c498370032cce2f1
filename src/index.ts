/**
 * `durable-agent-worker`: the worker side of the library. Define tools, start a worker that runs agent runs as Temporal
 * workflows, and share its data converter with clients. Starting and watching runs from a backend is in
 * `durable-agent-worker/client` (no native modules); the workflow code, for teams that bundle it into their own
 * worker, is `durable-agent-worker/workflows`.
 */

/** The worker: `await (await createAgentWorker({ tools: [myTool] })).run()`; settings not given come from the environment. */
export { createAgentWorker, resolveWorkerConfig, BACKGROUND_WORKFLOW_TASK_SLOTS, DEFAULT_MODEL, SHUTDOWN_GRACE_TIME } from './worker';
export type { AgentWorker, AgentWorkerOptions, ConnectionSettings, ModelOptions } from './worker';

/** For a Temporal worker of your own that bundles `durable-agent-worker/workflows`: the activities and their tuning. */
export { agentWorkerOptions, openAIClient } from './worker';
/** A `fetch` for an `openai` client of your own that follows no redirect, as `openAIClient`'s does (docs/models.md). */
export { withoutRedirects } from './activities/wire';
/**
 * The model requests a worker makes (model calls, the critic, compactions), which a run's workflow task on that
 * worker stops at once on an interrupt, abort, pause or time limit (docs/steering.md); `agentWorkerOptions` makes one,
 * or takes yours as `callsInFlight`.
 */
export { ModelCallsInFlight, STOPPED_CALL_GRACE_MS } from './activities/calls-in-flight';
/** V8's old-generation growth for a worker process, as the worker's entry sets it (`AGENT_HEAP_GROWING_PERCENT`). */
export { tuneWorkerHeap, WORKER_HEAP_GROWING_PERCENT } from './worker/heap';
/**
 * The workflow code bundled as the agent's own workers bundle it: `bundleAgentWorkflows()` for `workflowBundle`, or
 * `bundleAtBoot()` (`workflowsPath` and `bundlerOptions`), with `PRELOAD_MODULES` loaded once per worker, not per run.
 */
export { bundleAgentWorkflows, bundleAtBoot, buildWorkflowBundles, PRELOAD_MODULES } from './worker/workflow-bundle';
export type { ActivityDeps } from './activities';

/** Tools: `defineTool({ name, description, parameters: z.object(...), sideEffects, execute })`. */
export { defineTool, RetryableToolError, MAX_TOOL_OUTPUT_CHARS } from './activities/tools/registry';
export type { Tool, ToolContext } from './activities/tools/registry';
export type { ToolPolicy, ToolPolicyCall, ToolPolicyContext, ToolPolicyDecision } from './activities/tool-policy';

/**
 * Your critic: `createAgentWorker({ critics: { name: (request, context) => decision } })`, chosen per run with
 * `critique: { custom: 'name' }`; it gets the model critic's request and answers the same decision.
 */
export { InvalidCriticError } from './activities/custom-critic';
export type { Critic, CriticContext, CriticDecision } from './activities/custom-critic';
export type { CritiqueRequest } from './common/chat';

/**
 * Lifecycle hooks: `createAgentWorker({ hooks: { onTransition, onRunEnd } })`, run on the worker outside the workflow's
 * determinism (a sink); a hook that throws or hangs is logged, never fails or holds a run.
 */
export { HOOK_HANG_WARNING_MS } from './stream/hooks';
export type { RunEnd, RunHooks, RunTransition } from './stream/hooks';

/** Named agents: `defineAgent({ name, instructions, tools, model, limits, ... })`; a run names one with `agent`. */
export { defineAgent, InvalidAgentDefinitionError } from './activities/agents';
export type { AgentDefinition } from './activities/agents';
export { applyAgent } from './common/apply-agent';
export type { AgentSpec } from './common/agents';

/**
 * Crash recovery for a worker of your own: `new InflightActivities(file)` writes down the activity attempts in flight
 * (`addTo(interceptors)`), and `recover(connection, namespace)` at start hands back those a crashed process on this host
 * left, for an immediate retry (`createAgentWorker` and `agentPlugin({ inflight })` do both).
 */
export { InflightActivities } from './activities/inflight';
export type { Orphan, RecoveryReport } from './activities/inflight';
export { SqliteToolLedger } from './activities/tools/ledger';
export type { ToolLedger } from './activities/tools/ledger';

/**
 * Memory across runs (docs/memory.md): the stores (`createAgentWorker({ memory })`, `agentPlugin({ memory })`), and the
 * `remember` and `recall` tools a run opts into by naming them in `tools`.
 */
export { SqliteMemoryStore } from './memory/sqlite';
export { PostgresMemoryStore } from './memory/postgres';
export { memoryTools, RECALL_TOOL, REMEMBER_TOOL } from './activities/tools/memory';

/**
 * The worker's end of the workflow's sinks (`stream`, and `modelCalls`, which stops a cancelled model call on the
 * worker that runs it), which `agentWorkerOptions` and `agentPlugin` register: pass `sinks: streamSinks(undefined)`
 * to `Worker.runReplayHistories` of agent runs, or each replayed step logs an unregistered sink.
 */
export { streamSinks } from './stream/sinks';

/**
 * One provider quota for the fleet: `RedisBudget.connect({ url, name, tokensPerMinute, requestsPerMinute, maxConcurrent })`
 * and pass it as `createAgentWorker({ budget })` or `agentPlugin({ budget })`; workers read LLM_TOKENS_PER_MINUTE and the
 * like themselves (docs/quota.md).
 */
export { DEFAULT_BACKGROUND_RESERVE, RedisBudget } from './quota';
export type { BudgetLimits, Grant, ProviderBudget, RedisBudgetOptions } from './quota';
export type { QuotaSettings } from './config';

/** A Temporal plugin for a worker (and client) you already run: `Worker.create({ ..., plugins: [agentPlugin({ tools })] })`. */
export { agentPlugin, AgentPlugin, AGENT_PLUGIN_NAME } from './worker/plugin';
export type { AgentPluginOptions } from './worker/plugin';

/** Before a deploy: replay the open runs' histories against the workflow code about to be deployed (`agent check-deploy`). */
export { checkDeploy } from './worker/check-deploy';
export type { DeployCheckOptions, DeployCheckResult } from './worker/check-deploy';

/** Failure types a backend matches on (`InvalidInput`, `AgentRunFailed`, `UnknownAgent`, the model's error classes). */
export { FailureType, ModelErrorType } from './common/failures';

/** The data converter workers and clients share (encryption, claim check); pass it to your own `Client` or `Worker`. */
export { agentDataConverter } from './client';

/**
 * Client connections that can be closed while a call waits to retry (the SDK's retry would throw "Channel has been
 * shut down" from a timer): `AgentClient` uses them; add the plugin to a `Connection` or `TestWorkflowEnvironment` of your own.
 */
export { closeSafeConnectionPlugin, closeSafeInterceptors, closedChannelGuard } from './config/connection';

/** Settings, as the environment gives them: `workerConfig(env)` is the default of `createAgentWorker`. */
export { workerConfig, codecSettings, temporalSettings } from './config';
export type { CodecSettings, LlmSettings, TemporalSettings, WorkerConfig } from './config';

/** A run's input, its result and the view its `state` query answers; what a backend needs beside the client. */
export type { AgentRunInput, ApproveInput, Critique, RunTimeouts, RunTimeoutsInput } from './common/input';
export { DEFAULT_TIMEOUTS } from './common/input';
export type { AgentRunResult, ApproveResult, SendMessageResult } from './common/messages';
export type { ControlRecord, PendingApproval, PlanStep, PlanStepStatus, RunStateView, RunUsage, TransitionRecord } from './common/view';
export type { CreateScheduleInput, OverlapPolicy, ScheduleListEntry, ScheduleView } from './common/schedule';
export { GenAiAttribute, GenAiOperation } from './common/genai';
export { ActorSchema, SERVICE_ACTOR, type Actor } from './common/actor';
/** A tenant's fairness key on Temporal's task queues, as `AgentClient.start` sets it: for weights set on the task queue. */
export { BACKGROUND_PRIORITY, backgroundTaskQueue, fairnessKeyOf, temporalPriorityKey } from './common/fairness';
/** A tenant's burst of starts at its own priority (`ConnectOptions.tenantBurst`, AGENT_TENANT_BURST; docs/quota.md). */
export { TenantBurst, type TenantBurstOptions } from './client/tenant-burst';
export { AgentState, isTerminal } from './common/states';
