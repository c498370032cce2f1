/**
 * Provider errors are classified once, here, into typed `ApplicationFailure`s that the retry policy understands:
 * rate limits (honouring retry-after), server errors, timeouts and dropped connections are retried;
 * authentication, permission, quota and bad requests are final; context overflow is final for the call and
 * becomes an event that leads the run to COMPACTING.
 *
 * A failed response is read as status, identifiers (`type`, `code`, Gemini's `status`, Azure's `innererror.code`)
 * and message, then matched against RULES: first match wins. Every row names where its shape was seen;
 * test/provider-errors.test.ts replays the recorded bodies through the real `openai` client.
 */
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import { ModelErrorType } from '../common/failures';

export { ModelErrorType };

/** How each class reads and whether Temporal retries it; retried classes wait what the provider asks, when it asks. */
const CLASSES: Record<ModelErrorType, { summary: string; retryable: boolean; waitsForProvider?: true }> = {
  [ModelErrorType.RateLimit]: { summary: 'rate limited by the model provider', retryable: true, waitsForProvider: true },
  [ModelErrorType.ServerError]: { summary: 'model provider error', retryable: true, waitsForProvider: true },
  [ModelErrorType.Timeout]: { summary: 'model request timed out', retryable: true },
  [ModelErrorType.Connection]: { summary: 'connection to the model failed', retryable: true },
  [ModelErrorType.Authentication]: { summary: 'authentication with the model provider failed; check LLM_API_KEY', retryable: false },
  [ModelErrorType.PermissionDenied]: { summary: 'the model provider refused access', retryable: false },
  [ModelErrorType.NotFound]: { summary: 'model or endpoint not found; check LLM_MODEL and LLM_BASE_URL', retryable: false },
  [ModelErrorType.BadRequest]: { summary: 'the model provider rejected the request', retryable: false },
  [ModelErrorType.QuotaExceeded]: { summary: 'model quota exhausted', retryable: false },
  [ModelErrorType.ContextOverflow]: { summary: 'context too long for the model', retryable: false },
  [ModelErrorType.Unknown]: { summary: 'model call failed', retryable: true },
  [ModelErrorType.RetriesExhausted]: { summary: 'the model provider kept failing', retryable: false },
};

/** Ways providers say a prompt does not fit the model's context window (matched on 400s). */
const CONTEXT_TOO_LONG = new RegExp(
  [
    'maximum context length', // OpenAI, Azure, vLLM, DeepSeek, OpenRouter ("This endpoint's maximum context length …")
    "context length is only", // vLLM renderers/params.py: "However, the model's context length is only N tokens"
    'exceeds? the available context size|larger than the max context size', // llama.cpp tools/server/server-context.cpp
    'longer than the context length|input length exceeds the context length', // Ollama llm/llama_server.go
    'prompt is too long', // Anthropic: "prompt is too long: 208656 tokens > 200000 maximum"
    'range of input length should be', // DashScope: "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, N]"
    'input token count .* exceeds the maximum number of tokens', // Gemini INVALID_ARGUMENT
    'context window|too many tokens', // broad phrasings the earlier classifier matched
  ].join('|'),
  'i',
);

interface Rule {
  readonly class: ModelErrorType;
  /** HTTP status; 0 when the error came as an event inside a stream. Any status when left out. */
  readonly status?: number | readonly number[] | ((status: number) => boolean);
  /** Matched against each identifier the body carries. */
  readonly id?: RegExp;
  /** Matched against the provider's message. */
  readonly text?: RegExp;
  /** Replaces the class's summary in the message. */
  readonly summary?: string;
}

const is4xx = (s: number) => s >= 400 && s < 500;
const is5xx = (s: number) => s >= 500;

/** First match wins. Each row's source is beside it; the recorded bodies are in test/provider-errors.test.ts. */
const RULES: readonly Rule[] = [
  // Too long: compacting is the only way through. OpenAI/Azure/Groq `context_length_exceeded`; llama.cpp
  // `exceed_context_size_error` (tools/server/server-common.cpp); Anthropic 413 `request_too_large` (anthropics/anthropic-sdk-python#938).
  { class: ModelErrorType.ContextOverflow, id: /^(context_length_exceeded|exceed_context_size_error|request_too_large)$/i },
  // A request over the tokens-per-minute limit never fits, however long one waits: OpenAI 429 (vanna-ai/vanna-flask#11), Groq 413 (assafelovic/gpt-researcher#985).
  { class: ModelErrorType.ContextOverflow, status: [413, 429], text: /request too large/i },
  // Any other 413, e.g. a proxy's HTML page (MiniMax-AI/MiniMax-M2#16).
  { class: ModelErrorType.ContextOverflow, status: 413 },
  { class: ModelErrorType.ContextOverflow, status: 400, text: CONTEXT_TOO_LONG },
  // Billing: OpenAI `insufficient_quota` (OpenHands/OpenHands#998), DashScope `Arrearage` (hsliuping/TradingAgents-CN#170),
  // Anthropic's spend limit `enforced_spend_limit_reached` (learn.microsoft.com dev-proxy anthropic-529-overloaded-error).
  { class: ModelErrorType.QuotaExceeded, id: /^(insufficient_quota|arrearage|enforced_spend_limit_reached)$/i },
  // 402: OpenRouter credits (babikov/doka-site#7), DeepSeek "Insufficient Balance" (continuedev/continue#9942).
  { class: ModelErrorType.QuotaExceeded, status: 402 },
  // DashScope Throttling.AllocationQuota "Free allocated quota exceeded." (alibabacloud.com/help/en/model-studio/error-code).
  { class: ModelErrorType.QuotaExceeded, status: 429, text: /free allocated quota exceeded/i },
  // Moderation refuses the same prompt again: Azure `content_filter` (openai/openai-agents-python#806), DashScope `data_inspection_failed` (camel-ai/owl#432).
  {
    class: ModelErrorType.BadRequest,
    id: /^(content_filter|data_inspection_failed|datainspectionfailed)$/i,
    summary: "the model provider's content filter refused the request",
  },
  { class: ModelErrorType.RateLimit, status: 429 },
  { class: ModelErrorType.Authentication, status: 401 },
  { class: ModelErrorType.PermissionDenied, status: 403 },
  { class: ModelErrorType.NotFound, status: 404 },
  { class: ModelErrorType.Timeout, status: [408, 409], summary: 'model request timed out or conflicted' },
  // 500-504, and Anthropic's 529 `overloaded_error` (anthropics/claude-code#5184).
  { class: ModelErrorType.ServerError, status: is5xx },
  { class: ModelErrorType.BadRequest, status: is4xx },
  // No status: an error event inside a stream (openai-node core/streaming.js throws `new APIError(undefined, data.error)`).
  { class: ModelErrorType.ServerError, status: 0, id: /server_error|overloaded|unavailable/i },
];

/** What a failed response said. */
interface ProviderError {
  status: number;
  /** `code`, `type`, Gemini's `status`, Azure's `innererror.code`, Anthropic's `details.error_code`; numbers left out. */
  ids: string[];
  /** The provider's message, one line, without a repeated status. */
  text: string;
  headers?: Headers;
}

const matches = (rule: Rule, e: ProviderError): boolean => {
  const { status } = rule;
  if (status !== undefined) {
    const ok = typeof status === 'function' ? status(e.status) : typeof status === 'number' ? status === e.status : status.includes(e.status);
    if (!ok) return false;
  }
  if (rule.id && !e.ids.some((id) => rule.id!.test(id))) return false;
  return !rule.text || rule.text.test(e.text);
};

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

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /(\d+(?:\.\d+)?)\s*(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|h)(?![a-z])/gi;

/**
 * The wait a provider states only in words, capped like the headers: OpenAI "Please try again in 20s" / "in 125ms"
 * (Huanshere/VideoLingo#34), Azure "Try again in 2 seconds" (microsoft/copilot-camp#551) and "Please retry after
 * 86400 seconds" (vanderschaarlab/climb#1), Groq "Please try again in 9m38.016s" (continuedev/continue#10920).
 */
function retryAfterText(text: string): number | undefined {
  const phrase = /(?:try again|retry)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?\s*[a-z]+\s*)+)/i.exec(text)?.[1];
  if (!phrase) return undefined;
  let total = 0;
  for (const [, amount, unit] of phrase.matchAll(DURATION)) {
    const key = unit.toLowerCase().startsWith('ms') || unit.toLowerCase().startsWith('milli') ? 'ms' : unit[0].toLowerCase();
    total += Number(amount) * UNIT_MS[key];
  }
  return total > 0 ? Math.min(Math.round(total), 600_000) : undefined;
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

/** undici's error for a redirect that `redirect: 'error'` refuses (wire.ts `withoutRedirects`), under fetch's own. */
const REDIRECTED = /(^|\n)unexpected redirect$/m;

/** The messages of an error's chain of causes, one a line. */
function causes(err: unknown): string {
  const lines: string[] = [];
  for (let e = (err as { cause?: unknown })?.cause, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    lines.push(String((e as { message?: unknown }).message ?? e));
  }
  return lines.join('\n');
}

/**
 * undici's fetch fails a body cut short with `TypeError('terminated')` (cause: SocketError "other side closed",
 * code UND_ERR_SOCKET); a reset before the response gives ECONNRESET. test/faults.test.ts resets the socket mid-stream.
 */
const DROPPED = /^(terminated|other side closed|socket hang up)$|ECONNRESET|EPIPE|UND_ERR_SOCKET/;

function classify(err: unknown): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof OpenAI.APIConnectionTimeoutError) return failure(ModelErrorType.Timeout, `model request timed out: ${err.message}`, true);
  if (err instanceof OpenAI.APIConnectionError && REDIRECTED.test(causes(err))) {
    return failure(ModelErrorType.NotFound, 'the provider answered the model request with a redirect, which the worker does not follow: set its base URL to the address it redirects to', false);
  }
  if (err instanceof OpenAI.APIConnectionError) return failure(ModelErrorType.Connection, `connection to the model failed: ${err.message}`, true);
  if (err instanceof OpenAI.APIError && !(err instanceof OpenAI.APIUserAbortError)) return classifyResponse(read(err));
  // Errors from another realm (undici under some runners) fail instanceof Error; read their message all the same.
  const message = typeof (err as { message?: unknown })?.message === 'string' ? (err as Error).message : String(err);
  const cause = (err as { cause?: { code?: unknown; message?: unknown } })?.cause;
  if (DROPPED.test(message) || DROPPED.test(String(cause?.code ?? '')) || DROPPED.test(String(cause?.message ?? ''))) {
    return failure(ModelErrorType.Connection, `connection to the model dropped mid-response: ${message}`, true);
  }
  // An unparsable chunk and the like: transient until proven otherwise, and bounded by the retry policy.
  return failure(ModelErrorType.Unknown, `model call failed: ${message}`, true);
}

function classifyResponse(e: ProviderError): ApplicationFailure {
  const rule = RULES.find((r) => matches(r, e));
  const type = rule?.class ?? ModelErrorType.Unknown;
  const policy = CLASSES[type];
  const id = e.ids.find((x) => rule?.id?.test(x)) ?? e.ids[0];
  const where = [e.status || 'stream', id].filter(Boolean).join(' ');
  const message = `${rule?.summary ?? policy.summary} (${where}): ${e.text || 'no error body the client could read'}`;
  const delay = policy.waitsForProvider ? (retryAfterMs(e.headers) ?? retryAfterText(e.text)) : undefined;
  return failure(type, message, policy.retryable, delay);
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const NUMERIC = /^\d+$/;

/**
 * What openai-node's APIError carries: `error` is the body's `error` member (an object, a string, or undefined when
 * the body is not JSON or has none), and `message` is `"<status> <text>"` or `"<status> status code (no body)"`.
 */
function read(err: InstanceType<typeof OpenAI.APIError>): ProviderError {
  const body: unknown = err.error;
  const fields = isRecord(body) ? body : {};
  const status = err.status ?? (typeof fields.code === 'number' ? fields.code : 0);
  const nested = (key: string, member: string): unknown => (isRecord(fields[key]) ? (fields[key] as Record<string, unknown>)[member] : undefined);
  const ids = [err.code as unknown, err.type as unknown, fields.status, nested('innererror', 'code'), nested('details', 'error_code')]
    .filter((x): x is string => typeof x === 'string' && x !== '' && !NUMERIC.test(x))
    .filter((x, i, all) => all.indexOf(x) === i);
  let text: string;
  if (typeof body === 'string') text = body;
  else if (isRecord(body)) text = typeof body.message === 'string' ? body.message : JSON.stringify(body.message ?? body);
  else text = err.message.replace(/^\d{3} /, '').replace(/^status code \(no body\)$/, '');
  return { status, ids, text: oneLine(text, status), headers: err.headers };
}

/** The text of an HTML page, one line, without the status a provider repeats in front (`<400> …`, `413 Request …`). */
function oneLine(raw: string, status: number): string {
  let text = raw;
  if (/<(html|head|body|title|!doctype)\b/i.test(text)) {
    const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(text)?.[1];
    text = title ?? text.replace(/<[^>]*>/g, ' ');
  }
  text = text.replace(/\s+/g, ' ').trim();
  if (status) text = text.replace(new RegExp(`^<?${status}>?[\\s:.-]*`), '');
  return text.length > 1_000 ? `${text.slice(0, 1_000)}…` : text;
}

/**
 * A fetch for the `openai` client that puts error bodies it cannot read into the `{ error: { … } }` shape it reads:
 * without it the client keeps only the status ("400 status code (no body)"), and a Gemini context overflow
 * looks like any bad request. Shapes rewritten:
 * - a root array `[{ error: … }]`: Gemini's OpenAI-compatible endpoint (discuss.ai.google.dev/t/82899);
 * - a top-level `{ message, type, code }`: vLLM before 0.9 (vllm-project/vllm#4667), TensorRT-LLM's trtllm-serve,
 *   DashScope's native API (dinoanderson/qwen_cli_coder#1).
 * Everything else, and every successful response, passes through untouched.
 */
export function readableErrorBodies(fetchImpl: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const res = await fetchImpl(input, init);
    if (res.ok) return res;
    const text = await res.text();
    const headers = new Headers(res.headers);
    // The body is decoded and may change length.
    headers.delete('content-length');
    headers.delete('content-encoding');
    return new Response(readableBody(text) ?? text, { status: res.status, statusText: res.statusText, headers });
  };
}

function readableBody(text: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (Array.isArray(body) && isRecord(body[0]) && body[0].error !== undefined) return JSON.stringify(body[0]);
  if (isRecord(body) && body.error === undefined && typeof body.message === 'string') {
    const { message, type, code, param } = body;
    return JSON.stringify({ error: { message, type: type ?? null, code: code ?? null, param: param ?? null } });
  }
  return undefined;
}
