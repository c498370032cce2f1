/**
 * The run as clients see it: the `state` query's answer, a curated and documented view of the run's snapshot (the
 * snapshot itself is internal and versioned; see workflows/snapshot.ts). Shared by the workflow, the client, the
 * CLI and the gateway (whose OpenAPI schema describes the same fields).
 */
import type { ChatMessage, Usage } from './chat';
import type { Limits } from './input';
import type { AgentState, CritiqueDecision } from './states';

/** One state change: the run's step log. */
export interface TransitionRecord {
  from: AgentState;
  to: AgentState;
  event: string;
  at: string;
}

/** A decision the run waits for. */
export interface PendingApproval {
  /** A tool call's id, or `budget` when the run asks to exceed its budget. */
  toolCallId: string;
  kind: 'tool' | 'budget';
  name: string;
  /** The call's arguments as JSON; for `budget`, the reason. */
  arguments: string;
  /** The tool's JSON schema, when the worker knows it: `approve` may then send edited `arguments`, which must pass it. */
  parameters?: Record<string, unknown>;
  /** `arguments`: the edited arguments a person approved the call with, as JSON. */
  decision?: { approved: boolean; feedback?: string; arguments?: string };
}

/** One tool call, as watchers see it: started when the run entered TOOL_EXECUTING, ended with TOOLS_DONE. */
export interface ToolCallRecord {
  toolCallId: string;
  name: string;
  /** The arguments as JSON, cut at 200 characters. */
  arguments: string;
  /** A person approved it with edited arguments (those above). */
  edited?: true;
  /**
   * The worker's tool policy did not simply allow it: `deny` (it never ran; `output` is the policy's message),
   * `approve` (it waited for a person) or `rewrite` (it ran with the policy's arguments, those above).
   */
  policy?: 'deny' | 'approve' | 'rewrite';
  /** The step that started it (the way into TOOL_EXECUTING), and when. */
  startStep: number;
  startedAt: string;
  /** Once it ended: the step that ended it (TOOLS_DONE), when, whether it succeeded, and its output's first 200 characters. */
  endStep: number | null;
  endedAt: string | null;
  ok: boolean | null;
  output: string | null;
}

/** Tokens and money spent by the run: its model calls, the model critic's and compaction's. */
export type RunUsage = Usage & {
  /** Model calls for planning and answering that answered (the critic's and compaction's are not counted). */
  modelCalls: number;
  costUsd: number;
};

/** The `state` query's answer. Fields are added, never changed or removed, within a major version of the package. */
export interface RunStateView {
  state: AgentState;
  /** When the run entered `state`. */
  stateSince: string;
  /** State changes so far (the index of the last entry of `transitions`, counting those of runs it continued). */
  step: number;
  /**
   * Model calls for planning and answering, counted as each starts (the `maxLoops` counter); `usage.modelCalls` counts
   * those that answered. A call the worker refused before any request (unknown tools) is not counted.
   */
  loops: number;
  toolCalls: number;
  usage: RunUsage;
  /** A run refused for bad input (its one transition is INVALID_INPUT) applied none: its limits are placeholders. */
  limits: Limits;
  /** Every state change of this run (a continued run keeps the last 100 of the runs before). */
  transitions: TransitionRecord[];
  /** Text of the latest model call: as far as it has streamed while the call runs, complete once it has answered. */
  partialText: string;
  /** The model call and attempt `partialText` belongs to; null before the first call. */
  stream: { callNumber: number; attempt: number } | null;
  /** AWAITING_APPROVAL: the decisions the run waits for (empty in every other state). */
  pendingApproval: PendingApproval[];
  /** PAUSED: the state `resume` continues in; null in every other state. */
  resumeTo: AgentState | null;
  /** A pause was requested and takes effect on the way into the next work. */
  pauseRequested: boolean;
  /** COMPLETED and still taking `sendMessage` for a follow-up turn (`keepOpenMs`). */
  conversationOpen: boolean;
  /** Answers given so far; a kept-open conversation answers once per turn. */
  turns: number;
  /** When working time (`limits.timeoutMs`) runs out; null while a person decides, when `workRemainingMs` holds what is left. */
  deadline: string | null;
  workRemainingMs: number | null;
  /** When the current approval wait exceeds `limits.approvalTimeoutMs`. */
  approvalDeadline: string | null;
  /**
   * The reminder the approval wait raised at `approval.reminderAt` of its window: when, the wait's deadline, what
   * happens then (`approval.onTimeout`) and the calls still undecided. Null when none was raised for this wait.
   */
  approvalReminder: { at: string; deadline: string; onTimeout: 'fail' | 'reject'; toolCallIds: string[] } | null;
  /** When the PAUSED run is aborted (`limits.maxPausedMs`); null when not paused or no limit is set. */
  pausedDeadline: string | null;
  /**
   * Waiting for quota: the model call waits for room in the fleet's provider budget, since `since`; room is expected at
   * `expectedAt`, with `position` calls ahead of it. Null when not waiting.
   */
  quotaWait: { since: string; expectedAt: string; position: number } | null;
  /** The last 20 tool calls, running or ended (`watch` and the SSE stream report them as toolStart and toolEnd). */
  recentToolCalls: ToolCallRecord[];
  /** Messages sent during the run, handed to the model before its next call. */
  queuedMessages: string[];
  plan: string | null;
  lastCritique: CritiqueDecision | null;
  /** The model that answered the last call, as the provider named it. */
  lastModel: string | null;
  /** The model the run calls now: its input's, or the fallback it moved to; null: the worker's default. */
  model: string | null;
  /** Each move to a fallback model (`fallbackModels`): from which (null: the worker's default), to which, why, at which step. */
  modelSwitches: Array<{ from: string | null; to: string; error: string; step: number; at: string }>;
  /**
   * The child runs of named agents this run called as tools, in the order they started: `state` is RUNNING until the
   * child ends (its own `state` query has more), then how it ended; `usage` counts against this run's (and its budget).
   */
  children: Array<{ workflowId: string; agent: string; state: string; usage: RunUsage }>;
  lastError: string | null;
  /** Why the run ended, or why it is where it is. */
  reason: string | null;
  answer: string | null;
  /** The model's last complete message: for a run aborted or ended by a limit, what it had said before the end. */
  lastText: string | null;
  /** Set when this run carries on from another: continued as new, or forked from a step. */
  origin: { kind: 'continue' | 'fork'; workflowId: string; step: number } | null;
  /** Signals and updates the run refused (the last 20), with why. */
  rejectedEvents: Array<{ event: string; state: AgentState; at: string; error: string }>;
  messageCount: number;
  /** Only when asked for (`includeMessages`): it can be large. */
  messages?: ChatMessage[];
  /**
   * Set when no worker answered and this is the copy the run stored (memo `agentState`) when it last waited for a
   * person or ended: when it was stored, and why the live state was not available.
   */
  stored?: { at: string; reason: string };
  /**
   * Set by the client while the run's work is being retried (a model call waiting out a 429, a tool failing): each
   * activity's attempt, why the last one failed, and when the next is due (from the server's pending activities).
   */
  retrying?: RetryInfo[];
}

/** An activity being retried. */
export interface RetryInfo {
  /** `callModel`, `executeTool`, `compactContext`, `critiqueAnswer`. */
  activity: string;
  /** The attempt running or due next (2 after one failure). */
  attempt: number;
  /** The last attempt's failure: its type (e.g. `ModelInvocationError.RateLimit`) and message. */
  lastFailure: { type: string | null; message: string } | null;
  /** When the next attempt starts; null while one runs. */
  nextAttemptAt: string | null;
}
