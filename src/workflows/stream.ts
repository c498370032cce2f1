/**
 * The workflow's part of the live stream (common/stream.ts): after each step it hands the events since the last one
 * to the `stream` sink. A sink is no command: history is the same with or without it, and the worker does not call
 * it during replay, so a replayed run publishes only what happens after it caught up.
 */
import { proxySinks } from '@temporalio/workflow';
import { workflowStreamEvents, type StreamSinks } from '../common/stream';
import type { RunStateView } from '../common/view';
import { publicView } from './view';
import type { RunSnapshot } from '../machine/snapshot';

const { stream } = proxySinks<StreamSinks>();

export interface StreamPublisher {
  /** The run took a step (or several): publish what a watcher of the state would have seen change. */
  stepped(s: RunSnapshot): void;
}

/**
 * `from`: the snapshot a continued run carries on from (continue-as-new), whose events its stream already has; a new
 * run or a fork publishes from its first transition.
 */
export function createStreamPublisher(from?: RunSnapshot): StreamPublisher {
  let last: RunStateView | undefined = from && publicView(from, false);
  return {
    stepped(s) {
      const view = publicView(s, false);
      const events = workflowStreamEvents(last, view);
      last = view;
      if (events.length > 0) stream.publish(events);
    },
  };
}
