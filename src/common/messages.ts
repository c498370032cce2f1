/**
 * Queries, signals and updates of the `agentRun` workflow, shared by the workflow, the client and the CLI.
 * Wire names equal the constant names without their kind suffix.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AbortSignalInput, AbortUpdateInput, ControlSignalInput, ApproveUpdateInput, ControlUpdateInput, ResolvedInput, SendMessageUpdateInput } from './input';
import type { AgentState } from './states';
import type { RunStateView, RunUsage, TransitionRecord } from './view';
import type { OpenAIChatMessage } from './conversation';

export type { RunStateView } from './view';

/** A run snapshot carried into another run: what the resume input's schema checks (version, state, step), otherwise opaque outside the workflow. */
export type CarriedSnapshot = NonNullable<ResolvedInput['resume']>['snapshot'];
export interface StateQueryOptions {
  includeMessages?: boolean;
}

/** One step of a run: the state change that made it, numbered as `step` counts (step 1 is the run's START). */
export interface StepRecord extends TransitionRecord {
  step: number;
}

/** Which steps the `steps` query answers: from step `from` (default: the first the run holds), at most `limit` of them. */
export interface StepsQueryOptions {
  from?: number;
  /** @default 500, at most 1000 (`MAX_STEPS_PAGE`) */
  limit?: number;
}

/** A page of the run's steps; `next` is the `from` of the next page, null after the last. */
export interface StepsPage {
  steps: StepRecord[];
  next: number | null;
}

/** The longest page the `steps` query answers (a query's answer must stay well under the server's 2 MB). */
export const MAX_STEPS_PAGE = 1000;
export const DEFAULT_STEPS_PAGE = 500;

export interface ApproveResult {
  toolCallId: string;
  approved: boolean;
  /** Approvals still outstanding after this one. */
  remaining: number;
}

export interface SendMessageResult {
  /** Messages waiting for the next model call. */
  queued: number;
  /**
   * With `interrupt` only: whether the run cut its work short for it (a model call cancelled, running tools stopped
   * where they may be, undecided approvals rejected). False: only queued (PAUSED, compaction, the critic, the budget).
   */
  interrupted?: boolean;
}

/** What the abort, pause and resume updates answer: the run took the control, and this is where it stands now. */
export interface ControlResult {
  /** Null when the control went as a signal (`delivery`): it takes effect at the run's next step, not yet. */
  state: AgentState | null;
  /** A pause that waits for the work in flight to end. */
  pauseRequested: boolean;
  /**
   * `signal` when the run has no such update: a sub-agent pattern, or a worker from before control updates during a
   * rolling deploy. The signal is recorded at once and applied whenever a worker takes it; a refusal shows only in
   * `rejectedEvents`, and it has no deadline. Absent when the run took the update.
   */
  delivery?: 'signal';
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
  /** With `returnMessages`: the whole conversation in OpenAI's Chat Completions format, to continue it elsewhere (`messages` of a new run). */
  messages?: OpenAIChatMessage[];
}

export const stateQuery = defineQuery<RunStateView, [StateQueryOptions?]>('state');
/**
 * Time travel: the state view right after a step (a step is a state change; see `transitions`). Named to sort after
 * `state`, which the Temporal UI's Queries tab, listing queries by name, then preselects.
 */
export const stateAtQuery = defineQuery<RunStateView, [{ step: number; includeMessages?: boolean }]>('stateAt');
/**
 * Time travel: a page of the run's steps, from its step log (the `state` view carries only its last transitions). A
 * continued run holds the last 100 steps of the runs before it and its own.
 */
export const stepsQuery = defineQuery<StepsPage, [StepsQueryOptions?]>('steps');
/** A run's internal snapshot right after a step, as a new run carries on from it (`AgentClient.fork`); its shape is the worker's own. */
export const stateSnapshotAtQuery = defineQuery<CarriedSnapshot, [{ step: number }]>('stateSnapshotAt');
/**
 * The signals of clients before 0.2, still handled: a signal is recorded at once and applied whenever a worker takes
 * it, and a refusal shows only in `rejectedEvents`. Clients send the updates below instead.
 */
export const abortSignal = defineSignal<[AbortSignalInput?]>('abort');
export const pauseSignal = defineSignal<[ControlSignalInput?]>('pause');
export const resumeSignal = defineSignal<[ControlSignalInput?]>('resume');

// Control updates: refused (never recorded) when the machine refuses the event or when delivered after `deadline`.
export const approveUpdate = defineUpdate<ApproveResult, [ApproveUpdateInput]>('approve');
export const sendMessageUpdate = defineUpdate<SendMessageResult, [SendMessageUpdateInput]>('sendMessage');
export const abortUpdate = defineUpdate<ControlResult, [AbortUpdateInput]>('abort');
export const pauseUpdate = defineUpdate<ControlResult, [ControlUpdateInput]>('pause');
export const resumeUpdate = defineUpdate<ControlResult, [ControlUpdateInput]>('resume');
