/**
 * The `agentRun` workflow's queries, signals and updates (defined in common/messages.ts), registered before its
 * first await. Each turns its payload into an event for the machine; update validators ask the machine with a dry
 * run of the event, so the checks live in one place and a refused update never reaches history.
 */
import { setHandler } from '@temporalio/workflow';
import { AbortInputSchema, ApproveInputSchema, parseOrThrow, parseWith, SendMessageInputSchema, StreamDeltaSchema } from '../common/input';
import {
  abortSignal,
  approveUpdate,
  pauseSignal,
  resumeSignal,
  stateSnapshotAtQuery,
  sendMessageUpdate,
  stateAtQuery,
  stateQuery,
  streamDeltaSignal,
  type CarriedSnapshot,
} from '../common/messages';
import { transition, undecided, type AgentEvent } from './machine';
import type { RunSnapshot } from './snapshot';
import { publicView } from './view';

/** The run as its handlers see it. */
export interface HandledRun {
  current(): RunSnapshot;
  /** The snapshot right after a step of this run (time travel). */
  at(step: number): RunSnapshot;
  /** Apply an event brought by a signal or an update; the machine may refuse it. */
  dispatch(event: AgentEvent): void;
  /** Keep a payload that could not become an event, with why, on the snapshot. */
  refuse(event: AgentEvent, error: string): void;
}

export function setRunHandlers(run: HandledRun): void {
  const refuseUnlessAccepted = (event: AgentEvent): void => {
    const result = transition(run.current(), event, new Date().toISOString());
    if (!result.ok) throw new Error(result.error);
  };
  // Descriptions show in `temporal workflow metadata` and the UI. The UI lists queries by name: the internal one is
  // named to sort after `state`.
  setHandler(stateQuery, (options) => publicView(run.current(), options?.includeMessages ?? false), {
    description: 'The run as clients see it (README, "The public contract"). Optional argument: { "includeMessages": true }.',
  });
  setHandler(stateAtQuery, ({ step, includeMessages }) => publicView(run.at(step), includeMessages ?? false), {
    description: 'The state view right after a step (time travel). Argument: { "step": <number> }.',
  });
  setHandler(stateSnapshotAtQuery, ({ step }) => run.at(step) as RunSnapshot & CarriedSnapshot, {
    description: "Internal: the run's versioned snapshot after a step, which fork carries into a new run. Argument: { \"step\": <number> }.",
  });
  setHandler(abortSignal, (raw) => {
    const parsed = parseWith(AbortInputSchema, raw ?? {}, 'abort input');
    run.dispatch({ type: 'ABORT', reason: parsed.ok ? parsed.value.reason : undefined });
  });
  setHandler(pauseSignal, () => run.dispatch({ type: 'PAUSE' }));
  setHandler(resumeSignal, () => run.dispatch({ type: 'RESUME' }));
  setHandler(streamDeltaSignal, (raw) => {
    // Built field by field: a payload must never choose the event it becomes.
    const parsed = parseWith(StreamDeltaSchema, raw, 'streamDelta');
    if (parsed.ok) run.dispatch({ type: 'STREAM_DELTA', ...parsed.value });
    else run.refuse({ type: 'STREAM_DELTA', callNumber: 0, attempt: 0, text: '' }, parsed.error);
  });
  setHandler(
    approveUpdate,
    (raw) => {
      const { toolCallId, approved, feedback, arguments: edited } = ApproveInputSchema.parse(raw);
      run.dispatch({ type: 'APPROVAL', toolCallId, approved, feedback, ...(edited !== undefined ? { arguments: edited } : {}) });
      return { toolCallId, approved, remaining: undecided(run.current()).length };
    },
    { validator: (raw) => refuseUnlessAccepted({ type: 'APPROVAL', ...parseOrThrow(ApproveInputSchema, raw, 'approve input') }) },
  );
  setHandler(
    sendMessageUpdate,
    (raw) => {
      run.dispatch({ type: 'MESSAGE', text: SendMessageInputSchema.parse(raw).text });
      return { queued: run.current().queuedMessages.length };
    },
    { validator: (raw) => refuseUnlessAccepted({ type: 'MESSAGE', text: parseOrThrow(SendMessageInputSchema, raw, 'sendMessage input').text }) },
  );
}
