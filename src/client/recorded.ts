/**
 * What-if forks: the answers a run's model requests got, read from the histories of every run of its chain, for the
 * fork to reuse instead of paying again: each `callModel` response, each model critic's decision (`critiqueAnswer`)
 * and each compaction's summaries (`compactContext`), by the hash of the provider request that got it, which the
 * activity's result carries. A custom critic's decisions are not among them: it is the worker's code, not a request.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { CompactionResult, CritiqueOutcome, CritiqueRequest, ModelRequest, ModelResponse, QuotaWait, ReplayedAnswers } from '../common/chat';
import { isQuotaWait } from '../common/chat-helpers';
import { previousRun } from './chain';
import { decodeArray } from '../codec/payloads';

/** A scheduled activity whose answers are recorded, and the model call it is numbered as. */
interface Recorded {
  type: 'callModel' | 'critiqueAnswer' | 'compactContext';
  callNumber: number;
}

/**
 * The answers of the run's model requests from model call `fromCall` on (those after a fork step), by their requests'
 * hashes. A critique is numbered as the model call after it (its request's `callNumber`), a compaction as the call it
 * makes room for: the one after the last model call before it (any, at the start of a continued run: included).
 */
export async function recordedAnswers(workflow: WorkflowHandle, fromCall: number): Promise<ReplayedAnswers> {
  const converter = workflow.client.options.loadedDataConverter;
  const answers: ReplayedAnswers = {};
  let runId: string | undefined;
  do {
    const history = await workflow.client.getHandle(workflow.workflowId, runId).fetchHistory();
    /** Each scheduled activity whose answer is recorded, by its event id. */
    const scheduled = new Map<string, Recorded>();
    /** The number of the last model call scheduled in this run; none yet: a compaction at a continued run's start. */
    let lastCall: number | undefined;
    for (const event of history.events ?? []) {
      const started = event.activityTaskScheduledEventAttributes;
      const type = started?.activityType?.name;
      if (started && (type === 'callModel' || type === 'critiqueAnswer')) {
        const [request] = (await decodeArray(converter, started.input?.payloads)) as [ModelRequest | CritiqueRequest];
        scheduled.set(String(event.eventId), { type, callNumber: request.callNumber });
        if (type === 'callModel') lastCall = request.callNumber;
      } else if (started && type === 'compactContext') {
        scheduled.set(String(event.eventId), { type, callNumber: lastCall === undefined ? Number.MAX_SAFE_INTEGER : lastCall + 1 });
      }
      const completed = event.activityTaskCompletedEventAttributes;
      const request = completed ? scheduled.get(String(completed.scheduledEventId)) : undefined;
      if (!completed || !request || request.callNumber < fromCall) continue;
      const [result] = await decodeArray(converter, completed.result?.payloads);
      Object.assign(answers, answersOf(request, result as ModelResponse | QuotaWait | CritiqueOutcome | CompactionResult));
    }
    runId = await previousRun(workflow, runId);
  } while (runId);
  return answers;
}

/** What one completed activity recorded, by the hashes of its requests: nothing when it carries no hash (a run recorded before them). */
function answersOf(request: Recorded, result: ModelResponse | QuotaWait | CritiqueOutcome | CompactionResult): ReplayedAnswers {
  switch (request.type) {
    case 'callModel': {
      const response = result as ModelResponse | QuotaWait;
      if (isQuotaWait(response) || !response.requestHash) return {};
      const { requestHash, replayed: _replayed, conversation: _conversation, ...answer } = response;
      return { [requestHash]: answer };
    }
    case 'critiqueAnswer': {
      const { requestHash, action, reason, confidence } = result as CritiqueOutcome;
      return requestHash ? { [requestHash]: { critique: { action, reason, confidence } } } : {};
    }
    case 'compactContext':
      return Object.fromEntries(Object.entries((result as CompactionResult).summaries ?? {}).map(([hash, summary]) => [hash, { summary }]));
  }
}
