/**
 * JSON-safe conversation types shared by the workflow and the activities.
 * They mirror the OpenAI Chat Completions wire shapes closely enough to pass straight through.
 */
import { z } from 'zod';

// The run's conversation as zod schemas, the one description of each shape: the types below are inferred from them,
// and they load a stored snapshot (machine/snapshot.ts) and describe the state view (common/view.ts).
export const { UsageSchema, ToolPolicyVerdictSchema, ToolCallSchema, ChatMessageSchema, ConversationRefSchema, ChildOutcomeSchema, ToolResultSchema } = (() => {
  const int = () => z.number().int();
  const UsageSchema = z.object({ promptTokens: int(), completionTokens: int(), totalTokens: int() });
  /** How a child run ended (or stands), as its parent records it. */
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
    /** What the model sees: the tool's output, or an error it can act on. */
    content: z.string(),
    /** A user's interrupting message stopped the call (`ok` false): not a failure of the tool, so no critic counts it. */
    interrupted: z.literal(true).optional(),
    /** A call of a named agent: how its child run ended; its usage counts against the parent's. */
    child: ChildOutcomeSchema.optional(),
  });
  /**
   * The worker's tool policy on one call, as the run records it: denied (the model gets `message` as the result), held
   * for approval, or run with rewritten arguments (`arguments` of the call hold them; `original` the model's).
   */
  const ToolPolicyVerdictSchema = z.discriminatedUnion('action', [
    z.object({ action: z.literal('deny'), message: z.string() }),
    z.object({ action: z.literal('approve'), reason: z.string().optional() }),
    z.object({ action: z.literal('rewrite'), original: z.string(), reason: z.string().optional() }),
  ]);
  const ToolCallSchema = z.object({
    id: z.string(),
    name: z.string(),
    /** Raw JSON text as the model produced it; it may be malformed. */
    arguments: z.string(),
    /** Set by the model activity for a registered tool marked `local`: the run may execute it as a local activity. */
    local: z.literal(true).optional(),
    /**
     * Set by the model activity for a registered tool without side effects: it may run beside the turn's other such calls.
     * Absent: the call runs after every call before it in the turn, and the calls after it wait for it (tool-order.ts).
     */
    pure: z.literal(true).optional(),
    /** Set by the model activity for a registered tool that declares how long one call may take (its start-to-close). */
    timeoutMs: z.number().optional(),
    /** Set by the model activity on a call the run must have approved: the tool's JSON schema, which edited arguments must pass. */
    parameters: z.record(z.string(), z.unknown()).optional(),
    /**
     * Set by the model activity for a call a user's interrupting message may stop mid-way: the tool has no side effects,
     * or it declares that it stops cleanly on its signal (`Tool.cancellable`). Absent: the call is awaited.
     */
    cancellable: z.literal(true).optional(),
    /** Set by the machine when a person approved the call with edited arguments (`arguments` holds them). */
    edited: z.literal(true).optional(),
    /** Set by the model activity when the worker's tool policy did not simply allow the call (docs/tool-policy.md). */
    policy: ToolPolicyVerdictSchema.optional(),
    /** Set by the model activity for a call of a named agent given as a tool: the run starts it as a child workflow. */
    agent: z.string().optional(),
    /**
     * Set by the machine on a pending call the model call already ran (`ModelResponse.toolResults`) and whose result it
     * keeps (approval.ts, `mayRunAhead`): the run takes this result instead of running the call.
     */
    ranAhead: ToolResultSchema.optional(),
  });
  const ChatMessageSchema = z.discriminatedUnion('role', [
    z.object({ role: z.literal('system'), content: z.string() }),
    z.object({ role: z.literal('user'), content: z.string() }),
    z.object({
      role: z.literal('assistant'),
      content: z.string().nullable(),
      toolCalls: z.array(ToolCallSchema).optional(),
      /** The text a model call had streamed when a message interrupted it (the content says so too). */
      interrupted: z.literal(true).optional(),
    }),
    z.object({ role: z.literal('tool'), toolCallId: z.string(), content: z.string() }),
  ]);
  /** A conversation a model call stored: the content hash of its chain node, and how many messages it holds. */
  const ConversationRefSchema = z.object({
    ref: z.string(),
    count: int(),
    /** Where the blob store put the node when it says (`BlobStore.append`: a pack file and offset); absent, under its hash. */
    at: z.string().optional(),
  });
  return { UsageSchema, ToolPolicyVerdictSchema, ToolCallSchema, ChatMessageSchema, ConversationRefSchema, ChildOutcomeSchema, ToolResultSchema };
})();

export type ToolCall = z.infer<typeof ToolCallSchema>;
export type ToolPolicyVerdict = z.infer<typeof ToolPolicyVerdictSchema>;
export type ChatMessage = z.infer<typeof ChatMessageSchema>;
export type Usage = z.infer<typeof UsageSchema>;
export type ConversationRef = z.infer<typeof ConversationRefSchema>;
export type ChildOutcome = z.infer<typeof ChildOutcomeSchema>;
export type ToolResult = z.infer<typeof ToolResultSchema>;

// The chat's plain values and guards (token counts, the continue prompt, what a recorded answer is) are in
// chat-helpers.ts, which builds no schema: workflow code imports them from there.

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
   * that asking again after a wait in the run keeps it; the run's priority (0 first, 9 last) and its tenant (its fair
   * share). Absent: not waited yet, the default priority and tenant.
   */
  quota?: { queuedAt?: number; priority?: number; tenant?: string; grant?: QuotaGrantLease };
  /**
   * A what-if fork's recorded answers of the run it was forked from, by the hash of their requests (common/replay.ts):
   * a request whose hash is here is answered with the recorded answer (`replayed`), not sent to the provider again.
   */
  replay?: ReplayedAnswers;
}

/** What the critic's provider request got, as a what-if fork reuses it: the decision it was parsed into. */
export interface RecordedCritique {
  critique: { action: CritiqueOutcome['action']; reason: string; confidence: number };
}

/** What one of a compaction's provider requests got, as a what-if fork reuses it: the summary. */
export interface RecordedSummary {
  summary: string;
}

/**
 * A what-if fork's recorded answers, by the hash of the provider request that got each (common/replay.ts): a model
 * call's response, the model critic's decision, a compaction's summary. The hash says which kind a request is.
 */
export type ReplayedAnswers = Record<string, ModelResponse | RecordedCritique | RecordedSummary>;


/**
 * What the model activity answers instead of a response when the fleet's budget has no room for the call yet: the
 * run shows the wait and asks again; no attempt of the activity's retry policy is spent.
 */
export interface QuotaWait {
  quotaWait: { waitMs: number; position: number; queuedAt: number };
  /**
   * The run goes on waiting in its `awaitQuota` activity, of a heartbeat timeout of its own, and hands the grant to the
   * model call (`quota.grant`). Absent (an activity worker of an earlier release): it asks the model call again.
   */
  waitsApart?: true;
}

/** Room in the fleet's budget, granted to call `callNumber` of a run, that its model call takes over and settles. */
export interface QuotaGrantLease {
  lease: string;
  tokens: number;
}

/** What `awaitQuota` answers once the budget has room: the grant; null on a worker without a budget (the call just runs). */
export interface QuotaGrant {
  quotaGrant: QuotaGrantLease | null;
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
  /** The attempt that answered, when a retry did (absent: the first): the run's `stream` names it. */
  attempt?: number;
  /** The hash of the request this answers (common/replay.ts): a what-if fork of the run finds its answer by it. */
  requestHash?: string;
  /** Answered from `ModelRequest.replay`, not by the provider: no tokens spent (its usage is zero). */
  replayed?: true;
  /**
   * Replayed: the prompt tokens the provider counted when the original run sent this request. The fork calibrates its
   * estimate of the next request by them as the original did, so it compacts where the original did and its requests
   * stay the original's (a zero would leave the estimate where the fork began).
   */
  recordedPromptTokens?: number;
}

/** Input of the `executeTool` activity. */
export interface ToolRequest {
  call: ToolCall;
  /** Tools this run may use (absent: every registered tool); a call to any other is answered with an error for the model. */
  allowed?: string[];
  /** 1-based number of this tool call within the run; used in summaries. */
  callNumber: number;
  /**
   * Where the `remember` and `recall` tools keep this run's memories: the input's `memory.namespace` and the run's
   * tenant, when it has either (absent: the default namespace of no tenant).
   */
  memory?: { namespace?: string; tenant?: string };
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

export interface CompactionRequest {
  model?: string;
  /** A what-if fork's recorded answers (`ModelRequest.replay`): a summarising request found here is not sent again. */
  replay?: ReplayedAnswers;
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
  /** Each summary its provider requests got, by the request's hash (common/replay.ts): a what-if fork of the run reuses them. */
  summaries?: Record<string, string>;
  /** Every summary came from the request's `replay`, none from the provider: no tokens spent (its usage is zero). */
  replayed?: true;
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
  /** The worker's custom critic the run chose (`critique: { custom }`); absent: the model critic judges. */
  critic?: string;
  /** A what-if fork's recorded answers (`ModelRequest.replay`), for the model critic: its request found here is not sent again. */
  replay?: ReplayedAnswers;
}

/** What the model critic answers: its decision, and the tokens judging it took (they count in the run's usage). */
export interface CritiqueOutcome {
  action: 'continue' | 'retry' | 'replan' | 'complete';
  reason: string;
  /** 0 to 100. */
  confidence: number;
  usage?: Usage;
  /** The model critic's: the hash of the request it sent (common/replay.ts), by which a what-if fork of the run finds this decision. */
  requestHash?: string;
  /** Answered from `CritiqueRequest.replay`, not by the provider: no tokens spent (its usage is zero). */
  replayed?: true;
}
