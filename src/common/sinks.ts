/**
 * The workflow's sinks beside the stream's (common/stream.ts). A sink is no command: history is the same with or
 * without it, and the worker does not call it during replay.
 */
import type { Sinks } from '@temporalio/workflow';

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
