/**
 * Queries, signals and updates of the `agentRun` workflow, shared by the workflow, the client and the CLI.
 * Wire names equal the constant names without their kind suffix.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AbortInput, ApproveInput, SendMessageInput } from './input';
import type { RunStateView, RunUsage } from './view';

export type { RunStateView } from './view';

/** A run snapshot carried into another run: versioned, otherwise opaque outside the workflow. */
export type CarriedSnapshot = { schemaVersion: number; step: number } & Record<string, unknown>;
export interface StateQueryOptions {
  includeMessages?: boolean;
}

/** Text streamed so far by the model call in flight, sent by the model activity in batches. */
export interface StreamDelta {
  callNumber: number;
  attempt: number;
  text: string;
}

export interface ApproveResult {
  toolCallId: string;
  approved: boolean;
  /** Approvals still outstanding after this one. */
  remaining: number;
}

export interface SendMessageResult {
  queued: number;
}

/** What the workflow returns when the run completes or is aborted; a failed run fails the workflow. */
export interface AgentRunResult {
  /** FAILED only inside the `AgentRunFailed` failure's details: a failed run fails the workflow. */
  status: 'COMPLETED' | 'ABORTED' | 'FAILED';
  answer: string | null;
  reason: string | null;
  /** The model's last complete message: for a run aborted or ended by a limit, what it had said before the end. */
  lastText: string | null;
  /** The text a model call had streamed when the run ended in the middle of it (an abort, a timeout); null otherwise. */
  partialText: string | null;
  usage: RunUsage;
  loops: number;
  toolCalls: number;
}

export const stateQuery = defineQuery<RunStateView, [StateQueryOptions?]>('state');
/**
 * Time travel: the state view right after a step (a step is a state change; see `transitions`). Named to sort after
 * `state`, which the Temporal UI's Queries tab, listing queries by name, then preselects.
 */
export const stateAtQuery = defineQuery<RunStateView, [{ step: number; includeMessages?: boolean }]>('stateAt');
/** @deprecated `stateAt`'s name on workers before 0.2; the client falls back to it when a worker does not know `stateAt`. */
export const snapshotAtQuery = defineQuery<RunStateView, [{ step: number; includeMessages?: boolean }]>('snapshotAt');
/** A run's internal snapshot right after a step, as a new run carries on from it (`AgentClient.fork`); its shape is the worker's own. */
export const stateSnapshotAtQuery = defineQuery<CarriedSnapshot, [{ step: number }]>('stateSnapshotAt');
export const abortSignal = defineSignal<[AbortInput?]>('abort');
export const pauseSignal = defineSignal('pause');
export const resumeSignal = defineSignal('resume');
export const streamDeltaSignal = defineSignal<[StreamDelta]>('streamDelta');
export const approveUpdate = defineUpdate<ApproveResult, [ApproveInput]>('approve');
export const sendMessageUpdate = defineUpdate<SendMessageResult, [SendMessageInput]>('sendMessage');
