/**
 * Provider errors are classified once, here, into typed `ApplicationFailure`s that the retry policy understands:
 * rate limits (honouring retry-after), server errors, timeouts and dropped connections are retried;
 * authentication, permission and bad requests are final; context overflow is final for the call and
 * becomes an event that leads the run to COMPACTING.
 */
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';

export const ModelErrorType = {
  RateLimit: 'ModelInvocationError.RateLimit',
  ServerError: 'ModelInvocationError.ServerError',
  Timeout: 'ModelInvocationError.Timeout',
  Connection: 'ModelInvocationError.Connection',
  Authentication: 'ModelInvocationError.Authentication',
  PermissionDenied: 'ModelInvocationError.PermissionDenied',
  NotFound: 'ModelInvocationError.NotFound',
  BadRequest: 'ModelInvocationError.BadRequest',
  QuotaExceeded: 'ModelInvocationError.QuotaExceeded',
  ContextOverflow: 'ModelInvocationError.ContextOverflow',
  Unknown: 'ModelInvocationError.Unknown',
} as const;
export type ModelErrorType = (typeof ModelErrorType)[keyof typeof ModelErrorType];

const CONTEXT_OVERFLOW = /context[_ ]length|maximum context|context window|too many tokens|prompt is too long|reduce the length/i;

/** Milliseconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date), capped at 10 minutes. */
export function retryAfterMs(headers: Headers | undefined, nowMs = Date.now()): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  if (headers?.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return Math.min(ms, 600_000);
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  const delay = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - nowMs;
  return Number.isFinite(delay) && delay >= 0 ? Math.min(delay, 600_000) : undefined;
}

function failure(type: ModelErrorType, message: string, retryable: boolean, nextRetryDelay?: number): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: !retryable, ...(nextRetryDelay !== undefined ? { nextRetryDelay } : {}) });
}

/** A stream that went silent: retried like any timeout. */
export const streamStalled = (ms: number) => failure(ModelErrorType.Timeout, `no data from the model for ${ms} ms`, true);

/** A stream that ended without a finish reason: cut short somewhere on the way, so retried. */
export const streamTruncated = (chars: number) =>
  failure(ModelErrorType.Connection, `the model's stream ended without finishing (after ${chars} characters)`, true);

/**
 * Classify, and keep the worker's own secrets (its API key) out of the message: a provider that echoes the key it
 * was given would otherwise put it into history.
 */
export function classifyModelError(err: unknown, secrets: ReadonlyArray<string | null | undefined> = []): ApplicationFailure {
  const failure = classify(err);
  const hidden = secrets.filter((x): x is string => !!x && x.length >= 8 && failure.message.includes(x));
  if (hidden.length === 0) return failure;
  const message = hidden.reduce((m, secret) => m.split(secret).join('[redacted]'), failure.message);
  return ApplicationFailure.create({
    type: failure.type ?? undefined,
    message,
    nonRetryable: failure.nonRetryable ?? false,
    ...(failure.nextRetryDelay !== undefined && failure.nextRetryDelay !== null ? { nextRetryDelay: failure.nextRetryDelay } : {}),
  });
}

function classify(err: unknown): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof OpenAI.APIConnectionTimeoutError) return failure(ModelErrorType.Timeout, `model request timed out: ${err.message}`, true);
  if (err instanceof OpenAI.APIConnectionError) return failure(ModelErrorType.Connection, `connection to the model failed: ${err.message}`, true);
  if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
    const { status, code } = err;
    const detail = `${status}${code ? ` ${code}` : ''}: ${err.message}`;
    if (code === 'context_length_exceeded' || ((status === 400 || status === 413) && CONTEXT_OVERFLOW.test(err.message))) {
      return failure(ModelErrorType.ContextOverflow, `context too long for the model (${detail})`, false);
    }
    if (status === 429 && code === 'insufficient_quota') return failure(ModelErrorType.QuotaExceeded, `model quota exhausted (${detail})`, false);
    if (status === 429) return failure(ModelErrorType.RateLimit, `rate limited by the model provider (${detail})`, true, retryAfterMs(err.headers));
    if (status === 408 || status === 409) return failure(ModelErrorType.Timeout, `model request timed out or conflicted (${detail})`, true);
    if (status >= 500) return failure(ModelErrorType.ServerError, `model provider error (${detail})`, true, retryAfterMs(err.headers));
    if (status === 401) return failure(ModelErrorType.Authentication, `authentication with the model provider failed; check LLM_API_KEY (${detail})`, false);
    if (status === 403) return failure(ModelErrorType.PermissionDenied, `the model provider refused access (${detail})`, false);
    if (status === 404) return failure(ModelErrorType.NotFound, `model or endpoint not found; check LLM_MODEL and LLM_BASE_URL (${detail})`, false);
    return failure(ModelErrorType.BadRequest, `the model provider rejected the request (${detail})`, false);
  }
  // A stream cut short, an unparsable chunk: transient until proven otherwise, and bounded by the retry policy.
  // Errors from another realm (undici under some runners) fail instanceof Error; read their message all the same.
  const message = typeof (err as { message?: unknown })?.message === 'string' ? (err as Error).message : String(err);
  return failure(ModelErrorType.Unknown, `model call failed: ${message}`, true);
}
