/**
 * A bench-only experiment, not a mode of the product: a workflow interceptor that runs each `callModel` as a local
 * activity instead of a task-queue activity (profile `local-model`). It measures what a step would cost if a model
 * answer were recorded as a marker when the workflow task completes, instead of through an activity of its own on
 * the server. What that gives up is in BENCHMARKS.md ("Where the server's CPU goes, and a step with the model call
 * as a local activity"): a crash redoes the model calls since the last completed workflow task, queries and signals
 * wait for that task to complete, and each run holds a workflow task slot while its model call runs.
 */
import { proxyLocalActivities, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

/** The product's model call bounds (effects.ts), as far as a local activity has them: no heartbeat timeout. */
const local = proxyLocalActivities<Record<string, (...args: unknown[]) => Promise<unknown>>>({
  startToCloseTimeout: '5 minutes',
  scheduleToCloseTimeout: '20 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      scheduleActivity(input, next) {
        return input.activityType === 'callModel' ? local.callModel(...input.args) : next(input);
      },
    },
  ],
});
