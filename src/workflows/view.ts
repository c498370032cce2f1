/** What a run shows outside: the `state` query's view (common/view.ts) and the workflow's result. */
import { ApplicationFailure } from '@temporalio/workflow';
import { toOpenAI } from '../common/conversation';
import { FailureType } from '../common/failures';
import type { AgentRunResult } from '../common/messages';
import { AgentState } from '../common/states';
import type { RunStateView } from '../common/view';
import { VIEW_CHILDREN, VIEW_TRANSITIONS } from '../common/view-bounds';
import { CHILD_RUNNING } from '../machine/children';
import { lastAssistantText } from '../machine/responses';
import type { RunSnapshot } from '../machine/snapshot';
import { totalDeadline, waitDeadline, workDeadline } from '../machine/clocks';
import { planProgress } from '../machine/plan';

/**
 * The curated view: the phase's data under its documented names, and none of the machine's bookkeeping. Its lists are
 * bounded, so its size does not grow with the run: the last `tail` transitions (the rest are paged from the steps
 * query), the last children beside the running ones; the tool calls and refused events the snapshot keeps are its
 * last 20 already.
 */
export function publicView(s: RunSnapshot, includeMessages: boolean, tail = VIEW_TRANSITIONS): RunStateView {
  const { phase } = s;
  const transitions = s.logs.transitions.slice(-tail);
  const children = s.children ?? [];
  return {
    state: phase.type,
    stateSince: s.stateSince,
    step: s.counters.step,
    loops: s.counters.loops,
    toolCalls: s.counters.toolCalls,
    usage: s.usage,
    limits: s.limits,
    transitions,
    transitionCount: s.logs.transitions.length,
    transitionsFrom: s.counters.step - transitions.length + 1,
    partialText: s.partialText,
    stream: s.stream,
    pendingApproval: phase.type === AgentState.AWAITING_APPROVAL ? phase.pending : [],
    resumeTo: phase.type === AgentState.PAUSED ? phase.resumeTo.type : null,
    pauseRequested: s.pauseRequested,
    conversationOpen: phase.type === AgentState.COMPLETED && phase.conversationOpen,
    turns: s.counters.turns,
    task: s.task,
    deadline: workDeadline(s),
    workRemainingMs: s.clocks.work.state === 'stopped' ? s.clocks.work.remainingMs : null,
    approvalDeadline: s.clocks.approvalDeadline,
    approvalOnTimeout: s.clocks.approvalDeadline ? (s.options.approvalOnTimeout ?? 'fail') : null,
    approvalReminder: s.clocks.approvalReminder,
    pausedDeadline: s.clocks.pausedDeadline,
    waitDeadline: waitDeadline(s),
    totalDeadline: totalDeadline(s),
    quotaWait: s.quotaWait ? { since: s.quotaWait.since, expectedAt: s.quotaWait.expectedAt, position: s.quotaWait.position } : null,
    recentToolCalls: s.logs.toolCalls,
    queuedMessages: s.queuedMessages,
    controls: s.logs.controls ?? [],
    plan: s.plan,
    planSteps: s.planSteps ?? null,
    planProgress: s.planSteps ? planProgress(s.planSteps) : null,
    lastCritique: s.lastCritique,
    lastModel: s.lastModel,
    model: s.options.model ?? null,
    modelSwitches: s.logs.modelSwitches ?? [],
    children: children.filter((c, i) => i >= children.length - VIEW_CHILDREN || c.state === CHILD_RUNNING),
    childCount: children.length,
    lastError: s.lastError,
    reason: s.reason?.text ?? null,
    answer: s.answer,
    lastText: lastAssistantText(s),
    origin: s.origin,
    rejectedEvents: s.logs.rejectedEvents,
    messageCount: s.messages.length,
    ...(includeMessages ? { messages: s.messages } : {}),
  };
}

/** The run's result (FAILED included), as `runResult` returns or fails with it. */
export function resultOf(s: RunSnapshot): AgentRunResult {
  const last = s.logs.transitions.at(-1);
  const cutShort = s.phase.type !== AgentState.COMPLETED && (last?.from === AgentState.STREAMING || last?.from === AgentState.PLANNING);
  return {
    status: s.phase.type as AgentRunResult['status'],
    answer: s.answer,
    reason: s.reason?.text ?? null,
    lastText: lastAssistantText(s),
    partialText: cutShort && s.partialText ? s.partialText : null,
    usage: s.usage,
    loops: s.counters.loops,
    toolCalls: s.counters.toolCalls,
    ...(s.options.returnMessages ? { messages: toOpenAI(s.messages) } : {}),
  };
}

/** The workflow's result; a FAILED run fails the workflow with `AgentRunFailed`, its result in the details. */
export function runResult(s: RunSnapshot, result = resultOf(s)): AgentRunResult {
  if (s.phase.type === AgentState.FAILED) {
    throw ApplicationFailure.create({ type: FailureType.AgentRunFailed, message: s.reason?.text ?? 'failed', nonRetryable: true, details: [result] });
  }
  return result;
}
