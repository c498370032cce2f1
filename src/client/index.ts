/**
 * Typed client of `agentRun` workflows for backend services: start runs, read their state, steer them, wait for them.
 * The CLI (`src/client/cli.ts`) is a thin shell over this module.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApplicationFailure,
  CancelledFailure,
  Client,
  Connection,
  isGrpcDeadlineError,
  isGrpcServiceError,
  ServiceError,
  QueryNotRegisteredError,
  TerminatedFailure,
  TimeoutFailure,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type WorkflowHandle,
} from '@temporalio/client';
import { defaultPayloadConverter, defineSearchAttributeKey, type DataConverter, type UpdateDefinition } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { decodeOptionalFailureToOptionalError } from '@temporalio/common/lib/internal-non-workflow';
import { optionalTsToDate } from '@temporalio/common/lib/time';
import type { z } from 'zod';
import { createDataConverter } from '../codec';
import { codecSettings, observabilitySettings, temporalSettings, type CodecSettings, type TemporalSettings } from '../config';
import { clientConnectionOptions, tlsFailureReason } from '../config/connection';
import { tracingClientInterceptors } from '../observability/client-tracing';
import { AGENT_RUN_MEMO, AGENT_STATE_MEMO, AGENT_STATE_SEARCH_ATTRIBUTE, WORKFLOW_TYPE } from '../common/constants';
import {
  AbortInputSchema,
  ApproveInputSchema,
  parseAgentRunInput,
  parseWith,
  SendMessageInputSchema,
  type AgentRunInput,
  type ApproveInput,
} from '../common/input';
import {
  abortSignal,
  abortUpdate,
  approveUpdate,
  pauseSignal,
  resumeSignal,
  pauseUpdate,
  resumeUpdate,
  sendMessageUpdate,
  snapshotAtQuery,
  stateAtQuery,
  stateSnapshotAtQuery,
  stateQuery,
  type AgentRunResult,
  type ApproveResult,
  type ControlResult,
  type RunStateView,
  type SendMessageResult,
} from '../common/messages';
import type { RetryInfo } from '../common/view';
import { AgentState, isTerminal } from '../common/states';
import { diffState, type WatchEvent } from '../common/watch';
import { followText, type CallText, type StreamEvent } from '../common/stream';
import type { StreamChannel } from '../stream/channel';
import { diffSnapshots, stepsOf, type SnapshotDiff, type StepRecord } from './time-travel';

const agentStateKey = defineSearchAttributeKey(AGENT_STATE_SEARCH_ATTRIBUTE, 'KEYWORD');

/** Longest wait for a worker to answer one `state` query: with no worker polling, the server holds a query until the deadline. */
/** States whose work may be retried, where `state()` looks for retries. */
const WORKING_STATES: readonly string[] = [AgentState.PLANNING, AgentState.STREAMING, AgentState.TOOL_EXECUTING, AgentState.COMPACTING, AgentState.CRITIQUE];

/** Long enough for a busy worker, short enough that the stored copy still answers within 10 s. */
const QUERY_TIMEOUT_MS = 5_000;
/** Time-travel queries replay the run on a worker, which takes longer than `state` on a long run. */
const TIME_TRAVEL_TIMEOUT_MS = 15_000;
/** Retries of a failed `state` query (the first workflow task not yet done, a worker restarting). */
const QUERY_RETRIES = 3;
const QUERY_RETRY_DELAY_MS = 250;
/** How long a control (approve, sendMessage, abort, pause, resume) waits for the run to take it, unless told. */
export const DEFAULT_CONTROL_TIMEOUT_MS = 10_000;
/** Past a control's deadline the client listens this much longer, so that the answer to one taken just in time still arrives. */
const CONTROL_GRACE_MS = 1_000;
/** First wait before a control is sent again after the server dropped it with the workflow task that carried it. */
const CONTROL_RETRY_DELAY_MS = 100;
const GRPC_FAILED_PRECONDITION = 9;
const SUMMARY_CHARS = 80;
const DEFAULT_LIST_LIMIT = 20;

/** The input of `start`, `approve`, `sendMessage`, `abort` or `list` failed validation; nothing was sent. The message names the field. */
export class InvalidAgentInputError extends Error {
  override readonly name = 'InvalidAgentInputError';
}

/** No workflow with this id exists in the namespace. */
export class AgentRunNotFoundError extends Error {
  override readonly name = 'AgentRunNotFoundError';
  constructor(readonly workflowId: string) {
    super(`no agent run with id ${workflowId}`);
  }
}

/** A signal or update was sent to a run that has already closed. */
export class AgentRunEndedError extends Error {
  override readonly name = 'AgentRunEndedError';
  constructor(
    readonly workflowId: string,
    /** Temporal execution status, e.g. `COMPLETED`, `FAILED`, `TERMINATED`. */
    readonly status: string,
    /** The run's own end state when its result says (an aborted run's execution is COMPLETED, its state ABORTED). */
    readonly state?: string,
  ) {
    super(`agent run ${workflowId} has already ended (${state ?? status})`);
  }
}

/** The workflow refused an update (its validator or handler threw); `reason` is the workflow's own message. */
export class AgentUpdateRejectedError extends Error {
  override readonly name = 'AgentUpdateRejectedError';
  constructor(
    readonly update: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${update} refused: ${reason}`, options);
  }
}

/** No worker answered a `state` query in time: usually no worker polls the run's task queue. */
export class AgentQueryTimeoutError extends Error {
  override readonly name = 'AgentQueryTimeoutError';
  constructor(
    readonly workflowId: string,
    readonly timeoutMs: number,
    taskQueue: string | undefined,
    query = 'state',
  ) {
    super(
      `no worker answered the ${query} query of ${workflowId} within ${timeoutMs} ms` +
        (taskQueue ? ` (is a worker polling task queue ${taskQueue}?)` : ' (is a worker running?)'),
    );
  }
}

/** Time travel asked for a step the run does not hold; the message is the workflow's, with the steps it holds. */
export class AgentStepNotFoundError extends Error {
  override readonly name = 'AgentStepNotFoundError';
  constructor(
    readonly workflowId: string,
    readonly step: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The SDK's refusal of an update that the workflow registered no handler for. */
const NO_UPDATE_HANDLER = /No registered handler for update/;

/** The workflow's message for a step it does not hold (`resume.ts`, `snapshotAt`). */
const STEP_NOT_IN_RUN = /step -?\d+ is not in this run[^\n]*/;

/**
 * No run took a control (approve, sendMessage, abort, pause, resume) by its deadline. Nothing was recorded, and the
 * run refuses the control if a worker delivers it later: the deadline travels with it.
 */
export class AgentControlTimeoutError extends Error {
  override readonly name = 'AgentControlTimeoutError';
  constructor(
    readonly workflowId: string,
    readonly control: string,
    readonly timeoutMs: number,
    readonly taskQueue: string | undefined,
    /** Whether a worker polled the run's task queue since the control was sent; undefined when that could not be checked. */
    readonly workerPolling: boolean | undefined,
  ) {
    super(
      (workerPolling === false
        ? `no worker is polling task queue ${taskQueue}: ${control} did not reach ${workflowId} within ${timeoutMs} ms`
        : `${workflowId} did not answer ${control} within ${timeoutMs} ms` + (workerPolling ? ` (workers poll task queue ${taskQueue}: busy, or failing on this run?)` : '')) +
        '; nothing was recorded, and the run will refuse it if it arrives later',
    );
  }
}

/** Options of the controls: `approve`, `sendMessage`, `abort`, `pause`, `resume`. */
export interface ControlOptions {
  /**
   * How long the run has to take the control. The deadline is sent with it and the run refuses it after that, so a
   * control that waited for a worker never takes effect later. @default 10000 (`DEFAULT_CONTROL_TIMEOUT_MS`)
   */
  timeoutMs?: number;
}

/** Options of `sendMessage`. */
export interface SendMessageOptions extends ControlOptions {
  /** Stop the work in flight for this message instead of queueing it for the next model call. @default false */
  interrupt?: boolean;
}

/** Why a run failed, unwrapped from the `WorkflowFailedError` that `result()` rejects with. */
export interface RunFailure {
  /** The workflow's own message, e.g. `loop limit reached (limits.maxLoops = 5)`. */
  reason: string;
  /** `ApplicationFailure` type (`AgentRunFailed`, `InvalidInput`), or `Terminated`, `Cancelled`, `TimedOut`. */
  type: string | undefined;
  /** Counters of the run at the moment it failed, when the workflow attached them. */
  result?: AgentRunResult;
}

/** Unwraps a workflow or update failure into the reason the workflow gave; `undefined` for any other error. */
export function runFailure(err: unknown): RunFailure | undefined {
  if (!(err instanceof WorkflowFailedError || err instanceof WorkflowUpdateFailedError)) return undefined;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure) {
    const first = cause.details?.[0];
    const result = first && typeof first === 'object' && 'loops' in first ? (first as AgentRunResult) : undefined;
    return { reason: cause.message, type: cause.type ?? undefined, ...(result ? { result } : {}) };
  }
  if (cause instanceof TerminatedFailure) return { reason: `terminated: ${cause.message}`, type: 'Terminated' };
  if (cause instanceof CancelledFailure) return { reason: 'the workflow was cancelled', type: 'Cancelled' };
  if (cause instanceof TimeoutFailure) return { reason: `the workflow timed out (${cause.timeoutType})`, type: 'TimedOut' };
  return { reason: cause?.message || err.message, type: undefined };
}

/** One line that says what went wrong: the workflow's reason for a failed run or update, else the error message. */
export function failureReason(err: unknown): string {
  return runFailure(err)?.reason ?? (err instanceof Error ? err.message : String(err));
}

/** Options of `AgentRunHandle.state`. */
export interface StateOptions {
  /** Include the conversation (it can be large). @default false */
  includeMessages?: boolean;
  /** Longest wait for a worker to answer one query. @default 10000 */
  timeoutMs?: number;
  /** Retries after a failed query (not after a timeout or an unknown id). @default 3 */
  retries?: number;
  /** Cancels the query in flight. */
  signal?: AbortSignal;
}

/** Options of `AgentRunHandle.watch`. */
export interface WatchOptions {
  /** Time between two `state` queries. @default 250 */
  intervalMs?: number;
  /** Stops watching: `watch` then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called with each polled view before the events computed from it (the HTTP gateway derives its resume cursor from it). */
  onView?: (view: RunStateView) => void | Promise<void>;
  /**
   * Reads the run's pushed stream (the channel the workers publish to, e.g. `RedisChannel.open({ url })`) instead of
   * polling: events arrive as they are published, and nothing is asked of the run meanwhile. When the channel has no
   * stream for the run, loses events (a gap) or goes down, `watch` goes on by polling the state, reporting only what
   * the stream had not. Absent: polling only.
   */
  stream?: StreamChannel;
  /** With `stream`: re-attach after this offset (the last one `onOffset` gave), so only what came after is reported. @default '0-0' (from the start) */
  after?: string;
  /** With `stream`: called with each event's offset once `onEvent` has taken it: keep the last to re-attach with `after`. */
  onOffset?: (offset: string) => void | Promise<void>;
}

export { diffState, type WatchEvent };


/** Runs a page of a listing asks the server for: each run's memo holds its stored state (a few kB), and 200 keep a reply under gRPC's 4 MB. */
const LIST_PAGE_SIZE = 200;

/**
 * The raw listing of `query`, page by page: unlike the SDK's `workflow.list`, it decodes no memo, so one run whose memo
 * this client cannot decode (another key, another blob store) cannot fail the whole list.
 */
export async function* rawExecutions(client: Client, query: string, pageSize = LIST_PAGE_SIZE): AsyncGenerator<temporal.api.workflow.v1.IWorkflowExecutionInfo> {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listWorkflowExecutions({ namespace: client.options.namespace, query, pageSize, nextPageToken });
    yield* page.executions ?? [];
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
}

/** A listed execution's status as the SDK names it: `RUNNING`, `COMPLETED`, `CONTINUED_AS_NEW`, ... */
export const executionStatus = (e: temporal.api.workflow.v1.IWorkflowExecutionInfo): string =>
  (temporal.api.enums.v1.WorkflowExecutionStatus[e.status ?? 0] ?? '').replace(/^WORKFLOW_EXECUTION_STATUS_/, '');

/** One run as `list` reports it. */
export interface AgentRunSummary {
  workflowId: string;
  runId: string;
  /** Temporal execution status: `RUNNING`, `COMPLETED`, `FAILED`, `TERMINATED`, ... */
  status: string;
  /** The `AgentState` search attribute: the run's state at its last transition. */
  agentState: string | undefined;
  startTime: Date;
  /** When the run closed; `undefined` while it is open. */
  closeTime?: Date;
}

/** Options of `AgentClient.list`. */
export interface ListOptions {
  /** Only runs whose `AgentState` is this state. */
  state?: string;
  /** Most runs returned. @default 20 */
  limit?: number;
}

/** Options of `AgentClient.start`. */
export interface StartOptions {
  /** @default `agent-<12 hex chars>` */
  workflowId?: string;
}

/** A handle to one agent run. Every method maps an unknown id to `AgentRunNotFoundError`. */
export class AgentRunHandle {
  /** @internal use `AgentClient.handle` or `AgentClient.start` */
  constructor(
    private readonly workflow: WorkflowHandle,
    /** Run id of the execution this handle started; `undefined` for a handle by workflow id (the latest run). */
    readonly runId: string | undefined,
    private readonly taskQueue?: string,
  ) {}

  /** The run's workflow id. */
  get workflowId(): string {
    return this.workflow.workflowId;
  }

  /**
   * The run's state view, from the run itself (the `state` query, which a worker answers). When no worker answers
   * within `timeoutMs`, the copy the run stored when it last waited for a person or ended (`stored` says when and
   * why), if it has one; otherwise the query's error.
   */
  async state(opts: StateOptions = {}): Promise<RunStateView> {
    try {
      return await this.withRetries(await this.liveState(opts));
    } catch (err) {
      if (!(err instanceof AgentQueryTimeoutError || isNoWorkerError(err))) throw err;
      const stored = await this.storedState(`no worker is answering: ${(err as Error).message}`);
      if (!stored) throw err;
      return stored;
    }
  }

  /** The view with the activities being retried, from the server's description of the run, while it works. */
  private async withRetries(view: RunStateView): Promise<RunStateView> {
    if (!WORKING_STATES.includes(view.state)) return view;
    // The raw description: the SDK's would decode the memo too, which this needs not.
    const { client } = this.workflow;
    const described = await client.workflowService
      .describeWorkflowExecution({ namespace: client.options.namespace, execution: { workflowId: this.workflowId, runId: this.runId } })
      .catch(() => undefined); // best effort: the live state stands on its own
    if (!described) return view;
    const converter = client.options.loadedDataConverter;
    const retrying: RetryInfo[] = [];
    for (const a of described.pendingActivities ?? []) {
      if ((a.attempt ?? 1) <= 1 && !a.lastFailure) continue;
      const error = await decodeOptionalFailureToOptionalError(converter, a.lastFailure);
      const type = error instanceof ApplicationFailure ? (error.type ?? null) : null;
      retrying.push({
        activity: a.activityType?.name ?? '',
        attempt: a.attempt ?? 1,
        lastFailure: error ? { type, message: error.message } : null,
        nextAttemptAt: optionalTsToDate(a.nextAttemptScheduleTime)?.toISOString() ?? null,
      });
    }
    return retrying.length > 0 ? { ...view, retrying } : view;
  }

  /** The copy of the view the run stored in its memo (written when it waits for a person and when it ends); served by the server with no worker. */
  async storedState(reason = 'the stored copy was asked for'): Promise<RunStateView | undefined> {
    const description = await this.workflow.describe();
    const memo = description.memo?.[AGENT_STATE_MEMO] as (RunStateView & { storedAt?: string }) | undefined;
    if (!memo) return undefined;
    const { storedAt, ...view } = memo;
    return { ...view, stored: { at: storedAt ?? description.executionTime?.toISOString() ?? '', reason } };
  }

  private async liveState(opts: StateOptions): Promise<RunStateView> {
    const timeoutMs = opts.timeoutMs ?? QUERY_TIMEOUT_MS;
    const retries = opts.retries ?? QUERY_RETRIES;
    const connection = this.workflow.client.connection;
    const query = () => this.workflow.query(stateQuery, { includeMessages: opts.includeMessages ?? false });
    const signal = opts.signal;
    // One deadline for every attempt: the stored copy, the fallback, must still answer within 10 s.
    const deadline = Date.now() + timeoutMs;
    const timedOut = () => new AgentQueryTimeoutError(this.workflowId, timeoutMs, this.taskQueue);
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      try {
        return await connection.withDeadline(deadline, () =>
          signal ? perCall(signal, (callSignal) => connection.withAbortSignal(callSignal, query)) : query(),
        );
      } catch (err) {
        signal?.throwIfAborted();
        if (err instanceof WorkflowNotFoundError) throw new AgentRunNotFoundError(this.workflowId);
        if (isGrpcDeadlineError(err)) throw timedOut();
        // No worker polls the run's task queue: asking again cannot help.
        if (err instanceof QueryNotRegisteredError || isNoWorkerError(err) || attempt >= retries) throw err;
        const delay = QUERY_RETRY_DELAY_MS * 2 ** attempt;
        if (Date.now() + delay >= deadline) throw timedOut();
        await pause(delay, signal);
      }
    }
  }

  /**
   * Time travel: the run's snapshot right after `step` (see `state().transitions`); messages on request. A worker
   * replays the run to answer, so with none running this rejects with `AgentQueryTimeoutError` after `timeoutMs`.
   */
  async snapshotAt(step: number, opts: { includeMessages?: boolean; timeoutMs?: number } = {}): Promise<RunStateView> {
    const args = { step, includeMessages: opts.includeMessages ?? false };
    return this.timeTravelQuery('stateAt', opts.timeoutMs, () =>
      this.guard(() =>
        // A worker from before 0.2 serves the same view as `snapshotAt`.
        this.workflow.query(stateAtQuery, args).catch((err: unknown) => {
          // The SDK reports a handler's own failure (a step the run does not hold) as this error type too.
          if (err instanceof QueryNotRegisteredError && /did not register a handler for stateAt\b/.test(err.message)) return this.workflow.query(snapshotAtQuery, args);
          throw err;
        }),
      ),
    ).catch((err: unknown) => {
      throw stepNotFound(this.workflowId, step, err) ?? err;
    });
  }

  /** The internal snapshot of a step, which `AgentClient.fork` carries into a new run; bounded like `snapshotAt`. */
  stateSnapshotAt(step: number, timeoutMs?: number): Promise<unknown> {
    return this.timeTravelQuery('stateSnapshotAt', timeoutMs, () => this.guard(() => this.workflow.query(stateSnapshotAtQuery, { step })));
  }

  /** A query answered by replaying the run: one deadline, and no worker within it is `AgentQueryTimeoutError`. */
  private async timeTravelQuery<T>(name: string, timeoutMs = TIME_TRAVEL_TIMEOUT_MS, query: () => Promise<T>): Promise<T> {
    try {
      return await this.workflow.client.connection.withDeadline(Date.now() + timeoutMs, query);
    } catch (err) {
      if (isGrpcDeadlineError(err) || isNoWorkerError(err)) throw new AgentQueryTimeoutError(this.workflowId, timeoutMs, this.taskQueue, name);
      throw err;
    }
  }

  /** Time travel: the run's steps as far as its state still lists them (a continued run keeps the recent end). */
  async steps(): Promise<StepRecord[]> {
    return stepsOf(await this.state());
  }

  /** Time travel: what changed between two steps, each change with its path (see `diffSnapshots`). */
  async diff(from: number, to: number): Promise<SnapshotDiff> {
    for (const [name, step] of [['from', from], ['to', to]] as const) checkStep(name, step);
    // One after the other: with both at once on a just-closed run, one was seen to wait 30 s for a worker and fail.
    const a = await this.snapshotAt(from, { includeMessages: true });
    return diffSnapshots(a, await this.snapshotAt(to, { includeMessages: true }));
  }

  /*
   * The controls below are updates that carry a deadline (`ControlOptions.timeoutMs`). Each resolves once the run has
   * taken the control; it rejects with `AgentUpdateRejectedError` when the run refuses it (the machine's reason, e.g.
   * `a pause is already requested`) and with `AgentControlTimeoutError` when no run took it by the deadline. Either
   * way nothing was recorded.
   */

  /** Asks the run to stop: work in flight is cancelled and the run ends ABORTED. */
  async abort(reason?: string, opts: ControlOptions = {}): Promise<ControlResult> {
    const input = validate(AbortInputSchema, reason === undefined ? {} : { reason }, 'abort input');
    return this.withSignalFallback(this.control(abortUpdate, input, opts), () => this.workflow.signal(abortSignal, input));
  }

  /** Asks the run to pause before its next piece of work (`pauseRequested` while work is in flight). */
  async pause(opts: ControlOptions = {}): Promise<ControlResult> {
    return this.withSignalFallback(this.control(pauseUpdate, {}, opts), () => this.workflow.signal(pauseSignal));
  }

  /** Resumes a paused run (or cancels a pending pause). */
  async resume(opts: ControlOptions = {}): Promise<ControlResult> {
    return this.withSignalFallback(this.control(resumeUpdate, {}, opts), () => this.workflow.signal(resumeSignal));
  }

  /** Decides one tool call that waits for approval. */
  async approve(input: ApproveInput, opts: ControlOptions = {}): Promise<ApproveResult> {
    return this.control(approveUpdate, validate(ApproveInputSchema, input, 'approve input'), opts);
  }

  /**
   * Queues a user message for the model's next call. With `interrupt: true` the run stops its work in flight for it:
   * the model call is cancelled (its text so far kept, marked interrupted), tools that may be stopped are, undecided
   * approvals are rejected (README, "Steering").
   */
  async sendMessage(text: string, opts: SendMessageOptions = {}): Promise<SendMessageResult> {
    const { interrupt, ...control } = opts;
    // Sent only when set: workers from before interrupts refuse the field, and a plain message must still reach them.
    const input = validate(SendMessageInputSchema, { text, ...(interrupt ? { interrupt } : {}) }, 'sendMessage input');
    return this.control(sendMessageUpdate, input, control);
  }

  /**
   * Waits for the run to end. A COMPLETED or ABORTED run resolves; a FAILED (or terminated, cancelled, timed out)
   * run rejects with the `WorkflowFailedError`: use `failureReason(err)` or `runFailure(err)` to read why.
   */
  async result(): Promise<AgentRunResult> {
    try {
      return (await this.workflow.result()) as AgentRunResult;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new AgentRunNotFoundError(this.workflowId);
      throw err;
    }
  }

  /**
   * Polls `state` and reports what changed (see `diffState`) until the run is terminal, then resolves with its last
   * view. An `onEvent` that returns a promise is awaited before the next poll.
   */
  async watch(onEvent: (event: WatchEvent) => void | Promise<void>, opts: WatchOptions = {}): Promise<RunStateView> {
    const intervalMs = opts.intervalMs ?? 250;
    const seen = opts.stream ? await this.watchStream(opts.stream, onEvent, opts) : undefined;
    if (seen && 'end' in seen) return seen.end;
    let previous: RunStateView | undefined;
    if (seen) {
      // Polling takes over from the stream: what the stream reported is not reported again.
      const next = await this.state({ signal: opts.signal });
      previous = seenView(next, seen);
    }
    for (;;) {
      const next = await this.state({ signal: opts.signal });
      await opts.onView?.(next);
      for (const event of diffState(previous, next)) await onEvent(event);
      if (isTerminal(next.state)) return next;
      previous = next;
      await pause(intervalMs, opts.signal);
    }
  }

  /**
   * `watch` on the stream channel: reports its events until the run's `end` (resolves with it), or until the channel
   * cannot go on (a gap, down, no stream for the run): then resolves with what was reported, for polling to go on from.
   */
  private async watchStream(channel: StreamChannel, onEvent: (event: WatchEvent) => void | Promise<void>, opts: WatchOptions): Promise<{ end: RunStateView } | Seen> {
    const seen: Seen = { step: 0, toolStarts: new Set(), toolEnds: new Set(), approvals: new Set(), texts: new Map(), call: undefined };
    const head = await channel.head(this.workflowId).catch(() => undefined);
    if (head === undefined) return seen;
    const sub = channel.subscribe(this.workflowId, opts.after ?? '0-0');
    const stop = () => sub.close();
    opts.signal?.addEventListener('abort', stop, { once: true });
    try {
      const items = sub[Symbol.asyncIterator]();
      let next = items.next();
      // A run whose first events are on their way is given a second to show them, as the gateway gives it.
      if (head === null && !(await Promise.race([next, sleep(1_000).then(() => undefined)]))) return seen;
      for (;;) {
        const { value: item, done } = await next;
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (done || item.kind !== 'event') return seen;
        const event = item.event;
        // The worker could not publish some events: the state says what they were, as after a gap.
        if (event.type === 'lost') return seen;
        await onEvent(event.type === 'transition' ? { type: 'transition', transition: event.transition } : event);
        await opts.onOffset?.(item.offset);
        if (event.type === 'end') return { end: event.state };
        see(seen, event);
        next = items.next();
      }
    } finally {
      opts.signal?.removeEventListener('abort', stop);
      stop();
    }
  }

  /** Signals and updates to a closed run fail with NOT_FOUND; tell "ended" apart from "never existed". */
  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      const status = await this.workflow.describe().then(
        (d) => d.status.name,
        () => undefined,
      );
      if (!status || status === 'RUNNING') throw new AgentRunNotFoundError(this.workflowId);
      // The result is kept by the server: no worker is needed to tell ABORTED from COMPLETED.
      const state = status === 'COMPLETED' ? await this.workflow.result().then((r: AgentRunResult) => r.status, () => undefined) : undefined;
      throw new AgentRunEndedError(this.workflowId, status, state);
    }
  }

  /**
   * Abort, pause and resume to a run that has no such update (a sub-agent pattern, or a worker from before control
   * updates, mid rolling deploy) go as the signal those runs handle, so an operator can always stop a run.
   */
  private async withSignalFallback(update: Promise<ControlResult>, signal: () => Promise<void>): Promise<ControlResult> {
    try {
      return await update;
    } catch (err) {
      if (!(err instanceof AgentUpdateRejectedError && NO_UPDATE_HANDLER.test(err.reason))) throw err;
      await this.guard(signal);
      return { state: null, pauseRequested: false, delivery: 'signal' };
    }
  }

  /** Sends a control update with its deadline and waits for the run's answer until then (and a grace to hear it). */
  private async control<A extends { deadline?: string }, R>(def: UpdateDefinition<R, [A]>, input: Omit<A, 'deadline'>, opts: ControlOptions): Promise<R> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_CONTROL_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new InvalidAgentInputError(`Invalid control options: timeoutMs: must be a positive integer, got ${timeoutMs}`);
    const sentAt = Date.now();
    const args = { ...input, deadline: new Date(sentAt + timeoutMs).toISOString() } as A;
    const connection = this.workflow.client.connection;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.update(def.name, () => connection.withDeadline(sentAt + timeoutMs + CONTROL_GRACE_MS, () => this.workflow.executeUpdate(def, { args: [args] })));
      } catch (err) {
        const delay = CONTROL_RETRY_DELAY_MS * 2 ** Math.min(attempt, 4);
        // Not accepted, so not recorded: the same control, with the same deadline, may go again.
        if (isDroppedWithWorkflowTask(err) && Date.now() + delay < sentAt + timeoutMs) {
          await sleep(delay);
          continue;
        }
        if (!(err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || isGrpcDeadlineError(err) || isDroppedWithWorkflowTask(err))) throw err;
        const { taskQueue, polling } = await this.pollersSince(sentAt);
        throw new AgentControlTimeoutError(this.workflowId, def.name, timeoutMs, taskQueue, polling);
      }
    }
  }

  /** The run's task queue, and whether a worker has polled it (for workflow tasks) since `since`; undefined if unknown. */
  private async pollersSince(since: number): Promise<{ taskQueue: string | undefined; polling: boolean | undefined }> {
    const { client } = this.workflow;
    const namespace = client.options.namespace;
    const described = await client.workflowService
      .describeWorkflowExecution({ namespace, execution: { workflowId: this.workflowId, runId: this.runId } })
      .catch(() => undefined);
    const taskQueue = described?.executionConfig?.taskQueue?.name ?? this.taskQueue;
    if (!taskQueue) return { taskQueue, polling: undefined };
    const queue = await client.workflowService
      .describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      })
      .catch(() => undefined);
    if (!queue) return { taskQueue, polling: undefined };
    return { taskQueue, polling: (queue.pollers ?? []).some((p) => (optionalTsToDate(p.lastAccessTime)?.getTime() ?? 0) >= since) };
  }

  private async update<T>(name: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await this.guard(fn);
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) throw new AgentUpdateRejectedError(name, failureReason(err), { cause: err });
      throw err;
    }
  }
}

/**
 * The data converter agent clients and workers share: encryption (AGENT_ENCRYPTION_KEYS) and the claim check
 * (AGENT_CLAIM_CHECK, AGENT_BLOB_DIR). Pass it to `new Client({ dataConverter })` when wrapping your own client with
 * `new AgentClient`. @default settings `codecSettings()`, read from the environment
 */
export const agentDataConverter = (settings: CodecSettings = codecSettings()): DataConverter => createDataConverter(settings);

/** Options of `AgentClient.connect`. */
export interface ConnectOptions {
  /** Must match the workers' (same keys, same blob store), or payloads cannot be read. @default `agentDataConverter()` */
  dataConverter?: DataConverter;
  /**
   * Start each run's trace here and pass it to the workflow in headers.
   * @default on when the environment configures tracing (AGENT_TRACING, OTEL_EXPORTER_OTLP_ENDPOINT)
   */
  tracing?: boolean;
}

/** Typed entry point to `agentRun` workflows. Create with `AgentClient.connect()`, or wrap an existing `Client`. */
export class AgentClient {
  /**
   * Connects to Temporal. Settings not given come from `temporalSettings()` in config.ts: TEMPORAL_ADDRESS,
   * TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, and TLS, mTLS and API key by envconfig's conventions (TEMPORAL_API_KEY,
   * TEMPORAL_TLS_*, temporal.toml profiles); the options not given, from the environment likewise.
   */
  static async connect(settings: Partial<TemporalSettings> = {}, options: ConnectOptions = {}): Promise<AgentClient> {
    const temporal = { ...temporalSettings(), ...definedOnly(settings) };
    let connection: Connection;
    try {
      connection = await Connection.connect(clientConnectionOptions(temporal));
    } catch (err) {
      // A refused TLS handshake surfaces as a deadline; the handshake itself says why.
      const why = (await tlsFailureReason(clientConnectionOptions(temporal)).catch(() => undefined)) ?? (err instanceof Error ? err.message : String(err));
      throw new Error(`cannot connect to Temporal at ${temporal.address}: ${why}`, { cause: err });
    }
    const dataConverter = options.dataConverter ?? agentDataConverter();
    const tracing = options.tracing ?? observabilitySettings().tracing !== 'off';
    const interceptors = { workflow: tracingClientInterceptors(tracing) };
    return new AgentClient(new Client({ connection, namespace: temporal.namespace, dataConverter, interceptors }), temporal.taskQueue, connection);
  }

  /** Wraps an existing client; `close()` then closes `ownedConnection` only, if given. */
  constructor(
    readonly client: Client,
    readonly taskQueue: string,
    private readonly ownedConnection?: Connection,
  ) {}

  /**
   * Validates the input and starts a run, with the `AgentState` search attribute set to IDLE so it is filterable at once.
   * Throws `InvalidAgentInputError` (and starts nothing) on bad input; Temporal's `WorkflowExecutionAlreadyStartedError`
   * if a run with this id is still open.
   */
  async start(input: AgentRunInput, opts: StartOptions = {}): Promise<AgentRunHandle> {
    const parsed = parseAgentRunInput(input);
    if (!parsed.ok) throw new InvalidAgentInputError(parsed.error);
    const workflowId = opts.workflowId ?? `agent-${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    // The input goes as given, not resolved: defaults stay the worker's concern, and a strict schema that later drops
    // a defaulted field still accepts old histories on replay. The resolved limits are in the `state` query.
    const handle = await this.client.workflow.start(WORKFLOW_TYPE, {
      taskQueue: this.taskQueue,
      workflowId,
      args: [input],
      typedSearchAttributes: [{ key: agentStateKey, value: AgentState.IDLE }],
      staticSummary: summarize(parsed.value.prompt),
      memo: { [AGENT_RUN_MEMO]: runMemo(input) },
    });
    return new AgentRunHandle(handle, handle.firstExecutionRunId, this.taskQueue);
  }

  /**
   * Time travel: a new run that carries on from step `fromStep` of another, with the snapshot it had right after that
   * step (conversation included). The original is untouched; the fork's `state().origin` names it. Step 0 is the
   * run before its start: a fork from it starts at once, a fresh run of the same input. A step the run does not hold
   * rejects with `AgentStepNotFoundError`, its last (ended) step and a negative one with `InvalidAgentInputError`.
   */
  async fork(workflowId: string, fromStep: number, opts: StartOptions = {}): Promise<AgentRunHandle> {
    checkStep('fromStep', fromStep);
    const source = this.handle(workflowId);
    let view = await source.snapshotAt(fromStep, { includeMessages: true });
    // Step 0 is the run before its start, which nothing moves on from: carry the start (step 1), which follows from it alone.
    const carried = view.state === AgentState.IDLE ? fromStep + 1 : fromStep;
    if (carried !== fromStep) {
      view = await source.snapshotAt(carried, { includeMessages: true });
      if (isTerminal(view.state)) throw new InvalidAgentInputError(`step ${fromStep} of ${workflowId} cannot be forked: the run ended ${view.state} at its start`);
    }
    if (isTerminal(view.state)) throw new InvalidAgentInputError(`step ${fromStep} of ${workflowId} is ${view.state}: fork from an earlier step`);
    const task = view.messages?.find((m) => m.role === 'user')?.content ?? `fork of ${workflowId}`;
    const snapshot = await source.stateSnapshotAt(carried);
    const resume = { kind: 'fork' as const, snapshot: snapshot as NonNullable<AgentRunInput['resume']>['snapshot'], origin: { workflowId, step: fromStep } };
    return this.start({ prompt: task, resume }, { workflowId: opts.workflowId ?? `${workflowId}-fork-${fromStep}-${randomUUID().slice(0, 6)}` });
  }

  /** A handle to the latest run with this workflow id. Nothing is checked until a method is called. */
  handle(workflowId: string): AgentRunHandle {
    return new AgentRunHandle(this.client.workflow.getHandle(workflowId), undefined, this.taskQueue);
  }

  /**
   * Agent runs in visibility as the server orders them (its SQL store takes no ORDER BY): open runs first, newest
   * first, then closed runs, the most recently closed first. Optionally only those in one `AgentState`.
   */
  async list(opts: ListOptions = {}): Promise<AgentRunSummary[]> {
    const limit = opts.limit ?? DEFAULT_LIST_LIMIT;
    if (!Number.isInteger(limit) || limit < 1) throw new InvalidAgentInputError(`Invalid list options: limit: must be a positive integer`);
    if (opts.state !== undefined && !(Object.values(AgentState) as string[]).includes(opts.state)) {
      throw new InvalidAgentInputError(`Invalid list options: state: must be one of ${Object.values(AgentState).join(', ')}`);
    }
    const query = `WorkflowType="${WORKFLOW_TYPE}"` + (opts.state ? ` AND ${AGENT_STATE_SEARCH_ATTRIBUTE}="${opts.state}"` : '');
    // The raw listing: the SDK's decodes every run's memo, and one run whose memo this client cannot decode (another
    // key, another blob store) would fail the whole list. Search attributes are never encoded.
    const runs: AgentRunSummary[] = [];
    for await (const e of rawExecutions(this.client, query, Math.min(limit, LIST_PAGE_SIZE))) {
      const state = e.searchAttributes?.indexedFields?.[AGENT_STATE_SEARCH_ATTRIBUTE];
      const value: unknown = state ? defaultPayloadConverter.fromPayload(state) : undefined;
      runs.push({
        workflowId: e.execution?.workflowId ?? '',
        runId: e.execution?.runId ?? '',
        status: executionStatus(e),
        agentState: typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined,
        startTime: optionalTsToDate(e.startTime) ?? new Date(0),
        ...(e.closeTime ? { closeTime: optionalTsToDate(e.closeTime) } : {}),
      });
      if (runs.length >= limit) return runs;
    }
    return runs;
  }

  /** Closes the connection if `connect` opened it. */
  async close(): Promise<void> {
    await this.ownedConnection?.close();
  }
}

/** Whether an error means a run with the requested id is already open (from `start` with an explicit id). */
export const isAlreadyStarted = (err: unknown): err is WorkflowExecutionAlreadyStartedError =>
  err instanceof WorkflowExecutionAlreadyStartedError;

/** The fields of `o` that are set: `{ address: undefined }` from a caller leaves the default in place. */
const definedOnly = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/** A step number as time travel takes it: steps count from 0, the run before its start. */
function checkStep(name: string, step: number): void {
  if (!Number.isInteger(step) || step < 0) throw new InvalidAgentInputError(`${name} must be a step number (0 or more), got ${step}`);
}

/** The workflow's refusal of a step it does not hold, as `AgentStepNotFoundError`; `undefined` for any other error. */
function stepNotFound(workflowId: string, step: number, err: unknown): AgentStepNotFoundError | undefined {
  if (!(err instanceof Error)) return undefined;
  const match = STEP_NOT_IN_RUN.exec(`${err.message}\n${(err.cause as Error | undefined)?.message ?? ''}`);
  return match ? new AgentStepNotFoundError(workflowId, step, match[0], { cause: err }) : undefined;
}

function validate<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const parsed = parseWith(schema, value, what);
  if (!parsed.ok) throw new InvalidAgentInputError(parsed.error);
  return parsed.value;
}

/**
 * Runs one call with its own signal that follows `signal`. The SDK adds an abort listener per call and never removes
 * it, so a long `watch` would otherwise pile one listener (and its finished call) per poll onto the caller's signal.
 */
async function perCall<T>(signal: AbortSignal, fn: (callSignal: AbortSignal) => Promise<T>): Promise<T> {
  const call = new AbortController();
  const forward = () => call.abort(signal.reason);
  signal.addEventListener('abort', forward, { once: true });
  try {
    return await fn(call.signal);
  } finally {
    signal.removeEventListener('abort', forward);
  }
}

/** Sleeps; an abort rejects with the signal's reason, like `throwIfAborted`. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  await sleep(ms, undefined, { signal }).catch((err: unknown) => {
    signal?.throwIfAborted();
    throw err;
  });
}

/** The memo the run list reads (AGENT_RUN_MEMO): a fork names the run and step it carries on from. */
function runMemo(input: AgentRunInput): { prompt: string; agent: string | null; origin: { workflowId: string; step: number } | null } {
  return { prompt: input.prompt.slice(0, 1_000), agent: input.agent ?? null, origin: (input.resume?.kind === 'fork' && input.resume.origin) || null };
}

/** The UI's one-line summary: the prompt's first characters, whitespace collapsed. */
function summarize(prompt: string): string {
  const line = prompt.replace(/\s+/g, ' ').trim();
  return line.length > SUMMARY_CHARS ? `${line.slice(0, SUMMARY_CHARS - 3)}...` : line;
}

/**
 * The server dropped an update with the workflow task that carried it, before accepting it (FAILED_PRECONDITION,
 * "unexpected workflow task failure"). A run that ends on the update (abort) while signals arrive meets this: the
 * server refuses to close it over unhandled events (UnhandledCommand) and fails that workflow task.
 */
function isDroppedWithWorkflowTask(err: unknown): boolean {
  const grpc = err instanceof ServiceError ? err.cause : err;
  return isGrpcServiceError(grpc) && grpc.code === GRPC_FAILED_PRECONDITION;
}

/** The server's answer when no worker polls the run's task queue: a query cannot be answered until one does. */
function isNoWorkerError(err: unknown): boolean {
  const text = err instanceof Error ? `${err.message} ${String((err as { cause?: unknown }).cause ?? '')}` : '';
  return /no poller seen|FAILED_PRECONDITION|workflow query timed out|Query timed out/i.test(text);
}

/** What a watcher has had from the stream: enough to tell which events of a polled view it has not. */
interface Seen {
  step: number;
  toolStarts: Set<string>;
  toolEnds: Set<string>;
  approvals: Set<string>;
  texts: Map<number, CallText>;
  /** The model call whose text came last. */
  call: number | undefined;
}

function see(seen: Seen, e: StreamEvent): void {
  if (e.type === 'transition') seen.step = Math.max(seen.step, e.step);
  else if (e.type === 'toolStart') seen.toolStarts.add(e.toolCallId);
  else if (e.type === 'toolEnd') seen.toolEnds.add(e.toolCallId);
  else if (e.type === 'approval') for (const p of e.pending) seen.approvals.add(p.toolCallId);
  if (followText(seen.texts, e) !== 'none') seen.call = (e as { callNumber: number }).callNumber;
}

/** `next` as the watcher knows it from the stream: `diffState(seenView(next, seen), next)` is what it has not had. */
function seenView(next: RunStateView, seen: Seen): RunStateView {
  const text = seen.call === undefined ? undefined : seen.texts.get(seen.call);
  return {
    ...next,
    state: isTerminal(next.state) ? AgentState.STREAMING : next.state,
    step: seen.step,
    recentToolCalls: next.recentToolCalls
      .filter((t) => seen.toolStarts.has(t.toolCallId))
      .map((t) => (seen.toolEnds.has(t.toolCallId) ? t : { ...t, endStep: null, endedAt: null, ok: null, output: null })),
    pendingApproval: next.pendingApproval.filter((p) => seen.approvals.has(p.toolCallId)),
    stream: text ? { callNumber: text.callNumber, attempt: text.attempt } : null,
    partialText: text?.text ?? '',
  };
}
