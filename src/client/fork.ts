/** Time travel's fork: the input of a new run that carries on from a step of another. */
import { randomUUID } from 'node:crypto';
import type { ReplayedAnswers } from '../common/chat';
import type { AgentRunInput } from '../common/input';
import type { RunStateView } from '../common/messages';
import { AgentState, isTerminal } from '../common/states';
import { checkStep, InvalidAgentInputError } from './errors';

/** What a fork reads of the run it starts from (`AgentRunHandle` is one). */
export interface ForkSource {
  snapshotAt(step: number, opts: { includeMessages?: boolean }): Promise<RunStateView>;
  stateSnapshotAt(step: number): Promise<unknown>;
  /** The answers of its model requests from model call `fromCall` on, by their requests' hashes (recorded.ts). */
  recordedAnswers(fromCall: number): Promise<ReplayedAnswers>;
}

/** A what-if fork's edits of the step it starts from (the input's `resume.edits`). */
export interface ForkEdits {
  /** Tool results by tool call id (`recentToolCalls`, `agent history`): one already in the conversation is replaced, one made later is replaced when it comes. */
  toolResults?: Record<string, string>;
  /** A user message for the next model call, queued as `sendMessage` queues one. */
  message?: string;
  /** The model from the fork on. */
  model?: string;
  /** The system prompt from the fork on. */
  systemPrompt?: string;
}

/** What makes a fork a what-if fork. */
export interface WhatIfOptions {
  edits?: ForkEdits;
  /**
   * Reuse the original's recorded model answers while the fork's requests are the same as the original's (the model
   * activity compares the hashes of the requests): those calls are not sent, nor paid for, again. @default true with `edits`, else false
   */
  replay?: boolean;
}

/**
 * The start input of a fork of `workflowId` from step `fromStep`, and the id it gets unless told; `AgentClient.fork`
 * starts it. Step 0 is the run before its start: a fork from it is a fresh run of the same input.
 */
export async function forkInput(source: ForkSource, workflowId: string, fromStep: number, whatIf: WhatIfOptions = {}): Promise<{ input: AgentRunInput; workflowId: string }> {
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
  // The calls after the fork step: from the one its step started (a model call in flight is redone), bounded by what the original made.
  const replay = (whatIf.replay ?? whatIf.edits !== undefined) ? await source.recordedAnswers(Math.max(1, view.loops)) : {};
  const resume = {
    kind: 'fork' as const,
    snapshot: snapshot as NonNullable<AgentRunInput['resume']>['snapshot'],
    origin: { workflowId, step: fromStep },
    ...(whatIf.edits ? { edits: whatIf.edits } : {}),
    ...(Object.keys(replay).length > 0 ? { replay: replay as NonNullable<NonNullable<AgentRunInput['resume']>['replay']> } : {}),
  };
  return { input: { prompt: task, resume }, workflowId: `${workflowId}-fork-${fromStep}-${randomUUID().slice(0, 6)}` };
}
