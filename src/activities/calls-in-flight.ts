/**
 * Model requests running on this worker, by run and call (a model call, the critic, a compaction), so that the run's
 * own workflow task can stop one at once. An interrupt, an abort, a pause or the run's time limit cancels the call in
 * the workflow; Temporal tells the activity only in the reply to its next heartbeat. When the run's workflow task ran
 * on the worker that runs the call (one worker, or the server's eager dispatch of the call to the worker that
 * scheduled it, which on the production stack was every time: RELIABILITY.md), the workflow's `modelCalls.stop` sink
 * reaches the call here first: its provider request closes before the workflow task even completes. The call then
 * waits for its cancellation as before, so it still ends as cancelled, not failed (docs/steering.md). When the call
 * runs on another worker, the stop goes there over the stream channel's stop relay (stream/stops.ts), so it closes
 * within a round trip instead of at the call's next heartbeat.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Context } from '@temporalio/activity';
import type { ModelCallKey, StopsModelCalls } from '../common/sinks';
import type { StopRelay } from '../stream/stops';

/** How often a request its run stopped on this worker beats while it waits to hear of its cancellation. */
const STOPPED_BEAT_MS = 50;

/** How long a call stopped here waits for Temporal's cancellation before it gives up and fails, retryable. */
export const STOPPED_CALL_GRACE_MS = 30_000;

export class ModelCallsInFlight implements StopsModelCalls {
  private readonly calls = new Map<string, () => void>();
  private unlisten: (() => void) | undefined;
  private linger: NodeJS.Timeout | undefined;

  /**
   * @param graceMs how long a call stopped here waits for its cancellation (STOPPED_CALL_GRACE_MS)
   * @param relay where stops of calls held by other workers go, and theirs come from (stream/stops.ts); absent: a
   *   call on another worker hears of its stop at its next heartbeat
   */
  constructor(
    readonly graceMs = STOPPED_CALL_GRACE_MS,
    private readonly relay?: StopRelay,
  ) {}

  /** A call runs: `stop` stops it. Returns the function that forgets it, once it no longer may be stopped. */
  add(workflowId: string, runId: string, call: ModelCallKey, stop: () => void): () => void {
    const key = keyOf(workflowId, runId, call);
    this.calls.set(key, stop);
    this.listening(true);
    return () => {
      if (this.calls.get(key) === stop) this.calls.delete(key);
      if (this.calls.size === 0) this.listening(false);
    };
  }

  /**
   * Stops the call if it runs on this worker; when it does not, tells the other workers through the relay and returns
   * false (without a relay, the call hears at its next heartbeat).
   */
  stop(workflowId: string, runId: string, call: ModelCallKey): boolean {
    if (this.stopHere(workflowId, runId, call)) return true;
    this.relay?.announce({ workflowId, runId, call });
    return false;
  }

  /** Calls running now. */
  get size(): number {
    return this.calls.size;
  }

  /** Stops the call if it runs on this worker (a stop the relay brought is never announced again). */
  private stopHere(workflowId: string, runId: string, call: ModelCallKey): boolean {
    const stop = this.calls.get(keyOf(workflowId, runId, call));
    stop?.();
    return stop !== undefined;
  }

  /**
   * The relay is listened to while calls run here, and a minute after the last: a worker that calls all the time
   * keeps one connection, not one per call (a stop sent while a new connection opens would be missed).
   */
  private listening(on: boolean): void {
    if (!this.relay) return;
    clearTimeout(this.linger);
    this.linger = undefined;
    if (on) {
      this.unlisten ??= this.relay.listen((s) => void this.stopHere(s.workflowId, s.runId, s.call));
      return;
    }
    this.linger = setTimeout(() => {
      this.unlisten?.();
      this.unlisten = undefined;
    }, RELAY_LINGER_MS);
    this.linger.unref();
  }
}

/** How long a worker keeps listening for stops after its last call ended. */
const RELAY_LINGER_MS = 60_000;

const keyOf = (workflowId: string, runId: string, call: ModelCallKey) => `${workflowId}\n${runId}\n${call}`;

/**
 * The abort of one model request: its signal aborts when the activity is cancelled, or when its run's workflow task
 * stops it on this worker (`calls`). A request stopped here waits for its cancellation (`ended`). `release` it when
 * the request ends.
 */
export class StoppableRequest {
  /** Its run stopped it here, before any cancellation came. */
  stoppedHere = false;
  private readonly controller = new AbortController();
  private readonly onCancel = () => this.controller.abort(this.ctx.cancellationSignal.reason);
  private forgetCall: (() => void) | undefined;
  private readonly graceMs: number;

  constructor(
    private readonly ctx: Context,
    calls: ModelCallsInFlight | undefined,
    call: ModelCallKey,
  ) {
    if (ctx.cancellationSignal.aborted) this.onCancel();
    ctx.cancellationSignal.addEventListener('abort', this.onCancel);
    this.graceMs = calls?.graceMs ?? 0;
    const execution = ctx.info.workflowExecution;
    this.forgetCall =
      execution &&
      calls?.add(execution.workflowId, execution.runId, call, () => {
        this.stoppedHere = true;
        this.controller.abort(new CancelledFailure('stopped by its run'));
      });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Aborts the request for a reason of the activity's own (a stalled stream). */
  abort(reason: unknown): void {
    this.controller.abort(reason);
  }

  /** Cancelled by Temporal, or stopped here. */
  get cancelled(): boolean {
    return this.stoppedHere || this.ctx.cancellationSignal.aborted;
  }

  /** Its run no longer finds it: a stop from now on does nothing. */
  forget(): void {
    this.forgetCall?.();
    this.forgetCall = undefined;
  }

  release(): void {
    this.forget();
    this.ctx.cancellationSignal.removeEventListener('abort', this.onCancel);
  }

  /**
   * The end of a request stopped here: once Temporal's cancellation comes, a `CancelledFailure`; with none within
   * the grace (the run's workflow task never reached the server), a retryable failure, so the call is made again.
   */
  async ended(): Promise<never> {
    let timer: NodeJS.Timeout | undefined;
    const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.graceMs)));
    await Promise.race([this.ctx.cancelled.catch(() => undefined), elapsed]);
    clearTimeout(timer);
    if (this.ctx.cancellationSignal.aborted) throw new CancelledFailure('model call cancelled');
    throw ApplicationFailure.retryable('the model call was stopped by its run, which then did not cancel it', 'StoppedWithoutCancellation');
  }

  /**
   * `ended`, heartbeating `details` meanwhile at the throttle's pace: Temporal says an activity is cancelled only in a
   * heartbeat's reply, so the run hears of the stop (and has the details: a model call's text) a throttle after it,
   * not a cadence after.
   */
  async endedBeating(details: () => unknown): Promise<never> {
    const asking = this.ctx.info.isLocal ? undefined : setInterval(() => this.ctx.heartbeat(details()), STOPPED_BEAT_MS);
    try {
      return await this.ended();
    } finally {
      clearInterval(asking);
    }
  }
}

/** Runs a request that is not streamed (the critic's verdict, a compaction's summaries) as a `StoppableRequest`. */
export async function stoppableCall<T>(ctx: Context, calls: ModelCallsInFlight | undefined, call: ModelCallKey, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const request = new StoppableRequest(ctx, calls, call);
  try {
    return await work(request.signal);
  } catch (err) {
    if (request.stoppedHere) await request.ended();
    throw err;
  } finally {
    request.release();
  }
}
