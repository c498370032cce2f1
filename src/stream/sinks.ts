/**
 * The worker's end of the workflow's sinks: `stream` (common/stream.ts) and `modelCalls` (common/sinks.ts); not
 * called during replay.
 */
import type { InjectedSinks } from '@temporalio/worker';
import type { ModelCallSinks, StopsModelCalls } from '../common/sinks';
import type { StreamSinks } from '../common/stream';
import type { LiveStream } from './publisher';

/**
 * Registered on every worker, with or without a stream, so that the workflow's calls are never unregistered sinks.
 * `calls`: the model requests this worker makes, which the `modelCalls` sink stops (absent: it stops none).
 */
export function streamSinks(stream: LiveStream | undefined, calls?: StopsModelCalls): InjectedSinks<StreamSinks & ModelCallSinks> {
  return {
    stream: { publish: { fn: (info, events) => stream?.publish(info.workflowId, events), callDuringReplay: false } },
    modelCalls: { stop: { fn: (info, call) => void calls?.stop(info.workflowId, info.runId, call), callDuringReplay: false } },
  };
}
