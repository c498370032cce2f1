/**
 * The parts of a run's view that live in its activities rather than its workflow: the activities being retried and
 * the text of the model call in flight, which reaches watchers that have no stream channel through the call's
 * heartbeat details (activities/model.ts). Both from the server's description of the run (DescribeWorkflowExecution),
 * which needs no worker.
 */
import type { WorkflowClient } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { decodeArray, decodeFailureToError } from '../codec/payloads';
import { tsToDate } from '../common/proto-time';
import { ACTIVITY_STATES, AgentState } from '../common/states';
import type { RetryInfo, RunStateView } from '../common/view';

/** What a model call's heartbeat carries that a reader uses (activities/model.ts `ModelCallBeat`). */
interface Beat {
  callNumber?: unknown;
  attempt?: unknown;
  text?: unknown;
  degraded?: unknown;
}

const MODEL_STEPS: readonly string[] = [AgentState.PLANNING, AgentState.STREAMING];

/**
 * `view` with its retries and, in a model step, the text its model call has streamed so far (`partialText`, `stream`)
 * and whether it cannot publish it (`degraded`);
 * the view alone when it is not working on an activity or the description fails (best effort: it stands on its own).
 */
export async function withActivities(client: Pick<WorkflowClient, 'workflowService' | 'options'>, execution: { workflowId: string; runId?: string }, view: RunStateView): Promise<RunStateView> {
  if (!ACTIVITY_STATES.includes(view.state)) return view;
  // The raw description: the SDK's would decode the memo too, which this needs not.
  const described = await client.workflowService.describeWorkflowExecution({ namespace: client.options.namespace, execution }).catch(() => undefined);
  if (!described) return view;
  const converter = client.options.loadedDataConverter;
  const retrying: RetryInfo[] = [];
  let next = view;
  for (const a of described.pendingActivities ?? []) {
    if (a.activityType?.name === 'callModel' && MODEL_STEPS.includes(view.state) && a.heartbeatDetails?.payloads?.length) {
      const [beat] = (await decodeArray(converter, a.heartbeatDetails.payloads).catch(() => [])) as Beat[];
      const text = beat?.text;
      // The call the view is on: an older call's details (the run moved on since) describe nothing.
      if (typeof text === 'string' && typeof beat.callNumber === 'number' && beat.callNumber === (view.stream?.callNumber ?? beat.callNumber) && text.length >= view.partialText.length) {
        next = { ...next, partialText: text, stream: { callNumber: beat.callNumber, attempt: typeof beat.attempt === 'number' ? beat.attempt : (a.attempt ?? 1) } };
      }
      if (beat?.degraded === true) next = { ...next, degraded: true };
    }
    if ((a.attempt ?? 1) <= 1 && !a.lastFailure) continue;
    const error = await decodeFailureToError(converter, a.lastFailure);
    const type = error instanceof ApplicationFailure ? (error.type ?? null) : null;
    retrying.push({
      activity: a.activityType?.name ?? '',
      attempt: a.attempt ?? 1,
      lastFailure: error ? { type, message: error.message } : null,
      nextAttemptAt: tsToDate(a.nextAttemptScheduleTime)?.toISOString() ?? null,
    });
  }
  return retrying.length > 0 ? { ...next, retrying } : next;
}

/**
 * Whether the run's model call in flight says it cannot publish (its last heartbeat's `degraded`), from the server's
 * description alone: no query, so a stream may ask while the channel is quiet without costing the worker anything.
 */
export async function modelCallDegraded(client: Pick<WorkflowClient, 'workflowService' | 'options'>, workflowId: string): Promise<boolean> {
  const described = await client.workflowService.describeWorkflowExecution({ namespace: client.options.namespace, execution: { workflowId } }).catch(() => undefined);
  for (const a of described?.pendingActivities ?? []) {
    if (a.activityType?.name !== 'callModel' || !a.heartbeatDetails?.payloads?.length) continue;
    const [beat] = (await decodeArray(client.options.loadedDataConverter, a.heartbeatDetails.payloads).catch(() => [])) as Beat[];
    if (beat?.degraded === true) return true;
  }
  return false;
}
