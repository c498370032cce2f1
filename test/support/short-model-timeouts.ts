/**
 * A workflow interceptor module for tests (bundled with the workflows: AgentHarnessOptions.workflowInterceptorModules):
 * model calls of models named `times-out*` get a 2 s start-to-close and a 4 s schedule-to-close instead of the
 * product's 5 and 20 minutes, so that a test sees a model call end by its activity timeouts.
 */
import type { ActivityInput, Next, WorkflowInterceptorsFactory, WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';

export const SHORT_TIMEOUT_MODEL_PREFIX = 'times-out';

function shortened(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
  const model = (input.args[0] as { model?: unknown } | undefined)?.model;
  if (input.activityType !== 'callModel' || typeof model !== 'string' || !model.startsWith(SHORT_TIMEOUT_MODEL_PREFIX)) return next(input);
  return next({ ...input, options: { ...input.options, startToCloseTimeout: '2 seconds', scheduleToCloseTimeout: '4 seconds' } });
}

export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [{ scheduleActivity: shortened }] });
