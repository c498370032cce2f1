/**
 * A handle to one agent run: its state (live, with retries, or the stored copy), time travel, the controls
 * (updates with a deadline, signals as a fallback) and its result; `watch` is in watch.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  isGrpcDeadlineError,
  QueryNotRegisteredError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type WorkflowHandle,
} from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { taskQueuePollers } from './pollers';
import type { ReplayedAnswers } from '../common/chat';
import { AGENT_STATE_MEMO } from '../common/constants';
import { ActorSchema, type Actor } from '../common/actor';
import { AbortInputSchema, ApproveInputSchema, SendMessageInputSchema, type ApproveInput } from '../common/input';
import {
  abortSignal,
  abortUpdate,
  approveUpdate,
  pauseSignal,
  resumeSignal,
  pauseUpdate,
  resumeUpdate,
  sendMessageUpdate,
  stateAtQuery,
  stateSnapshotAtQuery,
  stateQuery,
  stepsQuery,
  type AgentRunResult,
  type StepsPage,
  type StepsQueryOptions,
  type ApproveResult,
  type ControlResult,
  type RunStateView,
  type SendMessageResult,
} from '../common/messages';
import type { WatchEvent } from '../common/watch';
import { pause, perCall } from './abortable';
import { withActivities } from './activity-view';
import {
  AgentControlTimeoutError,
  AgentQueryTimeoutError,
  AgentRunEndedError,
  AgentRunFailedError,
  AgentRunNotFoundError,
  AgentUpdateRejectedError,
  checkStep,
  failureReason,
  InvalidAgentInputError,
  isDroppedWithWorkflowTask,
  isNoUpdateHandler,
  isNoWorkerError,
  runFailure,
  stepNotFound,
  validate,
} from './errors';
import { tsToDate } from '../common/proto-time';
import { askRunHolding, chainSteps } from './chain';
import { recordedAnswers } from './recorded';
import { diffSnapshots, stepsOf, type SnapshotDiff, type StepRecord } from './time-travel';
import { watchRun, type WatchOptions } from './watch';

/** Longest wait for a worker to answer one `state` query: long enough for a busy worker, short enough that the stored copy still answers within 10 s. */
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

/** Options of the controls: `approve`, `sendMessage`, `abort`, `pause`, `resume`. */
export interface ControlOptions {
  /**
   * How long the run has to take the control. The deadline is sent with it and the run refuses it after that, so a
   * control that waited for a worker never takes effect later. @default 10000 (`DEFAULT_CONTROL_TIMEOUT_MS`)
   */
  timeoutMs?: number;
  /**
   * Who sends it, recorded by the run beside the decision and in its `controls` log (docs/approvals.md, "Who decided").
   * A backend passes its caller. @default the service (`{ kind: 'service' }`)
   */
  by?: Actor;
}

/**
 * The control's `by`, checked, and sent only when it names someone: workers from before `by` refuse the field, and
 * the run records a control without one as the service's anyway.
 */
function byOf(opts: ControlOptions): { by?: Actor } {
  if (opts.by === undefined) return {};
  const by = validate(ActorSchema, opts.by, 'control options: by');
  return by.kind === 'service' ? {} : { by };
}

/** Options of `sendMessage`. */
export interface SendMessageOptions extends ControlOptions {
  /** Stop the work in flight for this message instead of queueing it for the next model call. @default false */
  interrupt?: boolean;
}

/** Options of `AgentRunHandle.state`. */
export interface StateOptions {
  /** Include the conversation (it can be large). @default false */
  includeMessages?: boolean;
  /** Longest wait for a worker to answer one query. @default 5000 */
  timeoutMs?: number;
  /** Retries after a failed query (not after a timeout or an unknown id). @default 3 */
  retries?: number;
  /** Cancels the query in flight. */
  signal?: AbortSignal;
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

  /** The view with the activities being retried and the model call's text so far, from the server's description of the run. */
  private withRetries(view: RunStateView): Promise<RunStateView> {
    return withActivities(this.workflow.client, { workflowId: this.workflowId, runId: this.runId }, view);
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
      this.guard(() => askRunHolding(this.workflow, step, (run) => run.query(stateAtQuery, args))),
    ).catch((err: unknown) => {
      throw stepNotFound(this.workflowId, step, err) ?? err;
    });
  }

  /** The internal snapshot of a step, which `AgentClient.fork` carries into a new run; bounded like `snapshotAt`. */
  stateSnapshotAt(step: number, timeoutMs?: number): Promise<unknown> {
    return this.timeTravelQuery('stateSnapshotAt', timeoutMs, () =>
      this.guard(() => askRunHolding(this.workflow, step, (run) => run.query(stateSnapshotAtQuery, { step }))),
    );
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

  /**
   * What-if forks: the answers of the run's model requests (model calls, the model critic, compactions) from model call
   * `fromCall` on, by their requests' hashes, from every run of its chain.
   */
  recordedAnswers(fromCall: number): Promise<ReplayedAnswers> {
    return this.guard(() => recordedAnswers(this.workflow, fromCall));
  }

  /**
   * Time travel: every step since the run started, across continue-as-new (numbered on from run to run), each run's
   * paged from its `steps` query (the state view carries only the last ones). The runs it continued from are read only
   * when its own log does not begin at step 1, each by a query a worker answers by replay. With no worker answering,
   * the steps of the copy the run stored (its last 10).
   */
  async steps(): Promise<StepRecord[]> {
    const own = await this.stepsOfRun(this.workflow, QUERY_TIMEOUT_MS);
    return chainSteps(this.workflow, own ?? stepsOf(await this.state()), async (run) => (await this.stepsOfRun(run)) ?? stepsOf(await this.timeTravelQuery('state', undefined, () => run.query(stateQuery))));
  }

  /** One run's whole step log, page by page; undefined when no worker answers its `steps` query (or one from before it). */
  private async stepsOfRun(run: WorkflowHandle, timeoutMs?: number): Promise<StepRecord[] | undefined> {
    const steps: StepRecord[] = [];
    for (let from: number | null | undefined = undefined; from !== null; ) {
      const query: StepsQueryOptions = from !== undefined ? { from } : {};
      const page: StepsPage | undefined = await this.timeTravelQuery('steps', timeoutMs, (): Promise<StepsPage> => this.guard(() => run.query(stepsQuery, query))).catch((err: unknown) => {
        if (steps.length > 0 || !(err instanceof AgentQueryTimeoutError || err instanceof QueryNotRegisteredError)) throw err;
        return undefined;
      });
      if (!page) return undefined;
      steps.push(...page.steps);
      from = page.next;
    }
    return steps;
  }

  /** Time travel: one page of the run's steps, from step `from` (default: the first it holds), at most `limit` (1000) of them. */
  stepsPage(opts: StepsQueryOptions & { timeoutMs?: number } = {}): Promise<StepsPage> {
    const { timeoutMs, ...page } = opts;
    return this.timeTravelQuery('steps', timeoutMs, () => this.guard(() => this.workflow.query(stepsQuery, page)));
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
    return this.withSignalFallback(this.control(abortUpdate, input, opts), () => this.workflow.signal(abortSignal, { ...input, ...byOf(opts) }));
  }

  /** Asks the run to pause before its next piece of work (`pauseRequested` while work is in flight). */
  async pause(opts: ControlOptions = {}): Promise<ControlResult> {
    return this.withSignalFallback(this.control(pauseUpdate, {}, opts), () => this.workflow.signal(pauseSignal, byOf(opts)));
  }

  /** Resumes a paused run (or cancels a pending pause). */
  async resume(opts: ControlOptions = {}): Promise<ControlResult> {
    return this.withSignalFallback(this.control(resumeUpdate, {}, opts), () => this.workflow.signal(resumeSignal, byOf(opts)));
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
   * run rejects with `AgentRunFailedError`, whose message and `reason` say why (`runFailure(err)` reads it too).
   */
  async result(): Promise<AgentRunResult> {
    try {
      return (await this.workflow.result()) as AgentRunResult;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new AgentRunNotFoundError(this.workflowId);
      const failure = runFailure(err);
      if (failure && !(err instanceof WorkflowUpdateFailedError)) throw new AgentRunFailedError(this.workflowId, failure, { cause: err });
      throw err;
    }
  }

  /**
   * Polls `state` (or reads the run's stream, `opts.stream`) and reports what changed (see `diffState`) until the run
   * is terminal, then resolves with its last view. An `onEvent` that returns a promise is awaited before the next poll.
   */
  watch(onEvent: (event: WatchEvent) => void | Promise<void>, opts: WatchOptions = {}): Promise<RunStateView> {
    return watchRun(this, onEvent, opts);
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
      if (!(err instanceof AgentUpdateRejectedError && isNoUpdateHandler(err.reason))) throw err;
      await this.guard(signal);
      return { state: null, pauseRequested: false, delivery: 'signal' };
    }
  }

  /** Sends a control update with its deadline and waits for the run's answer until then (and a grace to hear it). */
  private async control<A extends { deadline?: string }, R>(def: UpdateDefinition<R, [A]>, input: Omit<A, 'deadline'>, opts: ControlOptions): Promise<R> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_CONTROL_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new InvalidAgentInputError(`Invalid control options: timeoutMs: must be a positive integer, got ${timeoutMs}`);
    const sentAt = Date.now();
    const args = { ...input, ...byOf(opts), deadline: new Date(sentAt + timeoutMs).toISOString() } as A;
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
    const pollers = await taskQueuePollers(client, taskQueue, 'workflow').catch(() => undefined);
    if (!pollers) return { taskQueue, polling: undefined };
    return { taskQueue, polling: pollers.some((p) => (tsToDate(p.lastAccessTime)?.getTime() ?? 0) >= since) };
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
