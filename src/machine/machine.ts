/**
 * The agent run as a pure state machine: `transition(snapshot, event, now) -> { snapshot, commands }`.
 * No Temporal import, no await, no clock, no randomness: the workflow interprets the commands and feeds
 * their outcomes back as events. Every state change is appended to the snapshot's transition log.
 *
 * The behaviour is the table (machine/table.ts): each state's own ordered rows `{ event, guard, target, action }` (one
 * module per state or group, machine/*.ts), its eventless rows (core.ts `ALWAYS`), then its parent group's rows
 * (running.ts `RUNNING_ROWS`).
 */
import type { AgentState } from '../common/states';
import { AgentState as S, isTerminal } from '../common/states';
import { timerDue } from './clocks';
import type { RunSnapshot } from './snapshot';
import { withControl } from './controls';
import { ALWAYS, commandsFor, internalEvent, ok, reject, tracer } from './core';
import { CRITIQUE_ROWS } from './critique';
import { IDLE_ROWS, PLANNING_ROWS, STREAMING_ROWS } from './model-steps';
import { PROCESSING_ROWS } from './processing';
import { RUNNING_ROWS } from './running';
import { REJECTED, type Row, SELF, type StateNode } from './table';
import { AWAITING_APPROVAL_ROWS, TOOL_EXECUTING_ROWS } from './tools';
import type { AgentCommand, AgentEvent, AgentEventType, TransitionResult } from './types';
import { COMPACTING_ROWS, COMPLETED_ROWS, PAUSED_ROWS } from './waits';

export type { AgentCommand, AgentEvent, AgentEventType, TransitionResult, WorkCommand } from './types';
export { CONTINUE_PROMPT } from './responses';
export { freshClocks, timerDue } from './clocks';
export { ALWAYS as ALWAYS_ROWS, tracer as rowTracer } from './core';
export { RUNNING_ROWS } from './running';
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

const running = (state: AgentState, rows: readonly Row[]): StateNode => ({ rows, always: ALWAYS[state], parent: RUNNING_ROWS });
const ended: StateNode = { rows: [], always: [], parent: [] };

/** Each state of the table: its own rows, its eventless rows, and the parent group's rows tried after its own. */
export const STATES: Readonly<Record<AgentState, StateNode>> = {
  IDLE: running(S.IDLE, IDLE_ROWS),
  PLANNING: running(S.PLANNING, PLANNING_ROWS),
  STREAMING: running(S.STREAMING, STREAMING_ROWS),
  PROCESSING: running(S.PROCESSING, PROCESSING_ROWS),
  TOOL_EXECUTING: running(S.TOOL_EXECUTING, TOOL_EXECUTING_ROWS),
  AWAITING_APPROVAL: running(S.AWAITING_APPROVAL, AWAITING_APPROVAL_ROWS),
  CRITIQUE: running(S.CRITIQUE, CRITIQUE_ROWS),
  COMPACTING: running(S.COMPACTING, COMPACTING_ROWS),
  PAUSED: running(S.PAUSED, PAUSED_ROWS),
  // Terminal, unless the conversation is kept open: only its own rows.
  COMPLETED: { rows: COMPLETED_ROWS, always: [], parent: [] },
  FAILED: ended,
  ABORTED: ended,
};

/** A state's own row without a guard settles its event: the parent group's rows for it are never reached. */
const consulted = (n: StateNode): readonly Row[] => [...n.rows, ...n.parent.filter((p) => !n.rows.some((r) => r.event === p.event && r.guard === null))];

/** The rows each state consults, in order: the first row for an event whose guard holds wins. */
export const ROWS: Readonly<Record<AgentState, readonly Row[]>> = Object.fromEntries((Object.keys(STATES) as AgentState[]).map((state) => [state, consulted(STATES[state])])) as Record<
  AgentState,
  readonly Row[]
>;

/** One edge of the table as readers draw it: `via` names the eventless row (or DECIDED) the run went on through. */
export interface TableEdge {
  from: AgentState;
  event: AgentEventType;
  guard: string | null;
  to: AgentState;
  action: string;
  via?: string;
}

/** Where a move into `target` may end: the state itself, or where one of its eventless rows leads instead. */
const entered = (target: AgentState): Array<{ to: AgentState; via?: string }> => [{ to: target }, ...ALWAYS[target].map((r) => ({ to: r.target, via: r.guard.name }))];

/** Events after which a wait may have every call decided: DECIDED follows in the same macrostep. */
const DECIDING: readonly AgentEventType[] = ['APPROVAL', 'INTERRUPT'];

/** The states a row may end in: its target and where that target's eventless rows lead (after a decision, DECIDED's). */
function rowEdges(from: AgentState, r: Row): TableEdge[] {
  if (r.target === REJECTED) return [];
  const base = { from, event: r.event, guard: r.guard?.name ?? null, action: r.action.name };
  if (r.target !== SELF) return entered(r.target).map(({ to, via }) => ({ ...base, to, ...(via ? { via } : {}) }));
  const decided = from === S.AWAITING_APPROVAL && DECIDING.includes(r.event) ? ROWS[from].filter((x) => x.event === 'DECIDED') : [];
  return [{ ...base, to: from }, ...decided.flatMap((d) => rowEdges(from, d).map((edge) => ({ ...base, to: edge.to, via: 'DECIDED' })))];
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
 * Every edge of the table, in row order: what `agent graph` and `/v1/machine` draw. Worked out on first use, not when
 * the module loads: a worker loads a run's modules for every run, and working the whole table out took 2-3 ms of each
 * run's CPU (BENCHMARKS.md, issue 26), which no run reads. Plain data (strings), frozen.
 */
export function tableEdges(): readonly TableEdge[] {
  return (edges ??= Object.freeze((Object.keys(ROWS) as AgentState[]).flatMap((state) => ROWS[state].flatMap((r) => rowEdges(state, r))).map((e) => Object.freeze(e))));
}
let edges: readonly TableEdge[] | undefined;

type Targets = Partial<Record<AgentEventType, readonly AgentState[]>>;

/** For each state, the events it accepts and the states each may lead to: derived from the rows (on first use, as `tableEdges`). */
export function transitionTable(): Readonly<Record<AgentState, Targets>> {
  return (table ??= Object.freeze(
    Object.fromEntries(
      (Object.keys(ROWS) as AgentState[]).map((state) => {
        const targets: Record<string, AgentState[]> = {};
        for (const e of tableEdges().filter((x) => x.from === state)) {
          const list = (targets[e.event] ??= []);
          if (!list.includes(e.to)) list.push(e.to);
        }
        return [state, Object.freeze(Object.fromEntries(Object.entries(targets).map(([event, to]) => [event, Object.freeze(to)])))];
      }),
    ),
  ) as unknown as Record<AgentState, Targets>);
}
let table: Readonly<Record<AgentState, Targets>> | undefined;

/**
 * The states `event` may lead to from `state` (as `transitionTable()` has them), worked out from that state's rows for
 * that event alone, once each: a run reaches a few pairs, not the whole table. Own properties only: an event named
 * like an Object.prototype member (`constructor`) has no transition either.
 */
export const allowedTargets = (state: AgentState, event: AgentEventType): readonly AgentState[] => {
  const key = `${state} ${event}`;
  let targets = TARGETS.get(key);
  if (!targets) {
    const rows = Object.hasOwn(ROWS, state) ? ROWS[state].filter((r) => r.event === event) : [];
    TARGETS.set(key, (targets = [...new Set(rows.flatMap((r) => rowEdges(state, r).map((e) => e.to)))]));
  }
  return targets;
};
const TARGETS = new Map<string, readonly AgentState[]>();

/**
 * Apply one event, and then the internal steps it leads to (processing a response, the rule critic, a wait whose
 * calls are all decided) in the same
 * macrostep: every state change is in the transition log, but the commands are only the effects the interpreter
 * must run. An event the current state has no row for is rejected, never ignored. `stopAtStep` ends the
 * macrostep early, at that step (time travel to a step inside it).
 */
export function transition(s: RunSnapshot, event: AgentEvent, now: string, stopAtStep = Infinity): TransitionResult {
  const first = microstep(s, event, now);
  if (!first.ok) return first;
  let next = withControl(first.snapshot, event, now);
  const commands = [...first.commands];
  for (let internal = internalEvent(next, event.type); internal && next.counters.step < stopAtStep; internal = internalEvent(next, event.type)) {
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
