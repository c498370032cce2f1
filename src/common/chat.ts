/**
 * JSON-safe conversation types shared by the workflow and the activities.
 * They mirror the OpenAI Chat Completions wire shapes closely enough to pass straight through.
 */
import { z } from 'zod';
import { oncePerWorker } from './once-per-worker';
import type { SameType } from './same-type';

export interface ToolCall {
  id: string;
  name: string;
  /** Raw JSON text as the model produced it; it may be malformed. */
  arguments: string;
  /** Set by the model activity for a registered tool marked `local`: the run may execute it as a local activity. */
  local?: true;
  /**
   * Set by the model activity for a registered tool without side effects: it may run beside the turn's other such calls.
   * Absent: the call runs after every call before it in the turn, and the calls after it wait for it (tool-order.ts).
   */
  pure?: true;
  /** Set by the model activity for a registered tool that declares how long one call may take (its start-to-close). */
  timeoutMs?: number;
  /** Set by the model activity on a call the run must have approved: the tool's JSON schema, which edited arguments must pass. */
  parameters?: Record<string, unknown>;
  /**
   * Set by the model activity for a call a user's interrupting message may stop mid-way: the tool has no side effects,
   * or it declares that it stops cleanly on its signal (`Tool.cancellable`). Absent: the call is awaited.
   */
  cancellable?: true;
  /** Set by the machine when a person approved the call with edited arguments (`arguments` holds them). */
  edited?: true;
  /** Set by the model activity when the worker's tool policy did not simply allow the call (docs/tool-policy.md). */
  policy?: ToolPolicyVerdict;
  /** Set by the model activity for a call of a named agent given as a tool: the run starts it as a child workflow. */
  agent?: string;
  /**
   * Set by the machine on a pending call the model call already ran (`ModelResponse.toolResults`) and whose result it
   * keeps (approval.ts, `mayRunAhead`): the run takes this result instead of running the call.
   */
  ranAhead?: ToolResult;
}

/**
 * The worker's tool policy on one call, as the run records it: denied (the model gets `message` as the result), held
 * for approval, or run with rewritten arguments (`arguments` of the call hold them; `original` the model's).
 */
export type ToolPolicyVerdict =
  | { action: 'deny'; message: string }
  | { action: 'approve'; reason?: string }
  | { action: 'rewrite'; original: string; reason?: string };

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  /** `interrupted`: the text a model call had streamed when a message interrupted it (the content says so too). */
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[]; interrupted?: true }
  | { role: 'tool'; toolCallId: string; content: string };

/** The user turn that asks the model to go on with an answer the output limit cut off (the machine sends it, the model activity resends it). */
export const CONTINUE_PROMPT = 'Your answer was cut off by the output limit. Continue exactly where it stopped, without repeating anything.';

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export const emptyUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });

export const addUsage = (a: Usage, b: Usage): Usage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  totalTokens: a.totalTokens + b.totalTokens,
});

/** Input of the `callModel` activity. No secrets: endpoint and key live in the worker's environment. */
export interface ModelRequest {
  purpose: 'plan' | 'respond' | 'critique';
  /** 1-based number of this model call within the run; used in summaries and logs. */
  callNumber: number;
  model?: string;
  /** The conversation; with `chain.base`, only the messages after the base's. */
  messages: ChatMessage[];
  /** Names of the tools offered to the model, their schemas from the worker's registry; absent: every registered tool. */
  tools?: string[];
  /**
   * Present when the run chains its conversation (src/codec/conversation-store.ts): the worker stores what this call
   * was sent and answers with a reference to it, and `base` names the conversation an earlier call stored, so only
   * the new messages travel through history.
   */
  chain?: { base?: ConversationRef };
  /** Longest answer, in tokens, sent as the provider's output limit (`max_tokens`); absent: the provider's default. */
  maxOutputTokens?: number;
  /**
   * Tool names the run was started with (`tools` and `approval.tools`): the worker fails the call with a non-retryable
   * `UnknownTool` before any request to the model when one is not in its registry.
   */
  checkTools?: string[];
  /** Tools whose calls wait for approval (`*`: every tool): their calls come back with the tool's schema (`parameters`). */
  approvalTools?: string[];
  /**
   * Run the answer's calls of `local` tools (pure, answering in milliseconds) at once, in this activity, and answer
   * with their results in `toolResults`: the run then needs no local activity, and no second workflow activation,
   * for them. Only calls that `runAhead` allows run (tool-order.ts); the others are left to the run.
   */
  runLocalTools?: boolean;
  /**
   * The fleet's provider budget (src/quota): this call's place in its queue, from when it first waited (epoch ms), so
   * that asking again after a wait in the run keeps it; and the run's priority (0 first, 9 last). Absent: not waited yet.
   */
  quota?: { queuedAt?: number; priority?: number };
}

/**
 * What the model activity answers instead of a response when the fleet's budget has no room for the call yet: the
 * run shows the wait and asks again; no attempt of the activity's retry policy is spent.
 */
export interface QuotaWait {
  quotaWait: { waitMs: number; position: number; queuedAt: number };
}

export const isQuotaWait = (r: object): r is QuotaWait => 'quotaWait' in r;

/** A conversation a model call stored: the content hash of its chain node, and how many messages it holds. */
export interface ConversationRef {
  ref: string;
  count: number;
  /** Where the blob store put the node when it says (`BlobStore.append`: a pack file and offset); absent, under its hash. */
  at?: string;
}

export interface ModelResponse {
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  finishReason: string | null;
  model: string;
  /** When the request asked for a chain and the worker could store it: the conversation this call was sent. */
  conversation?: ConversationRef;
  /** The context window the worker knows for the model that answered (LLM_CONTEXT_WINDOW_TOKENS or the table of known models). */
  contextWindowTokens?: number;
  /**
   * With `runLocalTools`: the results of the answer's calls that `mayRunAhead` allows, each as `executeTool` would have
   * answered it. They reach the machine with the response, which keeps those it agrees with (workflows/ran-ahead.ts).
   */
  toolResults?: ToolResult[];
}

/** Input of the `executeTool` activity. */
export interface ToolRequest {
  call: ToolCall;
  /** Tools this run may use (absent: every registered tool); a call to any other is answered with an error for the model. */
  allowed?: string[];
  /** 1-based number of this tool call within the run; used in summaries. */
  callNumber: number;
  /** A call of a named agent (machine versions with `agentCalls: 'childRun'`): the child run to start, and the most of the budget it may use. */
  child?: ChildRequest;
}

/** The child `agentRun` a call of a named agent starts: its id, its agent, and what remains of the parent's budget. */
export interface ChildRequest {
  workflowId: string;
  agent: string;
  /** The parent's budget with its limits cut to what remains of them; absent: the parent has no budget. */
  budget?: Record<string, unknown>;
}

/** How a child run ended (or stands), as its parent records it. */
export interface ChildOutcome {
  workflowId: string;
  agent: string;
  state: string;
  usage: Usage & { modelCalls: number; costUsd: number };
}

export interface ToolResult {
  toolCallId: string;
  name: string;
  ok: boolean;
  /** What the model sees: the tool's output, or an error it can act on. */
  content: string;
  /** A user's interrupting message stopped the call (`ok` false): not a failure of the tool, so no critic counts it. */
  interrupted?: true;
  /** A call of a named agent: how its child run ended; its usage counts against the parent's. */
  child?: ChildOutcome;
}

export interface CompactionRequest {
  model?: string;
  messages: ChatMessage[];
  /** How many of the most recent messages are kept verbatim. */
  keepRecent: number;
  /** Where the turn's task is (its prompt), which stays verbatim; what comes before it may be summarised. Absent: the first user message. */
  taskIndex?: number;
}

export interface CompactionResult {
  messages: ChatMessage[];
  summarizedMessages: number;
  usage: Usage;
}

/** Input of the `critiqueAnswer` activity: a model judges a final answer, or a tool step, against the task. */
export interface CritiqueRequest {
  model?: string;
  /** The turn's task: its prompt. */
  task: string;
  /** The conversation before the task (clipped), when the turn continues one: what the task refers to. */
  context?: string;
  answer: string;
  callNumber: number;
  /** Present when the critic judges a tool step: the calls it made and their (clipped) results; `answer` is the text beside them. */
  toolResults?: Array<{ name: string; arguments: string; ok: boolean; content: string }>;
}

/** What the model critic answers: its decision, and the tokens judging it took (they count in the run's usage). */
export interface CritiqueOutcome {
  action: 'continue' | 'retry' | 'replan' | 'complete';
  reason: string;
  /** 0..1 */
  confidence: number;
  usage?: Usage;
}

// The types above as zod schemas, for loading a stored snapshot (machine/snapshot.ts) and for the state view
// (common/view.ts); checked equal to the types, so neither can change without the other. Built once per worker.
export const { UsageSchema, ToolCallSchema, ChatMessageSchema, ConversationRefSchema, ChildOutcomeSchema, ToolResultSchema } = oncePerWorker('common/chat', () => {
  const int = () => z.number().int();
  const UsageSchema = z.object({ promptTokens: int(), completionTokens: int(), totalTokens: int() });
  const ChildOutcomeSchema = z.object({
    workflowId: z.string(),
    agent: z.string(),
    state: z.string().describe('RUNNING until the child ends, then COMPLETED, FAILED or ABORTED.'),
    usage: UsageSchema.extend({ modelCalls: int(), costUsd: z.number() }),
  });
  const ToolResultSchema = z.object({
    toolCallId: z.string(),
    name: z.string(),
    ok: z.boolean(),
    content: z.string(),
    interrupted: z.literal(true).optional(),
    child: ChildOutcomeSchema.optional(),
  });
  const ToolCallSchema = z.object({
    id: z.string(),
    name: z.string(),
    arguments: z.string(),
    local: z.literal(true).optional(),
    pure: z.literal(true).optional(),
    timeoutMs: z.number().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    cancellable: z.literal(true).optional(),
    edited: z.literal(true).optional(),
    policy: z
      .discriminatedUnion('action', [
        z.object({ action: z.literal('deny'), message: z.string() }),
        z.object({ action: z.literal('approve'), reason: z.string().optional() }),
        z.object({ action: z.literal('rewrite'), original: z.string(), reason: z.string().optional() }),
      ])
      .optional(),
    agent: z.string().optional(),
    ranAhead: ToolResultSchema.optional(),
  });
  const ChatMessageSchema = z.discriminatedUnion('role', [
    z.object({ role: z.literal('system'), content: z.string() }),
    z.object({ role: z.literal('user'), content: z.string() }),
    z.object({ role: z.literal('assistant'), content: z.string().nullable(), toolCalls: z.array(ToolCallSchema).optional(), interrupted: z.literal(true).optional() }),
    z.object({ role: z.literal('tool'), toolCallId: z.string(), content: z.string() }),
  ]);
  const ConversationRefSchema = z.object({ ref: z.string(), count: int(), at: z.string().optional() });
  return { UsageSchema, ToolCallSchema, ChatMessageSchema, ConversationRefSchema, ChildOutcomeSchema, ToolResultSchema };
});

const _sameUsage: SameType<z.infer<typeof UsageSchema>, Usage> = true;
const _sameToolCall: SameType<z.infer<typeof ToolCallSchema>, ToolCall> = true;
const _sameMessage: SameType<z.infer<typeof ChatMessageSchema>, ChatMessage> = true;
const _sameRef: SameType<z.infer<typeof ConversationRefSchema>, ConversationRef> = true;
const _sameChild: SameType<z.infer<typeof ChildOutcomeSchema>, ChildOutcome> = true;
const _sameResult: SameType<z.infer<typeof ToolResultSchema>, ToolResult> = true;
void [_sameUsage, _sameToolCall, _sameMessage, _sameRef, _sameChild, _sameResult];
