/**
 * The SDK's workflow thread, started before the worker's own modules load. A worker process spends about 300 ms of
 * its start loading `@temporalio/worker` in the main thread, then more on `openai`, `zod` and the product, and only
 * then does `Worker.create` start the workflow thread, which loads the SDK's modules again (about 200 ms more) before
 * it takes the bundle. Both threads load in sequence on the critical path of a restart (BENCHMARKS.md, issue 26,
 * figure (d)). Started first, the thread loads on the second core while the main thread loads its own.
 *
 * This module imports nothing but `node:worker_threads`, so that starting the thread costs the main thread nothing.
 * `AgentSdkWorker` (sdk-worker.ts) adopts the thread; a process that never creates a worker leaves it unreferenced and
 * idle, and it ends with the process.
 */
import { Worker as NodeWorker } from 'node:worker_threads';

/** The SDK's entry for a workflow thread (`ThreadedVMWorkflowCreator` spawns the same file). */
const WORKFLOW_THREAD_ENTRY = '@temporalio/worker/lib/workflow/workflow-worker-thread';

let early: NodeWorker | undefined;

/**
 * Start one workflow thread now, for the first `AgentSdkWorker` of this process to adopt. Call it before importing
 * anything heavy; a second call while one waits returns that one.
 */
export function startWorkflowThreadEarly(): NodeWorker {
  if (early) return early;
  const thread = new NodeWorker(require.resolve(WORKFLOW_THREAD_ENTRY));
  thread.unref(); // a process that never adopts it must still be able to end
  const forget = () => {
    if (early === thread) early = undefined;
  };
  // A thread that fails to load is dropped: the SDK then starts its own, which reports the failure in its own words.
  thread.once('error', forget);
  thread.once('exit', forget);
  early = thread;
  return thread;
}

/** The thread started early, if one is waiting and alive; it keeps the process alive from now on. Once only. */
export function takeEarlyWorkflowThread(): NodeWorker | undefined {
  const thread = early;
  early = undefined;
  thread?.ref();
  return thread;
}

/** Ends the waiting thread, if any: for a worker that runs workflows in some other way (debug mode, a pool). */
export async function dropEarlyWorkflowThread(): Promise<void> {
  await takeEarlyWorkflowThread()?.terminate();
}
