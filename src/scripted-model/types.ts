/**
 * Types of the scripted model: a local OpenAI-compatible server that answers from canned steps.
 * It is a test and demo double, not a real LLM.
 */

/** One tool call the scripted model emits. */
export interface ScriptedToolCall {
  /** Tool call id sent to the client. @default `call_<callIndex>_<position>` */
  id?: string;
  name: string;
  /** Objects are sent JSON-stringified; a string is sent verbatim, so it may be malformed JSON on purpose. */
  arguments: string | Record<string, unknown>;
}

/** A successful completion: text, tool calls, or both. */
export interface ResponseStep {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** Characters per streamed text delta. @default 12 */
  chunkSize?: number;
  /** Delay between streamed chunks. @default 0 */
  chunkDelayMs?: number;
  /** Delay before the first chunk (streaming) or before the whole body (non-streaming). @default 0 */
  firstChunkDelayMs?: number;
  /** @default prompt ≈ request characters / 4, completion ≈ (text + tool arguments) characters / 4 */
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** @default 'tool_calls' when there are tool calls, else 'stop' */
  finishReason?: string;
  /**
   * A request that asks to continue a start of `text` (its messages end with an assistant message holding that
   * start, then a user turn) gets only the rest, as a provider continuing its own answer would. @default false
   */
  continuable?: boolean;
  /**
   * Fault: after this many content chunks (text or tool-call deltas, after the opening role chunk) the server
   * destroys the socket, so the client sees the connection drop mid-stream with no finish chunk and no `[DONE]`.
   * A larger number than there are content chunks resets just before the finish chunk. A non-streaming request
   * is reset before any body is sent.
   */
  resetAfterChunks?: number;
  /**
   * Fault: after this many content chunks the server stops writing but keeps the connection open, until the
   * client goes away or the server closes. Counted like `resetAfterChunks`; a non-streaming request never answers.
   */
  stallAfterChunks?: number;
  /**
   * Fault: after this many content chunks the server ends the response cleanly, with no finish chunk and no
   * `[DONE]`: a stream cut short by a proxy, which the client sees as an ordinary end. Counted like `resetAfterChunks`.
   */
  endAfterChunks?: number;
}

/** An HTTP error answered with the OpenAI error body `{ error: { message, type, param, code } }`. */
export interface OpenAIErrorSpec {
  status: number;
  message: string;
  /** @default 'invalid_request_error' for 4xx, 'server_error' for 5xx */
  type?: string;
  code?: string;
  /** Extra response headers, e.g. `retry-after`. */
  headers?: Record<string, string>;
}

/**
 * An HTTP error answered with a body recorded from a real provider, sent as it is: any JSON value (an object of any
 * shape, a root array) as `application/json`, or a string sent verbatim as text (an HTML page from a proxy).
 */
export interface RecordedErrorSpec {
  status: number;
  body: unknown;
  /** Response headers; a `content-type` here replaces the default. */
  headers?: Record<string, string>;
}

/** An HTTP error: the OpenAI body built from fields, or a recorded body. */
export interface ErrorStep {
  error: OpenAIErrorSpec | RecordedErrorSpec;
}

export type ScriptStep = ResponseStep | ErrorStep;

export interface ScriptContext {
  /** Parsed JSON body of the request. */
  request: any;
  /** 0-based count of earlier calls to this script. */
  callIndex: number;
  /** The bearer token the client sent: which of a provider's keys made the call. */
  apiKey?: string;
  /**
   * When the request reached the server, before its body was read: ms since the epoch with sub-millisecond precision
   * (`performance.timeOrigin + performance.now()`), so the time the server took to read and parse a body is known.
   */
  receivedAt: number;
}

/** Steps served in order (running out is an error), or a policy that picks the step from the request. */
export type Script = ScriptStep[] | ((ctx: ScriptContext) => ScriptStep | Promise<ScriptStep>);

export interface RecordedRequest {
  /** The request's `model` field, which names the script. */
  script: string;
  /** The bearer token the client sent. */
  apiKey?: string;
  /** Parsed JSON body; `null` when the body was not JSON, or once answered on a model started with `recordBodies: false`. */
  body: any;
  receivedAt: number;
  stream: boolean;
  /** The whole response (success or error) was sent. */
  completed: boolean;
  /** The client went away before the response was complete (not set when the server reset the connection). */
  closedByClient: boolean;
  /** When the client closed it (epoch ms), with `closedByClient`. */
  closedAt?: number;
  /** The step's fault, once it happened: the connection was reset, or the response stalled. */
  fault?: 'reset' | 'stall' | 'truncate';
  /** Answered 429 by `tokensPerMinute`. */
  rateLimited?: boolean;
}

export interface ScriptedModel {
  /** Base URL for the openai client, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string;
  port: number;
  /** Replaces a script of the same name and resets its call count. */
  register(name: string, script: Script): void;
  /** Recorded requests in arrival order, optionally only those of one script. Returns copies. */
  requests(script?: string): RecordedRequest[];
  /** Stops the server and closes open streams. */
  close(): Promise<void>;
}

export interface ScriptedModelOptions {
  /** @default 0 (any free port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** Registered on top of the built-in `scripted-demo` script. */
  scripts?: Record<string, Script>;
  /** The demo script's pace: each text chunk waits this long, each tool call five times as long. @default its own (25 ms a chunk) */
  demoPaceMs?: number;
  /**
   * A provider's quota: tokens (prompt and completion of the answer, counted when the request arrives) per minute,
   * across all scripts, as a bucket of a minute's tokens that refills continuously. A request that does not fit is
   * answered 429 with `retry-after`, as OpenAI does. @default none
   */
  tokensPerMinute?: number;
  /**
   * Keep each request's parsed body in its record (`requests()`) after it is answered. A server that serves long runs
   * for long (the worker's embedded model, a bench) sets false: every body carries the whole conversation, and keeping
   * them all grows the heap, and the time each garbage collection takes, with every call. @default true
   */
  recordBodies?: boolean;
  /** At most this many records, the oldest dropped first. @default no limit */
  maxRecordedRequests?: number;
}

export const isErrorStep = (step: ScriptStep): step is ErrorStep => 'error' in step && step.error !== undefined;

export const isRecordedError = (error: ErrorStep['error']): error is RecordedErrorSpec => 'body' in error;

/** Text of an OpenAI message content: a string, or an array of parts of which the text parts count. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  return '';
}
