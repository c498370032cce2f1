/**
 * Model requests running on this worker, by run and call (a model call, the critic, a compaction), so that the run's
 * own workflow task can stop one at once. An interrupt, an abort, a pause or the run's time limit cancels the call in
 * the workflow; Temporal tells the activity only in the reply to its next heartbeat. When the run's workflow task ran
 * on the worker that runs the call (one worker, or the server's eager dispatch of the call to the worker that
 * scheduled it, which on the production stack was every time: RELIABILITY.md), the workflow's `modelCalls.stop` sink
 * reaches the call here first: its provider request closes before the workflow task even completes. The call then
 * waits for its cancellation as before, so it still ends as cancelled, not failed (docs/steering.md).
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Context } from '@temporalio/activity';
import type { ModelCallKey, StopsModelCalls } from '../common/sinks';

/** How long a call stopped here waits for Temporal's cancellation before it gives up and fails, retryable. */
export const STOPPED_CALL_GRACE_MS = 30_000;

export class ModelCallsInFlight implements StopsModelCalls {
  private readonly calls = new Map<string, () => void>();

  /** @param graceMs how long a call stopped here waits for its cancellation (STOPPED_CALL_GRACE_MS) */
  constructor(readonly graceMs = STOPPED_CALL_GRACE_MS) {}

  /** A call runs: `stop` stops it. Returns the function that forgets it, once it no longer may be stopped. */
  add(workflowId: string, runId: string, call: ModelCallKey, stop: () => void): () => void {
    const key = keyOf(workflowId, runId, call);
    this.calls.set(key, stop);
    return () => {
      if (this.calls.get(key) === stop) this.calls.delete(key);
    };
  }

  /** Stops the call if it runs on this worker; false when it does not (it hears at its next heartbeat). */
  stop(workflowId: string, runId: string, call: ModelCallKey): boolean {
    const stop = this.calls.get(keyOf(workflowId, runId, call));
    stop?.();
    return stop !== undefined;
  }

  /** Calls running now. */
  get size(): number {
    return this.calls.size;
  }
}

const keyOf = (workflowId: string, runId: string, call: ModelCallKey) => `${workflowId}\n${runId}\n${call}`;

/**
 * Runs a request that is not streamed (the critic's verdict, a compaction's summaries) with a signal that aborts when
 * the activity is cancelled or when its run stops it on this worker (`calls`). Stopped here, it ends as a cancelled
 * call does: `ended` waits for Temporal's cancellation and throws.
 */
export async function stoppableCall<T>(ctx: Context, calls: ModelCallsInFlight | undefined, call: ModelCallKey, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onCancel = () => controller.abort(ctx.cancellationSignal.reason);
  if (ctx.cancellationSignal.aborted) onCancel();
  ctx.cancellationSignal.addEventListener('abort', onCancel);
  let stoppedHere = false;
  const execution = ctx.info.workflowExecution;
  const forget =
    execution &&
    calls?.add(execution.workflowId, execution.runId, call, () => {
      stoppedHere = true;
      controller.abort(new CancelledFailure('stopped by its run'));
    });
  try {
    return await work(controller.signal);
  } catch (err) {
    if (stoppedHere) await ended(ctx, calls!.graceMs);
    throw err;
  } finally {
    forget?.();
    ctx.cancellationSignal.removeEventListener('abort', onCancel);
  }
}

/**
 * The end of a call its run stopped on this worker: once Temporal's cancellation comes, a `CancelledFailure`; with
 * none within `graceMs` (the run's workflow task never reached the server), a retryable failure, so the call is
 * made again.
 */
export async function ended(ctx: Context, graceMs: number): Promise<never> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  await Promise.race([ctx.cancelled.catch(() => undefined), elapsed]);
  clearTimeout(timer);
  if (ctx.cancellationSignal.aborted) throw new CancelledFailure('model call cancelled');
  throw ApplicationFailure.retryable('the model call was stopped by its run, which then did not cancel it', 'StoppedWithoutCancellation');
}
