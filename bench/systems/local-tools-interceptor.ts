/**
 * Workflow interceptor (bench-only tuning): runs `executeTool` as a local activity instead of a task-queue activity,
 * so a fast pure tool costs no extra workflow task and no activity round trip through the server. Only for tools
 * without side effects that finish well within a workflow task (the bench's `readFile`). Changes the commands a run
 * emits, so it is never for runs already in flight; in the product this would sit behind `patched()`.
 */
import { proxyLocalActivities, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

const LOCAL = new Set(['executeTool']);

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      scheduleActivity(input, next) {
        if (!LOCAL.has(input.activityType)) return next(input);
        const { startToCloseTimeout, retry } = input.options;
        const local = proxyLocalActivities({ startToCloseTimeout: startToCloseTimeout ?? '1 minute', retry });
        return local[input.activityType](...input.args);
      },
    },
  ],
});
