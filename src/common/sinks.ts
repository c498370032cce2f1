/**
 * The workflow's sinks beside the stream's (common/stream.ts). A sink is no command: history is the same with or
 * without it, and the worker does not call it during replay.
 */
import type { Sinks } from '@temporalio/workflow';
import type { AgentRunResult } from './messages';

/**
 * A model request of a run, as the worker that makes it knows it: a model call by its number, the critic by the
 * number of the answer it judges (`criticCall`), a compaction by `COMPACTION_CALL` (a run compacts once at a time).
 */
export type ModelCallKey = number | string;
export const criticCall = (callNumber: number): ModelCallKey => `critic:${callNumber}`;
export const COMPACTION_CALL: ModelCallKey = 'compaction';

/** The run's way to stop its model request on the worker that makes it, at once (activities/calls-in-flight.ts). */
export interface ModelCallSinks extends Sinks {
  modelCalls: { stop(call: ModelCallKey): void };
}

/** The worker's end of `modelCalls` (`ModelCallsInFlight`): stops the request if it runs on this worker. */
export interface StopsModelCalls {
  stop(workflowId: string, runId: string, call: ModelCallKey): boolean;
}

/** A state change of a run, as the worker's `onTransition` hook is told it: the step it is and the transition record. */
export interface RunTransitionNote {
  /** The run's step counter after this change (a step is a state change; `stepState` shows the run as it was then). */
  step: number;
  from: string;
  to: string;
  event: string;
  /** When, by workflow time (ISO 8601). */
  at: string;
}

/**
 * The run's road to the worker's lifecycle hooks (`hooks.onTransition`, `hooks.onRunEnd`; worker/hooks.ts): a sink,
 * so the hooks run outside the workflow's determinism, never during replay, and their failures never reach the run.
 */
export interface RunHookSinks extends Sinks {
  runHooks: {
    /** The steps one event made, in order: each a transition (a state change, or a state entered again). */
    transitioned(changes: RunTransitionNote[]): void;
    /** The run ended (COMPLETED, ABORTED or FAILED); not when it continues as new. */
    ended(result: AgentRunResult): void;
  };
}
