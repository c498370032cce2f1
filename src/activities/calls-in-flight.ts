/**
 * Model calls running on this worker, by run and call number, so that the run's own workflow task can stop one at
 * once. An interrupt, an abort, a pause or the run's time limit cancels the call in the workflow; Temporal tells the
 * activity only in the reply to its next heartbeat. When the run's workflow task ran on the worker that runs the call
 * (one worker, or the server's eager dispatch of the call to the worker that scheduled it), the workflow's
 * `modelCalls.stop` sink reaches the call here first: its provider stream closes before the workflow task even
 * completes. The call then waits for its cancellation as before, so it still ends as cancelled, not failed
 * (docs/steering.md).
 */
import type { StopsModelCalls } from '../common/sinks';

/** How long a call stopped here waits for Temporal's cancellation before it gives up and fails, retryable. */
export const STOPPED_CALL_GRACE_MS = 30_000;

export class ModelCallsInFlight implements StopsModelCalls {
  private readonly calls = new Map<string, () => void>();

  /** @param graceMs how long a call stopped here waits for its cancellation (STOPPED_CALL_GRACE_MS) */
  constructor(readonly graceMs = STOPPED_CALL_GRACE_MS) {}

  /** A call streams: `stop` stops it. Returns the function that forgets it, once it no longer streams. */
  add(workflowId: string, runId: string, callNumber: number, stop: () => void): () => void {
    const key = keyOf(workflowId, runId, callNumber);
    this.calls.set(key, stop);
    return () => {
      if (this.calls.get(key) === stop) this.calls.delete(key);
    };
  }

  /** Stops the call if it streams on this worker; false when it does not (it hears at its next heartbeat). */
  stop(workflowId: string, runId: string, callNumber: number): boolean {
    const stop = this.calls.get(keyOf(workflowId, runId, callNumber));
    stop?.();
    return stop !== undefined;
  }

  /** Calls streaming now. */
  get size(): number {
    return this.calls.size;
  }
}

const keyOf = (workflowId: string, runId: string, callNumber: number) => `${workflowId}\n${runId}\n${callNumber}`;
