/** Time travel's fork: the input of a new run that carries on from a step of another. */
import { randomUUID } from 'node:crypto';
import type { AgentRunInput } from '../common/input';
import type { RunStateView } from '../common/messages';
import { AgentState, isTerminal } from '../common/states';
import { checkStep, InvalidAgentInputError } from './errors';

/** What a fork reads of the run it starts from (`AgentRunHandle` is one). */
export interface ForkSource {
  snapshotAt(step: number, opts: { includeMessages?: boolean }): Promise<RunStateView>;
  stateSnapshotAt(step: number): Promise<unknown>;
}

/**
 * The start input of a fork of `workflowId` from step `fromStep`, and the id it gets unless told; `AgentClient.fork`
 * starts it. Step 0 is the run before its start: a fork from it is a fresh run of the same input.
 */
export async function forkInput(source: ForkSource, workflowId: string, fromStep: number): Promise<{ input: AgentRunInput; workflowId: string }> {
  checkStep('fromStep', fromStep);
  let view = await source.snapshotAt(fromStep, { includeMessages: true });
  // Step 0 is the run before its start, which nothing moves on from: carry the start (step 1), which follows from it alone.
  const carried = view.state === AgentState.IDLE ? fromStep + 1 : fromStep;
  if (carried !== fromStep) {
    view = await source.snapshotAt(carried, { includeMessages: true });
    if (isTerminal(view.state)) throw new InvalidAgentInputError(`step ${fromStep} of ${workflowId} cannot be forked: the run ended ${view.state} at its start`);
  }
  if (isTerminal(view.state)) throw new InvalidAgentInputError(`step ${fromStep} of ${workflowId} is ${view.state}: fork from an earlier step`);
  const task = view.messages?.find((m) => m.role === 'user')?.content ?? `fork of ${workflowId}`;
  const snapshot = await source.stateSnapshotAt(carried);
  const resume = { kind: 'fork' as const, snapshot: snapshot as NonNullable<AgentRunInput['resume']>['snapshot'], origin: { workflowId, step: fromStep } };
  return { input: { prompt: task, resume }, workflowId: `${workflowId}-fork-${fromStep}-${randomUUID().slice(0, 6)}` };
}
