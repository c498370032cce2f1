/**
 * The run snapshot, written once as zod schemas: each type below is its schema's `z.infer`. One version, `'1.0'`, the
 * baseline: a stored snapshot of any other is refused by `readSnapshot`, naming the field. Plain types and the input's
 * own schemas (limits, budget, compaction: the snapshot keeps the resolved input); no clock, no bounds beyond the
 * input's, so a snapshot a worker wrote always loads. Built once per worker (once-per-worker.ts).
 */
import { z } from 'zod';
import { ChatMessageSchema, ChildOutcomeSchema, ConversationRefSchema, ToolCallSchema, ToolResultSchema } from '../common/chat';
import { fromOpenAI } from '../common/conversation';
import { BudgetSchema, CompactionSchema, LimitsSchema, parseWith, snapshotVersion, SNAPSHOT_VERSION, type ParseResult, type ResolvedInput } from '../common/input';
import { oncePerWorker } from '../common/once-per-worker';
import { AgentState } from '../common/states';
import { ActorSchema } from '../common/actor';
import { AgentStateSchema, ApprovalReminderViewSchema, ControlRecordSchema, CritiqueDecisionSchema, PendingApprovalSchema, RunUsageSchema, ToolCallRecordSchema, TransitionRecordSchema } from '../common/view';

/** The snapshot's one schema version, the 1.0 baseline; a stored snapshot of any other is refused (`readSnapshot`). */
export { SNAPSHOT_VERSION };

export type { PendingApproval, TransitionRecord } from '../common/view';

export const {
  ModelStepSchema,
  WorkPhaseSchema,
  PhaseSchema,
  ModelSwitchSchema,
  WorkClockSchema,
  ReasonSchema,
  ToolRoundSchema,
  CountersSchema,
  LogsSchema,
  QuotaWaitSchema,
  OptionsSchema,
  ClocksSchema,
  RunSnapshotSchema,
  SnapshotVersionSchema,
} = oncePerWorker('machine/snapshot', () => {
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
    z.object({
      type: z.literal(AgentState.AWAITING_APPROVAL),
      /** The decisions the run waits for. */
      pending: z.array(PendingApprovalSchema),
      /** Where the run goes once every one is made. */
      then: WorkPhaseSchema,
    }),
    z.object({ type: z.literal(AgentState.PAUSED), resumeTo: WorkPhaseSchema }),
    z.object({
      type: z.literal(AgentState.COMPLETED),
      /** Still taking `sendMessage` for a follow-up turn (within `keepOpenMs`). */
      conversationOpen: z.boolean(),
    }),
  ]);

  const ModelSwitchSchema = z.object({ from: z.string().nullable(), to: z.string(), error: z.string(), step: int(), at: timestamp() });

  const WorkClockSchema = z.discriminatedUnion('state', [
    z.object({ state: z.literal('none') }),
    z.object({ state: z.literal('running'), deadline: timestamp() }),
    z.object({ state: z.literal('stopped'), remainingMs: z.number() }),
  ]);

  const ReasonSchema = z.object({
    /** What wrote it: the run's end, or a note on the way there. */
    kind: z.enum(['ended', 'budget', 'compaction', 'continuation', 'loopWarning', 'modelSwitch', 'toolPolicy', 'approvalTimeout']),
    text: z.string(),
  });

  const ToolRoundSchema = z.object({
    /** Calls of the last model response not yet executed. */
    pending: z.array(ToolCallSchema),
    /** Results decided without running the tool (rejected by the user, stopped by the loop guard). */
    presetResults: z.array(ToolResultSchema),
    /** The results of the last calls that ran, until the next model response. */
    lastResults: z.array(ToolResultSchema),
    /** Who decided each call a person decided, and when: the tool log's `decidedBy`; absent until the first. */
    deciders: z.array(z.object({ toolCallId: z.string(), by: ActorSchema, at: timestamp() })).optional(),
  });

  const CountersSchema = z.object({
    /** Number of state changes so far. */
    step: int(),
    /** Model calls made for planning and answering (the `maxLoops` counter). */
    loops: int(),
    /** Tool calls that ran (the `maxToolCalls` counter). */
    toolCalls: int(),
    /** Answers given so far; a kept-open conversation answers once per turn. */
    turns: int(),
    /** How many times an `approve` of `budget` extended the budget by its original size. */
    budgetGrants: int(),
    /** How many times the answer being written was cut off by the output limit and continued. */
    continuations: int(),
    /** Tool steps in a row with a failed call (the rule critic replans at 2). */
    failuresInARow: int(),
    /** Context overflows in a row (compactions that did not make room). */
    overflowsInARow: int(),
    /** Critique decisions in a row that asked for another attempt (retry or replan). */
    setbacksInARow: int(),
  });

  const LogsSchema = z.object({
    /** Each state change; a continued run carries the last 100 (the step counter still counts them all). */
    transitions: z.array(TransitionRecordSchema),
    /** The last tool calls, started and ended (`recentToolCalls` in the view). */
    toolCalls: z.array(ToolCallRecordSchema),
    /** Events that had no transition from the state they arrived in. */
    rejectedEvents: z.array(z.object({ event: z.string(), state: AgentStateSchema, at: timestamp(), error: z.string() })),
    /** Each move to a fallback model: from which, to which, why, at which step; absent until the first. */
    modelSwitches: z.array(ModelSwitchSchema).optional(),
    /** The last 50 controls the run took, with who sent each and when; absent until the first. */
    controls: z.array(ControlRecordSchema).optional(),
  });

  const QuotaWaitSchema = z.object({
    /** Epoch ms, the worker's: the call's place in the queue. */
    queuedAt: z.number(),
    /** When it began to wait. */
    since: timestamp(),
    /** When room is expected. */
    expectedAt: timestamp(),
    /** How many calls are ahead. */
    position: int(),
  });

  const OptionsSchema = z.object({
    /** The model in use: the input's, then each fallback the run moved to; absent: the worker's default. */
    model: z.string().optional(),
    /** Models still to fall back to, in order (the input's `fallbackModels` less those already moved to). */
    fallbackModels: z.array(z.string()).optional(),
    /** The result carries the conversation. */
    returnMessages: z.boolean().optional(),
    tools: z.array(z.string()).optional(),
    /** The input's `toolOrder: 'concurrent'`: a turn's calls all run at once (absent: in the model's order, tool-order.ts). */
    concurrentTools: z.literal(true).optional(),
    plan: z.boolean(),
    critique: z.enum(['rules', 'model']),
    approvalTools: z.array(z.string()),
    /** `approval.onTimeout`, only when it is `reject` (absent: the run fails). */
    approvalOnTimeout: z.literal('reject').optional(),
    /** `approval.reminderAt`: the share of `limits.approvalTimeoutMs` at which an undecided wait raises a reminder. */
    approvalReminderAt: z.number().optional(),
    budget: BudgetSchema.optional(),
    keepOpenMs: int(),
    /** Its place in the fleet's provider budget, 0 first; absent: the budget's default (5). */
    priority: int().optional(),
    /** The input's `tenant`: its share of the fleet's provider budget; absent: the default tenant. */
    tenant: z.string().optional(),
    /** 0 to 100, as critics answer (`lastCritique.confidence`). */
    critiqueMinConfidence: z.number(),
    maxOutputTokens: int().optional(),
    contextWindowTokens: int().optional(),
    compaction: CompactionSchema,
  });

  const ClocksSchema = z.object({
    /** Working time (`limits.timeoutMs`, reset by each new turn of a kept-open conversation). */
    work: WorkClockSchema,
    /** When the current approval wait exceeds `limits.approvalTimeoutMs`; null when none is set or nothing waits. */
    approvalDeadline: timestamp().nullable(),
    /** When the current approval wait raises its reminder (`approval.reminderAt`); null when none is due or it was raised. */
    approvalReminderDue: timestamp().nullable(),
    /** The reminder the current approval wait raised: when, and the calls undecided then; null when none. */
    approvalReminder: ApprovalReminderViewSchema.nullable(),
    /** When a PAUSED run is aborted (`limits.maxPausedMs`); null when not paused or no limit is set. */
    pausedDeadline: timestamp().nullable(),
    /** When the run's total time runs out (`limits.totalTimeoutMs`, from its start); absent when none is set. */
    totalDeadline: timestamp().optional(),
  });

  // Fields this worker does not know (from a newer one) are dropped.
  const RunSnapshotSchema = z.object({
    schemaVersion: snapshotVersion(),
    phase: PhaseSchema,
    stateSince: timestamp(),
    counters: CountersSchema,
    usage: RunUsageSchema,
    limits: LimitsSchema,
    options: OptionsSchema,
    /** The run's clocks (clocks.ts moves them on each state change; the workflow's timer fires at the earliest). */
    clocks: ClocksSchema,
    /** The model call waits for the fleet's provider budget; null when not waiting. */
    quotaWait: QuotaWaitSchema.nullable(),
    /** The context window the worker reported for the model that answered, when the run's input names none. */
    contextWindow: int().nullable(),
    /** The last request's size in characters and the prompt tokens the provider counted for it: the token estimate's base. */
    promptCalibration: z.object({ chars: z.number(), tokens: z.number() }).nullable(),
    /** Why the last model response finished (`stop`, `tool_calls`, `length`, ...). */
    lastFinishReason: z.string().nullable(),
    /** The model that answered the last call, as the provider named it. */
    lastModel: z.string().nullable(),
    /** Set when this run carries on from another: continued as new, or forked from a step. */
    origin: z.object({ kind: z.enum(['continue', 'fork']), workflowId: z.string(), step: int() }).nullable(),
    /** Text of the latest model call: as far as it has streamed while the call runs, complete once it has answered. */
    partialText: z.string(),
    /** Model call number and attempt that `partialText` belongs to; null before the first call. */
    stream: z.object({ callNumber: int(), attempt: int() }).nullable(),
    lastError: z.string().nullable(),
    /** Why the run ended, or why it is where it is (the latest note: budget, compaction, loop warning, ...). */
    reason: ReasonSchema.nullable(),
    answer: z.string().nullable(),
    plan: z.string().nullable(),
    /**
     * The task of the current turn: its prompt (the input's, then each follow-up message's), which the critic, the plan
     * and compaction judge by; the messages before it are the context it came in.
     */
    task: z.string(),
    messages: z.array(ChatMessageSchema),
    /**
     * The tool calls of the last model response, from PROCESSING through approval, a pause and TOOL_EXECUTING, and their
     * results, which CRITIQUE and the next request read.
     */
    toolRound: ToolRoundSchema,
    /** Signatures of every tool call in order, for the repetition guard. */
    toolSignatures: z.array(z.string()),
    loopWarned: z.boolean(),
    /** This run's workflow id, set by the workflow: the ids of the children its calls of named agents start begin with it. */
    workflowId: z.string().optional(),
    /** The child runs of named agents this run called, in the order they started; absent until the first. */
    children: z.array(ChildOutcomeSchema).optional(),
    /**
     * What a person decided on the calls now running (feedback, edited arguments), told to the model in one user
     * message after their results; null when there is nothing to tell.
     */
    approvalNote: z.string().nullable(),
    /** The model was told it is close to a limit (`limits.wrapUpAt`); it is told once. */
    wrapUpSent: z.boolean(),
    /** The conversation the last model call stored (chain.ts); null when the next call must send every message. */
    chain: ConversationRefSchema.nullable(),
    pauseRequested: z.boolean(),
    lastCritique: CritiqueDecisionSchema.nullable(),
    /** Messages sent during the run, handed to the model before its next call. */
    queuedMessages: z.array(z.string()),
    logs: LogsSchema,
  });
  // The version alone, checked first: a snapshot of another version is refused for that, not for each field it lacks.
  const SnapshotVersionSchema = z.looseObject({ schemaVersion: snapshotVersion() });
  return {
    ModelStepSchema,
    WorkPhaseSchema,
    PhaseSchema,
    ModelSwitchSchema,
    WorkClockSchema,
    ReasonSchema,
    ToolRoundSchema,
    CountersSchema,
    LogsSchema,
    QuotaWaitSchema,
    OptionsSchema,
    ClocksSchema,
    RunSnapshotSchema,
    SnapshotVersionSchema,
  };
});

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
      plan: input.plan,
      critique: input.critique,
      approvalTools: input.approval?.tools ?? [],
      ...(input.approval?.onTimeout === 'reject' ? { approvalOnTimeout: 'reject' as const } : {}),
      ...(input.approval?.reminderAt !== undefined ? { approvalReminderAt: input.approval.reminderAt } : {}),
      ...(input.budget ? { budget: input.budget } : {}),
      keepOpenMs: input.keepOpenMs,
      ...(input.priority !== undefined ? { priority: input.priority } : {}),
      ...(input.tenant !== undefined ? { tenant: input.tenant } : {}),
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
