/**
 * Where a run shows its state beside the `state` query: the `AgentState` search attribute (list filters, the CLI's
 * `temporal workflow list`) and the current details (the UI). Both are written when the run is about to wait (an
 * activity, a person, a condition, its end), or at once when a signal or update moved it; the search attribute only
 * when the state differs from the last one written. A step's four transitions then cost the server one visibility
 * write instead of four. When the run waits for a person or ends, a copy of its view goes to the memo too. Each state
 * change and the run's end also go to the worker's lifecycle hooks, through the `runHooks` sink.
 */
import { log, proxySinks, setCurrentDetails, upsertMemo, upsertSearchAttributes } from '@temporalio/workflow';
import { defineSearchAttributeKey } from '@temporalio/common';
import { AGENT_STATE_MEMO, AGENT_STATE_SEARCH_ATTRIBUTE } from '../common/constants';
import type { AgentRunResult } from '../common/messages';
import type { RunHookSinks } from '../common/sinks';
import { AgentState, isTerminal } from '../common/states';
import { undecided } from '../machine/machine';
import { currentDetails } from '../machine/requests';
import { publicView } from './view';
import type { RunSnapshot, TransitionRecord } from '../machine/snapshot';

const agentStateKey = defineSearchAttributeKey(AGENT_STATE_SEARCH_ATTRIBUTE, 'KEYWORD');

export interface Publisher {
  /** State changes (one event's macrostep may make several): logged; written at once when a signal or update (`external`) caused them. */
  transitioned(s: RunSnapshot, changes: readonly TransitionRecord[], external: boolean): void;
  /** The run is about to wait or end: written now. */
  beforeWait(s: RunSnapshot): void;
  /** The steps one event made (`first`: the first one's number), each a transition, for the worker's `onTransition` hook. */
  stepped(first: number, steps: readonly TransitionRecord[]): void;
  /** The run ended with this result (a FAILED one too): the worker's `onRunEnd` hook hears of it. */
  ended(result: AgentRunResult): void;
}

/** The worker's lifecycle hooks (worker/hooks.ts): a sink call is no command, and the worker makes none in replay. */
const { runHooks } = proxySinks<RunHookSinks>();

/** States in which a run keeps a copy of its view in its memo: waiting for a person, and ended. */
const storesState = (s: RunSnapshot) => s.phase.type === AgentState.AWAITING_APPROVAL || s.phase.type === AgentState.PAUSED || isTerminal(s.phase.type);

/** Transitions the stored copy keeps: the memo stays small. */
const STORED_TRANSITIONS = 10;

/** The memo's copy of the view is served by the server with no worker running (`AgentRunHandle.state` falls back to it). */
export function createPublisher(): Publisher {
  let published: string | undefined;
  let stored: string | undefined;
  const store = (s: RunSnapshot): void => {
    const key = `${s.counters.step}/${undecided(s).length}/${s.phase.type === AgentState.COMPLETED && s.phase.conversationOpen}`;
    if (!storesState(s) || key === stored) return;
    stored = key;
    upsertMemo({ [AGENT_STATE_MEMO]: { ...publicView(s, false, STORED_TRANSITIONS), storedAt: new Date().toISOString() } });
  };
  const write = (s: RunSnapshot): void => {
    setCurrentDetails(currentDetails(s)); // workflow metadata, not a history event
    if (published === s.phase.type) return;
    published = s.phase.type;
    upsertSearchAttributes([{ key: agentStateKey, value: s.phase.type }]);
  };
  return {
    transitioned(s, changes, external) {
      const first = s.counters.step - changes.length + 1;
      changes.forEach((t, i) => log.info(`${t.from} -> ${t.to}`, { event: t.event, step: first + i }));
      if (external) write(s);
    },
    stepped(first, steps) {
      runHooks.transitioned(steps.map((t, i) => ({ step: first + i, from: t.from, to: t.to, event: t.event, at: t.at })));
    },
    ended(result) {
      runHooks.ended(result);
    },
    beforeWait(s) {
      write(s);
      store(s);
    },
  };
}
