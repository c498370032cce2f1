/**
 * The model call: Chat Completions with streaming and tool calling through the `openai` client.
 * Its text reaches watchers one way only: published to the live stream as it arrives (src/stream). It heartbeats
 * while the stream runs, each beat carrying the text so far (cancellation reaches it in a beat's reply and aborts the
 * HTTP request; a retried attempt goes on from the last beat's text; a watcher with no channel reads it with
 * DescribeWorkflowExecution), and beats faster while it cannot publish. A cancelled call hands its text to the run in
 * its cancellation's details. Every provider error is classified once (errors.ts).
 */
import { CancelledFailure, Context } from '@temporalio/activity';
import { AzureOpenAI } from 'openai';
import type OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { ApplicationFailure } from '@temporalio/common';
import { approvalCovers } from '../common/approval';
import { runAhead } from '../common/tool-order';
import { ConversationUnavailableError, type ConversationStore } from '../codec/conversation-store';
import type { ChatMessage, ConversationRef, ModelRequest, ModelResponse, QuotaGrant, QuotaWait, ToolCall, ToolResult } from '../common/chat';
import { CONTINUE_PROMPT, emptyUsage, isQuotaWait, isRecordedResponse } from '../common/chat-helpers';
import { toOpenAI } from '../common/conversation';
import { knownContextWindow } from '../common/models';
import { requestHash as hashRequest } from '../common/replay';
import type { LiveStream } from '../stream/publisher';
import { followText, type CallText } from '../common/stream';
import { FailureType, ModelErrorType } from '../common/failures';
import type { ProviderBudget } from '../quota';
import { classifyModelError, retryAfterMs, streamStalled, streamTruncated } from './errors';
import { awaitGrant, headersOf, reserve, type Reservation } from './quota';
import { startHeartbeat } from './heartbeat';
import { routeOf, secretsOf, type Providers } from './providers';
import { withKeyRotation } from './key-rotation';
import { recordToolCall } from './metrics';
import { usageOf } from './usage';
import { inToolSpan, recordProvider } from './genai-spans';
import type { ToolRegistry } from './tools/registry';
import { applyToolPolicy, type ToolPolicy } from './tool-policy';
import { chatRequestBody, encodeMessages } from './wire';
import { StoppableRequest, type ModelCallsInFlight } from './calls-in-flight';

export interface ModelDeps {
  openai: OpenAI;
  /** Used when the run names no model. */
  defaultModel: string;
  tools: ToolRegistry;
  /** A stream silent for this long is cut and retried. @default 60000 */
  streamIdleTimeoutMs?: number;
  /**
   * The live stream (src/stream): text goes there as it arrives. Absent, or while it cannot publish, watchers read the
   * text from the call's heartbeat details, which it then sends every `degradedHeartbeatMs`.
   */
  stream?: LiveStream;
  /** How often a call that cannot publish heartbeats its text (watchers poll it: docs/streaming.md). @default 200 */
  degradedHeartbeatMs?: number;
  /** Where chained conversations live (a request with `chain`); without one, runs send the whole conversation. */
  conversations?: ConversationStore;
  /** The context window of every model this worker calls (`LLM_CONTEXT_WINDOW_TOKENS`); absent: the table of known models. */
  contextWindowTokens?: number;
  /** The fleet's provider budget (`LLM_TOKENS_PER_MINUTE` and the like): every call reserves before it starts. */
  budget?: ProviderBudget;
  /** Named providers (`provider/model`) and several keys per provider; without it every call goes to `openai`. */
  providers?: Providers;
  /** Decides on each tool call of an answer before any runs (tool-policy.ts); absent: every call is allowed. */
  toolPolicy?: ToolPolicy;
  /** How often a model call heartbeats (MODEL_HEARTBEAT_MS); the worker's heartbeat throttle follows it. @default 800 */
  modelHeartbeatMs?: number;
  /** Where its run's workflow task finds a call to stop it at once (calls-in-flight.ts); absent: at its next heartbeat. */
  callsInFlight?: ModelCallsInFlight;
}

/**
 * A model call heartbeats this often. Temporal tells an activity of its cancellation only in a heartbeat's reply, so
 * where the run's workflow task cannot stop the call itself (the call runs on another worker: calls-in-flight.ts), this
 * bounds how long the provider's stream outlives an interrupt or an abort: within a second, as issue 27 asks
 * (docs/steering.md, with what it costs in heartbeat RPCs). Each beat is a write to the run's mutable state: 500 ms
 * cost a fleet of 1,000 runs about 4% of its throughput against 800 (BENCHMARKS.md, issue 26), and 250 ms 8% more.
 */
export const MODEL_HEARTBEAT_MS = 800;

/**
 * How often a model call that cannot publish (no channel, or one it cannot reach) heartbeats its text: watchers that
 * poll the call's heartbeat details then see text within about this plus their poll interval (docs/streaming.md).
 */
export const DEGRADED_HEARTBEAT_MS = 200;

/**
 * How often a call waiting in the fleet's budget beats: at most a third of its heartbeat timeout, which bounds it
 * (every 1.67 s for the model call's 5 s, in its first wait of 2 s; every 10 s for `awaitQuota`'s 30 s, in the wait
 * after it). 400 waiting calls of a flooding tenant beat 2,000 times a second at the degraded pace, then 240 at the
 * model call's, and loaded the server for every tenant (BENCHMARKS.md (i)). A pause or abort of a waiting call on its
 * run's own worker stops it at once (calls-in-flight.ts); on another worker over the stop relay, or within a beat.
 */
const QUOTA_WAIT_BEAT_MS = 60_000;

/**
 * The worker's heartbeat throttle for a model-call cadence: a little under the fastest one, so that every beat goes to
 * the server. A throttle is a ceiling: calls that beat every 800 ms still send one beat per 800 ms.
 */
export const heartbeatThrottleMs = (cadenceMs: number = MODEL_HEARTBEAT_MS, degradedMs: number = DEGRADED_HEARTBEAT_MS): number =>
  Math.floor(Math.min(cadenceMs, degradedMs) * 0.8);

/** What a model call's heartbeat carries: its text so far (capped), and what a retried attempt needs. */
export interface ModelCallBeat {
  callNumber: number;
  attempt: number;
  /** The text streamed so far; absent when longer than MAX_BEAT_TEXT (a retry then starts over). */
  text?: string;
  chars: number;
  providerFailures: number;
  /** Tool-call deltas had begun: a cut call cannot be continued as text. */
  toolCalls?: true;
  /** The call cannot publish (no channel, or one it cannot reach): watchers read its text from these beats. */
  degraded?: true;
}

/** Text a heartbeat carries at most: the server keeps a call's last details in its mutable state. */
export const MAX_BEAT_TEXT = 256 * 1024;

/**
 * Retryable provider failures (429, 5xx, dropped streams) one model call may have before it gives up. Counted across
 * attempts in the heartbeat details, so a worker killed mid-call (which fails no request) spends none.
 */
export const MAX_PROVIDER_FAILURES = 10;

/** Assembles the streamed chunks of one completion. */
class CompletionAssembler {
  text = '';
  finishReason: string | null = null;
  usage: ChatCompletionChunk['usage'] = undefined;
  model = '';
  private readonly calls: Array<{ id: string; name: string; arguments: string }> = [];

  add(chunk: ChatCompletionChunk): string {
    this.model ||= chunk.model;
    if (chunk.usage) this.usage = chunk.usage;
    let delta = '';
    for (const choice of chunk.choices) {
      if (choice.delta?.content) delta += choice.delta.content;
      for (const tc of choice.delta?.tool_calls ?? []) {
        const call = (this.calls[tc.index] ??= { id: '', name: '', arguments: '' });
        if (tc.id) call.id = tc.id;
        if (tc.function?.name) call.name += tc.function.name;
        if (tc.function?.arguments) call.arguments += tc.function.arguments;
      }
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
    }
    this.text += delta;
    return delta;
  }

  /** Whether tool-call deltas have begun (a call cut there cannot be continued as text). */
  get hasToolCalls(): boolean {
    return this.calls.length > 0;
  }

  toolCalls(callNumber: number): ToolCall[] {
    // Some providers omit ids; give every call a stable one so results can be matched.
    return this.calls.filter(Boolean).map((c, i) => ({ id: c.id || `call_${callNumber}_${i}`, name: c.name, arguments: c.arguments }));
  }
}

/** Without a budget a call always answers; with one it may be sent back to wait (`QuotaWait`). */
export function createCallModel(deps: ModelDeps & { budget?: undefined }): (request: ModelRequest) => Promise<ModelResponse>;
export function createCallModel(deps: ModelDeps): (request: ModelRequest) => Promise<ModelResponse | QuotaWait>;
export function createCallModel(deps: ModelDeps) {
  const idleTimeoutMs = deps.streamIdleTimeoutMs ?? 60_000;

  return async function callModel(request: ModelRequest): Promise<ModelResponse | QuotaWait> {
    const ctx = Context.current();
    // Before any request: a run started with tools this worker lacks would only fail later, and the same on every retry.
    checkTools(request.checkTools, deps.tools);
    const { messages, base } = await conversationOf(request, deps.conversations);
    const requestHash = hashOf(request, messages, deps.defaultModel, base);
    const recorded = replayedAnswer(request, requestHash);
    if (recorded) return recorded;
    const route = await routeOf(deps, request.model ?? deps.defaultModel);
    recordProvider(route);
    const { model } = route;
    const secrets = secretsOf(deps);
    const tools = request.tools?.length === 0 ? [] : deps.tools.definitions(request.tools);

    const assembler = new CompletionAssembler();
    // A local activity runs inside its workflow's task: its text is not streamed, only returned.
    const live = ctx.info.isLocal ? undefined : deps.stream;
    const runId = ctx.info.workflowExecution?.workflowId ?? '';
    const { callNumber } = request;
    const { attempt } = ctx.info;
    // A retry with a channel goes on with the text the earlier attempt's last heartbeat carried (and what the channel
    // has after it), where it can (watchers get `resume`); else it starts over (`restart`).
    const resumed = attempt > 1 && live ? await resumePoint(live, runId, callNumber, attempt, ctx) : undefined;
    if (resumed !== undefined) live?.publish(runId, [{ type: 'resume', callNumber, attempt, chars: resumed.length }]);
    else if (attempt > 1) live?.publish(runId, [{ type: 'restart', callNumber, attempt }]);
    assembler.text = resumed ?? '';
    const providerFailures = providerFailuresSoFar(ctx);
    const beat = (): ModelCallBeat => {
      const { text } = assembler;
      return {
        callNumber,
        attempt,
        ...(text.length <= MAX_BEAT_TEXT ? { text } : {}),
        chars: text.length,
        providerFailures,
        ...(assembler.hasToolCalls ? { toolCalls: true as const } : {}),
        ...(live?.healthy ? {} : { degraded: true as const }),
      };
    };
    // Stopped by its run's workflow task on this worker: the stream closes now, and the call waits for its cancellation.
    const stop = new StoppableRequest(ctx, deps.callsInFlight, request.callNumber);
    const cancelled = () => stop.cancelled;
    // Beats carry the text: faster while no channel takes it, so that watchers polling the details keep up.
    // A call waiting in the budget has no text to carry: it beats only to be seen alive, as rarely as its heartbeat
    // timeout allows (a flood of waiting calls beating at the text's pace loaded the server for every tenant).
    // A retried attempt reserves anew: the first settled the grant its run's `awaitQuota` handed it.
    const quotaRequest = attempt > 1 && request.quota?.grant ? { ...request, quota: { ...request.quota, grant: undefined } } : request;
    let waiting = deps.budget !== undefined && !quotaRequest.quota?.grant;
    const cadence = () => (waiting ? QUOTA_WAIT_BEAT_MS : live?.healthy ? (deps.modelHeartbeatMs ?? MODEL_HEARTBEAT_MS) : (deps.degradedHeartbeatMs ?? DEGRADED_HEARTBEAT_MS));
    const heartbeat = ctx.info.isLocal ? undefined : startModelHeartbeat(ctx, beat, cadence);
    const stopHeartbeat = () => heartbeat?.stop();
    let idle: NodeJS.Timeout | undefined;
    let stalled = false;
    const armIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        stalled = true;
        stop.abort(new Error('stream stalled'));
      }, idleTimeoutMs);
    };

    let reservation: Reservation | undefined;
    try {
      if (deps.budget) {
        const reserved = await reserve(deps.budget, `${runId}:${callNumber}`, quotaRequest, messages, stop.signal);
        if (isQuotaWait(reserved)) return reserved;
        reservation = reserved;
        // Granted: the text's pace from now, not a wait's beat later.
        waiting = false;
        heartbeat?.restart();
      }
      armIdle();
      const params = {
        model,
        ...(tools.length ? { tools } : {}),
        // `max_tokens`, not `max_completion_tokens`: llama.cpp, vLLM and Ollama all read it.
        ...(request.maxOutputTokens !== undefined ? { max_tokens: request.maxOutputTokens } : {}),
        stream: true as const,
        stream_options: { include_usage: true },
      };
      const create = (sent: readonly ChatMessage[], base?: readonly ChatMessage[]) =>
        withKeyRotation(route, deps.providers, cancelled, ctx, (client) => streamChat(client, params, sent, base, stop.signal));
      const stream =
        resumed !== undefined
        ? await create(continuation(messages, resumed), messages).catch(async (err: unknown) => {
            // A provider that will not continue (a 4xx) gets the call anew, marked as a restart.
            if (cancelled() || !classifyModelError(err, secrets).nonRetryable) throw err;
            ctx.log.warn('the provider refused to continue the streamed text: the call starts over', { error: String(err) });
            live?.publish(runId, [{ type: 'restart', callNumber, attempt }]);
            assembler.text = '';
            return create(messages, base);
          })
        : await create(messages, base);
      for await (const chunk of stream) {
        armIdle();
        const text = assembler.add(chunk);
        if (text) live?.publish(runId, [{ type: 'text', text, callNumber, attempt, at: assembler.text.length - text.length }]);
      }
      stop.forget(); // a stop from now on finds the answer whole: it completes, and the run, which moved on, drops it
      // An aborted stream ends its iteration without an error: never return a cut-off answer as a result.
      if (stop.signal.aborted) throw new Error('stream aborted');
      // Nor one a proxy ended early: a complete answer always says why it finished.
      if (assembler.finishReason === null) throw streamTruncated(assembler.text.length);
      await reservation?.settle(assembler.usage?.total_tokens);
      const conversation = request.chain && (await storeConversation(request, messages, deps.conversations, ctx));
      const answeredBy = assembler.model || model;
      const contextWindowTokens = deps.contextWindowTokens ?? knownContextWindow(answeredBy);
      const hinted = assembler.toolCalls(request.callNumber).map((c) => deps.tools.withHints(c, approvalCovers(request.approvalTools, c.name)));
      const policyContext = { workflowId: runId, callNumber: request.callNumber, model: answeredBy };
      const toolCalls = deps.toolPolicy && hinted.length > 0 ? await applyToolPolicy(deps.toolPolicy, hinted, deps.tools, policyContext) : hinted;
      // A call that offered no tools (a plan) gets none run: the run answers such calls itself.
      const toolResults = request.runLocalTools && request.tools?.length !== 0 ? await runLocalTools(toolCalls, request, deps, ctx) : undefined;
      return {
        text: assembler.text,
        toolCalls,
        usage: usageOf(assembler.usage),
        finishReason: assembler.finishReason,
        model: answeredBy,
        ...(conversation ? { conversation } : {}),
        ...(contextWindowTokens !== undefined ? { contextWindowTokens } : {}),
        ...(toolResults?.length ? { toolResults } : {}),
        requestHash,
        ...(attempt > 1 ? { attempt } : {}),
      };
    } catch (err) {
      // The text so far goes to the run with the cancellation: an abort keeps it, an interrupt keeps it in the conversation.
      const withText = (e: unknown) => (e instanceof CancelledFailure ? new CancelledFailure('model call cancelled', [beat()]) : e);
      // Stopped here: the run has the text (and an abort its ABORTED) a throttle after its stop.
      if (stop.stoppedHere) await stop.endedBeating(beat).catch((e: unknown) => Promise.reject(withText(e)));
      if (ctx.cancellationSignal.aborted) throw withText(new CancelledFailure('model call cancelled'));
      const failure = stalled ? streamStalled(idleTimeoutMs) : classifyModelError(err, secrets);
      // The provider said no after all: the whole fleet holds off, not only this call.
      if (failure.type === ModelErrorType.RateLimit) await deps.budget?.penalize(retryAfterMs(headersOf(err)) ?? 1_000).catch(() => undefined);
      if (failure.nonRetryable) throw failure;
      const retry = { activity: 'callModel', attempt: attempt + 1, lastFailure: { type: failure.type ?? null, message: failure.message }, nextAttemptAt: null };
      live?.publish(runId, [{ type: 'retry', retry }]);
      // The count goes with the last heartbeat, which the worker flushes with the failure; the next attempt reads it.
      const failures = providerFailures + 1;
      ctx.heartbeat({ ...beat(), providerFailures: failures } satisfies ModelCallBeat);
      if (failures < MAX_PROVIDER_FAILURES) throw failure;
      // A type of its own: the run may move to a fallback model, where a final error of the same class would end it.
      throw ApplicationFailure.create({
        type: ModelErrorType.RetriesExhausted,
        message: `${failure.message} (gave up after ${failures} provider failures)`,
        nonRetryable: true,
      });
    } finally {
      stop.release();
      // A call that failed is assumed to have used what it reserved.
      await reservation?.settle(undefined).catch(() => undefined);
      clearTimeout(idle);
      stopHeartbeat();
    }
  };
}

/**
 * The run's `awaitQuota` activity: the wait of a model call the budget sent back once (its `QuotaWait` said
 * `waitsApart`). It beats every 10 s of its 30 s heartbeat timeout (workflows/effects.ts), not every 1.67 s of the
 * model call's 5 s: a flood of waiting calls loads the server that much less (BENCHMARKS.md (i)). Its run stops it
 * as it stops a model call (calls-in-flight.ts). It answers with the grant, which the run hands to the model call
 * (`quota.grant`), or with the wait again; on a worker without a budget, with no grant (the call just runs).
 */
export function createAwaitQuota(deps: Pick<ModelDeps, 'budget' | 'conversations' | 'callsInFlight'>) {
  return async function awaitQuota(request: ModelRequest): Promise<QuotaWait | QuotaGrant> {
    const { budget } = deps;
    if (!budget) return { quotaGrant: null };
    const ctx = Context.current();
    const { messages } = await conversationOf(request, deps.conversations);
    const runId = ctx.info.workflowExecution?.workflowId ?? '';
    const { callNumber } = request;
    const stop = new StoppableRequest(ctx, deps.callsInFlight, callNumber);
    const stopHeartbeat = startHeartbeat(() => ({ callNumber, waiting: true }), QUOTA_WAIT_BEAT_MS);
    try {
      return await awaitGrant(budget, `${runId}:${callNumber}`, request, messages, stop.signal);
    } catch (err) {
      // As a stopped model call: the run hears of the stop a throttle later.
      if (stop.stoppedHere) await stop.endedBeating(() => ({ callNumber, waiting: true }));
      if (ctx.cancellationSignal.aborted) throw new CancelledFailure('quota wait cancelled');
      throw err;
    } finally {
      stop.release();
      stopHeartbeat();
    }
  };
}

/**
 * The text a retried attempt of call `callNumber` goes on with: what the earlier attempt's last heartbeat carried,
 * extended by what the channel has of it after that beat (watchers got that too: going on from the beat alone would
 * send it to them twice). `undefined` where the call must start over: no text, or tool-call deltas had begun.
 */
async function resumePoint(live: LiveStream, runId: string, callNumber: number, attempt: number, ctx: Context): Promise<string | undefined> {
  const why = (reason: string) => {
    ctx.log.info('the retried model call starts over', { callNumber, attempt, reason });
    return undefined;
  };
  const details = ctx.info.heartbeatDetails as Partial<ModelCallBeat> | undefined;
  if (details?.toolCalls) return why('tool-call deltas had begun');
  const beat = details?.callNumber === callNumber && typeof details.text === 'string' ? details.text : '';
  const streamed = await streamedText(live, runId, callNumber, attempt);
  // Only with a channel that answers: without one (a worker at its defaults with no gateway there, say) the call starts
  // over, as it did before issue 49; watchers polling the state saw the beat's text and get `restart`.
  if (streamed === undefined) return why('the stream channel cannot be read');
  // The channel's text counts only where it agrees with the beat's (whole, and the same call's attempts).
  const text = streamed.startsWith(beat) ? streamed : beat;
  if (!text) return why('no text of it was streamed');
  return text;
}

/** What the run's channel holds of call `callNumber` from attempts before `attempt`, read as watchers read it; `undefined` when it cannot be read whole. */
async function streamedText(live: LiveStream, runId: string, callNumber: number, attempt: number): Promise<string | undefined> {
  const page = await live.read(runId).catch(() => undefined);
  if (!page || page.gap) return undefined;
  const calls = new Map<number, CallText>();
  for (const { event } of page.entries) {
    if ((event.type === 'text' || event.type === 'restart' || event.type === 'resume') && event.callNumber === callNumber && event.attempt < attempt) followText(calls, event);
  }
  const call = calls.get(callNumber);
  return call && !call.hole ? call.text : undefined;
}

/**
 * The model call's heartbeat: every `cadence()` (read at each beat, so a call whose channel fails speeds up at once),
 * never longer than a third of the heartbeat timeout. The first beat comes after the first interval; `restart` sets
 * the next beat a `cadence()` from now (the cadence changed).
 */
function startModelHeartbeat(ctx: Context, details: () => ModelCallBeat, cadence: () => number): { stop(): void; restart(): void } {
  const timeoutMs = ctx.info.heartbeatTimeoutMs;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = () => {
    const everyMs = cadence();
    timer = setTimeout(() => {
      if (stopped) return;
      ctx.heartbeat(details());
      tick();
    }, timeoutMs ? Math.max(50, Math.min(everyMs, Math.floor(timeoutMs / 3))) : everyMs);
  };
  tick();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
    restart() {
      if (stopped) return;
      clearTimeout(timer);
      tick();
    },
  };
}

/**
 * One streamed chat request, its body encoded by wire.ts (the messages `base` shares with `sent` are not encoded
 * again). `params` is everything but the messages. Azure's client reads the deployment out of the body object, so it
 * gets the body as an object.
 */
function streamChat(client: OpenAI, params: StreamParams, sent: readonly ChatMessage[], base: readonly ChatMessage[] | undefined, signal: AbortSignal) {
  if (client instanceof AzureOpenAI) return client.chat.completions.create({ ...params, messages: toOpenAI(sent) }, { signal });
  // `options.body` is what is sent; the `messages` of the typed parameters are not.
  const body = chatRequestBody(params, encodeMessages(sent, base));
  return client.chat.completions.create({ ...params, messages: [] }, { signal, body, headers: { 'content-type': 'application/json' } });
}

type StreamParams = Omit<ChatCompletionCreateParamsStreaming, 'messages'>;

/** The request that goes on with `text`: the continuation the run uses for answers cut off by the output limit. */
const continuation = (messages: readonly ChatMessage[], text: string): ChatMessage[] => [
  ...messages,
  { role: 'assistant', content: text },
  { role: 'user', content: CONTINUE_PROMPT },
];

/** Fails the call for good when the run names a tool the worker's registry lacks. */
function checkTools(names: string[] | undefined, registry: ToolRegistry): void {
  const unknown = registry.missing(names ?? []);
  if (unknown.length === 0) return;
  const have = registry.names();
  throw ApplicationFailure.create({
    type: FailureType.UnknownTool,
    nonRetryable: true,
    message: `unknown tools: ${unknown.join(', ')}; this worker has: ${have.join(', ') || '(none)'}`,
  });
}

/** Provider failures of earlier attempts of this call, from the heartbeat details the last one left. */
function providerFailuresSoFar(ctx: Context): number {
  const details = ctx.info.heartbeatDetails as { providerFailures?: unknown } | undefined;
  return typeof details?.providerFailures === 'number' ? details.providerFailures : 0;
}

/**
 * The whole conversation of a call (its messages, after those of its chain's base when it has one), and the
 * conversation it goes on from, whose encoding the request reuses.
 */
async function conversationOf(request: ModelRequest, store: ConversationStore | undefined): Promise<{ messages: ChatMessage[]; base?: readonly ChatMessage[] }> {
  const ref = request.chain?.base;
  if (!ref) return { messages: request.messages };
  try {
    if (!store) throw new ConversationUnavailableError('this worker keeps no conversations (AGENT_CLAIM_CHECK=off)');
    const base = await store.conversation(ref);
    return { messages: base.concat(request.messages), base };
  } catch (err) {
    if (!(err instanceof ConversationUnavailableError)) throw err;
    throw ApplicationFailure.create({ type: FailureType.ConversationUnavailable, message: err.message, nonRetryable: true });
  }
}

/** Best effort: a conversation that cannot be stored only means the run sends it whole next time. */
async function storeConversation(
  request: ModelRequest,
  messages: ChatMessage[],
  store: ConversationStore | undefined,
  ctx: Context,
): Promise<ConversationRef | undefined> {
  if (!store) return undefined;
  try {
    return await store.save(request.chain?.base, request.messages, messages, ctx.info.workflowExecution?.workflowId);
  } catch (err) {
    ctx.log.warn('conversation not stored; the next call sends it whole', { error: String(err) });
    return undefined;
  }
}

/**
 * The answer's calls that `runAhead` allows (pure `local` tools before the turn's first call with side effects: running
 * one whose result the run then does not use costs nothing), run one after another in the model's order, as
 * `executeTool` runs them. A call that waits for approval is not run before a person decides; a call that throws (a
 * RetryableToolError, or a bug) is left to the run's local activity, which retries it and reports what it says.
 */
async function runLocalTools(calls: ToolCall[], request: ModelRequest, deps: ModelDeps, ctx: Context): Promise<ToolResult[]> {
  const results: ToolResult[] = [];
  for (const call of runAhead(calls, request.approvalTools)) {
    const idempotencyKey = `${ctx.info.workflowExecution?.workflowId ?? ctx.info.activityId}/${call.id}`;
    const result = await inToolSpan(call, () => deps.tools.run(call, { idempotencyKey, signal: ctx.cancellationSignal }, request.tools)).catch(() => undefined);
    if (result) results.push(recordToolCall(result));
  }
  return results;
}

/**
 * The hash of the request this call would send (common/replay.ts): the conversation whole, as the provider gets it,
 * going on from its chain base's hash when this worker made it.
 */
function hashOf(request: ModelRequest, messages: readonly ChatMessage[], defaultModel: string | undefined, base?: readonly ChatMessage[]): string {
  return hashRequest({ model: request.model ?? defaultModel ?? '', messages, tools: request.tools ?? null, maxOutputTokens: request.maxOutputTokens ?? null }, base);
}

/**
 * A what-if fork's recorded answer to this very request, if it has one: answered again without a provider call, and
 * marked `replayed`, with no tokens spent and no stored conversation (the fork's chain is its own).
 */
function replayedAnswer(request: ModelRequest, requestHash: string): ModelResponse | undefined {
  const recorded = request.replay?.[requestHash];
  if (!recorded || !isRecordedResponse(recorded)) return undefined;
  const { conversation: _conversation, recordedPromptTokens: _recorded, ...answer } = recorded;
  // A fork of a fork records a replayed answer, whose usage is zero: the count it carries is the first run's.
  const recordedPromptTokens = recorded.recordedPromptTokens ?? recorded.usage?.promptTokens;
  return { ...answer, usage: emptyUsage(), requestHash, replayed: true, ...(recordedPromptTokens ? { recordedPromptTokens } : {}) };
}
