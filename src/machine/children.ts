/**
 * Named agents called as tools: the child run each call starts, the parent's record of its
 * children, and their usage counted against the parent's. Pure: the machine calls these, the workflow starts the children.
 */
import type { ChildOutcome, ChildRequest, ToolCall, ToolResult } from '../common/chat';
import { emptyUsage } from '../common/chat-helpers';
import { addCost } from '../common/prices';
import { childBudget } from './budget';
import type { RunSnapshot } from './snapshot';

/** A child's state in its parent's record until it ends (then COMPLETED, FAILED or ABORTED); its own `state` query has more. */
export const CHILD_RUNNING = 'RUNNING';

/** The child a call of a named agent starts, in a run with a known workflow id. */
export function childRequest(s: RunSnapshot, call: ToolCall, callNumber: number): ChildRequest | undefined {
  if (!call.agent || !s.workflowId) return undefined;
  const budget = childBudget(s);
  return { workflowId: `${s.workflowId}/${call.agent}-${callNumber}`, agent: call.agent, ...(budget ? { budget } : {}) };
}

/** The children a TOOL_EXECUTING step starts, recorded as RUNNING with no usage yet. */
export function childrenStarted(s: RunSnapshot, requests: ReadonlyArray<{ child?: ChildRequest }>): Pick<RunSnapshot, 'children'> {
  const started = requests.flatMap((r) => (r.child ? [r.child] : []));
  if (started.length === 0) return {};
  const fresh = started.map((c): ChildOutcome => ({ workflowId: c.workflowId, agent: c.agent, state: CHILD_RUNNING, usage: { ...emptyUsage(), modelCalls: 0, costUsd: 0 } }));
  return { children: [...(s.children ?? []).filter((c) => !started.some((n) => n.workflowId === c.workflowId)), ...fresh] };
}

/** The children's outcomes recorded, and their tokens and cost added to the parent's usage (its budget counts them). */
export function childrenEnded(s: RunSnapshot, results: readonly ToolResult[]): RunSnapshot {
  const ended = results.flatMap((r) => (r.child ? [r.child] : []));
  if (ended.length === 0) return s;
  const usage = { ...s.usage };
  for (const c of ended) {
    usage.promptTokens += c.usage.promptTokens;
    usage.completionTokens += c.usage.completionTokens;
    usage.totalTokens += c.usage.totalTokens;
    usage.costUsd = addCost(usage.costUsd, c.usage.costUsd);
  }
  const byId = new Map(ended.map((c) => [c.workflowId, c]));
  const known = s.children ?? [];
  // A child not recorded as started (a run carried on inside its tool step) is recorded as it ends.
  const children = [...known.map((c) => byId.get(c.workflowId) ?? c), ...ended.filter((c) => !known.some((k) => k.workflowId === c.workflowId))];
  return { ...s, usage, children };
}
