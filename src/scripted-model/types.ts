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
}

/** An HTTP error answered with the OpenAI error body `{ error: { message, type, code } }`. */
export interface ErrorStep {
  error: {
    status: number;
    message: string;
    /** @default 'invalid_request_error' for 4xx, 'server_error' for 5xx */
    type?: string;
    code?: string;
    /** Extra response headers, e.g. `retry-after`. */
    headers?: Record<string, string>;
  };
}

export type ScriptStep = ResponseStep | ErrorStep;

export interface ScriptContext {
  /** Parsed JSON body of the request. */
  request: any;
  /** 0-based count of earlier calls to this script. */
  callIndex: number;
}

/** Steps served in order (running out is an error), or a policy that picks the step from the request. */
export type Script = ScriptStep[] | ((ctx: ScriptContext) => ScriptStep | Promise<ScriptStep>);

export interface RecordedRequest {
  /** The request's `model` field, which names the script. */
  script: string;
  /** Parsed JSON body; `null` when the body was not JSON. */
  body: any;
  receivedAt: number;
  stream: boolean;
  /** The whole response (success or error) was sent. */
  completed: boolean;
  /** The client went away before the response was complete. */
  closedByClient: boolean;
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
}

export const isErrorStep = (step: ScriptStep): step is ErrorStep => 'error' in step && step.error !== undefined;

/** Text of an OpenAI message content: a string, or an array of parts of which the text parts count. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  return '';
}
