import type { ChatMessage, ChildOutcome, ConversationRef, ToolCall, ToolResult } from '../common/chat';
import { fromOpenAI } from '../common/conversation';
import { parseWith, type Budget, type CompactionOptions, type Limits, type ParseResult, type ResolvedInput } from '../common/input';
import { AgentState, isTerminal } from '../common/states';
import type { CritiqueDecision, PendingApproval, RunUsage, ToolCallRecord, TransitionRecord } from '../common/view';
import type { SameType } from '../common/same-type';
import { StoredSnapshotSchema, type PhaseSchema, type ReasonSchema, type StoredSnapshotV1, type RunSnapshotSchema, type SnapshotV2, type StoredSnapshotV2, type StoredSnapshotV3 } from './snapshot-schema';
import type { z } from 'zod';
import { LATEST_MACHINE_VERSION, type PatchResult, versionOfPatches } from './versions';

/** The patch results snapshots carried before `machineVersion` (absent ones were off). */
export type LegacyFeatures = Partial<Record<PatchResult | 'conversationChain', boolean>>;

/**
 * 3: the counters, the logs, the clocks, the tool round and the reason's kind are groups of their own; 2: the state and the data only it has
 * are one tagged union (`phase`). Older versions load through `loadSnapshot`.
 */
export const SNAPSHOT_VERSION = 3;

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

/**
 * The working-time clock: `none` before START and after the end (or in versions whose workflow keeps the timer, before
 * START), `running` to its deadline, `stopped` while a person decides (machine versions with `clocks: 'workingTime'`).
 */
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
    /** Confidences are on 0 to 100; snapshots without it kept them on 0 to 1 and migrate (`fillAddedV3Fields`). */
    percentConfidence: true;
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
  /** The machine version this run follows (machine/versions.ts), chosen once when it starts. */
  machineVersion: number;
  /**
   * The workflow's own patch results the machine passes on: `conversationChain` is decided by each run of a continued
   * chain for itself (chain.ts). Snapshots from before `machineVersion` carry every patch result here (`LegacyFeatures`).
   */
  features: { conversationChain: boolean };
  /** This run's workflow id, set by the workflow in runs whose calls of named agents start child runs: its children's ids begin with it. */
  workflowId?: string;
  /** The child runs of named agents this run called, in the order they started; absent until the first. */
  children?: ChildOutcome[];
  /**
   * What a person decided on the calls now running (feedback, edited arguments), told to the model in one user
   * message after their results (`decisionsToModel: 'approvalNote'`); null when there is nothing to tell.
   */
  approvalNote: string | null;
  /** The model was told it is close to a limit (`limits.wrapUpAt`); it is told once. */
  wrapUpSent: boolean;
  /** The conversation the last model call stored (features.conversationChain); null when the next call must send every message. */
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
      percentConfidence: true,
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
    machineVersion: LATEST_MACHINE_VERSION,
    features: { conversationChain: true },
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

/** A version-1 snapshot (runs begun before `phase`): the state and its data in separate fields. */
export type SnapshotV1 = StoredSnapshotV1;

// The schema and the type say the same, down to the optional fields of the groups.
type Schema = z.infer<typeof RunSnapshotSchema>;
const _sameSnapshot: SameType<Schema, RunSnapshot> = true;
const _sameGroups: [SameType<Schema['options'], RunSnapshot['options']>, SameType<Schema['features'], RunSnapshot['features']>] = [true, true];
const _samePhase: SameType<z.infer<typeof PhaseSchema>, Phase> = true;
const _sameNew: [SameType<Schema['logs'], Logs>, SameType<Schema['counters'], Counters>, SameType<Schema['clocks'], RunSnapshot['clocks']>, SameType<Schema['toolRound'], ToolRound>, SameType<z.infer<typeof ReasonSchema>, Reason>] = [true, true, true, true, true];
void [_sameSnapshot, _sameGroups, _samePhase, _sameNew];

/**
 * A stored snapshot (continue-as-new, fork) checked against the schema of its version and brought to the current one,
 * or why it cannot be: each problem names its field. Runs only when a run loads a snapshot, never per transition.
 */
export function readSnapshot(carried: unknown): ParseResult<RunSnapshot> {
  const read = parseWith(StoredSnapshotSchema, carried, 'snapshot');
  if (!read.ok) return read;
  const stored = read.value;
  if (stored.schemaVersion === 3) return { ok: true, value: fillAddedV3Fields(stored) };
  const v2 = stored.schemaVersion === 1 ? v1ToV2(stored) : stored;
  return { ok: true, value: fillAddedV3Fields(v2ToV3(fillAddedFields(v2))) };
}

/**
 * Fields added to version 3 without a version bump, absent from snapshots written before them:
 * - `task`: the first user message, the task those runs judged by.
 * - `options.percentConfidence`: those runs kept confidences on 0 to 1; `critiqueMinConfidence` and
 *   `lastCritique.confidence` are brought to 0 to 100.
 */
function fillAddedV3Fields(stored: StoredSnapshotV3 | Omit<StoredSnapshotV3, 'task'>): RunSnapshot {
  const task = 'task' in stored && stored.task !== undefined ? stored.task : firstUserText(stored.messages);
  if (stored.options.percentConfidence) return { ...stored, task, options: { ...stored.options, percentConfidence: true } };
  const percent = (c: number) => Math.round(c * 10_000) / 100;
  const lastCritique = stored.lastCritique && { ...stored.lastCritique, confidence: percent(stored.lastCritique.confidence) };
  return { ...stored, task, lastCritique, options: { ...stored.options, critiqueMinConfidence: percent(stored.options.critiqueMinConfidence), percentConfidence: true } };
}

const firstUserText = (messages: ChatMessage[]): string => messages.find((m) => m.role === 'user')?.content ?? '';

/** `readSnapshot`, throwing its error. */
export function loadSnapshot(carried: unknown): RunSnapshot {
  const read = readSnapshot(carried);
  if (!read.ok) throw new Error(read.error);
  return read.value;
}

/**
 * Migration 2 -> 3: the counters, the clocks, the tool round and the reason become groups.
 * - `step`, `loops`, `toolCalls`, `turns`, `budgetGrants`, `continuations` and the in-a-row counts move into `counters`.
 * - `transitions`, `toolLog` (now `logs.toolCalls`), `rejectedEvents` and `modelSwitches` move into `logs`.
 * - `deadline` and `workRemainingMs` become the working clock: running to the deadline, stopped with the time left
 *   (a person decides), or none (both null: before START, after the end).
 * - `approvalDeadline`, `approvalReminderDue`, `approvalReminder`, `pausedDeadline` move into `clocks` unchanged.
 * - `pendingToolCalls`, `presetResults`, `lastToolResults` become `toolRound` { pending, presetResults, lastResults }.
 * - `reason` keeps its text and gets the kind its writer gives it now, told from the text (`reasonKind`); only the text
 *   is ever read back, so a kind told wrongly changes nothing a run does.
 */
export function v2ToV3(v2: SnapshotV2): Omit<StoredSnapshotV3, 'task'> {
  const { deadline, workRemainingMs, approvalDeadline, approvalReminderDue, approvalReminder, pausedDeadline, pendingToolCalls, presetResults, lastToolResults, reason, ...rest } = v2;
  const { step, loops, toolCalls, turns, budgetGrants, continuations, failuresInARow, overflowsInARow, setbacksInARow, transitions, toolLog, rejectedEvents, modelSwitches, ...ungrouped } = rest;
  const work: WorkClock = deadline !== null ? { state: 'running', deadline } : workRemainingMs !== null ? { state: 'stopped', remainingMs: workRemainingMs } : { state: 'none' };
  return {
    ...ungrouped,
    schemaVersion: SNAPSHOT_VERSION,
    counters: { step, loops, toolCalls, turns, budgetGrants, continuations, failuresInARow, overflowsInARow, setbacksInARow },
    logs: { transitions, toolCalls: toolLog, rejectedEvents, ...(modelSwitches ? { modelSwitches } : {}) },
    clocks: { work, approvalDeadline, approvalReminderDue, approvalReminder, pausedDeadline },
    toolRound: { pending: pendingToolCalls, presetResults, lastResults: lastToolResults },
    reason: reason === null ? null : { kind: reasonKind(v2.phase, reason), text: reason },
  };
}

/** The kind of a version-2 reason, from the phase it was in and the wording of the note that wrote it. */
function reasonKind(phase: Phase, text: string): ReasonKind {
  if (isTerminal(phase.type)) return 'ended';
  if (phase.type === AgentState.AWAITING_APPROVAL && phase.pending.some((p) => p.kind === 'budget')) return 'budget';
  const notes: Array<[ReasonKind, (t: string) => boolean]> = [
    ['toolPolicy', (t) => t.startsWith('tool policy: ')],
    ['continuation', (t) => t.startsWith('continuing an answer cut off by ')],
    ['loopWarning', (t) => t.startsWith('warned the model: ')],
    ['compaction', (t) => t.startsWith('compacting first: ')],
    ['approvalTimeout', (t) => t.endsWith(': rejected (approval.onTimeout is reject)')],
    ['modelSwitch', (t) => t.includes(' is unavailable, switched to ')],
  ];
  // Otherwise the end of a kept-open conversation's last turn, which the next turn keeps until a note replaces it.
  return notes.find(([, is]) => is(text))?.[0] ?? 'ended';
}

/** Migration 1 -> 2: a version-1 snapshot's state and its data become the phase. */
function v1ToV2(v1: StoredSnapshotV1): StoredSnapshotV2 {
  const { state, resumeTo, pendingApproval, conversationOpen, ...rest } = v1;
  return { ...rest, schemaVersion: 2, phase: phaseOfV1(state, resumeTo, pendingApproval ?? [], conversationOpen ?? false) };
}

function phaseOfV1(state: AgentState, resumeTo: AgentState | null, pending: PendingApproval[], conversationOpen: boolean): Phase {
  const modelStep: ModelStep = resumeTo === AgentState.PLANNING ? AgentState.PLANNING : AgentState.STREAMING;
  const work = (to: AgentState | null): WorkPhase =>
    to === AgentState.COMPACTING ? { type: to, returnTo: AgentState.STREAMING } : to === AgentState.PLANNING || to === AgentState.TOOL_EXECUTING ? { type: to } : { type: AgentState.STREAMING };
  switch (state) {
    case AgentState.PAUSED:
      return { type: state, resumeTo: work(resumeTo) };
    case AgentState.COMPACTING:
      return { type: state, returnTo: modelStep };
    case AgentState.AWAITING_APPROVAL:
      return { type: state, pending, then: pending.some((p) => p.kind === 'budget') ? work(resumeTo) : { type: AgentState.TOOL_EXECUTING } };
    case AgentState.COMPLETED:
      return { type: state, conversationOpen };
    default:
      return { type: state };
  }
}

/**
 * Migration 2 (as older workers wrote it) -> 2 (now): fields added to version 2 (and late in version 1) without a
 * version bump, absent from snapshots written before them, get the value that keeps that run's behaviour:
 * - `options.critiqueMinConfidence` 0: no confidence threshold existed, so every critic `complete` was taken.
 * - `options.compaction` threshold 0.8, 6 recent messages kept: the input's defaults, which those runs compacted with.
 * - `limits.wrapUpAt` 1: the model is never told to wrap up (there was no wrap-up note).
 * - `limits.onLimit` `fail`: the only way a limit ended a run.
 * - `machineVersion`, from the patch results the snapshot carried in `features` (absent ones were off: the run began
 *   before those patches), so it keeps the machine it had (machine/versions.ts); `features` keeps `conversationChain`.
 * - `workRemainingMs` null: the working clock ran (it did not stop for a person).
 * - `approvalDeadline`, `approvalReminderDue`, `approvalReminder`, `pausedDeadline` null: no such wait had a limit.
 * - `quotaWait` null: no fleet quota existed, so no call waited for one.
 * - `contextWindow`, `promptCalibration`, `lastFinishReason` null: not known yet; the next model call reports them.
 * - `continuations` 0, `wrapUpSent` false, `approvalNote` null: nothing was continued, sent or left to tell.
 * - `toolLog` []: no tool calls were recorded for watchers; the next ones are.
 * - `chain` null: no stored conversation; the next call sends every message.
 */
function fillAddedFields(stored: StoredSnapshotV2): SnapshotV2 {
  return {
    ...stored,
    options: {
      ...stored.options,
      critiqueMinConfidence: stored.options.critiqueMinConfidence ?? 0,
      compaction: stored.options.compaction ?? { threshold: 0.8, keepRecentMessages: 6 },
    },
    workRemainingMs: stored.workRemainingMs ?? null,
    approvalDeadline: stored.approvalDeadline ?? null,
    approvalReminderDue: stored.approvalReminderDue ?? null,
    approvalReminder: stored.approvalReminder ?? null,
    pausedDeadline: stored.pausedDeadline ?? null,
    quotaWait: stored.quotaWait ?? null,
    contextWindow: stored.contextWindow ?? null,
    promptCalibration: stored.promptCalibration ?? null,
    lastFinishReason: stored.lastFinishReason ?? null,
    continuations: stored.continuations ?? 0,
    limits: { ...stored.limits, wrapUpAt: stored.limits.wrapUpAt ?? 1, onLimit: stored.limits.onLimit ?? 'fail' },
    // Before machine versions, the snapshot carried the patch results the machine branched on: they name its version.
    machineVersion: stored.machineVersion ?? versionOfPatches(stored.features),
    features: { conversationChain: stored.features.conversationChain ?? false },
    approvalNote: stored.approvalNote ?? null,
    wrapUpSent: stored.wrapUpSent ?? false,
    toolLog: stored.toolLog ?? [],
    chain: stored.chain ?? null,
  };
}
