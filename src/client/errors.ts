/**
 * What the client throws, and how it recognises conditions that the server and the SDK report only in words.
 * Those matches (`isNoWorkerError`, `isNoUpdateHandler`, `stepNotFound`) read message text: they are
 * kept here, in one place, because an SDK or server upgrade that rewords a message changes what they see.
 */
import {
  ApplicationFailure,
  CancelledFailure,
  isGrpcServiceError,
  ServiceError,
  TerminatedFailure,
  TimeoutFailure,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import type { z } from 'zod';
import { parseWith } from '../common/input';
import type { AgentRunResult } from '../common/messages';

const GRPC_FAILED_PRECONDITION = 9;

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

/** No agent schedule with this id (none at all, one whose action starts no agent run, or, through the gateway, another tenant's). */
export class AgentScheduleNotFoundError extends Error {
  override readonly name = 'AgentScheduleNotFoundError';
  constructor(readonly scheduleId: string) {
    super(`no agent schedule with id ${scheduleId}`);
  }
}

/** A schedule with this id exists already (ids are one space for every tenant). */
export class AgentScheduleExistsError extends Error {
  override readonly name = 'AgentScheduleExistsError';
  constructor(readonly scheduleId: string) {
    super(`a schedule with id ${scheduleId} already exists`);
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


/** Why a run failed, unwrapped from the `WorkflowFailedError` that `result()` rejects with. */
export interface RunFailure {
  /** The workflow's own message, e.g. `loop limit reached (limits.maxLoops = 5)`. */
  reason: string;
  /** `ApplicationFailure` type (`AgentRunFailed`, `InvalidInput`), or `Terminated`, `Cancelled`, `TimedOut`. */
  type: string | undefined;
  /** Counters of the run at the moment it failed, when the workflow attached them. */
  result?: AgentRunResult;
}

/**
 * What `AgentRunHandle.result()` rejects with when the run failed (or was terminated, cancelled, timed out): the run's
 * own reason in the message and in `reason`; `cause` is the SDK's `WorkflowFailedError`.
 */
export class AgentRunFailedError extends Error {
  override readonly name = 'AgentRunFailedError';
  /** The workflow's own message, e.g. `loop limit reached (limits.maxLoops = 5)`. */
  readonly reason: string;
  /** `ApplicationFailure` type (`AgentRunFailed`, `InvalidInput`), or `Terminated`, `Cancelled`, `TimedOut`. */
  readonly type: string | undefined;
  /** Counters of the run at the moment it failed, when the workflow attached them. */
  readonly result?: AgentRunResult;
  constructor(
    readonly workflowId: string,
    failure: RunFailure,
    options: { cause: unknown },
  ) {
    super(`agent run ${workflowId} failed: ${failure.reason}`, options);
    this.reason = failure.reason;
    this.type = failure.type;
    if (failure.result) this.result = failure.result;
  }
}

/** Unwraps a workflow or update failure into the reason the workflow gave; `undefined` for any other error. */
export function runFailure(err: unknown): RunFailure | undefined {
  if (err instanceof AgentRunFailedError) return { reason: err.reason, type: err.type, ...(err.result ? { result: err.result } : {}) };
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


/** Whether an error means a run with the requested id is already open (from `start` with an explicit id). */
export const isAlreadyStarted = (err: unknown): err is WorkflowExecutionAlreadyStartedError =>
  err instanceof WorkflowExecutionAlreadyStartedError;

/** A step number as time travel takes it: steps count from 0, the run before its start. */
export function checkStep(name: string, step: number): void {
  if (!Number.isInteger(step) || step < 0) throw new InvalidAgentInputError(`${name} must be a step number (0 or more), got ${step}`);
}

/** `value` parsed by `schema`, or `InvalidAgentInputError` naming the field; nothing is sent. */
export function validate<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const parsed = parseWith(schema, value, what);
  if (!parsed.ok) throw new InvalidAgentInputError(parsed.error);
  return parsed.value;
}

/** The SDK's refusal of an update that the workflow registered no handler for. */
const NO_UPDATE_HANDLER = /No registered handler for update/;

/** The workflow's message for a step it does not hold (`resume.ts`, `snapshotAt`). */
const STEP_NOT_IN_RUN = /step -?\d+ is not in this run[^\n]*/;

/** Whether an update was refused because the run has no handler for it (`reason` is the workflow's message). */
export const isNoUpdateHandler = (reason: string): boolean => NO_UPDATE_HANDLER.test(reason);

/** The first step a run holds, from its refusal of a step it does not (`it holds steps 12 to 40`); undefined for any other error. */
export function firstStepHeld(err: unknown): number | undefined {
  if (!(err instanceof Error)) return undefined;
  const match = STEP_NOT_IN_RUN.exec(`${err.message}\n${(err.cause as Error | undefined)?.message ?? ''}`);
  const held = match && /it holds steps (\d+) to \d+/.exec(match[0]);
  return held ? Number(held[1]) : undefined;
}

/** The workflow's refusal of a step it does not hold, as `AgentStepNotFoundError`; `undefined` for any other error. */
export function stepNotFound(workflowId: string, step: number, err: unknown): AgentStepNotFoundError | undefined {
  if (!(err instanceof Error)) return undefined;
  const match = STEP_NOT_IN_RUN.exec(`${err.message}\n${(err.cause as Error | undefined)?.message ?? ''}`);
  return match ? new AgentStepNotFoundError(workflowId, step, match[0], { cause: err }) : undefined;
}

/**
 * The server dropped an update with the workflow task that carried it, before accepting it (FAILED_PRECONDITION,
 * "unexpected workflow task failure"). A run that ends on the update (abort) while signals arrive meets this: the
 * server refuses to close it over unhandled events (UnhandledCommand) and fails that workflow task.
 */
export function isDroppedWithWorkflowTask(err: unknown): boolean {
  const grpc = err instanceof ServiceError ? err.cause : err;
  return isGrpcServiceError(grpc) && grpc.code === GRPC_FAILED_PRECONDITION;
}

/** The server's answer when no worker polls the run's task queue: a query cannot be answered until one does. */
export function isNoWorkerError(err: unknown): boolean {
  const text = err instanceof Error ? `${err.message} ${String((err as { cause?: unknown }).cause ?? '')}` : '';
  return /no poller seen|FAILED_PRECONDITION|workflow query timed out|Query timed out/i.test(text);
}

