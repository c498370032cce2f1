/** The gateway's one error shape, `{ error: { code, message } }`, and the mapping of client errors to HTTP statuses. */
import { isGrpcServiceError, ServiceError } from '@temporalio/client';
import {
  AgentControlTimeoutError,
  AgentQueryTimeoutError,
  AgentRunEndedError,
  AgentRunNotFoundError,
  AgentScheduleExistsError,
  AgentScheduleNotFoundError,
  AgentStepNotFoundError,
  AgentUpdateRejectedError,
  InvalidAgentInputError,
  isAlreadyStarted,
} from '../client';

/** The body of every error response. `code` is stable and machine-readable; `message` is for people. */
export interface ErrorBody {
  error: { code: string; message: string } & Record<string, unknown>;
}

/** An error with its HTTP status; `details` are merged into the `error` object of the response. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }

  body(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...this.details } };
  }
}

const GRPC_UNAVAILABLE = 14;

/** Fastify's own 4xx errors (bad JSON, wrong content type, body too large) keep their status with a plain code. */
const FASTIFY_CODES: Record<number, string> = { 400: 'bad_request', 413: 'payload_too_large', 415: 'unsupported_media_type' };

/** The HTTP error for anything a route throws; `undefined` means an unexpected error (500, logged). */
export function toHttpError(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (err instanceof InvalidAgentInputError) return new HttpError(400, 'invalid_input', err.message);
  if (err instanceof AgentRunNotFoundError) return new HttpError(404, 'run_not_found', err.message);
  if (err instanceof AgentScheduleNotFoundError) return new HttpError(404, 'schedule_not_found', err.message);
  if (err instanceof AgentScheduleExistsError) return new HttpError(409, 'schedule_exists', err.message);
  if (err instanceof AgentStepNotFoundError) return new HttpError(404, 'step_not_found', err.message);
  if (err instanceof AgentRunEndedError) {
    // Two statuses, each named for what it is: an aborted run's state is ABORTED while its workflow execution COMPLETED.
    return new HttpError(409, 'run_ended', err.message, { state: err.state ?? null, executionStatus: err.status });
  }
  if (err instanceof AgentUpdateRejectedError) return new HttpError(409, 'update_rejected', err.reason, { update: err.update });
  if (err instanceof AgentQueryTimeoutError) return new HttpError(504, 'query_timeout', err.message);
  if (err instanceof AgentControlTimeoutError) {
    return new HttpError(504, 'control_timeout', err.message, { control: err.control, taskQueue: err.taskQueue ?? null, workerPolling: err.workerPolling ?? null });
  }
  if (isAlreadyStarted(err)) return new HttpError(409, 'already_started', `an agent run with id ${err.workflowId} is already running`);
  if (isUnavailable(err)) return new HttpError(503, 'temporal_unavailable', 'the Temporal server is unavailable');
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new HttpError(status, FASTIFY_CODES[status] ?? 'bad_request', (err as Error).message);
  }
  return undefined;
}

function isUnavailable(err: unknown): boolean {
  const grpc = err instanceof ServiceError ? err.cause : err;
  return isGrpcServiceError(grpc) && grpc.code === GRPC_UNAVAILABLE;
}
