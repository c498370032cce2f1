/**
 * A real agent worker for workflow tests: the dev server started by the jest global setup, the real `openai`
 * client talking HTTP to the scripted model, and a workflow bundle built once per test file.
 */
import { withActivities } from '../../src/client/activity-view';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { AgentDefinition, Critic, ModelCallsInFlight, Tool, ToolLedger, ToolPolicy } from '../../src/activities';
import type { RunHooks } from '../../src/stream/hooks';
import { claimCheckDataConverter, ConversationStore, FsBlobStore } from '../../src/codec';
import { WORKFLOW_TYPE } from '../../src/common/constants';
import type { AgentRunInput } from '../../src/common/input';
import { stateQuery, type RunStateView } from '../../src/common/messages';
import { startScriptedModel, type ScriptedModel, type ScriptedModelOptions } from '../../src/scripted-model';
import { agentWorkerOptions, openAIClient } from '../../src/worker';
import type { LiveStream } from '../../src/stream';
import type { MemoryStore } from '../../src/memory';
import type { ProviderBudget } from '../../src/quota';
import { Providers, type KeyCooldowns } from '../../src/activities/providers';
import { bundleAgentWorkflows, PRELOAD_MODULES, sandboxWebpackConfig, WORKFLOWS_PATH } from '../../src/worker/workflow-bundle';
import { QuietLogger } from './quiet-logger';
import { testServerAddress } from './temporal';
import { closeSafeConnectionPlugin } from '../../src/config/connection';

export interface AgentHarness {
  env: TestWorkflowEnvironment;
  model: ScriptedModel;
  workspace: string;
  taskQueue: string;
  bundle: WorkflowBundle;
  /** The claim-check data converter the worker and `env.client` use; replays of its histories need it too. */
  dataConverter: DataConverter;
  blobDir: string;
  start(input: AgentRunInput | Record<string, unknown>): Promise<WorkflowHandle>;
  /** Poll the `state` query until `predicate` holds, or fail after `timeoutMs`. */
  waitForState(handle: WorkflowHandle, predicate: (s: RunStateView) => boolean, timeoutMs?: number): Promise<RunStateView>;
  /** Stop the worker (the server, the client and the scripted model stay): no one answers queries any more. */
  stopWorker(): Promise<void>;
  /** Start a new worker on the same task queue after `stopWorker` (a no-op while one runs). */
  startWorker(): Promise<void>;
  close(): Promise<void>;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    await sleep(50);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
}

/** Keep test output to warnings; the runtime can be installed once per process, so a second file skips it. */
export function quietRuntime(): void {
  try {
    Runtime.install({ logger: new QuietLogger() });
  } catch {
    // already installed by an earlier test file in this process
  }
}

let bundlePromise: Promise<WorkflowBundle> | undefined;
/** The workflows bundled as workers run them (`bundleAgentWorkflows`: with the preloaded modules). */
export const workflowBundle = () => (bundlePromise ??= bundleAgentWorkflows({ logger: quietLogger }));

/** The workflows bundled with extra workflow interceptor modules (a test's own activity options, say). */
const interceptedBundle = (modules: string[]) =>
  bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, workflowInterceptorModules: modules, preloadModules: [...PRELOAD_MODULES], webpackConfigHook: sandboxWebpackConfig, logger: quietLogger });

const noop = () => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

export interface AgentHarnessOptions {
  /** A model stream silent for this long is cut and retried. @default the activity's own (60 s) */
  streamIdleTimeoutMs?: number;
  /** Payloads above this size go to the blob store (claim check), as in production. @default 32 KiB */
  claimCheckThresholdBytes?: number;
  /** Decides on each tool call before it runs (docs/tool-policy.md). */
  toolPolicy?: ToolPolicy;
  /** Tools beside the built-in file tools (e.g. MCP tools). */
  tools?: Tool[];
  /** Named agents the worker registers (`defineAgent`). */
  agents?: AgentDefinition[];
  /** false: the worker keeps no conversation chains (as with AGENT_CLAIM_CHECK=off). @default kept in the blob store */
  conversations?: false;
  /** Conversations the worker keeps in memory; 0 makes every chained call read its chain back from the blob store. */
  conversationCache?: number;
  /** A real OpenAI-compatible endpoint and model name for the worker instead of the scripted model (test/real-model.test.ts). */
  llm?: { baseURL: string; model: string };
  /** The live stream the worker publishes to (src/stream). @default none */
  stream?: LiveStream;
  /** The fleet's provider budget the worker's calls reserve from (src/quota). @default none */
  budget?: ProviderBudget;
  /** Options of the scripted model (a provider's `tokensPerMinute`, say). */
  modelOptions?: ScriptedModelOptions;
  /**
   * Providers on the scripted model: the default one's keys, and named ones (`name/model`) with their own keys, all
   * on the scripted model's URL (its scripts see which key called: `apiKey`). @default the one client, key `scripted`
   */
  providers?: { keys: string[]; named?: Record<string, string[]>; keyCooldownMs?: number; cooldowns?: KeyCooldowns };
  /** Workflow interceptor modules bundled with the workflows (test/support/short-model-timeouts.ts). @default none */
  workflowInterceptorModules?: string[];
  /** The worker's streaming model calls, which a run's workflow task stops at once; absent: a fresh one per worker. */
  callsInFlight?: ModelCallsInFlight;
  /** The ledger of side-effecting tool calls. @default none */
  ledger?: ToolLedger;
  /** The memory store of the `remember` and `recall` tools (src/memory). @default none: the tools are not registered */
  memory?: MemoryStore;
  /** Custom critics the worker registers (`critique: { custom: name }`). @default none */
  critics?: Record<string, Critic>;
  /** Lifecycle hooks of the worker (`onTransition`, `onRunEnd`). @default none */
  hooks?: RunHooks;
}

export async function startAgentHarness(
  files: Record<string, string> = { 'hello.txt': 'Hello from the workspace\nsecond line\n' },
  options: AgentHarnessOptions = {},
): Promise<AgentHarness> {
  quietRuntime();
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'agent-ws-'));
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(workspace, name), content);
  const model = await startScriptedModel(options.modelOptions);
  // The same data converter as production: worker and client share one blob store.
  const blobDir = mkdtempSync(path.join(os.tmpdir(), 'agent-blobs-'));
  const blobStore = new FsBlobStore(blobDir);
  const dataConverter = claimCheckDataConverter({ store: blobStore, thresholdBytes: options.claimCheckThresholdBytes });
  const env = await TestWorkflowEnvironment.createFromExistingServer({ address: testServerAddress(), client: { dataConverter }, plugins: [closeSafeConnectionPlugin] });
  const taskQueue = `test-${randomUUID()}`;
  const bundle = options.workflowInterceptorModules ? await interceptedBundle(options.workflowInterceptorModules) : await workflowBundle();
  const p = options.providers;
  const named = Object.fromEntries(Object.entries(p?.named ?? {}).map(([name, apiKeys]) => [name, { baseURL: model.url, apiKeys }]));
  // One set for the harness's life, as in a worker process: the keys' cooldowns outlive a worker restart here too.
  const providers = p ? Providers.fromConfig(openAIClient, { baseURL: model.url, apiKeys: p.keys }, named, p.keyCooldownMs, p.cooldowns) : undefined;
  const createWorker = () =>
    Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      dataConverter,
      ...agentWorkerOptions({
        openai: openAIClient(options.llm ? { baseURL: options.llm.baseURL } : { baseURL: model.url, apiKey: 'scripted' }),
        defaultModel: options.llm?.model ?? 'unset',
        workspace,
        degradedHeartbeatMs: 100,
        stream: options.stream,
        budget: options.budget,
        ...(providers ? { providers } : {}),
        streamIdleTimeoutMs: options.streamIdleTimeoutMs,
        tools: options.tools,
        agents: options.agents,
        ...(options.toolPolicy ? { toolPolicy: options.toolPolicy } : {}),
        ...(options.callsInFlight ? { callsInFlight: options.callsInFlight } : {}),
        ...(options.ledger ? { ledger: options.ledger } : {}),
        ...(options.memory ? { memory: options.memory } : {}),
        ...(options.critics ? { critics: options.critics } : {}),
        ...(options.hooks ? { hooks: options.hooks } : {}),
        conversations: options.conversations === false ? undefined : new ConversationStore(blobStore, { dataConverter, maxCached: options.conversationCache }),
      }),
    });
  let worker = await createWorker();
  let running = worker.run();

  const harness: AgentHarness = {
    env,
    model,
    workspace,
    taskQueue,
    bundle,
    dataConverter,
    blobDir,
    start: (input) => env.client.workflow.start(WORKFLOW_TYPE, { taskQueue, workflowId: `wf-${randomUUID()}`, args: [input] }),
    waitForState: (handle, predicate, timeoutMs = 20_000) =>
      waitFor(async () => {
        // As a client reads it: the model call's text so far comes from its heartbeat details.
        const s = await withActivities(handle.client, { workflowId: handle.workflowId }, await handle.query(stateQuery));
        return predicate(s) ? s : undefined;
      }, timeoutMs, 'the run state'),
    async stopWorker() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
    async startWorker() {
      if (worker.getState() === 'RUNNING') return;
      await running;
      worker = await createWorker();
      running = worker.run();
    },
    async close() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await env.teardown();
      await model.close();
    },
  };
  return harness;
}
