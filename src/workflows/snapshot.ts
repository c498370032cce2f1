import type { ChatMessage, ConversationRef, ToolCall, ToolResult, Usage } from '../common/chat';
import type { Budget, CompactionOptions, Limits, ResolvedInput } from '../common/input';
import { AgentState, type CritiqueDecision } from '../common/states';

export const SNAPSHOT_VERSION = 1;

export interface TransitionRecord {
  from: AgentState;
  to: AgentState;
  event: string;
  at: string;
}

export interface PendingApproval {
  /** A tool call's id, or `budget` when the run asks to exceed its budget. */
  toolCallId: string;
  kind: 'tool' | 'budget';
  name: string;
  arguments: string;
  decision?: { approved: boolean; feedback?: string };
}

/** Everything a run knows, as plain JSON: it survives replay and continue-as-new unchanged. */
export interface RunSnapshot {
  schemaVersion: typeof SNAPSHOT_VERSION;
  state: AgentState;
  stateSince: string;
  /** Number of state changes so far. */
  step: number;
  /** Model calls made for planning and answering (the `maxLoops` counter). */
  loops: number;
  toolCalls: number;
  usage: Usage & { modelCalls: number; costUsd: number };
  limits: Limits;
  options: {
    model?: string;
    tools?: string[];
    plan: boolean;
    critique: 'rules' | 'model';
    approvalTools: string[];
    budget?: Budget;
    keepOpenMs: number;
    critiqueMinConfidence: number;
    maxOutputTokens?: number;
    contextWindowTokens?: number;
    compaction: CompactionOptions;
  };
  /** How many times an `approve` of `budget` extended the budget by its original size. */
  budgetGrants: number;
  /**
   * When the run's `timeoutMs` runs out (reset by each new turn of a kept-open conversation). Null while the run waits
   * for a person (with `features.realProviders`): the working time left is then in `workRemainingMs`.
   */
  deadline: string | null;
  /** Working time left, kept while the run waits for a person; null while the clock runs. */
  workRemainingMs: number | null;
  /** When the current approval wait exceeds `limits.approvalTimeoutMs`; null when none is set or nothing waits. */
  approvalDeadline: string | null;
  /** The context window the worker reported for the model that answered, when the run's input names none. */
  contextWindow: number | null;
  /** The last request's size in characters and the prompt tokens the provider counted for it: the token estimate's base. */
  promptCalibration: { chars: number; tokens: number } | null;
  /** Why the last model response finished (`stop`, `tool_calls`, `length`, ...). */
  lastFinishReason: string | null;
  /** How many times the answer being written was cut off by the output limit and continued. */
  continuations: number;
  /** Answers given so far; a kept-open conversation answers once per turn. */
  turns: number;
  /** COMPLETED but still taking `sendMessage` (within `keepOpenMs`). */
  conversationOpen: boolean;
  /** The model that answered the last call, as the provider named it. */
  lastModel: string | null;
  /** Set when this run carries on from another: continued as new, or forked from a step. */
  origin: { kind: 'continue' | 'fork'; workflowId: string; step: number } | null;
  transitions: TransitionRecord[];
  /** Text of the latest model call: as far as it has streamed while the call runs, complete once it has answered. */
  partialText: string;
  /** Model call number and attempt that `partialText` belongs to; null before the first call. */
  stream: { callNumber: number; attempt: number } | null;
  pendingApproval: PendingApproval[];
  lastError: string | null;
  /** Why the run ended, or why it is where it is. */
  reason: string | null;
  answer: string | null;
  plan: string | null;
  messages: ChatMessage[];
  /** Calls of the last model response not yet executed. */
  pendingToolCalls: ToolCall[];
  /** Results decided without running the tool (rejected by the user, stopped by the loop guard). */
  presetResults: ToolResult[];
  lastToolResults: ToolResult[];
  /** Signatures of every tool call in order, for the repetition guard. */
  toolSignatures: string[];
  loopWarned: boolean;
  failuresInARow: number;
  overflowsInARow: number;
  /** Critique decisions in a row that asked for another attempt (retry or replan). */
  setbacksInARow: number;
  /**
   * Behaviour switched on by `patched()` markers, fixed when the run starts so that older runs replay unchanged.
   * `conversationChain` is decided by each run of a continued chain for itself.
   */
  features: { noProgressGuard: boolean; realProviders: boolean; conversationChain: boolean };
  /** The conversation the last model call stored (features.conversationChain); null when the next call must send every message. */
  chain: ConversationRef | null;
  pauseRequested: boolean;
  /** Where PAUSED resumes to, or which model step COMPACTING returns to. */
  resumeTo: AgentState | null;
  lastCritique: CritiqueDecision | null;
  /** Messages sent during the run, handed to the model before its next call. */
  queuedMessages: string[];
  /** Events that had no transition from the state they arrived in. */
  rejectedEvents: Array<{ event: string; state: AgentState; at: string; error: string }>;
}

export const DEFAULT_SYSTEM_PROMPT =
  'You are a careful assistant that completes tasks with the tools you are given. ' +
  'Use tools when they help, do not repeat a call whose result you already have, and give a short final answer.';

export function initialSnapshot(input: ResolvedInput, now: string): RunSnapshot {
  return {
    schemaVersion: SNAPSHOT_VERSION,
    state: AgentState.IDLE,
    stateSince: now,
    step: 0,
    loops: 0,
    toolCalls: 0,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, modelCalls: 0, costUsd: 0 },
    limits: input.limits,
    options: {
      model: input.model,
      tools: input.tools,
      plan: input.plan,
      critique: input.critique,
      approvalTools: input.approval?.tools ?? [],
      ...(input.budget ? { budget: input.budget } : {}),
      keepOpenMs: input.keepOpenMs,
      critiqueMinConfidence: input.critiqueMinConfidence,
      ...(input.maxOutputTokens !== undefined ? { maxOutputTokens: input.maxOutputTokens } : {}),
      ...(input.contextWindowTokens !== undefined ? { contextWindowTokens: input.contextWindowTokens } : {}),
      compaction: input.compaction,
    },
    budgetGrants: 0,
    deadline: null,
    workRemainingMs: null,
    approvalDeadline: null,
    contextWindow: null,
    promptCalibration: null,
    lastFinishReason: null,
    continuations: 0,
    turns: 0,
    conversationOpen: false,
    lastModel: null,
    origin: null,
    transitions: [],
    partialText: '',
    stream: null,
    pendingApproval: [],
    lastError: null,
    reason: null,
    answer: null,
    plan: null,
    messages: [
      { role: 'system', content: input.systemPrompt ?? DEFAULT_SYSTEM_PROMPT },
      { role: 'user', content: input.prompt },
    ],
    pendingToolCalls: [],
    presetResults: [],
    lastToolResults: [],
    toolSignatures: [],
    loopWarned: false,
    failuresInARow: 0,
    overflowsInARow: 0,
    setbacksInARow: 0,
    features: { noProgressGuard: true, realProviders: true, conversationChain: true },
    chain: null,
    pauseRequested: false,
    resumeTo: null,
    lastCritique: null,
    queuedMessages: [],
    rejectedEvents: [],
  };
}

/** A snapshot for an input that failed validation: the run starts FAILED-bound with the reason. */
export function blankSnapshot(now: string): RunSnapshot {
  return initialSnapshot(
    {
      prompt: '(invalid input)',
      limits: { maxLoops: 1, maxToolCalls: 1, timeoutMs: 1_000, maxRepeats: 2, historyEvents: 10_000 },
      plan: false,
      critique: 'rules',
      critiqueMinConfidence: 0.5,
      compaction: { threshold: 0.8, keepRecentMessages: 6 },
      keepOpenMs: 0,
    },
    now,
  );
}

/**
 * A snapshot carried from a run that began before a field existed (continue-as-new, fork): the missing fields get
 * the values that keep that run's behaviour, so it carries on as it would have.
 */
export function withDefaults(carried: RunSnapshot): RunSnapshot {
  return {
    ...carried,
    options: {
      ...carried.options,
      critiqueMinConfidence: carried.options.critiqueMinConfidence ?? 0,
      compaction: carried.options.compaction ?? { threshold: 0.8, keepRecentMessages: 6 },
    },
    workRemainingMs: carried.workRemainingMs ?? null,
    approvalDeadline: carried.approvalDeadline ?? null,
    contextWindow: carried.contextWindow ?? null,
    promptCalibration: carried.promptCalibration ?? null,
    lastFinishReason: carried.lastFinishReason ?? null,
    continuations: carried.continuations ?? 0,
    features: { ...carried.features, realProviders: carried.features?.realProviders ?? false, conversationChain: carried.features?.conversationChain ?? false },
    chain: carried.chain ?? null,
  };
}
