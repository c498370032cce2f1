/**
 * The agent run as a pure state machine: `transition(snapshot, event, now) -> { snapshot, commands }`.
 * No Temporal import, no await, no clock, no randomness: the workflow interprets the commands and feeds
 * their outcomes back as events. Every state change is appended to the snapshot's transition log.
 *
 * The behaviour is the table (machine/table.ts): each state's ordered rows `{ event, guard, target, action }`, one
 * module per state or group (machine/*.ts), and the entry rows through which a target may detour (core.ts `ENTRY`).
 */
import type { AgentState } from '../common/states';
import { AgentState as S, isTerminal } from '../common/states';
import { oncePerWorker } from '../common/once-per-worker';
import { timerDue } from './clocks';
import type { RunSnapshot } from './snapshot';
import { commandsFor, ENTRY, internalEvent, ok, reject, tracer } from './core';
import { CRITIQUE_ROWS } from './critique';
import { IDLE_ROWS, PLANNING_ROWS, STREAMING_ROWS } from './model-steps';
import { PROCESSING_ROWS } from './processing';
import { REJECTED, type Row, SELF } from './table';
import { AWAITING_APPROVAL_ROWS, TOOL_EXECUTING_ROWS } from './tools';
import type { AgentCommand, AgentEvent, AgentEventType, TransitionResult } from './types';
import { COMPACTING_ROWS, COMPLETED_ROWS, PAUSED_ROWS } from './waits';

export type { AgentCommand, AgentEvent, AgentEventType, TransitionResult, WorkCommand } from './types';
export { CONTINUE_PROMPT } from './responses';
export { freshClocks, timerDue } from './clocks';
export { ENTRY as ENTRY_ROWS, tracer as rowTracer } from './core';
export {
  APPROVAL_NOTE_HEAD,
  approvalNote,
  approvalTimedOut,
  awaitsMessage,
  commandsFor,
  CUT_TOOL_CALL,
  internalEvent,
  INTERRUPTED_APPROVAL,
  INTERRUPTED_MARK,
  INTERRUPTED_TOOL,
  PAUSE_NOT_APPLIED,
  isRunning,
  LOOP_WARNING,
  MAX_CONTINUATIONS,
  modelFailure,
  recordRejection,
  TOOL_RETRY_NOTE,
  undecided,
  wrapUpNote,
} from './core';

/** Each state's rows, in order: the first row for an event whose guard holds wins. Ended runs take no event. */
export const ROWS: Readonly<Record<AgentState, readonly Row[]>> = {
  IDLE: IDLE_ROWS,
  PLANNING: PLANNING_ROWS,
  STREAMING: STREAMING_ROWS,
  PROCESSING: PROCESSING_ROWS,
  TOOL_EXECUTING: TOOL_EXECUTING_ROWS,
  AWAITING_APPROVAL: AWAITING_APPROVAL_ROWS,
  CRITIQUE: CRITIQUE_ROWS,
  COMPACTING: COMPACTING_ROWS,
  PAUSED: PAUSED_ROWS,
  COMPLETED: COMPLETED_ROWS,
  FAILED: [],
  ABORTED: [],
};

/** One edge of the table as readers draw it: `via` names the entry row a target detoured through. */
export interface TableEdge {
  from: AgentState;
  event: AgentEventType;
  guard: string | null;
  to: AgentState;
  action: string;
  via?: string;
}

/** The states a row may end in: its target, and where the entry rows of that target may lead instead. */
function rowEdges(from: AgentState, r: Row): TableEdge[] {
  if (r.target === REJECTED) return [];
  const base = { from, event: r.event, guard: r.guard?.name ?? null, action: r.action.name };
  if (r.target === SELF) return [{ ...base, to: from }];
  const targets: readonly AgentState[] = typeof r.target === 'string' ? [r.target] : r.target;
  return targets.flatMap((target) => entered(target, r.event).map(({ to, via }) => ({ ...base, to, ...(via ? { via } : {}) })));
}

/** Where entering `target` after `event` may lead: each entry row that guards it (and applies after that event). */
function entered(target: AgentState, event: AgentEventType, after = -1): Array<{ to: AgentState; via?: string }> {
  const rows = ENTRY.map((r, i) => ({ r, i })).filter(({ r, i }) => i > after && r.guards.includes(target) && r.notAfter !== event);
  // An ending (and a pause) is moved to directly, with no entry rows.
  if (rows.length === 0) return [{ to: target }];
  return rows.flatMap(({ r, i }) => {
    if (r.target === null) return [{ to: target }];
    // Compacting first enters COMPACTING through the entry rows after this one (those before it did not hold).
    if (r.target === S.COMPACTING) return entered(S.COMPACTING, event, i).map((x) => ({ to: x.to, via: r.guard?.name }));
    return [{ to: r.target, via: r.guard?.name }];
  });
}

/** The states each row may end in, by the state it is a row of: worked out once (the rows are constants), checked at each move. */
const REACHES = new WeakMap<Row, Map<AgentState, ReadonlySet<AgentState>>>();
function reaches(from: AgentState, r: Row): ReadonlySet<AgentState> {
  let byState = REACHES.get(r);
  if (!byState) REACHES.set(r, (byState = new Map()));
  let states = byState.get(from);
  if (!states) byState.set(from, (states = new Set(rowEdges(from, r).map((edge) => edge.to))));
  return states;
}

/**
 * Every edge of the table, in row order: what `agent graph` and `/v1/machine` draw. Worked out once per worker, not
 * once per run: a worker loads a run's modules for every run, and working the table out took 2-3 ms of each run's CPU
 * (BENCHMARKS.md, issue 26). Plain data (strings), frozen; no run's state is in it.
 */
export const TABLE_EDGES: readonly TableEdge[] = oncePerWorker('machine-table-edges', () =>
  Object.freeze((Object.keys(ROWS) as AgentState[]).flatMap((state) => ROWS[state].flatMap((r) => rowEdges(state, r))).map((e) => Object.freeze(e))),
);

type Targets = Partial<Record<AgentEventType, readonly AgentState[]>>;

/** For each state, the events it accepts and the states each may lead to: derived from the rows. */
export const TRANSITIONS: Readonly<Record<AgentState, Targets>> = oncePerWorker('machine-transitions', () =>
  Object.freeze(
    Object.fromEntries(
      (Object.keys(ROWS) as AgentState[]).map((state) => {
        const targets: Record<string, AgentState[]> = {};
        for (const e of TABLE_EDGES.filter((x) => x.from === state)) {
          const list = (targets[e.event] ??= []);
          if (!list.includes(e.to)) list.push(e.to);
        }
        return [state, Object.freeze(Object.fromEntries(Object.entries(targets).map(([event, to]) => [event, Object.freeze(to)])))];
      }),
    ),
  ) as unknown as Record<AgentState, Targets>,
);

/** Own properties only: an event named like an Object.prototype member (`constructor`) has no transition either. */
export const allowedTargets = (state: AgentState, event: AgentEventType): readonly AgentState[] => {
  const targets = Object.hasOwn(TRANSITIONS, state) ? TRANSITIONS[state] : {};
  return (Object.hasOwn(targets, event) && targets[event]) || [];
};

/**
 * Apply one event, and then the internal steps it leads to (processing a response, the rule critic) in the same
 * macrostep: every state change is in the transition log, but the commands are only the effects the interpreter
 * must run. An event the current state has no row for is rejected, never ignored. `stopAtStep` ends the
 * macrostep early, at that step (time travel to a step inside it).
 */
export function transition(s: RunSnapshot, event: AgentEvent, now: string, stopAtStep = Infinity): TransitionResult {
  const first = microstep(s, event, now);
  if (!first.ok) return first;
  let next = first.snapshot;
  const commands = [...first.commands];
  for (let internal = internalEvent(next); internal && next.counters.step < stopAtStep; internal = internalEvent(next)) {
    const result = microstep(next, internal, now);
    if (!result.ok) throw new Error(`machine bug: internal ${internal.type} refused in ${next.phase.type}: ${result.error}`);
    next = result.snapshot;
    commands.push(...result.commands);
  }
  const due = timerDue(next);
  return ok(next, due === timerDue(s) ? commands : [{ type: 'timer', due }, ...commands]);
}

/** The first of the state's rows for the event whose guard holds; null when it has none. */
export function matchRow(s: RunSnapshot, event: AgentEvent, now: string): Row | null {
  const rows = Object.hasOwn(ROWS, s.phase.type) ? ROWS[s.phase.type] : [];
  return rows.find((r) => r.event === event.type && (!r.guard || r.guard.holds(s, event as never, now))) ?? null;
}

/** One state's handling of one event: its first matching row, whose outcome must be one the table allows. */
function microstep(s: RunSnapshot, event: AgentEvent, now: string): TransitionResult {
  const state = s.phase.type;
  const r = matchRow(s, event, now);
  if (!r) {
    if (isTerminal(state)) return reject(`the run has ended (${state})`);
    if (event.type === 'APPROVAL') return reject(`the run is ${state}, not AWAITING_APPROVAL`);
    return reject(`event ${event.type} has no transition from state ${state}`);
  }
  tracer.row?.(r);
  const result = r.action.run(s, event as never, now);
  const to = result.ok ? result.snapshot.phase.type : state;
  if (to !== state && !reaches(state, r).has(to)) {
    // The row's action and its target disagree: a bug in the table, caught by the table-driven tests.
    throw new Error(`machine bug: ${state} --${event.type}--> ${to} is not where its row leads`);
  }
  return result;
}

/**
 * Carry on from a snapshot taken elsewhere: the same state, its work started again from the beginning (an internal
 * step, in a snapshot taken inside a macrostep, is taken now), and the timer on its clocks.
 */
export function resumeAt(s: RunSnapshot, now: string): { snapshot: RunSnapshot; commands: AgentCommand[] } {
  const modelStep = s.phase.type === S.STREAMING || s.phase.type === S.PLANNING;
  let snapshot: RunSnapshot = { ...s, partialText: modelStep ? '' : s.partialText, stream: modelStep ? { callNumber: s.counters.loops, attempt: 1 } : s.stream };
  const internal = internalEvent(snapshot);
  if (internal) {
    const result = transition(snapshot, internal, now);
    if (!result.ok) throw new Error(`machine bug: ${result.error}`);
    snapshot = result.snapshot;
  }
  const due = timerDue(snapshot);
  const timer: AgentCommand[] = due === null ? [] : [{ type: 'timer', due }];
  return { snapshot, commands: [...timer, ...commandsFor(snapshot)] };
}
