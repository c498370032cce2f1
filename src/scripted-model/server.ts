import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { demoScript, pacedDemoScript } from './demo-script';
import { isErrorStep, isRecordedError, textOf } from './types';
import type {
  ErrorStep,
  OpenAIErrorSpec,
  RecordedErrorSpec,
  RecordedRequest,
  ResponseStep,
  Script,
  ScriptContext,
  ScriptStep,
  ScriptedModel,
  ScriptedModelOptions,
} from './types';

/** Name under which the demo policy is always registered. */
export const DEMO_SCRIPT_NAME = 'scripted-demo';

const DEFAULT_CHUNK_SIZE = 12;

interface RegisteredScript {
  script: Script;
  calls: number;
}

interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** An OpenAI-shaped error answered before any step runs. */
class ScriptedHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/**
 * Starts a local OpenAI Chat Completions server that answers from scripts, labelled as a scripted model
 * (every response carries `x-scripted-model: true`). The request's `model` field names the script.
 */
export async function startScriptedModel(opts: ScriptedModelOptions = {}): Promise<ScriptedModel> {
  const host = opts.host ?? '127.0.0.1';
  if (opts.maxRecordedRequests !== undefined && !(Number.isInteger(opts.maxRecordedRequests) && opts.maxRecordedRequests >= 0)) {
    throw new Error(`maxRecordedRequests must be a whole number >= 0, got ${String(opts.maxRecordedRequests)}`);
  }
  const scripts = new Map<string, RegisteredScript>();
  const recorded: RecordedRequest[] = [];
  let sequence = 0;
  let closing = false;

  const register = (name: string, script: Script): void => {
    scripts.set(name, { script, calls: 0 });
  };
  const quota = opts.tokensPerMinute ? tokenBucket(opts.tokensPerMinute) : undefined;
  register(DEMO_SCRIPT_NAME, opts.demoPaceMs ? pacedDemoScript(opts.demoPaceMs) : demoScript);
  for (const [name, script] of Object.entries(opts.scripts ?? {})) register(name, script);

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const id = ++sequence;
    res.setHeader('x-scripted-model', 'true');
    res.setHeader('x-request-id', `req_scripted_${id}`);
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: [...scripts.keys()].map((name) => ({ id: name, object: 'model', created: 0, owned_by: 'scripted-model' })),
      });
      return;
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      await chatCompletion(req, res, id);
      return;
    }
    sendError(res, { status: 404, message: `scripted model has no route ${req.method} ${path}`, code: 'not_found' });
  };

  const chatCompletion = async (req: http.IncomingMessage, res: http.ServerResponse, id: number): Promise<void> => {
    const receivedAt = performance.timeOrigin + performance.now();
    const record: RecordedRequest = {
      script: '',
      body: null,
      receivedAt: Date.now(),
      stream: false,
      completed: false,
      closedByClient: false,
    };
    recorded.push(record);
    if (opts.maxRecordedRequests !== undefined && recorded.length > opts.maxRecordedRequests) recorded.splice(0, recorded.length - opts.maxRecordedRequests);
    res.on('finish', () => {
      // A truncated stream ends like a whole one on the wire, but its response was not all sent.
      record.completed = record.fault !== 'truncate';
    });
    res.on('close', () => {
      if (!res.writableFinished && !closing && record.fault !== 'reset') Object.assign(record, { closedByClient: true, closedAt: Date.now() });
      if (opts.recordBodies === false) record.body = null;
    });
    const onFault = (kind: Fault) => {
      record.fault = kind;
    };

    try {
      const raw = await readBody(req);
      try {
        record.body = JSON.parse(raw);
      } catch {
        throw new ScriptedHttpError(400, 'request body is not valid JSON', 'invalid_json');
      }
      const body = record.body;
      record.stream = body?.stream === true;
      if (typeof body?.model !== 'string' || body.model === '') {
        throw new ScriptedHttpError(400, 'you must provide a model parameter', 'missing_model');
      }
      record.script = body.model;
      const apiKey = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      if (apiKey) record.apiKey = apiKey;
      const entry = scripts.get(body.model);
      if (!entry) {
        throw new ScriptedHttpError(
          404,
          `The model \`${body.model}\` does not exist: no script of that name is registered on this scripted model`,
          'model_not_found',
        );
      }
      if (!Array.isArray(body.messages)) {
        throw new ScriptedHttpError(400, '`messages` must be an array', 'invalid_messages');
      }
      const { step: scripted, callIndex } = await nextStep(body.model, entry, body, apiKey, receivedAt);
      const step = isErrorStep(scripted) ? scripted : continued(body, scripted);
      const overQuota = !isErrorStep(step) && quota?.take(usageOf(body, step, wireToolCalls(step, callIndex)).total_tokens);
      if (overQuota) {
        record.rateLimited = true;
        sendError(res, overQuota);
      } else if (isErrorStep(step)) {
        sendError(res, step.error);
      } else if (record.stream) {
        await streamCompletion(res, body, step, id, callIndex, onFault);
      } else {
        await sleep(step.firstChunkDelayMs ?? 0, res);
        const fault = faultOf(step);
        if (fault) await strike(res, fault.kind, onFault, Promise.resolve());
        else if (!res.destroyed) sendJson(res, 200, completion(body, step, id, callIndex));
      }
    } catch (err) {
      if (err instanceof ScriptedHttpError) sendError(res, err);
      else sendError(res, { status: 500, message: (err as Error)?.message ?? String(err), code: 'script_error' });
    }
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // Only reached when a response is already under way; the client sees a truncated response.
      if (!res.headersSent) sendError(res, { status: 500, message: String(err), code: 'script_error' });
      else res.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://${host}:${port}/v1`,
    port,
    register,
    requests: (script) => recorded.filter((r) => script === undefined || r.script === script).map((r) => ({ ...r })),
    close: async () => {
      closing = true;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/**
 * Tokens per minute as providers enforce them (Anthropic documents it so, OpenAI's limits behave alike): a bucket of
 * a minute's tokens that refills continuously. `take` counts a request's tokens, or answers the 429 a provider sends
 * when they do not fit, with the time until they would.
 */
function tokenBucket(tokensPerMinute: number) {
  let level = tokensPerMinute;
  let at = Date.now();
  return {
    take(tokens: number): OpenAIErrorSpec | undefined {
      const now = Date.now();
      level = Math.min(tokensPerMinute, level + ((now - at) * tokensPerMinute) / 60_000);
      at = now;
      if (tokens <= level) {
        level -= tokens;
        return undefined;
      }
      const seconds = Math.max(0.001, ((Math.min(tokens, tokensPerMinute) - level) * 60) / tokensPerMinute);
      return {
        status: 429,
        type: 'tokens',
        code: 'rate_limit_exceeded',
        message: `Rate limit reached for scripted-model on tokens per min (TPM): Limit ${tokensPerMinute}, Used ${Math.round(tokensPerMinute - level)}, Requested ${tokens}. Please try again in ${seconds.toFixed(3)}s.`,
        headers: { 'retry-after': String(Math.ceil(seconds)), 'retry-after-ms': String(Math.ceil(seconds * 1000)) },
      };
    },
  };
}

/** A `continuable` step asked to go on with a start of its text: the rest of it. */
function continued(request: any, step: ResponseStep): ResponseStep {
  const [part, prompt] = (request.messages as any[]).slice(-2);
  const start = part?.role === 'assistant' ? textOf(part.content) : '';
  if (!step.continuable || !start || prompt?.role !== 'user' || !step.text?.startsWith(start)) return step;
  return { ...step, text: step.text.slice(start.length) };
}

/** Picks the step for this call; a step list that runs out is an error so tests fail loudly. */
async function nextStep(
  name: string,
  entry: RegisteredScript,
  request: unknown,
  apiKey: string | undefined,
  receivedAt: number,
): Promise<{ step: ScriptStep; callIndex: number }> {
  const ctx: ScriptContext = { request, callIndex: entry.calls++, ...(apiKey ? { apiKey } : {}), receivedAt };
  if (typeof entry.script === 'function') {
    const step = await entry.script(ctx);
    if (!step || typeof step !== 'object') {
      throw new ScriptedHttpError(500, `scripted model "${name}" returned no step for call #${ctx.callIndex + 1}`, 'script_error');
    }
    return { step, callIndex: ctx.callIndex };
  }
  const step = entry.script[ctx.callIndex];
  if (!step) {
    throw new ScriptedHttpError(
      500,
      `scripted model "${name}" has no step for call #${ctx.callIndex + 1} (the script has ${entry.script.length} steps)`,
      'script_exhausted',
    );
  }
  return { step, callIndex: ctx.callIndex };
}

type Fault = NonNullable<RecordedRequest['fault']>;

/** The step's fault and after how many content chunks it strikes; the earliest wins, in the order reset, stall, truncate on a tie. */
function faultOf(step: ResponseStep): { kind: Fault; after: number } | undefined {
  const faults: Array<{ kind: Fault; after: number | undefined }> = [
    { kind: 'reset', after: step.resetAfterChunks },
    { kind: 'stall', after: step.stallAfterChunks },
    { kind: 'truncate', after: step.endAfterChunks },
  ];
  const set = faults.filter((f): f is { kind: Fault; after: number } => f.after !== undefined);
  if (set.length === 0) return undefined;
  const first = set.reduce((a, b) => (b.after < a.after ? b : a));
  return { kind: first.kind, after: Math.max(0, first.after) };
}

/**
 * Drops the connection once what was written has reached the socket, so the client reads every chunk sent
 * before the fault (a TCP RST could discard chunks still unread); or stalls, holding the connection open until
 * the client goes away or the server closes.
 */
async function strike(res: http.ServerResponse, kind: Fault, onFault: (kind: Fault) => void, written: Promise<void>): Promise<void> {
  if (res.destroyed) return;
  onFault(kind);
  if (kind === 'stall') {
    await new Promise<void>((resolve) => res.once('close', () => resolve()));
    return;
  }
  await written;
  if (kind === 'truncate') {
    res.end();
    return;
  }
  res.socket?.destroy();
  res.destroy();
}

/** Writes the step as `chat.completion.chunk` server-sent events; stops as soon as the client goes away. */
async function streamCompletion(
  res: http.ServerResponse,
  request: any,
  step: ResponseStep,
  id: number,
  callIndex: number,
  onFault: (kind: Fault) => void,
): Promise<void> {
  const includeUsage = request.stream_options?.include_usage === true;
  const toolCalls = wireToolCalls(step, callIndex);
  const delay = step.chunkDelayMs ?? 0;
  const base = {
    id: `chatcmpl-scripted-${id}`,
    object: 'chat.completion.chunk',
    created: nowSeconds(),
    model: request.model,
    system_fingerprint: 'scripted',
  };
  const chunk = (delta: object, finishReason: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  });

  const events: object[] = [chunk({ role: 'assistant', content: step.text ? '' : null })];
  for (const piece of splitChars(step.text ?? '', step.chunkSize ?? DEFAULT_CHUNK_SIZE)) {
    events.push(chunk({ content: piece }));
  }
  toolCalls.forEach((call, index) => {
    events.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }));
    const args = call.function.arguments;
    const halves = args.length > 1 ? splitChars(args, Math.ceil(Array.from(args).length / 2)) : args ? [args] : [];
    for (const part of halves) events.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
  });
  // The fault strikes before the event at this index: the role chunk and `after` content chunks go out first.
  const fault = faultOf(step);
  const faultAt = fault ? 1 + Math.min(fault.after, events.length - 1) : -1;
  events.push(chunk({}, finishReason(step, toolCalls)));
  if (includeUsage) events.push({ ...base, choices: [], usage: usageOf(request, step, toolCalls) });

  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.flushHeaders();
  await sleep(step.firstChunkDelayMs ?? 0, res);
  let written = Promise.resolve();
  for (const [i, event] of events.entries()) {
    if (i > 0) await sleep(delay, res);
    if (res.destroyed) return;
    if (i === faultAt) return strike(res, fault!.kind, onFault, written);
    written = new Promise((resolve) => res.write(`data: ${JSON.stringify(event)}\n\n`, () => resolve()));
  }
  if (!res.destroyed) res.end('data: [DONE]\n\n');
}

function completion(request: any, step: ResponseStep, id: number, callIndex: number): object {
  const toolCalls = wireToolCalls(step, callIndex);
  return {
    id: `chatcmpl-scripted-${id}`,
    object: 'chat.completion',
    created: nowSeconds(),
    model: request.model,
    system_fingerprint: 'scripted',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: step.text ?? null,
          refusal: null,
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
          annotations: [],
        },
        logprobs: null,
        finish_reason: finishReason(step, toolCalls),
      },
    ],
    usage: usageOf(request, step, toolCalls),
  };
}

function wireToolCalls(step: ResponseStep, callIndex: number): WireToolCall[] {
  return (step.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `call_${callIndex}_${i}`,
    type: 'function',
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
}

function finishReason(step: ResponseStep, toolCalls: WireToolCall[]): string {
  return step.finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop');
}

/** Step usage if given, else about one token per four characters. */
function usageOf(request: any, step: ResponseStep, toolCalls: WireToolCall[]) {
  const promptChars = (request.messages as any[]).reduce(
    (sum: number, m) =>
      sum +
      textOf(m?.content).length +
      (Array.isArray(m?.tool_calls) ? m.tool_calls.reduce((s: number, c: any) => s + String(c?.function?.arguments ?? '').length, 0) : 0),
    0,
  );
  const completionChars = (step.text ?? '').length + toolCalls.reduce((s, c) => s + c.function.arguments.length, 0);
  const usage = step.usage ?? {
    prompt_tokens: Math.ceil(promptChars / 4),
    completion_tokens: Math.ceil(completionChars / 4),
  };
  return { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
}

function sendError(res: http.ServerResponse, error: ErrorStep['error']): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (isRecordedError(error)) {
    sendRecorded(res, error);
    return;
  }
  const type = error.type ?? (error.status >= 500 ? 'server_error' : 'invalid_request_error');
  const body = { error: { message: error.message, type, param: null, code: error.code ?? null } };
  for (const [name, value] of Object.entries(error.headers ?? {})) res.setHeader(name, value);
  sendJson(res, error.status, body);
}

/** A recorded body as it is: a string verbatim as text, anything else as JSON; the step's headers win. */
function sendRecorded(res: http.ServerResponse, { status, body, headers }: RecordedErrorSpec): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.setHeader('content-type', typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json');
  for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
  res.setHeader('content-length', Buffer.byteLength(text));
  res.writeHead(status);
  res.end(text);
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Splits by code points so a delta never cuts a surrogate pair in half. */
function splitChars(text: string, size: number): string[] {
  const chars = Array.from(text);
  const step = Math.max(1, Math.floor(size));
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += step) pieces.push(chars.slice(i, i + step).join(''));
  return pieces;
}

/** Waits `ms`, or less if the response closes first, so a closed server never waits on a pending timer. */
function sleep(ms: number, res: http.ServerResponse): Promise<void> {
  if (ms <= 0 || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
