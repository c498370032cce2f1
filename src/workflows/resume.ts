/** Carrying a run across runs (continue-as-new, fork) and back in time (a step's snapshot): pure functions. */
import { ApplicationFailure } from '@temporalio/workflow';
import { FailureType } from '../common/failures';
import type { ResolvedInput } from '../common/input';
import { freshClocks } from '../machine/clocks';
import type { AgentEvent } from '../machine/machine';
import { readSnapshot, type RunSnapshot } from '../machine/snapshot';
import type { RunDefinition } from './definition';

type Resume = NonNullable<ResolvedInput['resume']>;

/** Transitions a continued run keeps; the step counter still counts them all. */
const CARRIED_TRANSITIONS = 100;

/** What goes into the next run: everything, with the transition log cut to its recent end. */
export function carryOver(s: RunSnapshot): RunSnapshot & Record<string, unknown> {
  // The next run starts a new conversation chain: the stored one is this run's.
  return { ...s, logs: { ...s.logs, transitions: s.logs.transitions.slice(-CARRIED_TRANSITIONS) }, chain: null };
}

/** The snapshot a run carries on from, checked against the schema; one that does not pass fails the run as invalid input, naming the field. */
export function carriedSnapshot(resume: Resume): RunSnapshot {
  const read = readSnapshot(resume.snapshot);
  if (read.ok) return read.value;
  throw ApplicationFailure.create({ type: FailureType.InvalidInput, message: `Invalid agentRun input: resume.${read.error.replace(/^Invalid /, '')}`, nonRetryable: true });
}

/**
 * The snapshot a run starts from when it carries on from another (`carried`: the resume's snapshot as
 * `carriedSnapshot` read it). A continued run keeps its deadline; a fork is a new run, with a fresh deadline. Each
 * starts its own conversation chain.
 */
export function carryOn(resume: Resume, carried: RunSnapshot, workflowId: string, now: string): RunSnapshot {
  if (resume.kind === 'continue') return { ...carried, chain: null, origin: carried.origin ?? { kind: 'continue', workflowId, step: carried.counters.step } };
  const origin = resume.origin ?? { workflowId: 'unknown', step: carried.counters.step };
  const forked = forkPoint(withEdits(carried, resume.edits), origin.step, now);
  return {
    ...forked,
    chain: null,
    // A fork runs its pending calls itself, as it always did: the results the original's model call ran ahead stay there.
    toolRound: { ...carried.toolRound, pending: carried.toolRound.pending.map(({ ranAhead: _ranAhead, ...call }) => call) },
    origin: { kind: 'fork', ...origin },
    clocks: { ...carried.clocks, ...freshClocks(carried, now) },
    pauseRequested: false,
    logs: { ...forked.logs, rejectedEvents: [] },
  };
}

/**
 * A what-if fork's edits on the snapshot it starts from: the model, the system prompt, a message queued for the next
 * model call, and the results already in the conversation of the tool calls named (later ones the effects replace).
 */
function withEdits(s: RunSnapshot, edits: Resume['edits']): RunSnapshot {
  if (!edits) return s;
  const { toolResults = {}, message, model, systemPrompt } = edits;
  const messages = s.messages.map((m) => {
    if (m.role === 'tool' && toolResults[m.toolCallId] !== undefined) return { ...m, content: toolResults[m.toolCallId] };
    if (m.role === 'system' && systemPrompt !== undefined) return { ...m, content: systemPrompt };
    return m;
  });
  return {
    ...s,
    messages,
    options: model ? { ...s.options, model } : s.options,
    queuedMessages: message ? [...s.queuedMessages, message] : s.queuedMessages,
  };
}

/** The event of the transition that marks where a fork began: from the state it carries on in, to the same. */
export const FORK_EVENT = 'FORK';

/**
 * A fork's own times: the steps it carried beyond the fork point (a fork from step 0 carries the start, which it makes
 * its own) are stamped `now`, and one more transition, `FORK`, marks where it began and starts its time in its state.
 */
function forkPoint(carried: RunSnapshot, fromStep: number, now: string): RunSnapshot {
  const { transitions } = carried.logs;
  const firstStep = carried.counters.step - transitions.length + 1;
  const own = transitions.map((t, i) => (firstStep + i > fromStep ? { ...t, at: now } : t));
  const mark = { from: carried.phase.type, to: carried.phase.type, event: FORK_EVENT, at: now };
  return { ...carried, stateSince: now, counters: { ...carried.counters, step: carried.counters.step + 1 }, logs: { ...carried.logs, transitions: [...own, mark] } };
}

/** The snapshot right after step `step`, replayed through the run's machine from this run's base. */
export function snapshotAt(transition: RunDefinition['transition'], base: RunSnapshot, log: ReadonlyArray<{ event: AgentEvent; at: string }>, current: RunSnapshot, step: number): RunSnapshot {
  if (!Number.isInteger(step) || step < base.counters.step || step > current.counters.step) {
    throw new Error(`step ${step} is not in this run: it holds steps ${base.counters.step} to ${current.counters.step}${base.counters.step > 0 ? ' (earlier steps are in the run it continued from)' : ''}`);
  }
  let s = base;
  for (const { event, at } of log) {
    if (s.counters.step >= step) break;
    const r = transition(s, event, at, step);
    if (r.ok) s = r.snapshot;
  }
  return s;
}
