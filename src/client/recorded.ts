/**
 * What-if forks: the model answers a run recorded, read from the histories of every run of its chain (each
 * `callModel` activity's result, which carries the hash of its request), for the fork to reuse instead of paying again.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { isQuotaWait, type ModelRequest, type ModelResponse, type QuotaWait } from '../common/chat';
import { previousRun } from './chain';
import { decodeArray } from '../codec/payloads';

/** The answers of the run's model calls numbered `fromCall` or later (those after a fork step), by their requests' hashes. */
export async function recordedAnswers(workflow: WorkflowHandle, fromCall: number): Promise<Record<string, ModelResponse>> {
  const converter = workflow.client.options.loadedDataConverter;
  const answers: Record<string, ModelResponse> = {};
  let runId: string | undefined;
  do {
    const history = await workflow.client.getHandle(workflow.workflowId, runId).fetchHistory();
    /** The call number of each scheduled `callModel`, by its event id. */
    const calls = new Map<string, number>();
    for (const event of history.events ?? []) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name === 'callModel') {
        const [request] = (await decodeArray(converter, scheduled.input?.payloads)) as [ModelRequest];
        calls.set(String(event.eventId), request.callNumber);
      }
      const completed = event.activityTaskCompletedEventAttributes;
      const callNumber = completed ? calls.get(String(completed.scheduledEventId)) : undefined;
      if (!completed || callNumber === undefined || callNumber < fromCall) continue;
      const [response] = (await decodeArray(converter, completed.result?.payloads)) as [ModelResponse | QuotaWait];
      if (isQuotaWait(response) || !response.requestHash) continue;
      const { requestHash, replayed: _replayed, conversation: _conversation, ...answer } = response;
      answers[requestHash] = answer;
    }
    runId = await previousRun(workflow, runId);
  } while (runId);
  return answers;
}
