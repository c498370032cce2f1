/**
 * The live stream of a run: the events a watcher sees, published once beside the workflow's history and read by
 * every watcher from an offset (src/stream). Text, restarts and retries come from the model activity; transitions,
 * tool calls, approvals and the end from the workflow, through the `stream` sink.
 */
import type { Sinks } from '@temporalio/workflow';
import type { RunStateView, TransitionRecord } from './view';
import { diffState, type WatchEvent } from './watch';

/** One event of a run's stream: a watch event, its transitions numbered by step (the SSE payload of today's cursor). */
export type StreamEvent =
  | Exclude<WatchEvent, { type: 'transition' }>
  | { type: 'transition'; step: number; transition: TransitionRecord }
  /** The worker could not publish `count` events of this run (the channel failed): readers re-read the state, as after a gap. */
  | { type: 'lost'; count: number };

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

/** What a reader holds of one model call's text. */
export interface CallText {
  callNumber: number;
  /** The attempt whose text this is (a `resume` carries the earlier attempts' text over to it). */
  attempt: number;
  text: string;
  /** An event was missing (a `text` did not start where the text ends, or a `resume` kept more than there was). */
  hole: boolean;
}

/**
 * Follows the text of each model call through a run's stream, as a reader shows it: `text` appends, `restart`
 * starts the call over, `resume` keeps the first `chars` characters and goes on; events of an attempt older than the
 * one followed are stale and skipped. Returns what the event did to the text. Pure apart from the map it updates.
 */
export function followText(calls: Map<number, CallText>, e: StreamEvent): 'append' | 'restart' | 'resume' | 'stale' | 'none' {
  if (e.type === 'lost') {
    // Some text may be among what was lost: no call's text can be trusted to be whole.
    for (const call of calls.values()) call.hole = true;
    return 'none';
  }
  if (e.type !== 'text' && e.type !== 'restart' && e.type !== 'resume') return 'none';
  const call = calls.get(e.callNumber) ?? { callNumber: e.callNumber, attempt: e.attempt, text: '', hole: false };
  calls.set(e.callNumber, call);
  if (e.attempt < call.attempt) return 'stale';
  if (e.type === 'restart') {
    Object.assign(call, { attempt: e.attempt, text: '', hole: false });
    return 'restart';
  }
  if (e.type === 'resume') {
    if (call.text.length < e.chars) call.hole = true;
    Object.assign(call, { attempt: e.attempt, text: call.text.slice(0, e.chars) });
    return 'resume';
  }
  // A newer attempt without its restart (the reader missed it): its text starts over.
  if (e.attempt > call.attempt) Object.assign(call, { attempt: e.attempt, text: '', hole: false });
  if (e.at !== undefined && e.at !== call.text.length) call.hole = true;
  call.text += e.text;
  return 'append';
}
