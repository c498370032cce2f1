/**
 * Activities of the agent worker, built by a factory so the worker injects real clients and tests their own.
 * Worker-side code: never import this from workflow code except as `import type`.
 */
import type { LiveStream } from '../stream/publisher';
import type { RunHooks } from '../stream/hooks';
import { CancelledFailure, Context } from '@temporalio/activity';
import type OpenAI from 'openai';
import type { ConversationStore } from '../codec/conversation-store';
import type { ToolRequest, ToolResult } from '../common/chat';
import type { AgentSpec } from '../common/agents';
import { AgentRegistry, InvalidAgentDefinitionError, type AgentDefinition } from './agents';
import { createCompactContext } from './compaction';
import { createCritiqueAnswer } from './critic';
import { createCustomCritics, type Critic } from './custom-critic';
import { heartbeating } from './heartbeat';
import { recordToolCall, withModelMetrics } from './metrics';
import { createAwaitQuota, createCallModel } from './model';
import { inChatSpan, inToolSpan } from './genai-spans';
import { GenAiAttribute } from '../common/genai';
import type { ModelRequest } from '../common/chat';
import { isQuotaWait } from '../common/chat-helpers';
import { fileTools } from './tools/files';
import type { ToolLedger } from './tools/ledger';
import { memoryTools } from './tools/memory';
import type { MemoryStore } from '../memory';
import { ToolRegistry, type Tool } from './tools/registry';
import type { ProviderBudget } from '../quota';
import type { Providers } from './providers';
import type { ToolPolicy } from './tool-policy';
import type { ModelCallsInFlight } from './calls-in-flight';

export interface ActivityDeps {
  openai: OpenAI;
  /** Model used when a run names none (`LLM_MODEL`). */
  defaultModel: string;
  /** Root of the file tools (`AGENT_WORKSPACE`). */
  workspace: string;
  /** Extra tools beside the built-in file tools. */
  tools?: Tool[];
  /** Named agents (`defineAgent`) that runs may start with `agent: "<name>"`; tool objects they hold join the tools. */
  agents?: AgentDefinition[];
  /** Memories across runs (src/memory): with a store, runs that name `remember` and `recall` in `tools` get them. */
  memory?: MemoryStore;
  /**
   * Critics a run may choose by name (`critique: { custom: 'name' }`): each gets the model critic's request and answers
   * its decision, as the `customCritique` activity (activities/custom-critic.ts).
   */
  critics?: Record<string, Critic>;
  /**
   * Lifecycle hooks on the worker's runs (`onTransition`, `onRunEnd`; stream/hooks.ts): not activities but the
   * `runHooks` sink, which `agentWorkerOptions` registers; their failures never reach a run.
   */
  hooks?: RunHooks;
  /** Durable record of side-effecting tool calls; without one such tools run on every attempt. */
  ledger?: ToolLedger;
  streamIdleTimeoutMs?: number;
  /** The live stream text is published to as it arrives (src/stream); absent: watchers read it from the model call's heartbeats. */
  stream?: LiveStream;
  /** How often a model call that cannot publish heartbeats its text. @default DEGRADED_HEARTBEAT_MS (200) */
  degradedHeartbeatMs?: number;
  /** Chained conversations (codec/conversation-store.ts), in the claim check's blob store. */
  conversations?: ConversationStore;
  /** `LLM_CONTEXT_WINDOW_TOKENS`: the context window of the models this worker calls; absent: the table of known models. */
  contextWindowTokens?: number;
  /** The fleet's provider budget (`LLM_TOKENS_PER_MINUTE` and the like): model calls, the critic and compaction reserve from it. */
  budget?: ProviderBudget;
  /** Named providers (`provider/model`) and several keys per provider (activities/providers.ts); absent: `openai` alone. */
  providers?: Providers;
  /** Decides on each tool call before it runs (docs/tool-policy.md); absent: every call is allowed, at no cost. */
  toolPolicy?: ToolPolicy;
  /**
   * How often a model call heartbeats, which bounds how late a call on another worker than its run's workflow task
   * hears of an interrupt. @default MODEL_HEARTBEAT_MS (800)
   */
  modelHeartbeatMs?: number;
  /**
   * Model requests running here (model calls, the critic, compactions), where the run's workflow task on this worker
   * finds one to stop at once (an interrupt, an abort, a pause, the time limit). `agentWorkerOptions` makes one and
   * hands it to the `modelCalls` sink as well.
   */
  callsInFlight?: ModelCallsInFlight;
}

export function createActivities(deps: ActivityDeps) {
  const agents = new AgentRegistry(deps.agents);
  const given = [...fileTools(deps.workspace), ...(deps.memory ? memoryTools(deps.memory) : []), ...(deps.tools ?? [])];
  const tools = [...given, ...agents.tools().filter((t) => !given.includes(t))];
  // Named agents as tools, after the tools proper: a tool keeps its name when an agent shares it.
  const registry = new ToolRegistry([...tools, ...agents.asTools((name) => tools.some((t) => t.name === name))], deps.ledger);
  const missing = agents.missingTools((name) => registry.get(name) !== undefined);
  if (missing.length) throw new InvalidAgentDefinitionError(`agents name tools the worker lacks: ${missing.join(', ')}; registered: ${registry.names().join(', ')}`);

  /**
   * Runs one tool call, heartbeating while it works (a slow tool is not a dead worker, and cancellation gets in). On
   * cancellation the tool's signal is aborted and the activity ends as cancelled at once, even if the tool ignores it.
   */
  async function executeTool(request: ToolRequest): Promise<ToolResult> {
    const ctx = Context.current();
    // Stable across attempts and worker restarts: the run, the call's position in it, and the model's call id.
    const run = ctx.info.workflowExecution?.workflowId ?? ctx.info.activityId;
    const idempotencyKey = `${run}/${request.callNumber}/${request.call.id}`;
    const { name } = request.call;
    const startedAt = Date.now();
    const result = await inToolSpan(request.call, () =>
      heartbeating(
        () => ({ tool: name, callNumber: request.callNumber, elapsedMs: Date.now() - startedAt }),
        () => Promise.race([registry.run(request.call, { idempotencyKey, signal: ctx.cancellationSignal, ...(request.memory ? { memory: request.memory } : {}) }, request.allowed), ctx.cancelled]),
      ),
    );
    if (ctx.cancellationSignal.aborted) throw new CancelledFailure(`tool ${name} cancelled`);
    return recordToolCall(result);
  }

  const { checkCritic, customCritique } = createCustomCritics(deps.critics);
  const callModel = createCallModel({ ...deps, tools: registry });
  const compactContext = createCompactContext(deps);
  const critiqueAnswer = createCritiqueAnswer(deps);
  const modelOf = (request: { model?: string }) => request.model ?? deps.defaultModel;

  return {
    callModel: withModelMetrics(
      (request: ModelRequest) => inChatSpan(modelOf(request), chatAttributes(request.maxOutputTokens), () => callModel(request), (r) => (isQuotaWait(r) ? undefined : r)),
      deps.defaultModel,
    ),
    /** The wait of a model call the fleet's budget sent back once; its grant goes to the call (model.ts). */
    awaitQuota: createAwaitQuota(deps),
    executeTool,
    compactContext: (request: Parameters<typeof compactContext>[0]) => inChatSpan(modelOf(request), chatAttributes(), () => compactContext(request), (r) => r),
    critiqueAnswer: (request: Parameters<typeof critiqueAnswer>[0]) => inChatSpan(modelOf(request), chatAttributes(), () => critiqueAnswer(request), (r) => r),
    customCritique,
    /** Whether the worker has the custom critic a run names (a local activity at the run's start: its answer is kept in history). */
    checkCritic,
    /** A named agent's spec for a run that starts with `agent` (a local activity: its answer is kept in history). */
    async resolveAgent(name: string): Promise<AgentSpec> {
      return agents.resolve(name);
    },
  };
}

/** The request attributes of a chat span: the run it serves (as the conversation) and the output limit. */
function chatAttributes(maxOutputTokens?: number) {
  const run = Context.current().info.workflowExecution?.workflowId;
  return { ...(run ? { [GenAiAttribute.CONVERSATION_ID]: run } : {}), ...(maxOutputTokens !== undefined ? { [GenAiAttribute.REQUEST_MAX_TOKENS]: maxOutputTokens } : {}) };
}

export type AgentActivities = ReturnType<typeof createActivities>;
export { AgentRegistry, defineAgent, InvalidAgentDefinitionError, type AgentDefinition } from './agents';
export { InvalidCriticError, type Critic, type CriticContext, type CriticDecision } from './custom-critic';
export { ToolRegistry, defineTool, RetryableToolError, type Tool } from './tools/registry';
export { SqliteToolLedger, UNKNOWN_OUTCOME, type ToolLedger } from './tools/ledger';
export { memoryTools, RECALL_TOOL, REMEMBER_TOOL } from './tools/memory';
export type { ToolPolicy, ToolPolicyCall, ToolPolicyContext, ToolPolicyDecision } from './tool-policy';
export { classifyModelError, ModelErrorType, readableErrorBodies } from './errors';
export { withoutRedirects } from './wire';
export { ModelCallsInFlight, STOPPED_CALL_GRACE_MS } from './calls-in-flight';
