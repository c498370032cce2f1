/**
 * The run snapshot: each type below is its schema's `z.infer` (the schemas are in snapshot-schema.ts, built only when
 * a stored snapshot is read). One version, `'1.0'`, the baseline: a stored snapshot of any other is refused by
 * `readSnapshot`, naming the field. Plain types and the input's own schemas (limits, budget, compaction: the snapshot
 * keeps the resolved input); no clock, no bounds beyond the input's, so a snapshot a worker wrote always loads.
 */
import type { z } from 'zod';
import { fromOpenAI } from '../common/conversation';
import { parseWith, SNAPSHOT_VERSION, type ParseResult, type ResolvedInput } from '../common/input';
import { AgentState } from '../common/states';
import type { ApprovalReminderViewSchema } from '../common/view';
import type * as SnapshotSchemas from './snapshot-schema';
import type { CountersSchema, LogsSchema, ModelStepSchema, ModelSwitchSchema, PhaseSchema, QuotaWaitSchema, ReasonSchema, RunSnapshotSchema, ToolRoundSchema, WorkClockSchema, WorkPhaseSchema } from './snapshot-schema';

/** The snapshot's one schema version, the 1.0 baseline; a stored snapshot of any other is refused (`readSnapshot`). */
export { SNAPSHOT_VERSION };

export type { PendingApproval, TransitionRecord } from '../common/view';

/** The model steps: where a compaction returns to. */
export type ModelStep = z.infer<typeof ModelStepSchema>;
/** States that start new work: where a pause resumes, and where an approved budget goes on. */
export type WorkPhase = z.infer<typeof WorkPhaseSchema>;
/** The run's state with the data that exists only in it, so that no field means different things in different states. */
export type Phase = z.infer<typeof PhaseSchema>;
/** A move to a fallback model: from which (null: the worker's default), to which, why, at which step. */
export type ModelSwitch = z.infer<typeof ModelSwitchSchema>;
/** The reminder an approval wait raised: when, its deadline, what happens then, the calls undecided (view.ts). */
export type ApprovalReminder = z.infer<typeof ApprovalReminderViewSchema>;
/** The working-time clock: `none` before START and after the end, `running` to its deadline, `stopped` while a person decides. */
export type WorkClock = z.infer<typeof WorkClockSchema>;
/** Why the run ended, or a note on the way there (the view shows the latest one's text). */
export type Reason = z.infer<typeof ReasonSchema>;
/** What wrote the run's `reason`: its end, or a note on the way there. */
export type ReasonKind = Reason['kind'];
/** The tool calls of the last model response and their results. */
export type ToolRound = z.infer<typeof ToolRoundSchema>;
/** What the run has counted so far; the limits are checked against them. */
export type Counters = z.infer<typeof CountersSchema>;
/** What happened, for watchers and time travel; the machine decides nothing from them. */
export type Logs = z.infer<typeof LogsSchema>;
/** A model call's wait for the fleet's provider budget. */
export type QuotaWaitState = z.infer<typeof QuotaWaitSchema>;
/** Everything a run knows, as plain JSON: it survives replay and continue-as-new unchanged. */
export type RunSnapshot = z.infer<typeof RunSnapshotSchema>;

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
      plan: input.plan !== false,
      ...(input.plan === 'steps' ? { planSteps: true as const } : {}),
      critique: input.critique,
      approvalTools: input.approval?.tools ?? [],
      ...(input.approval?.onTimeout === 'reject' ? { approvalOnTimeout: 'reject' as const } : {}),
      ...(input.approval?.reminderAt !== undefined ? { approvalReminderAt: input.approval.reminderAt } : {}),
      ...(input.budget ? { budget: input.budget } : {}),
      keepOpenMs: input.keepOpenMs,
      ...(input.priority !== undefined ? { priority: input.priority } : {}),
      ...(input.tenant !== undefined ? { tenant: input.tenant } : {}),
      ...(input.memory !== undefined ? { memoryNamespace: input.memory.namespace } : {}),
      critiqueMinConfidence: input.critiqueMinConfidence,
      ...(input.maxOutputTokens !== undefined ? { maxOutputTokens: input.maxOutputTokens } : {}),
      ...(input.contextWindowTokens !== undefined ? { contextWindowTokens: input.contextWindowTokens } : {}),
      compaction: input.compaction,
      ...(input.timeouts ? { timeouts: input.timeouts } : {}),
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

/**
 * A stored snapshot (continue-as-new, fork) checked against the schema, or why it cannot be: each problem names its
 * field, and a snapshot of another version is refused for that alone. Runs only when a run loads a snapshot.
 */
export function readSnapshot(carried: unknown): ParseResult<RunSnapshot> {
  // Required here, not imported: a run that never reads a snapshot never builds its schemas (nor the view's).
  const { RunSnapshotSchema, SnapshotVersionSchema } = require('./snapshot-schema') as typeof SnapshotSchemas;
  const version = parseWith(SnapshotVersionSchema, carried, 'snapshot');
  return version.ok ? parseWith(RunSnapshotSchema, carried, 'snapshot') : version;
}

/** `readSnapshot`, throwing its error. */
export function loadSnapshot(carried: unknown): RunSnapshot {
  const read = readSnapshot(carried);
  if (!read.ok) throw new Error(read.error);
  return read.value;
}
