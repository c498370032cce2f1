/**
 * The machine's table, as in xstate v5: each state has its own rows `{ event, guard, target, action }`, then its parent
 * group's (the rows every running state shares); the first row for the event whose guard holds wins, and every target
 * is one state. A state's eventless rows ("always") are evaluated on each move into it: the first that holds takes the
 * run on to its own target, recorded as one move under the event that led there (core.ts `enter`).
 */
import type { AgentState } from '../common/states';
import type { Phase, RunSnapshot } from './snapshot';
import type { AgentEvent, AgentEventType, TransitionResult } from './types';

export type EventOf<E extends AgentEventType> = Extract<AgentEvent, { type: E }>;

/** The row keeps the state: a request is recorded, or work is asked again; nothing moves. */
export const SELF = 'self' as const;
/** The row refuses the event, naming why (the event is recorded as rejected). */
export const REJECTED = 'rejected' as const;

/** A named one-line predicate on the snapshot and the event. */
export interface Guard<E extends AgentEventType = AgentEventType> {
  name: string;
  holds(s: RunSnapshot, e: EventOf<E>, now: string): boolean;
}

/** A named step: the next snapshot and its commands (moves go through core.ts `enter`, `finish` or `fail`). */
export interface Action<E extends AgentEventType = AgentEventType> {
  name: string;
  run(s: RunSnapshot, e: EventOf<E>, now: string): TransitionResult;
}

/** `target`: the one state the row leads to (where that state's eventless rows may take the run on). */
export interface Row<E extends AgentEventType = AgentEventType> {
  event: E;
  guard: Guard<E> | null;
  target: AgentState | typeof SELF | typeof REJECTED;
  action: Action<E>;
}

/**
 * An eventless row of a state: on the way into the state (`entering`, with its phase's data), where the run goes
 * instead when the guard holds. The move is recorded under the event that led into the state.
 */
export interface EventlessRow {
  guard: { name: string; holds(s: RunSnapshot, e: AgentEvent, entering: Phase): boolean };
  target: AgentState;
  action: { name: string; run(s: RunSnapshot, entering: Phase, e: AgentEvent, now: string): TransitionResult };
}

/** A state of the table: its own rows, its eventless rows, and the parent group's rows tried after its own. */
export interface StateNode {
  rows: readonly Row[];
  always: readonly EventlessRow[];
  parent: readonly Row[];
}

export const guard = <E extends AgentEventType>(name: string, holds: Guard<E>['holds']): Guard<E> => ({ name, holds });
export const action = <E extends AgentEventType>(name: string, run: Action<E>['run']): Action<E> => ({ name, run });

/** A row; `event` first, so that a state's rows read as a table. Typed by its event, kept beside rows of any event. */
export const row = <E extends AgentEventType>(event: E, g: Guard<E> | null, target: Row['target'], a: Action<E>): Row =>
  ({ event, guard: g, target, action: a }) as unknown as Row;

/** An eventless row; its guard and action see the phase being entered. */
export const always = (name: string, holds: EventlessRow['guard']['holds'], target: AgentState, a: EventlessRow['action']): EventlessRow => ({ guard: { name, holds }, target, action: a });
