/**
 * The `agentRun` workflow's queries, signals and updates (defined in common/messages.ts); the queries are registered
 * before its first await. Each signal or update turns its payload into an event for the machine; update validators
 * ask the machine with a dry run of the event, so the checks live in one place and a refused update never reaches
 * history.
 */
import { setHandler } from '@temporalio/workflow';
import {
  AbortSignalSchema,
  AbortUpdateSchema,
  ApproveUpdateSchema,
  ControlSignalSchema,
  ControlUpdateSchema,
  parseOrThrow,
  parseWith,
  SendMessageUpdateSchema,
} from '../common/input';
import {
  abortSignal,
  abortUpdate,
  approveUpdate,
  pauseSignal,
  pauseUpdate,
  resumeSignal,
  resumeUpdate,
  stateSnapshotAtQuery,
  sendMessageUpdate,
  stateAtQuery,
  stateQuery,
  stepsQuery,
  DEFAULT_STEPS_PAGE,
  MAX_STEPS_PAGE,
  type StepsPage,
  type CarriedSnapshot,
  type ControlResult,
} from '../common/messages';
import type { Actor } from '../common/actor';
import { AgentState } from '../common/states';
import { undecided, type AgentEvent, type TransitionResult } from '../machine/machine';
import type { CutText } from '../machine/types';
import type { RunSnapshot } from '../machine/snapshot';
import { publicView } from './view';

/** The run as its queries see it. */
export interface ViewedRun {
  current(): RunSnapshot;
  /** The snapshot right after a step of this run (time travel). */
  at(step: number): RunSnapshot;
}

/** The run as its signal and update handlers see it. */
export interface HandledRun {
  current(): RunSnapshot;
  /** Apply an event brought by a signal or an update; the machine may refuse it. */
  dispatch(event: AgentEvent): void;
  /**
   * Stop the model call in flight, if any, and resolve with what it had streamed once its cancellation reaches the
   * run: an abort or an interrupt hands it to the machine with its event (the cancellation's details are the only
   * place the streamed text reaches history).
   */
  cut(): Promise<CutText | undefined>;
  /** Keep a payload that could not become an event, with why, on the snapshot. */
  refuse(event: AgentEvent, error: string): void;
  /** The run's machine (definition.ts), asked for a dry run by update validators. */
  transition(s: RunSnapshot, event: AgentEvent, now: string): TransitionResult;
}

/**
 * Whether an update comes after the deadline its client gave it. Workflow time is the time of the workflow task that
 * delivers the update, the same on every replay (and validators do not run on replay).
 */
/** The event's `by`, only when the payload has one: an event without it is the service's (machine/controls.ts). */
const byOf = ({ by }: { by?: Actor }): { by?: Actor } => (by ? { by } : {});

const isPastDeadline = (deadline: string | undefined, now: number): boolean => deadline !== undefined && now > Date.parse(deadline);

/**
 * The queries, registered before the workflow's first await: a query the SDK has no handler for fails, where a
 * signal or an update is held until its handler is registered.
 */
export function setRunQueries(run: ViewedRun): void {
  // Descriptions show in `temporal workflow metadata` and the UI. The UI lists queries by name: the internal one is
  // named to sort after `state`.
  setHandler(stateQuery, (options) => publicView(run.current(), options?.includeMessages ?? false), {
    description: 'The run as clients see it (README, "The public contract"). Optional argument: { "includeMessages": true }.',
  });
  setHandler(stateAtQuery, ({ step, includeMessages }) => publicView(run.at(step), includeMessages ?? false), {
    description: 'The state view right after a step (time travel). Argument: { "step": <number> }.',
  });
  setHandler(stepsQuery, (options) => stepsPage(run.current(), options?.from, options?.limit), {
    description: 'A page of the run\'s steps (its state changes), which the state view carries only the last of. Optional argument: { "from": <step>, "limit": <at most 1000> }.',
  });
  setHandler(stateSnapshotAtQuery, ({ step }) => run.at(step) as RunSnapshot & CarriedSnapshot, {
    description: "Internal: the run's versioned snapshot after a step, which fork carries into a new run. Argument: { \"step\": <number> }.",
  });
}

/** Steps `from` on, at most `limit` of them, from the snapshot's step log (its last entry is step `counters.step`). */
export function stepsPage(s: RunSnapshot, from?: number, limit?: number): StepsPage {
  const log = s.logs.transitions;
  const first = s.counters.step - log.length + 1;
  const size = Math.min(Math.max(1, Math.floor(limit ?? DEFAULT_STEPS_PAGE)), MAX_STEPS_PAGE);
  const start = Math.max(0, Math.floor(from ?? first) - first);
  const steps = log.slice(start, start + size).map((t, i) => ({ step: first + start + i, ...t }));
  const end = start + steps.length;
  return { steps, next: end < log.length ? first + end : null };
}

/** The signals and updates, registered once the run has its snapshot: the SDK holds those sent earlier until then. */
export function setRunHandlers(run: HandledRun): void {
  /** The validator of every control update: on time, and an event the machine accepts now (a dry run). */
  const refuseUnlessAccepted = (update: string, event: AgentEvent, deadline: string | undefined): void => {
    if (isPastDeadline(deadline, Date.now())) throw new Error(`${update} came after its deadline ${deadline}, when no worker had taken it: not applied`);
    const result = run.transition(run.current(), event, new Date().toISOString());
    if (!result.ok) throw new Error(result.error);
  };
  const controlResult = (): ControlResult => ({ state: run.current().phase.type, pauseRequested: run.current().pauseRequested });
  /** Whether the machine would take the event now (a dry run). */
  const accepts = (event: AgentEvent): boolean => run.transition(run.current(), event, new Date().toISOString()).ok;
  /** The text of the model call an accepted abort or interrupt stops, taken before the event is applied. */
  const cutFor = (event: AgentEvent): Promise<CutText | undefined> => (accepts(event) ? run.cut() : Promise.resolve(undefined));
  setHandler(abortSignal, async (raw) => {
    const parsed = parseWith(AbortSignalSchema, raw ?? {}, 'abort input');
    const event = { type: 'ABORT' as const, ...(parsed.ok ? byOf(parsed.value) : {}), reason: parsed.ok ? parsed.value.reason : undefined };
    const cut = await cutFor(event);
    run.dispatch({ ...event, ...(cut ? { cut } : {}) });
  });
  // A signal is applied whatever its payload: one who cannot be read is recorded as the service.
  const signalBy = (raw: unknown) => {
    const parsed = parseWith(ControlSignalSchema, raw ?? {}, 'control input');
    return parsed.ok ? byOf(parsed.value) : {};
  };
  setHandler(pauseSignal, (raw) => run.dispatch({ type: 'PAUSE', ...signalBy(raw) }));
  setHandler(resumeSignal, (raw) => run.dispatch({ type: 'RESUME', ...signalBy(raw) }));
  setHandler(
    approveUpdate,
    (raw) => {
      const { toolCallId, approved, feedback, arguments: edited, by } = ApproveUpdateSchema.parse(raw);
      run.dispatch({ type: 'APPROVAL', toolCallId, approved, feedback, ...(edited !== undefined ? { arguments: edited } : {}), ...byOf({ by }) });
      return { toolCallId, approved, remaining: undecided(run.current()).length };
    },
    {
      validator: (raw) => {
        const { deadline, ...input } = parseOrThrow(ApproveUpdateSchema, raw, 'approve input');
        refuseUnlessAccepted('approve', { type: 'APPROVAL', ...input }, deadline);
      },
    },
  );
  setHandler(
    sendMessageUpdate,
    async (raw) => {
      const { text, interrupt, by } = SendMessageUpdateSchema.parse(raw);
      const cut = interrupt ? await cutFor({ type: 'INTERRUPT', text }) : undefined;
      const before = run.current();
      run.dispatch(interrupt ? { type: 'INTERRUPT', text, ...byOf({ by }), ...(cut ? { cut } : {}) } : { type: 'MESSAGE', text, ...byOf({ by }) });
      // The model step started again with it, the approvals it ended, the tools being stopped; false: only queued (or a
      // follow-up turn of a completed run, which had nothing to cut short).
      const moved = run.current().counters.step !== before.counters.step || run.current().phase.type === AgentState.TOOL_EXECUTING;
      const interrupted = moved && before.phase.type !== AgentState.COMPLETED;
      return { queued: run.current().queuedMessages.length, ...(interrupt ? { interrupted } : {}) };
    },
    {
      validator: (raw) => {
        const { text, interrupt, deadline } = parseOrThrow(SendMessageUpdateSchema, raw, 'sendMessage input');
        refuseUnlessAccepted('sendMessage', { type: interrupt ? 'INTERRUPT' : 'MESSAGE', text }, deadline);
      },
    },
  );
  // The signals' updates, which say whether the run took the control.
  setHandler(
    abortUpdate,
    async (raw) => {
      const { reason, by } = AbortUpdateSchema.parse(raw ?? {});
      const cut = await run.cut();
      run.dispatch({ type: 'ABORT', reason, ...byOf({ by }), ...(cut ? { cut } : {}) });
      return controlResult();
    },
    {
      validator: (raw) => {
        const { reason, deadline } = parseOrThrow(AbortUpdateSchema, raw ?? {}, 'abort input');
        refuseUnlessAccepted('abort', { type: 'ABORT', reason }, deadline);
      },
    },
  );
  for (const [update, type] of [
    [pauseUpdate, 'PAUSE'],
    [resumeUpdate, 'RESUME'],
  ] as const) {
    setHandler(
      update,
      (raw) => {
        run.dispatch({ type, ...byOf(ControlUpdateSchema.parse(raw ?? {})) });
        return controlResult();
      },
      { validator: (raw) => refuseUnlessAccepted(update.name, { type }, parseOrThrow(ControlUpdateSchema, raw ?? {}, `${update.name} input`).deadline) },
    );
  }
}
