/**
 * The run snapshot as zod schemas: the current version (3; its type is checked equal to `RunSnapshot`, snapshot.ts) and
 * each version as workers stored it, which `loadSnapshot` validates before it migrates. Plain types and the
 * input's own schemas (limits, budget, compaction: the snapshot keeps the resolved input); no clock, no bounds beyond
 * the input's, so a snapshot a worker wrote always loads. Built once per worker (once-per-worker.ts).
 */
import { z } from 'zod';
import { ChatMessageSchema, ChildOutcomeSchema, ConversationRefSchema, ToolCallSchema, ToolResultSchema } from '../common/chat';
import { BudgetSchema, CompactionSchema, LimitsSchema } from '../common/input';
import { oncePerWorker } from '../common/once-per-worker';
import { AgentState } from '../common/states';
import { LATEST_MACHINE_VERSION } from './versions';
import { AgentStateSchema, ApprovalReminderViewSchema, CritiqueDecisionSchema, PendingApprovalSchema, RunUsageSchema, ToolCallRecordSchema, TransitionRecordSchema } from '../common/view';

export const { WorkPhaseSchema, PhaseSchema, WorkClockSchema, ReasonSchema, RunSnapshotSchema, RunSnapshotV2Schema, StoredSnapshotSchema } = oncePerWorker('machine/snapshot-schema', () => {
  const int = () => z.number().int();
  // A version this code does not know is a snapshot from newer code: refused when it loads, naming the field, not at its first transition.
  const machineVersion = () => int().min(1).max(LATEST_MACHINE_VERSION);
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
  const FeaturesSchema = z.object({ conversationChain: z.boolean() });
  /** The patch results snapshots carried before `machineVersion` (absent ones were off); they name the machine version. */
  const LegacyFeaturesSchema = z
    .object({
      noProgressGuard: z.boolean(),
      realProviders: z.boolean(),
      conversationChain: z.boolean(),
      wrapUp: z.boolean(),
      approvalNotes: z.boolean(),
      unknownToolsUncounted: z.boolean(),
      modelFallback: z.boolean(),
      interrupt: z.boolean(),
      toolCritique: z.boolean(),
      parallelAgents: z.boolean(),
    })
    .partial();
  const timestamp = () => z.string();

  /** Version 2 as the newest version-2 worker wrote it: one flat object. */
  const V2Schema = z.object({
    schemaVersion: z.literal(2),
    phase: PhaseSchema,
    stateSince: timestamp(),
    step: int(),
    loops: int(),
    toolCalls: int(),
    usage: RunUsageSchema,
    limits: LimitsSchema,
    options: OptionsSchema,
    budgetGrants: int(),
    deadline: timestamp().nullable(),
    workRemainingMs: z.number().nullable(),
    approvalDeadline: timestamp().nullable(),
    approvalReminderDue: timestamp().nullable(),
    approvalReminder: ApprovalReminderViewSchema.nullable(),
    pausedDeadline: timestamp().nullable(),
    quotaWait: z.object({ queuedAt: z.number(), since: timestamp(), expectedAt: timestamp(), position: int() }).nullable(),
    contextWindow: int().nullable(),
    promptCalibration: z.object({ chars: z.number(), tokens: z.number() }).nullable(),
    lastFinishReason: z.string().nullable(),
    continuations: int(),
    turns: int(),
    lastModel: z.string().nullable(),
    modelSwitches: z.array(z.object({ from: z.string().nullable(), to: z.string(), error: z.string(), step: int(), at: timestamp() })).optional(),
    origin: z.object({ kind: z.enum(['continue', 'fork']), workflowId: z.string(), step: int() }).nullable(),
    transitions: z.array(TransitionRecordSchema),
    partialText: z.string(),
    stream: z.object({ callNumber: int(), attempt: int() }).nullable(),
    lastError: z.string().nullable(),
    reason: z.string().nullable(),
    answer: z.string().nullable(),
    plan: z.string().nullable(),
    messages: z.array(ChatMessageSchema),
    toolLog: z.array(ToolCallRecordSchema),
    pendingToolCalls: z.array(ToolCallSchema),
    presetResults: z.array(ToolResultSchema),
    lastToolResults: z.array(ToolResultSchema),
    toolSignatures: z.array(z.string()),
    loopWarned: z.boolean(),
    failuresInARow: int(),
    overflowsInARow: int(),
    setbacksInARow: int(),
    machineVersion: machineVersion(),
    features: FeaturesSchema,
    workflowId: z.string().optional(),
    children: z.array(ChildOutcomeSchema).optional(),
    approvalNote: z.string().nullable(),
    wrapUpSent: z.boolean(),
    chain: ConversationRefSchema.nullable(),
    pauseRequested: z.boolean(),
    lastCritique: CritiqueDecisionSchema.nullable(),
    queuedMessages: z.array(z.string()),
    rejectedEvents: z.array(z.object({ event: z.string(), state: AgentStateSchema, at: timestamp(), error: z.string() })),
  });

  /**
   * Version 2 as any worker wrote it: the fields added without a version bump may be missing (`fillAddedFields` in
   * snapshot.ts gives them their values). Fields this worker does not know (from a newer one) are kept, unread.
   */
  const StoredV2Schema = V2Schema.partial({
    workRemainingMs: true,
    approvalDeadline: true,
    approvalReminderDue: true,
    approvalReminder: true,
    pausedDeadline: true,
    quotaWait: true,
    contextWindow: true,
    promptCalibration: true,
    lastFinishReason: true,
    continuations: true,
    approvalNote: true,
    wrapUpSent: true,
    toolLog: true,
    chain: true,
  })
    .extend({
      options: OptionsSchema.partial({ critiqueMinConfidence: true, compaction: true }),
      limits: LimitsSchema.extend({ wrapUpAt: z.number().optional(), onLimit: LimitsSchema.shape.onLimit.unwrap().optional() }),
      machineVersion: machineVersion().optional(),
      features: LegacyFeaturesSchema,
    })
    .loose();

  /** Version 1 (runs begun before `phase`): the state and its data in separate fields. */
  const StoredV1Schema = StoredV2Schema.omit({ schemaVersion: true, phase: true })
    .extend({
      schemaVersion: z.literal(1),
      state: AgentStateSchema,
      resumeTo: AgentStateSchema.nullable(),
      pendingApproval: z.array(PendingApprovalSchema).optional(),
      conversationOpen: z.boolean().optional(),
    })
    .loose();

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

  /** The current version (3): what `loadSnapshot` returns and every transition keeps. Version 2's fields, less those now in groups. */
  const RunSnapshotSchema = V2Schema.omit({
    deadline: true,
    workRemainingMs: true,
    approvalDeadline: true,
    approvalReminderDue: true,
    approvalReminder: true,
    pausedDeadline: true,
    pendingToolCalls: true,
    presetResults: true,
    lastToolResults: true,
    step: true,
    loops: true,
    toolCalls: true,
    turns: true,
    budgetGrants: true,
    continuations: true,
    failuresInARow: true,
    overflowsInARow: true,
    setbacksInARow: true,
    transitions: true,
    toolLog: true,
    rejectedEvents: true,
    modelSwitches: true,
  }).extend({
    schemaVersion: z.literal(3),
    logs: z.object({
      transitions: V2Schema.shape.transitions,
      toolCalls: V2Schema.shape.toolLog,
      rejectedEvents: V2Schema.shape.rejectedEvents,
      modelSwitches: V2Schema.shape.modelSwitches,
    }),
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
    clocks: z.object({
      work: WorkClockSchema,
      approvalDeadline: timestamp().nullable(),
      approvalReminderDue: timestamp().nullable(),
      approvalReminder: ApprovalReminderViewSchema.nullable(),
      pausedDeadline: timestamp().nullable(),
      totalDeadline: timestamp().optional(),
    }),
    toolRound: z.object({
      pending: z.array(ToolCallSchema),
      presetResults: z.array(ToolResultSchema),
      lastResults: z.array(ToolResultSchema),
    }),
    reason: ReasonSchema.nullable(),
    task: z.string(),
    /** Version 3's options: version 2's, and the confidences' scale (0 to 100; absent before it, 0 to 1). */
    options: OptionsSchema.extend({ percentConfidence: z.literal(true) }),
  });
  /**
   * Version 3 as any worker wrote it: fields this worker does not know (from a newer one) are dropped; fields added
   * since may be missing (`fillAddedV3Fields` in snapshot.ts gives them their values).
   */
  const StoredV3Schema = RunSnapshotSchema.partial({ task: true }).extend({ options: OptionsSchema.extend({ percentConfidence: z.literal(true).optional() }) });

  /** Any snapshot this worker loads, by its version. */
  const StoredSnapshotSchema = z.discriminatedUnion('schemaVersion', [StoredV1Schema, StoredV2Schema, StoredV3Schema]);
  return { WorkPhaseSchema, PhaseSchema, WorkClockSchema, ReasonSchema, RunSnapshotSchema, RunSnapshotV2Schema: V2Schema, StoredSnapshotSchema };
});

export type StoredSnapshot = z.infer<typeof StoredSnapshotSchema>;
export type StoredSnapshotV1 = Extract<StoredSnapshot, { schemaVersion: 1 }>;
export type StoredSnapshotV2 = Extract<StoredSnapshot, { schemaVersion: 2 }>;
export type StoredSnapshotV3 = Extract<StoredSnapshot, { schemaVersion: 3 }>;
/** Version 2 with every field it came to have: what `fillAddedFields` makes of a stored one. */
export type SnapshotV2 = z.infer<typeof RunSnapshotV2Schema>;
