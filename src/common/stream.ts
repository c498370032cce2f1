/**
 * The live stream of a run: the events a watcher sees, published once beside the workflow's history and read by
 * every watcher from an offset (src/stream). Text, restarts and retries come from the model activity; transitions,
 * tool calls, approvals and the end from the workflow, through the `stream` sink.
 */
import type { Sinks } from '@temporalio/workflow';
import type { RunStateView, TransitionRecord } from './view';
import { diffState, type WatchEvent } from './watch';

/** One event of a run's stream: a watch event, its transitions numbered by step (the SSE payload of today's cursor). */
export type StreamEvent = Exclude<WatchEvent, { type: 'transition' }> | { type: 'transition'; step: number; transition: TransitionRecord };

/** The workflow's way out to the stream (`proxySinks`): the worker publishes what it is handed, never during replay. */
export interface StreamSinks extends Sinks {
  stream: { publish(events: StreamEvent[]): void };
}

/**
 * The events of the workflow's part of the stream between two views: transitions (with their steps), tool calls,
 * approvals asked and the end. Text and retries are left out: the model activity publishes those as they happen.
 */
export function workflowStreamEvents(previous: RunStateView | undefined, next: RunStateView): StreamEvent[] {
  const firstStep = next.step - next.transitions.length + 1;
  return diffState(previous, next).flatMap((e): StreamEvent[] => {
    if (e.type === 'text' || e.type === 'restart' || e.type === 'retry') return [];
    if (e.type !== 'transition') return [e];
    return [{ type: 'transition', step: firstStep + next.transitions.indexOf(e.transition), transition: e.transition }];
  });
}
