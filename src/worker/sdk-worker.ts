/**
 * The SDK's `Worker`, with one change: its workflow thread is the one `startWorkflowThreadEarly` started at the top of
 * the process, when there is one (early-thread.ts says why). Everything else, and every other configuration (debug
 * mode, a pool of threads, a replay worker), is the SDK's own.
 *
 * `createWorkflowCreator` is the SDK's protected hook for this. The `init` message below is the one the SDK's
 * `ThreadedVMWorkflowCreator.create` sends (@temporalio/worker 1.24, lib/workflow/threaded-vm.js); the package's version
 * is pinned, and every workflow test runs through this path.
 */
import { Worker, type CompiledWorkerOptions, type Logger } from '@temporalio/worker';
import { ThreadedVMWorkflowCreator, WorkerThreadClient } from '@temporalio/worker/lib/workflow/threaded-vm';
import type { WorkflowCreator } from '@temporalio/worker/lib/workflow/interface';
import type { WorkflowBundleWithSourceMapAndFilename } from '@temporalio/worker/lib/workflow/workflow-worker-thread/input';
import { dropEarlyWorkflowThread, takeEarlyWorkflowThread } from './early-thread';

export class AgentSdkWorker extends Worker {
  protected static override async createWorkflowCreator(
    workflowBundle: WorkflowBundleWithSourceMapAndFilename,
    options: CompiledWorkerOptions,
    logger: Logger,
  ): Promise<WorkflowCreator> {
    const reuseV8Context = options.reuseV8Context ?? true;
    // The SDK's own threads for anything but its default: one thread, one reused context, not in debug mode.
    const oneThread = !options.debugMode && reuseV8Context && options.workflowThreadPoolSize === 1;
    const thread = oneThread ? takeEarlyWorkflowThread() : undefined;
    if (!thread) {
      await dropEarlyWorkflowThread();
      return super.createWorkflowCreator(workflowBundle, options, logger);
    }
    const { patchActivationCallback } = options;
    const client = new WorkerThreadClient(thread, logger, patchActivationCallback);
    await client.send({
      type: 'init',
      workflowBundle,
      isolateExecutionTimeoutMs: options.isolateExecutionTimeoutMs,
      reuseV8Context,
      registeredActivityNames: new Set(options.activities.keys()),
      hasPatchActivationCallback: patchActivationCallback !== undefined,
    });
    return new ThreadedVMWorkflowCreator([client]);
  }
}
