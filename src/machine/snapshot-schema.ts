/**
 * The run snapshot's schemas (snapshot.ts has the types inferred from them and the functions that make and read a
 * snapshot). Built only where a snapshot is read (`readSnapshot`: continue-as-new, fork) and by the tests: a run that
 * starts from its input never builds them, nor the view's schemas they are made of.
 */
import { z } from 'zod';
import { ChatMessageSchema, ChildOutcomeSchema, ConversationRefSchema, ToolCallSchema, ToolResultSchema } from '../common/chat';
import { runInputSchemas, snapshotVersion } from '../common/input';
import { AgentState } from '../common/states';
import { ActorSchema } from '../common/actor';
import { AgentStateSchema, ApprovalReminderViewSchema, ControlRecordSchema, CritiqueDecisionSchema, PendingApprovalSchema, PlanStepSchema, RunUsageSchema, ToolCallRecordSchema, TransitionRecordSchema } from '../common/view';

const { BudgetSchema, CompactionSchema, CritiqueSchema, LimitsSchema, TimeoutsSchema } = runInputSchemas();
const int = () => z.number().int();
const timestamp = () => z.string();

export const ModelStepSchema = z.enum([AgentState.PLANNING, AgentState.STREAMING]);
const workPhases = [
  z.object({ type: z.enum([AgentState.PLANNING, AgentState.STREAMING, AgentState.TOOL_EXECUTING]) }),
  z.object({ type: z.literal(AgentState.COMPACTING), returnTo: ModelStepSchema }),
] as const;
export const WorkPhaseSchema = z.discriminatedUnion('type', [...workPhases]);
export const PhaseSchema = z.discriminatedUnion('type', [
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

export const ModelSwitchSchema = z.object({ from: z.string().nullable(), to: z.string(), error: z.string(), step: int(), at: timestamp() });

export const WorkClockSchema = z.discriminatedUnion('state', [
  z.object({ state: z.literal('none') }),
  z.object({ state: z.literal('running'), deadline: timestamp() }),
  z.object({ state: z.literal('stopped'), remainingMs: z.number() }),
]);

export const ReasonSchema = z.object({
  /** What wrote it: the run's end, or a note on the way there. */
  kind: z.enum(['ended', 'budget', 'compaction', 'continuation', 'loopWarning', 'modelSwitch', 'toolPolicy', 'approvalTimeout']),
  text: z.string(),
});

export const ToolRoundSchema = z.object({
  /** Calls of the last model response not yet executed. */
  pending: z.array(ToolCallSchema),
  /** Results decided without running the tool (rejected by the user, stopped by the loop guard). */
  presetResults: z.array(ToolResultSchema),
  /** The results of the last calls that ran, until the next model response. */
  lastResults: z.array(ToolResultSchema),
  /** Who decided each call a person decided, and when: the tool log's `decidedBy`; absent until the first. */
  deciders: z.array(z.object({ toolCallId: z.string(), by: ActorSchema, at: timestamp() })).optional(),
});

export const CountersSchema = z.object({
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

export const LogsSchema = z.object({
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

export const QuotaWaitSchema = z.object({
  /** Epoch ms, the worker's: the call's place in the queue. */
  queuedAt: z.number(),
  /** When it began to wait. */
  since: timestamp(),
  /** When room is expected. */
  expectedAt: timestamp(),
  /** How many calls are ahead. */
  position: int(),
});

export const OptionsSchema = z.object({
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
  /** The input's `plan: 'steps'`: the plan is a schema-checked list of steps (plan.ts); absent: free text. */
  planSteps: z.literal(true).optional(),
  /** `rules`, `model`, or `{ custom: name }`: a critic the worker registers. */
  critique: CritiqueSchema,
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
  /** The input's `memory.namespace`: where the run's `remember` and `recall` tools keep memories; absent: the default namespace. */
  memoryNamespace: z.string().optional(),
  /** 0 to 100, as critics answer (`lastCritique.confidence`). */
  critiqueMinConfidence: z.number(),
  maxOutputTokens: int().optional(),
  contextWindowTokens: int().optional(),
  compaction: CompactionSchema,
  /** The input's `timeouts` (each state's model requests, workflows/effects.ts); absent: the defaults. A fork keeps them. */
  timeouts: TimeoutsSchema.optional(),
});

export const ClocksSchema = z.object({
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
export const RunSnapshotSchema = z.object({
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
  /** `options.planSteps`: the plan's steps and where the critique moved each (plan.ts); absent before a plan, or for free text. */
  planSteps: z.array(PlanStepSchema).optional(),
  /** The plan answer that failed its schema, and why, while the run asks once more (the re-ask's request shows both). */
  planRetry: z.object({ answer: z.string(), error: z.string() }).optional(),
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
export const SnapshotVersionSchema = z.looseObject({ schemaVersion: snapshotVersion() });
