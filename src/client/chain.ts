/**
 * Time travel across continue-as-new: the runs of one workflow id form a chain, each run holding the steps since it
 * began (and a copy of the last 100 before). The newest run is asked first; an earlier step is asked of the run it
 * continued from, found by its first event's `continuedExecutionRunId`, and so back to the first run.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { firstStepHeld } from './errors';
import type { StepRecord } from './time-travel';

const { CONTINUE_AS_NEW_INITIATOR_WORKFLOW } = temporal.api.enums.v1.ContinueAsNewInitiator;

/** The run that `runId` (undefined: the newest) continued as new from, or undefined for the first run of the chain. */
export async function previousRun(workflow: WorkflowHandle, runId: string | undefined): Promise<string | undefined> {
  const { client, workflowId } = workflow;
  const { history } = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId, runId: runId ?? '' },
    maximumPageSize: 1,
  });
  const started = history?.events?.[0]?.workflowExecutionStartedEventAttributes;
  // A retry or a cron run also names the run before it; only a run that continued itself carries its steps on.
  return started?.initiator === CONTINUE_AS_NEW_INITIATOR_WORKFLOW && started.continuedExecutionRunId ? started.continuedExecutionRunId : undefined;
}

/** `ask` of the run that holds `step`: the newest run first (`workflow` is a handle by id), then back along the chain while a run says the step is before its first. */
export async function askRunHolding<T>(workflow: WorkflowHandle, step: number, ask: (run: WorkflowHandle) => Promise<T>): Promise<T> {
  let run = workflow;
  let runId: string | undefined;
  for (;;) {
    try {
      return await ask(run);
    } catch (err) {
      const first = firstStepHeld(err);
      if (first === undefined || step >= first) throw err;
      runId = await previousRun(workflow, runId);
      if (!runId) throw err;
      run = workflow.client.getHandle(workflow.workflowId, runId);
    }
  }
}

/** The steps of the whole chain from `newest` (the newest run's own list) back to step 1, each earlier run's read with `stepsOfRun`. */
export async function chainSteps(workflow: WorkflowHandle, newest: StepRecord[], stepsOfRun: (run: WorkflowHandle) => Promise<StepRecord[]>): Promise<StepRecord[]> {
  let steps = newest;
  let runId: string | undefined;
  while (steps.length > 0 && steps[0].step > 1) {
    runId = await previousRun(workflow, runId);
    if (!runId) break;
    const earlier = await stepsOfRun(workflow.client.getHandle(workflow.workflowId, runId));
    const first = steps[0].step;
    steps = [...earlier.filter((s) => s.step < first), ...steps];
  }
  return steps;
}
