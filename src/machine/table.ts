/**
 * The machine's table: for each state, ordered rows `{ event, guard, target, action }`; the first row for the event
 * whose guard holds wins (as in xstate v5). Guards and actions are named, so the table can be drawn and walked. A
 * target entered through entry rows (`ENTRY` in core.ts: a model step's limits, budget, pause, compaction) may
 * detour on the way in; those rows are part of the table too.
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

/**
 * `target`: the state the row leads to, or those it may (a phase's `resumeTo`, `then` or `returnTo` names one of
 * them); a target with entry rows may detour on the way in.
 */
export interface Row<E extends AgentEventType = AgentEventType> {
  event: E;
  guard: Guard<E> | null;
  target: AgentState | readonly AgentState[] | typeof SELF | typeof REJECTED;
  action: Action<E>;
}

/** Where entering a state may lead instead of it: a named guard on the snapshot on the way in (null: the state itself). */
export interface EntryRow {
  guard: { name: string; holds(s: RunSnapshot, e: AgentEvent, target: Phase): boolean } | null;
  /** null: the state being entered. */
  target: AgentState | null;
  action: { name: string; run(s: RunSnapshot, target: Phase, e: AgentEvent, now: string): TransitionResult };
}

export const guard = <E extends AgentEventType>(name: string, holds: Guard<E>['holds']): Guard<E> => ({ name, holds });
export const action = <E extends AgentEventType>(name: string, run: Action<E>['run']): Action<E> => ({ name, run });

/** A row; `event` first, so that a state's rows read as a table. Typed by its event, kept beside rows of any event. */
export const row = <E extends AgentEventType>(event: E, g: Guard<E> | null, target: Row['target'], a: Action<E>): Row =>
  ({ event, guard: g, target, action: a }) as unknown as Row;

/** A row of rows: each state's module lists its rows with it, in order. */
export type StateRows = readonly Row[];
