/** The worker's end of the workflow's `stream` sink (common/stream.ts): not called during replay. */
import type { InjectedSinks } from '@temporalio/worker';
import type { StreamSinks } from '../common/stream';
import type { LiveStream } from './publisher';

/** Registered on every worker, with or without a stream, so that the workflow's calls are never unregistered sinks. */
export function streamSinks(stream: LiveStream | undefined): InjectedSinks<StreamSinks> {
  return { stream: { publish: { fn: (info, events) => stream?.publish(info.workflowId, events), callDuringReplay: false } } };
}
