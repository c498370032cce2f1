/**
 * The workflow's sinks beside the stream's (common/stream.ts). A sink is no command: history is the same with or
 * without it, and the worker does not call it during replay.
 */
import type { Sinks } from '@temporalio/workflow';

/** The run's way to stop its streaming model call on the worker that runs it, at once (activities/calls-in-flight.ts). */
export interface ModelCallSinks extends Sinks {
  modelCalls: { stop(callNumber: number): void };
}

/** The worker's end of `modelCalls` (`ModelCallsInFlight`): stops the call if it streams on this worker. */
export interface StopsModelCalls {
  stop(workflowId: string, runId: string, callNumber: number): boolean;
}
