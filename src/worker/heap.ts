/**
 * V8's heap in a worker process. A worker's live heap is small (tens of MB: the SDK, the bundles, the runs in memory)
 * and it allocates slowly, so V8 lets its old generation grow only 1.1 to 1.3 times past what is live, and starts the
 * next incremental marking almost as soon as the last one ends. Measured through a 500-step run (BENCHMARKS.md, issue
 * 26, ninth round): a full collection of the main thread's heap every ~200 ms, the marking threads busy 4 ms a step
 * more at step 500 than at step 20. Letting the old generation grow to four times what is live took those collections
 * from 27 to 2 in two runs of 500 steps, and the worker's CPU a step stayed flat through a run, at the same peak RSS
 * for 1,000 runs.
 */
import { setFlagsFromString } from 'node:v8';

/** How far past what is live V8's old generation grows before its next full collection: 300 is four times. */
export const WORKER_HEAP_GROWING_PERCENT = 300;

/**
 * Sets V8's old-generation growth for the whole process (every isolate: the workflow threads too). `0` leaves V8's
 * own heuristics. The worker's entry calls it first (`AGENT_HEAP_GROWING_PERCENT`); call it in an entry of your own.
 */
export function tuneWorkerHeap(percent: number = WORKER_HEAP_GROWING_PERCENT): void {
  if (!Number.isInteger(percent) || percent < 0 || percent > 1_000) throw new RangeError(`the heap growing percent must be a whole number from 0 to 1000, got ${percent}`);
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
