/** What a run shows outside: the `state` query's view and the workflow's result. */
import { ApplicationFailure } from '@temporalio/workflow';
import { FailureType } from '../common/failures';
import type { AgentRunResult, RunStateView } from '../common/messages';
import { AgentState } from '../common/states';
import type { RunSnapshot } from './snapshot';

export function publicView(s: RunSnapshot, includeMessages: boolean): RunStateView {
  const { messages, ...rest } = s;
  return { ...rest, messageCount: messages.length, ...(includeMessages ? { messages } : {}) };
}

/** The workflow's result; a FAILED run fails the workflow with the result in the failure's details. */
export function runResult(s: RunSnapshot): AgentRunResult {
  const result: AgentRunResult = {
    status: s.state as AgentRunResult['status'],
    answer: s.answer,
    reason: s.reason,
    usage: s.usage,
    loops: s.loops,
    toolCalls: s.toolCalls,
  };
  if (s.state === AgentState.FAILED) {
    throw ApplicationFailure.create({ type: FailureType.AgentRunFailed, message: s.reason ?? 'failed', nonRetryable: true, details: [result] });
  }
  return result;
}
