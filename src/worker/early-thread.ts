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

/**
 * The product's workflow thread (workflow-thread-main.ts): the SDK's entry, with the promise hook of promise-stacks.ts.
 * Compiled, it is a JavaScript file the thread loads as it is; run from the TypeScript sources (tsx, jest) the thread
 * registers tsx's loader first, as it has no loader of its own.
 */
function startWorkflowThread(): NodeWorker {
  const entry = require.resolve('./workflow-thread-main');
  if (!entry.endsWith('.ts')) return new NodeWorker(entry);
  return new NodeWorker(`require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register(); require(${JSON.stringify(entry)});`, { eval: true });
}

let early: NodeWorker | undefined;

/**
 * Start one workflow thread now, for the first `AgentSdkWorker` of this process to adopt. Call it before importing
 * anything heavy; a second call while one waits returns that one.
 */
export function startWorkflowThreadEarly(): NodeWorker {
  if (early) return early;
  const thread = startWorkflowThread();
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

/**
 * The thread started early, if one is waiting and alive, or else one started now; it keeps the process alive from
 * now on. An early thread is taken once only.
 */
export function takeWorkflowThread(): NodeWorker {
  const thread = early ?? startWorkflowThread();
  early = undefined;
  thread.ref();
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
