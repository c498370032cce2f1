/**
 * Child `agentRun` workflows of a pattern, started one at a time under `<pattern id>/<name>` so the UI shows the
 * tree. Registers the `patternState` query and the `abort` signal, and publishes progress on every change.
 */
import {
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowCancellationType,
  executeChild,
  isCancellation,
  log,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { defineSearchAttributeKey } from '@temporalio/common';
import { AGENT_STATE_SEARCH_ATTRIBUTE, WORKFLOW_TYPE } from '../../common/constants';
import { tenantPriority } from '../../common/fairness';
import { FailureType } from '../../common/failures';
import { AbortSignalSchema, type AgentRunInput, parseWith } from '../../common/input';
import { abortSignal, type AgentRunResult } from '../../common/messages';
import { type ChildStatus, type PatternStateView, patternStateQuery, RUNNING_CHILDREN } from '../../common/pattern-messages';
import { AgentState } from '../../common/states';
import type { agentRun } from '../agent-run';
import { inheritedOwner, runTenant } from '../owner';

const agentStateKey = defineSearchAttributeKey(AGENT_STATE_SEARCH_ATTRIBUTE, 'KEYWORD');

export interface ChildOutcome {
  workflowId: string;
  status: ChildStatus;
  answer: string | null;
}

export type SubAgents = ReturnType<typeof subAgents>;

/** Call before the pattern's first `await`, so the query and the signal are there from the start. */
export function subAgents(pattern: PatternStateView['pattern']) {
  const parentId = workflowInfo().workflowId;
  const root = CancellationScope.current();
  const view: PatternStateView = { pattern, status: RUNNING_CHILDREN, stage: null, children: [], reason: null };
  let running: CancellationScope | undefined;
  let abortReason: string | undefined;

  function publish(): void {
    upsertSearchAttributes([{ key: agentStateKey, value: view.status }]);
    const lines = [`**${pattern}** ${view.status}${view.stage ? `, running ${view.stage}` : ''}`];
    for (const child of view.children) lines.push(`- ${child.name}: ${child.status} (${child.workflowId})`);
    if (view.reason) lines.push(`reason: ${view.reason}`);
    setCurrentDetails(lines.join('\n'));
  }

  setHandler(patternStateQuery, () => view);
  setHandler(abortSignal, (raw) => {
    if (abortReason !== undefined || view.status !== RUNNING_CHILDREN) return;
    // A pattern keeps no control log: who aborted it is in its history (the signal's `by`).
    const parsed = parseWith(AbortSignalSchema, raw ?? {}, 'abort input');
    abortReason = `aborted: ${(parsed.ok && parsed.value.reason) || 'no reason given'}`;
    log.info('pattern aborted', { reason: abortReason, stage: view.stage });
    running?.cancel();
  });
  publish();

  const isAborted = () => {
    if (abortReason === undefined && root.consideredCancelled) abortReason = 'aborted: the workflow was cancelled';
    return abortReason !== undefined;
  };

  /** Runs one child to its end. A failed child fails the pattern with `SubAgentFailed` naming the stage. */
  async function run(name: string, input: AgentRunInput): Promise<ChildOutcome> {
    const workflowId = `${parentId}/${name}`;
    if (isAborted()) return { workflowId, status: AgentState.ABORTED, answer: null };
    const child = { name, workflowId, status: 'RUNNING' as ChildStatus };
    view.children.push(child);
    view.stage = name;
    publish();
    const scope = new CancellationScope();
    running = scope;
    // A stage belongs to the pattern's tenant: it draws on the fleet's budget, and queues on the task queue, as that
    // tenant, and at the `priority` the pattern's input gives (docs/sub-agents.md).
    const tenant = runTenant(input.tenant);
    try {
      const result: AgentRunResult = await scope.run(() =>
        // By its type's name, not the function: a bundler may rename a function it concatenates (`agent_run_agentRun`).
        executeChild<typeof agentRun>(WORKFLOW_TYPE, {
          workflowId,
          args: [tenant && !input.tenant ? { ...input, tenant } : input],
          // Wait for the child to wind down, so it ends ABORTED (and closes its model stream) before the pattern ends.
          cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
          staticSummary: `${pattern} ${name}`,
          ...inheritedOwner(),
          ...tenantPriority(tenant, input.priority),
        }),
      );
      child.status = result.status === AgentState.ABORTED ? AgentState.ABORTED : AgentState.COMPLETED;
      if (child.status === AgentState.ABORTED && !isAborted()) abortReason = `${name} was ${result.reason ?? 'aborted'}`;
      return { workflowId, status: child.status, answer: result.answer };
    } catch (err) {
      if (isAborted()) {
        child.status = isCancellation(err) ? AgentState.ABORTED : AgentState.FAILED;
        return { workflowId, status: child.status, answer: null };
      }
      child.status = AgentState.FAILED;
      const message = `${pattern} ${name} (${workflowId}) failed: ${innermostMessage(err)}`;
      end(AgentState.FAILED, message);
      throw ApplicationFailure.create({ type: FailureType.SubAgentFailed, message, nonRetryable: true, details: [{ stage: name, workflowId }], cause: err as Error });
    } finally {
      running = undefined;
      view.stage = null;
      publish();
    }
  }

  /** Publishes the final status; the pattern then returns (or throws, when FAILED). */
  function end(status: PatternStateView['status'], reason: string | null): void {
    view.status = status;
    view.reason = reason;
    publish();
  }

  return { run, end, isAborted, abortReason: () => abortReason ?? null };
}

/** The child's own reason, e.g. `loop detected: ...`, under the ChildWorkflowFailure wrapper. */
function innermostMessage(err: unknown): string {
  let current: unknown = err;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}
