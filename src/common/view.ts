/**
 * The run as clients see it: the `state` query's answer, a curated and documented view of the run's snapshot (the
 * snapshot itself is internal and versioned; see machine/snapshot.ts). Shared by the workflow, the client, the
 * CLI and the gateway. The zod schemas below are the one description: the TypeScript types are inferred from them and
 * the gateway's OpenAPI document is generated from them (gateway/openapi.ts), so the three cannot drift apart. The
 * workflow imports only types from here (its constants are in view-bounds.ts): a run builds none of these schemas
 * unless it loads a stored snapshot (machine/snapshot-schema.ts).
 */
import { z } from 'zod';
import { ActorSchema } from './actor';
import { ChatMessageSchema, ChildOutcomeSchema, UsageSchema } from './chat';
import { runInputSchemas } from './input';
import { AgentState, CritiqueAction } from './states';
import { PLAN_STEP_STATUSES, VIEW_CHILDREN, VIEW_TRANSITIONS } from './view-bounds';

export { PLAN_STEP_STATUSES, VIEW_CHILDREN, VIEW_TRANSITIONS, type PlanStepStatus } from './view-bounds';

export const {
  AgentStateSchema,
  TransitionRecordSchema,
  PendingApprovalSchema,
  ToolCallRecordSchema,
  RunUsageSchema,
  CritiqueDecisionSchema,
  PlanStepSchema,
  ApprovalReminderViewSchema,
  RetryInfoSchema,
  ControlRecordSchema,
  RunStateViewSchema,
} = (() => {
  const int = () => z.number().int();
  const timestamp = () => z.string().meta({ format: 'date-time' });
  const AgentStateSchema = z.enum(Object.values(AgentState) as [AgentState, ...AgentState[]]);

  /** One state change: the run's step log. */
  const TransitionRecordSchema = z.object({ from: AgentStateSchema, to: AgentStateSchema, event: z.string(), at: timestamp() });

  /** A decision the run waits for. */
  const PendingApprovalSchema = z.object({
    toolCallId: z.string().describe('A tool call\'s id, or `budget` when the run asks to exceed its budget.'),
    kind: z.enum(['tool', 'budget']),
    name: z.string(),
    arguments: z.string().describe('The call\'s arguments as JSON text; for `budget`, the reason.'),
    parameters: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('The tool\'s JSON schema, when the worker knows it: `approve` may then send edited `arguments`, which must pass it.'),
    decision: z
      .object({
        approved: z.boolean(),
        feedback: z.string().optional(),
        arguments: z.string().optional().describe('The edited arguments a person approved the call with, as JSON.'),
        by: ActorSchema.optional().describe('Who decided (the `by` of their approve; the service when it named no one). Absent: the run decided itself (an interrupting message, `approval.onTimeout: reject`).'),
        at: timestamp().optional().describe('When the run took the decision.'),
      })
      .optional(),
  });

  /** One control the run took: who sent it and when (the last 50, `controls`). */
  const ControlRecordSchema = z.object({
    event: z.enum(['APPROVAL', 'MESSAGE', 'INTERRUPT', 'PAUSE', 'RESUME', 'ABORT']).describe('The control as the machine took it: approve (a tool call\'s or the budget\'s), sendMessage (INTERRUPT with `interrupt`), pause, resume, abort.'),
    by: ActorSchema.describe('Who sent it; the service when the control named no one.'),
    at: timestamp(),
    step: int().describe('The run\'s step once it was taken (`transitions`).'),
    toolCallId: z.string().optional().describe('APPROVAL: the call decided, `budget` for the budget.'),
    approved: z.boolean().optional().describe('APPROVAL: approved or rejected.'),
    edited: z.literal(true).optional().describe('APPROVAL: approved with edited arguments.'),
  });

  /** One tool call, as watchers see it: started when the run entered TOOL_EXECUTING, ended with TOOLS_DONE. */
  const ToolCallRecordSchema = z.object({
    toolCallId: z.string(),
    name: z.string(),
    arguments: z.string().describe('The arguments as JSON, cut at 200 characters.'),
    edited: z.literal(true).optional().describe('A person approved it with edited arguments (those above).'),
    rejected: z.literal(true).optional().describe('A person rejected it, or nobody decided in time (`approval.onTimeout: reject`): it never ran; `output` is what the model was told.'),
    decidedBy: ActorSchema.optional().describe('A call that waited for approval: who approved or rejected it (absent: nobody did, the run decided).'),
    decidedAt: timestamp().optional().describe('With `decidedBy`: when.'),
    policy: z
      .enum(['deny', 'approve', 'rewrite'])
      .optional()
      .describe("The worker's tool policy did not simply allow it: `deny` (it never ran; `output` is the policy's message), `approve` (it waited for a person) or `rewrite` (it ran with the policy's arguments, those above); docs/tool-policy.md."),
    startStep: int().describe('The step that started it (the way into TOOL_EXECUTING).'),
    startedAt: timestamp(),
    endStep: int().nullable().describe('Once it ended: the step that ended it (TOOLS_DONE); null while it runs.'),
    endedAt: timestamp().nullable(),
    ok: z.boolean().nullable(),
    output: z.string().nullable().describe("The output's first 200 characters."),
  });

  /** Tokens and money spent by the run: its model calls, the model critic's and compaction's. */
  const RunUsageSchema = UsageSchema.extend({
    modelCalls: int().describe('Model calls for planning and answering that answered (the critic\'s and compaction\'s are not counted).'),
    costUsd: z.number(),
    replayedCalls: int().optional().describe('Of `modelCalls`, those a what-if fork answered with the recorded answer of the run it was forked from, not paid for again; absent: none.'),
    replayedCritiques: int().optional().describe("The model critic's decisions a what-if fork took from the run it was forked from (the same request), not paid for again; absent: none."),
    replayedCompactions: int().optional().describe('Compactions whose summaries a what-if fork all took from the run it was forked from (the same requests), not paid for again; absent: none.'),
  });

  /** What a critic decides after a step; the action picks the next state. */
  const CritiqueDecisionSchema = z.object({
    action: z.enum(Object.values(CritiqueAction) as [CritiqueAction, ...CritiqueAction[]]),
    reason: z.string(),
    confidence: z.number().describe('How sure the critic is, 0 to 100.'),
  });

  /** One step of a structured plan (`plan: 'steps'`), with where the critique has moved it. */
  const PlanStepSchema = z.object({
    title: z.string().describe('What the step does, as the planner wrote it.'),
    status: z
      .enum(PLAN_STEP_STATUSES)
      .describe(
        '`pending` not begun; `active` the step the run works on; `done` the critique let it go on (or the run completed); `retried` the critique asked for another attempt at it, which the run is making; `replanned` the critique asked for a new plan while it was current.',
      ),
    attempts: int().describe('Attempts the critique asked for beyond the first.'),
  });

  const ApprovalReminderViewSchema = z.object({
    at: timestamp(),
    deadline: timestamp().describe('When the wait runs out (`limits.approvalTimeoutMs`).'),
    onTimeout: z.enum(['fail', 'reject']).describe('What happens then (`approval.onTimeout`).'),
    toolCallIds: z.array(z.string()).describe('The calls undecided when it was raised.'),
  });

  /** An activity being retried. */
  const RetryInfoSchema = z.object({
    activity: z.string().describe('`callModel`, `awaitQuota`, `executeTool`, `compactContext`, `critiqueAnswer`.'),
    attempt: int().describe('The attempt running or due next (2 after one failure).'),
    lastFailure: z
      .object({ type: z.string().nullable(), message: z.string() })
      .nullable()
      .describe("The last attempt's failure: its type (e.g. `ModelInvocationError.RateLimit`) and message."),
    nextAttemptAt: timestamp().nullable().describe('When the next attempt starts; null while one runs.'),
  });

  /** The `state` query's answer. Fields are added, never changed or removed, within a major version of the package. */
  const RunStateViewSchema = z
    .object({
      state: AgentStateSchema,
      stateSince: timestamp().describe('When the run entered `state`.'),
      step: int().describe('State changes so far (the index of the last entry of `transitions`, counting those of runs it continued).'),
      loops: int().describe(
        'Model calls for planning and answering, counted as each starts (the `maxLoops` counter); `usage.modelCalls` counts those that answered. A call the worker refused before any request (unknown tools) is not counted.',
      ),
      toolCalls: int(),
      usage: RunUsageSchema,
      limits: runInputSchemas().LimitsSchema.describe('A run refused for bad input (its one transition is INVALID_INPUT) applied none: its limits are placeholders.'),
      transitions: z
        .array(TransitionRecordSchema)
        .describe(
          `The last state changes, at most ${VIEW_TRANSITIONS}: the first is step \`transitionsFrom\`, the last step \`step\`. The whole list is paged from the run's steps (\`AgentRunHandle.steps()\`, \`agent history\`, \`GET /v1/runs/{id}/steps\`), so the view of a long run is as small as a short one's.`,
        ),
      transitionCount: int().describe(
        "State changes this run's step log holds (`steps()` pages them): a continued run's counts the 100 it carried from the runs before, so it can be below `step`. `transitions` is the last of them.",
      ),
      transitionsFrom: int().describe('The step of the first entry of `transitions` (`step` + 1 when it is empty): the steps before it are paged from `steps()`.'),
      partialText: z.string().describe('Text of the latest model call: as far as it has streamed while the call runs, complete once it has answered.'),
      stream: z
        .object({ callNumber: int(), attempt: int() })
        .nullable()
        .describe('The model call and attempt `partialText` belongs to; null before the first call.'),
      degraded: z
        .literal(true)
        .optional()
        .describe(
          "Set by the client while the model call in flight cannot publish to the stream channel (none configured, or its worker cannot reach it): watchers get its text by polling the state, `partialText` from the call's heartbeats (docs/streaming.md#degraded).",
        ),
      pendingApproval: z.array(PendingApprovalSchema).describe('AWAITING_APPROVAL: the decisions the run waits for (empty in every other state).'),
      resumeTo: AgentStateSchema.nullable().describe('PAUSED: the state `resume` continues in; null in every other state.'),
      pauseRequested: z.boolean().describe('A pause was requested and takes effect on the way into the next work.'),
      conversationOpen: z.boolean().describe('COMPLETED and still taking `sendMessage` for a follow-up turn (`keepOpenMs`).'),
      turns: int().describe('Answers given so far; a kept-open conversation answers once per turn.'),
      task: z
        .string()
        .describe("The current turn's task: its prompt (the input's, then each follow-up message's). The critic, the plan and compaction judge by it; the conversation before it is its context."),
      deadline: timestamp()
        .nullable()
        .describe('When working time (`limits.timeoutMs`) runs out; null while a person decides, when `workRemainingMs` holds what is left.'),
      workRemainingMs: int().nullable(),
      approvalDeadline: timestamp().nullable().describe('When the current approval wait exceeds `limits.approvalTimeoutMs`.'),
      approvalOnTimeout: z
        .enum(['fail', 'reject'])
        .nullable()
        .describe('With `approvalDeadline`: what happens then (`approval.onTimeout`): the run fails, or rejects the undecided calls and goes on.'),
      approvalReminder: ApprovalReminderViewSchema.nullable().describe(
        'The reminder the approval wait raised at `approval.reminderAt` of its window (the approvalReminder event): when, the wait\'s deadline, what happens then and the calls still undecided. Null when none was raised for this wait.',
      ),
      pausedDeadline: timestamp().nullable().describe('When the PAUSED run is aborted (`limits.maxPausedMs`); null when not paused or no limit is set.'),
      waitDeadline: timestamp()
        .nullable()
        .describe(
          'When the wait for a person in progress (AWAITING_APPROVAL, a budget approval among them, or PAUSED) ends: its own deadline (`limits.approvalTimeoutMs`, `limits.maxPausedMs`, 7 days by default) or the run\'s total time, whichever comes first. Null when nothing waits for a person or the wait opted out (null limits).',
        ),
      totalDeadline: timestamp().nullable().describe("When the run's total time (`limits.totalTimeoutMs`, waits included) runs out; null when none is set or the run ended."),
      quotaWait: z
        .object({
          since: timestamp(),
          expectedAt: timestamp().describe('When room is expected.'),
          position: int().describe('Calls ahead of this one in the queue.'),
        })
        .nullable()
        .describe("Waiting for quota: the model call waits for room in the fleet's provider budget (`LLM_TOKENS_PER_MINUTE` and the like). Null when not waiting."),
      recentToolCalls: z
        .array(ToolCallRecordSchema)
        .describe('The last 20 tool calls, running (endedAt null) or ended (`watch` and the SSE stream report them as toolStart and toolEnd).'),
      queuedMessages: z.array(z.string()).describe('Messages sent during the run, handed to the model before its next call.'),
      controls: z
        .array(ControlRecordSchema)
        .describe('The last 50 controls the run took (approvals, messages, pause, resume, abort): who sent each, and when. Refused ones are in `rejectedEvents`.'),
      plan: z.string().nullable().describe('The plan as text: the free-text answer of a `plan: true` run, the numbered steps of a `plan: \'steps\'` one.'),
      planSteps: z
        .array(PlanStepSchema)
        .nullable()
        .describe("`plan: 'steps'`: the plan's steps in order, each with its status (steps a replan dropped are not listed, the step it replaced is, as `replanned`); null for a free-text plan or none."),
      planProgress: z
        .object({ done: int(), total: int(), allDone: z.boolean() })
        .nullable()
        .describe("`plan: 'steps'`: steps done of the plan's current steps (`replanned` ones not counted), and whether all are."),
      lastCritique: CritiqueDecisionSchema.nullable(),
      lastModel: z.string().nullable().describe('The model that answered the last call, as the provider named it.'),
      model: z.string().nullable().describe("The model the run calls now: its input's, or the fallback it moved to; null: the worker's default."),
      modelSwitches: z
        .array(z.object({ from: z.string().nullable(), to: z.string(), error: z.string(), step: int(), at: timestamp() }))
        .describe("Each move to a fallback model (`fallbackModels`): from which (null: the worker's default), to which, why, at which step."),
      children: z
        .array(ChildOutcomeSchema)
        .describe(
          `The child runs of named agents this run called as tools, in the order they started: the last ${VIEW_CHILDREN}, and any still running (\`childCount\` counts them all). \`state\` is RUNNING until the child ends (its own \`state\` query has more), then how it ended; \`usage\` counts against this run's (and its budget).`,
        ),
      childCount: int().describe('The child runs this run started (`children` lists the last of them).'),
      lastError: z.string().nullable(),
      reason: z.string().nullable().describe('Why the run ended, or why it is where it is.'),
      answer: z.string().nullable(),
      lastText: z.string().nullable().describe("The model's last complete message: for a run aborted or ended by a limit, what it had said before the end."),
      origin: z
        .object({ kind: z.enum(['continue', 'fork']), workflowId: z.string(), step: int() })
        .nullable()
        .describe('Set when this run carries on from another: continued as new, or forked from a step.'),
      rejectedEvents: z
        .array(z.object({ event: z.string(), state: AgentStateSchema, at: timestamp(), error: z.string() }))
        .describe(
          "Signals and other events the run refused (the last 20), with why. A refused update (approve, sendMessage, abort, pause, resume) is not recorded here: its validator refuses it before it reaches the run's history, and its caller gets the reason (409 `update_rejected` at the gateway).",
        ),
      messageCount: int(),
      messages: z.array(ChatMessageSchema).optional().describe('Only when asked for (`includeMessages`; the gateway\'s `?messages=1`): it can be large.'),
      stored: z
        .object({ at: timestamp(), reason: z.string() })
        .optional()
        .describe('Set when no worker answered and this is the copy the run stored (memo `agentState`) when it last waited for a person or ended: when it was stored, and why the live state was not available.'),
      retrying: z
        .array(RetryInfoSchema)
        .optional()
        .describe("Set by the client while the run's work is being retried (a model call waiting out a 429, a tool failing): each activity's attempt, why the last one failed, and when the next is due."),
    })
    .describe("The `state` query of the run: the curated view in src/common/view.ts (see the README's public contract). Fields are added, never changed or removed, within a major version.");

  return {
    PlanStepSchema,
    AgentStateSchema,
    TransitionRecordSchema,
    PendingApprovalSchema,
    ToolCallRecordSchema,
    RunUsageSchema,
    CritiqueDecisionSchema,
    ApprovalReminderViewSchema,
    RetryInfoSchema,
    ControlRecordSchema,
    RunStateViewSchema,
  };
})();

export type TransitionRecord = z.infer<typeof TransitionRecordSchema>;
export type PendingApproval = z.infer<typeof PendingApprovalSchema>;
export type ToolCallRecord = z.infer<typeof ToolCallRecordSchema>;
export type RunUsage = z.infer<typeof RunUsageSchema>;
export type CritiqueDecision = z.infer<typeof CritiqueDecisionSchema>;
export type PlanStep = z.infer<typeof PlanStepSchema>;
export type RetryInfo = z.infer<typeof RetryInfoSchema>;
export type ControlRecord = z.infer<typeof ControlRecordSchema>;
export type RunStateView = z.infer<typeof RunStateViewSchema>;
