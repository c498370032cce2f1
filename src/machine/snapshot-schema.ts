/**
 * The run snapshot as zod schemas: its type is checked equal to `RunSnapshot` (snapshot.ts). One version, `'1.0'`, the
 * baseline: a stored snapshot of any other is refused by `readSnapshot`, naming the field. Plain types and the input's
 * own schemas (limits, budget, compaction: the snapshot keeps the resolved input); no clock, no bounds beyond the
 * input's, so a snapshot a worker wrote always loads. Built once per worker (once-per-worker.ts).
 */
import { z } from 'zod';
import { ChatMessageSchema, ChildOutcomeSchema, ConversationRefSchema, ToolCallSchema, ToolResultSchema } from '../common/chat';
import { BudgetSchema, CompactionSchema, LimitsSchema, snapshotVersion } from '../common/input';
import { oncePerWorker } from '../common/once-per-worker';
import { AgentState } from '../common/states';
import { AgentStateSchema, ApprovalReminderViewSchema, CritiqueDecisionSchema, PendingApprovalSchema, RunUsageSchema, ToolCallRecordSchema, TransitionRecordSchema } from '../common/view';

export const { WorkPhaseSchema, PhaseSchema, WorkClockSchema, ReasonSchema, RunSnapshotSchema, SnapshotVersionSchema } = oncePerWorker('machine/snapshot-schema', () => {
  const int = () => z.number().int();
  const timestamp = () => z.string();
  const ModelStepSchema = z.enum([AgentState.PLANNING, AgentState.STREAMING]);
  const workPhases = [
    z.object({ type: z.enum([AgentState.PLANNING, AgentState.STREAMING, AgentState.TOOL_EXECUTING]) }),
    z.object({ type: z.literal(AgentState.COMPACTING), returnTo: ModelStepSchema }),
  ] as const;
  const WorkPhaseSchema = z.discriminatedUnion('type', [...workPhases]);
  const PhaseSchema = z.discriminatedUnion('type', [
    ...workPhases,
    z.object({ type: z.enum([AgentState.IDLE, AgentState.PROCESSING, AgentState.CRITIQUE, AgentState.FAILED, AgentState.ABORTED]) }),
    z.object({ type: z.literal(AgentState.AWAITING_APPROVAL), pending: z.array(PendingApprovalSchema), then: WorkPhaseSchema }),
    z.object({ type: z.literal(AgentState.PAUSED), resumeTo: WorkPhaseSchema }),
    z.object({ type: z.literal(AgentState.COMPLETED), conversationOpen: z.boolean() }),
  ]);

  const OptionsSchema = z.object({
    model: z.string().optional(),
    fallbackModels: z.array(z.string()).optional(),
    returnMessages: z.boolean().optional(),
    tools: z.array(z.string()).optional(),
    concurrentTools: z.literal(true).optional(),
    plan: z.boolean(),
    critique: z.enum(['rules', 'model']),
    approvalTools: z.array(z.string()),
    approvalOnTimeout: z.literal('reject').optional(),
    approvalReminderAt: z.number().optional(),
    budget: BudgetSchema.optional(),
    keepOpenMs: int(),
    priority: int().optional(),
    critiqueMinConfidence: z.number(),
    maxOutputTokens: int().optional(),
    contextWindowTokens: int().optional(),
    compaction: CompactionSchema,
  });

  /** The working-time clock (`limits.timeoutMs`): not set (before START, after the end), running to a deadline, or stopped while a person decides. */
  const WorkClockSchema = z.discriminatedUnion('state', [
    z.object({ state: z.literal('none') }),
    z.object({ state: z.literal('running'), deadline: timestamp() }),
    z.object({ state: z.literal('stopped'), remainingMs: z.number() }),
  ]);
  /** Why the run is where it is, by what wrote it: its end, or a note on the way (the view shows the latest one's text). */
  const ReasonSchema = z.object({
    kind: z.enum(['ended', 'budget', 'compaction', 'continuation', 'loopWarning', 'modelSwitch', 'toolPolicy', 'approvalTimeout']),
    text: z.string(),
  });

  /** What `readSnapshot` returns and every transition keeps. Fields this worker does not know (from a newer one) are dropped. */
  const RunSnapshotSchema = z.object({
    schemaVersion: snapshotVersion(),
    phase: PhaseSchema,
    stateSince: timestamp(),
    counters: z.object({
      step: int(),
      loops: int(),
      toolCalls: int(),
      turns: int(),
      budgetGrants: int(),
      continuations: int(),
      failuresInARow: int(),
      overflowsInARow: int(),
      setbacksInARow: int(),
    }),
    usage: RunUsageSchema,
    limits: LimitsSchema,
    options: OptionsSchema,
    clocks: z.object({
      work: WorkClockSchema,
      approvalDeadline: timestamp().nullable(),
      approvalReminderDue: timestamp().nullable(),
      approvalReminder: ApprovalReminderViewSchema.nullable(),
      pausedDeadline: timestamp().nullable(),
      totalDeadline: timestamp().optional(),
    }),
    quotaWait: z.object({ queuedAt: z.number(), since: timestamp(), expectedAt: timestamp(), position: int() }).nullable(),
    contextWindow: int().nullable(),
    promptCalibration: z.object({ chars: z.number(), tokens: z.number() }).nullable(),
    lastFinishReason: z.string().nullable(),
    lastModel: z.string().nullable(),
    origin: z.object({ kind: z.enum(['continue', 'fork']), workflowId: z.string(), step: int() }).nullable(),
    partialText: z.string(),
    stream: z.object({ callNumber: int(), attempt: int() }).nullable(),
    lastError: z.string().nullable(),
    reason: ReasonSchema.nullable(),
    answer: z.string().nullable(),
    plan: z.string().nullable(),
    task: z.string(),
    messages: z.array(ChatMessageSchema),
    toolRound: z.object({
      pending: z.array(ToolCallSchema),
      presetResults: z.array(ToolResultSchema),
      lastResults: z.array(ToolResultSchema),
    }),
    toolSignatures: z.array(z.string()),
    loopWarned: z.boolean(),
    workflowId: z.string().optional(),
    children: z.array(ChildOutcomeSchema).optional(),
    approvalNote: z.string().nullable(),
    wrapUpSent: z.boolean(),
    chain: ConversationRefSchema.nullable(),
    pauseRequested: z.boolean(),
    lastCritique: CritiqueDecisionSchema.nullable(),
    queuedMessages: z.array(z.string()),
    logs: z.object({
      transitions: z.array(TransitionRecordSchema),
      toolCalls: z.array(ToolCallRecordSchema),
      rejectedEvents: z.array(z.object({ event: z.string(), state: AgentStateSchema, at: timestamp(), error: z.string() })),
      modelSwitches: z.array(z.object({ from: z.string().nullable(), to: z.string(), error: z.string(), step: int(), at: timestamp() })).optional(),
    }),
  });
  /** The version alone, checked first: a snapshot of another version is refused for that, not for each field it lacks. */
  const SnapshotVersionSchema = z.looseObject({ schemaVersion: snapshotVersion() });
  return { WorkPhaseSchema, PhaseSchema, WorkClockSchema, ReasonSchema, RunSnapshotSchema, SnapshotVersionSchema };
});
