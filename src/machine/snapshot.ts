import type { ChatMessage, ChildOutcome, ConversationRef, ToolCall, ToolResult } from '../common/chat';
import { fromOpenAI } from '../common/conversation';
import { parseWith, type Budget, type CompactionOptions, type Limits, type ParseResult, type ResolvedInput } from '../common/input';
import { AgentState } from '../common/states';
import type { CritiqueDecision, PendingApproval, RunUsage, ToolCallRecord, TransitionRecord } from '../common/view';
import type { SameType } from '../common/same-type';
import { RunSnapshotSchema, SnapshotVersionSchema, type PhaseSchema, type ReasonSchema } from './snapshot-schema';
import type { z } from 'zod';
import { SNAPSHOT_VERSION } from '../common/input';

/** The snapshot's one schema version, the 1.0 baseline; a stored snapshot of any other is refused (`readSnapshot`). */
export { SNAPSHOT_VERSION };

export type { PendingApproval, TransitionRecord } from '../common/view';

/** The model steps: where a compaction returns to. */
export type ModelStep = typeof AgentState.PLANNING | typeof AgentState.STREAMING;

/** States that start new work: where a pause resumes, and where an approved budget goes on. */
export type WorkPhase =
  | { type: ModelStep | typeof AgentState.TOOL_EXECUTING }
  | { type: typeof AgentState.COMPACTING; returnTo: ModelStep };

/** The run's state with the data that exists only in it, so that no field means different things in different states. */
export type Phase =
  | WorkPhase
  | { type: typeof AgentState.IDLE | typeof AgentState.PROCESSING | typeof AgentState.CRITIQUE | typeof AgentState.FAILED | typeof AgentState.ABORTED }
  /** Waiting for decisions on `pending`; `then` is where the run goes once every one is made. */
  | { type: typeof AgentState.AWAITING_APPROVAL; pending: PendingApproval[]; then: WorkPhase }
  | { type: typeof AgentState.PAUSED; resumeTo: WorkPhase }
  /** `conversationOpen`: still taking `sendMessage` for a follow-up turn (within `keepOpenMs`). */
  | { type: typeof AgentState.COMPLETED; conversationOpen: boolean };

export interface ModelSwitch {
  from: string | null;
  to: string;
  error: string;
  step: number;
  at: string;
}

export interface ApprovalReminder {
  at: string;
  /** When the wait runs out (`limits.approvalTimeoutMs`). */
  deadline: string;
  /** What happens then (`approval.onTimeout`). */
  onTimeout: 'fail' | 'reject';
  toolCallIds: string[];
}

/** The working-time clock: `none` before START and after the end, `running` to its deadline, `stopped` while a person decides. */
export type WorkClock = { state: 'none' } | { state: 'running'; deadline: string } | { state: 'stopped'; remainingMs: number };

/** What wrote the run's `reason`: its end, or a note on the way there. */
export type ReasonKind = 'ended' | 'budget' | 'compaction' | 'continuation' | 'loopWarning' | 'modelSwitch' | 'toolPolicy' | 'approvalTimeout';

export interface Reason {
  kind: ReasonKind;
  text: string;
}

export interface ToolRound {
  /** Calls of the last model response not yet executed. */
  pending: ToolCall[];
  /** Results decided without running the tool (rejected by the user, stopped by the loop guard). */
  presetResults: ToolResult[];
  /** The results of the last calls that ran, until the next model response. */
  lastResults: ToolResult[];
}

/** What the run has counted so far; the limits are checked against them. */
export interface Counters {
  /** Number of state changes so far. */
  step: number;
  /** Model calls made for planning and answering (the `maxLoops` counter). */
  loops: number;
  /** Tool calls that ran (the `maxToolCalls` counter). */
  toolCalls: number;
  /** Answers given so far; a kept-open conversation answers once per turn. */
  turns: number;
  /** How many times an `approve` of `budget` extended the budget by its original size. */
  budgetGrants: number;
  /** How many times the answer being written was cut off by the output limit and continued. */
  continuations: number;
  /** Tool steps in a row with a failed call (the rule critic replans at 2). */
  failuresInARow: number;
  /** Context overflows in a row (compactions that did not make room). */
  overflowsInARow: number;
  /** Critique decisions in a row that asked for another attempt (retry or replan). */
  setbacksInARow: number;
}

/** What happened, for watchers and time travel; the machine decides nothing from them. */
export interface Logs {
  /** Each state change; a continued run carries the last 100 (the step counter still counts them all). */
  transitions: TransitionRecord[];
  /** The last tool calls, started and ended (`recentToolCalls` in the view). */
  toolCalls: ToolCallRecord[];
  /** Events that had no transition from the state they arrived in. */
  rejectedEvents: Array<{ event: string; state: AgentState; at: string; error: string }>;
  /** Each move to a fallback model: from which, to which, why, at which step; absent until the first. */
  modelSwitches?: ModelSwitch[];
}

export interface QuotaWaitState {
  queuedAt: number;
  since: string;
  expectedAt: string;
  position: number;
}

/** Everything a run knows, as plain JSON: it survives replay and continue-as-new unchanged. */
export interface RunSnapshot {
  schemaVersion: typeof SNAPSHOT_VERSION;
  phase: Phase;
  stateSince: string;
  counters: Counters;
  usage: RunUsage;
  limits: Limits;
  options: {
    /** The model in use: the input's, then each fallback the run moved to; absent: the worker's default. */
    model?: string;
    /** Models still to fall back to, in order (the input's `fallbackModels` less those already moved to). */
    fallbackModels?: string[];
    /** The result carries the conversation. */
    returnMessages?: boolean;
    tools?: string[];
    /** The input's `toolOrder: 'concurrent'`: a turn's calls all run at once (absent: in the model's order, tool-order.ts). */
    concurrentTools?: true;
    plan: boolean;
    critique: 'rules' | 'model';
    approvalTools: string[];
    /** `approval.onTimeout`, only when it is `reject` (absent: the run fails). */
    approvalOnTimeout?: 'reject';
    /** `approval.reminderAt`: the share of `limits.approvalTimeoutMs` at which an undecided wait raises a reminder. */
    approvalReminderAt?: number;
    budget?: Budget;
    keepOpenMs: number;
    /** Its place in the fleet's provider budget, 0 first; absent: the budget's default (5). */
    priority?: number;
    /** 0 to 100, as critics answer (`lastCritique.confidence`). */
    critiqueMinConfidence: number;
    maxOutputTokens?: number;
    contextWindowTokens?: number;
    compaction: CompactionOptions;
  };
  /** The run's clocks (clocks.ts moves them on each state change; the workflow's timer fires at the earliest). */
  clocks: {
    /** Working time (`limits.timeoutMs`, reset by each new turn of a kept-open conversation). */
    work: WorkClock;
    /** When the current approval wait exceeds `limits.approvalTimeoutMs`; null when none is set or nothing waits. */
    approvalDeadline: string | null;
    /** When the current approval wait raises its reminder (`approval.reminderAt`); null when none is due or it was raised. */
    approvalReminderDue: string | null;
    /** The reminder the current approval wait raised: when, and the calls undecided then; null when none. */
    approvalReminder: ApprovalReminder | null;
    /** When a PAUSED run is aborted (`limits.maxPausedMs`); null when not paused or no limit is set. */
    pausedDeadline: string | null;
    /** When the run's total time runs out (`limits.totalTimeoutMs`, from its start); absent when none is set. */
    totalDeadline?: string;
  };
  /**
   * The model call waits for the fleet's provider budget: its place in the queue since `queuedAt` (epoch ms, the
   * worker's), when it began to wait, when room is expected and how many calls are ahead. Null when not waiting.
   */
  quotaWait: QuotaWaitState | null;
  /** The context window the worker reported for the model that answered, when the run's input names none. */
  contextWindow: number | null;
  /** The last request's size in characters and the prompt tokens the provider counted for it: the token estimate's base. */
  promptCalibration: { chars: number; tokens: number } | null;
  /** Why the last model response finished (`stop`, `tool_calls`, `length`, ...). */
  lastFinishReason: string | null;
  /** The model that answered the last call, as the provider named it. */
  lastModel: string | null;
  /** Set when this run carries on from another: continued as new, or forked from a step. */
  origin: { kind: 'continue' | 'fork'; workflowId: string; step: number } | null;
  /** Text of the latest model call: as far as it has streamed while the call runs, complete once it has answered. */
  partialText: string;
  /** Model call number and attempt that `partialText` belongs to; null before the first call. */
  stream: { callNumber: number; attempt: number } | null;
  lastError: string | null;
  /** Why the run ended, or why it is where it is (the latest note: budget, compaction, loop warning, ...). */
  reason: Reason | null;
  answer: string | null;
  plan: string | null;
  /**
   * The task of the current turn: its prompt (the input's, then each follow-up message's), which the critic, the plan
   * and compaction judge by; the messages before it are the context it came in.
   */
  task: string;
  messages: ChatMessage[];
  /**
   * The tool calls of the last model response, from PROCESSING through approval, a pause and TOOL_EXECUTING, and their
   * results, which CRITIQUE and the next request read.
   */
  toolRound: ToolRound;
  /** Signatures of every tool call in order, for the repetition guard. */
  toolSignatures: string[];
  loopWarned: boolean;
  /** This run's workflow id, set by the workflow: the ids of the children its calls of named agents start begin with it. */
  workflowId?: string;
  /** The child runs of named agents this run called, in the order they started; absent until the first. */
  children?: ChildOutcome[];
  /**
   * What a person decided on the calls now running (feedback, edited arguments), told to the model in one user
   * message after their results; null when there is nothing to tell.
   */
  approvalNote: string | null;
  /** The model was told it is close to a limit (`limits.wrapUpAt`); it is told once. */
  wrapUpSent: boolean;
  /** The conversation the last model call stored (chain.ts); null when the next call must send every message. */
  chain: ConversationRef | null;
  pauseRequested: boolean;
  lastCritique: CritiqueDecision | null;
  /** Messages sent during the run, handed to the model before its next call. */
  queuedMessages: string[];
  logs: Logs;
}

export const DEFAULT_SYSTEM_PROMPT =
  'You are a careful assistant that completes tasks with the tools you are given. ' +
  'Use tools when they help, do not repeat a call whose result you already have, and give a short final answer.';

export function initialSnapshot(input: ResolvedInput, now: string): RunSnapshot {
  const prior = input.messages ? fromOpenAI(input.messages) : { system: undefined, messages: [] };
  return {
    schemaVersion: SNAPSHOT_VERSION,
    phase: { type: AgentState.IDLE },
    stateSince: now,
    counters: { step: 0, loops: 0, toolCalls: 0, turns: 0, budgetGrants: 0, continuations: 0, failuresInARow: 0, overflowsInARow: 0, setbacksInARow: 0 },
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, modelCalls: 0, costUsd: 0 },
    limits: input.limits,
    options: {
      model: input.model,
      ...(input.fallbackModels.length > 0 ? { fallbackModels: input.fallbackModels } : {}),
      ...(input.returnMessages ? { returnMessages: true } : {}),
      tools: input.tools,
      ...(input.toolOrder === 'concurrent' ? { concurrentTools: true as const } : {}),
      plan: input.plan,
      critique: input.critique,
      approvalTools: input.approval?.tools ?? [],
      ...(input.approval?.onTimeout === 'reject' ? { approvalOnTimeout: 'reject' as const } : {}),
      ...(input.approval?.reminderAt !== undefined ? { approvalReminderAt: input.approval.reminderAt } : {}),
      ...(input.budget ? { budget: input.budget } : {}),
      keepOpenMs: input.keepOpenMs,
      ...(input.priority !== undefined ? { priority: input.priority } : {}),
      critiqueMinConfidence: input.critiqueMinConfidence,
      ...(input.maxOutputTokens !== undefined ? { maxOutputTokens: input.maxOutputTokens } : {}),
      ...(input.contextWindowTokens !== undefined ? { contextWindowTokens: input.contextWindowTokens } : {}),
      compaction: input.compaction,
    },
    clocks: { work: { state: 'none' }, approvalDeadline: null, approvalReminderDue: null, approvalReminder: null, pausedDeadline: null },
    quotaWait: null,
    contextWindow: null,
    promptCalibration: null,
    lastFinishReason: null,
    lastModel: null,
    origin: null,
    partialText: '',
    stream: null,
    lastError: null,
    reason: null,
    answer: null,
    plan: null,
    task: input.prompt,
    messages: [
      { role: 'system', content: input.systemPrompt ?? prior.system ?? DEFAULT_SYSTEM_PROMPT },
      ...prior.messages,
      { role: 'user', content: input.prompt },
    ],
    toolRound: { pending: [], presetResults: [], lastResults: [] },
    toolSignatures: [],
    loopWarned: false,
    approvalNote: null,
    wrapUpSent: false,
    chain: null,
    pauseRequested: false,
    lastCritique: null,
    queuedMessages: [],
    logs: { transitions: [], toolCalls: [], rejectedEvents: [] },
  };
}

/** A snapshot for an input that failed validation: the run starts FAILED-bound with the reason. */
export function blankSnapshot(now: string): RunSnapshot {
  return initialSnapshot(
    {
      prompt: '(invalid input)',
      limits: { maxLoops: 1, maxToolCalls: 1, timeoutMs: 1_000, approvalTimeoutMs: null, maxPausedMs: null, maxRepeats: 2, historyEvents: 10_000, wrapUpAt: 1, onLimit: 'fail' },
      plan: false,
      toolOrder: 'model',
      critique: 'rules',
      critiqueMinConfidence: 50,
      compaction: { threshold: 0.8, keepRecentMessages: 6 },
      keepOpenMs: 0,
      fallbackModels: [],
      returnMessages: false,
    },
    now,
  );
}

// The schema and the type say the same, down to the optional fields of the groups.
type Schema = z.infer<typeof RunSnapshotSchema>;
const _sameSnapshot: SameType<Schema, RunSnapshot> = true;
const _sameGroups: SameType<Schema['options'], RunSnapshot['options']> = true;
const _samePhase: SameType<z.infer<typeof PhaseSchema>, Phase> = true;
const _sameNew: [SameType<Schema['logs'], Logs>, SameType<Schema['counters'], Counters>, SameType<Schema['clocks'], RunSnapshot['clocks']>, SameType<Schema['toolRound'], ToolRound>, SameType<z.infer<typeof ReasonSchema>, Reason>] = [true, true, true, true, true];
void [_sameSnapshot, _sameGroups, _samePhase, _sameNew];

/**
 * A stored snapshot (continue-as-new, fork) checked against the schema, or why it cannot be: each problem names its
 * field, and a snapshot of another version is refused for that alone. Runs only when a run loads a snapshot.
 */
export function readSnapshot(carried: unknown): ParseResult<RunSnapshot> {
  const version = parseWith(SnapshotVersionSchema, carried, 'snapshot');
  return version.ok ? parseWith(RunSnapshotSchema, carried, 'snapshot') : version;
}

/** `readSnapshot`, throwing its error. */
export function loadSnapshot(carried: unknown): RunSnapshot {
  const read = readSnapshot(carried);
  if (!read.ok) throw new Error(read.error);
  return read.value;
}
