/** Activities in a mock activity context, against the scripted model over real HTTP with the real `openai` client. */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as waitUnlessAborted } from 'node:timers/promises';
import { CancelledFailure } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import { z } from 'zod';
import { createActivities, ModelCallsInFlight, type ToolPolicy, type ToolPolicyDecision } from '../src/activities';
import { agentPlugin } from '../src/worker/plugin';
import { chunkTranscript, createCompactContext, recentStart } from '../src/activities/compaction';
import { classifyModelError, ModelErrorType, retryAfterMs } from '../src/activities/errors';
import { fileTools, resolveInWorkspace } from '../src/activities/tools/files';
import { defineTool, MAX_TOOL_OUTPUT_CHARS, RetryableToolError, ToolRegistry } from '../src/activities/tools/registry';
import type { ChatMessage, CritiqueRequest, ModelRequest, ModelResponse, QuotaWait } from '../src/common/chat';
import { isQuotaWait } from '../src/common/chat-helpers';
import { FailureType } from '../src/common/failures';
import { requestHash } from '../src/common/replay';
import { COMPACTION_CALL, criticCall } from '../src/common/sinks';
import { llmSettings } from '../src/config';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { agentWorkerOptions, openAIClient } from '../src/worker';
import { MODEL_HEARTBEAT_MS } from '../src/activities/model';
import { msToNumber } from '@temporalio/common/lib/time';
import { QuietLogger } from './support/quiet-logger';
import { freePort, startRedis } from './support/redis';
import { RedisBudget } from '../src/quota';

/** Expected failures and undeliverable deltas (a mock environment has no client) stay quiet. */
const quiet = { logger: new QuietLogger() };

let model: ScriptedModel;
let openai: OpenAI;
let workspace: string;
let activities: ReturnType<typeof createActivities>;

beforeAll(async () => {
  model = await startScriptedModel();
  openai = openAIClient({ baseURL: model.url, apiKey: 'scripted' });
  workspace = mkdtempSync(path.join(os.tmpdir(), 'agent-act-'));
  writeFileSync(path.join(workspace, 'a.txt'), 'alpha');
  activities = createActivities({ openai, defaultModel: 'unset', workspace, streamIdleTimeoutMs: 1_000 });
});
afterAll(async () => model?.close());

/** These workers have no provider budget, so every call answers; a `QuotaWait` here fails the test. */
const answering =
  (call: (request: ModelRequest) => Promise<ModelResponse | QuotaWait>) =>
  async (request: ModelRequest): Promise<ModelResponse> => {
    const r = await call(request);
    if (isQuotaWait(r)) throw new Error(`unexpected quota wait: ${JSON.stringify(r)}`);
    return r;
  };
const callModel = (request: ModelRequest) => answering(activities.callModel)(request);

/** A mock context with the heartbeat timeout the workflow gives model calls, compaction and the critic. */
const modelCallEnv = () => new MockActivityEnvironment({ heartbeatTimeoutMs: 5_000 }, quiet);

/** Heartbeat details an environment records. */
const heartbeatsOf = (env: MockActivityEnvironment): unknown[] => {
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  return beats;
};

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Cancels `env` once it has heartbeaten, and how long the activity then took to end as cancelled. */
async function cancelAfterFirstHeartbeat(env: MockActivityEnvironment, beats: unknown[], running: Promise<unknown>): Promise<number> {
  while (beats.length === 0) await pause(50);
  const cancelledAt = Date.now();
  env.cancel('CANCELLED');
  await expect(running).rejects.toBeInstanceOf(CancelledFailure);
  return Date.now() - cancelledAt;
}

/** Run an activity in a fresh mock context, keeping its result type. */
const runIn = <P extends unknown[], R>(env: MockActivityEnvironment, fn: (...args: P) => Promise<R>, ...args: P): Promise<R> =>
  env.run<P, R, typeof fn>(fn, ...args);
const act = <P extends unknown[], R>(fn: (...args: P) => Promise<R>, ...args: P) => runIn(new MockActivityEnvironment(undefined, quiet), fn, ...args);

const request = (model: string, extra: Partial<ModelRequest> = {}): ModelRequest => ({
  purpose: 'respond',
  callNumber: 1,
  model,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

/** The typed failure the activity throws for a scripted provider error. */
async function failureFor(status: number, opts: { code?: string; message?: string; headers?: Record<string, string> } = {}) {
  const name = `err-${status}-${opts.code ?? ''}-${Object.keys(opts.headers ?? {}).join()}`;
  model.register(name, [{ error: { status, message: opts.message ?? 'scripted failure', code: opts.code, headers: opts.headers } }]);
  const err = await act(callModel, request(name)).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('model error classification', () => {
  test.each([
    { status: 429, headers: { 'retry-after': '7' }, type: ModelErrorType.RateLimit, retryable: true, delay: 7_000 },
    { status: 429, headers: { 'retry-after-ms': '1500' }, type: ModelErrorType.RateLimit, retryable: true, delay: 1_500 },
    { status: 429, code: 'insufficient_quota', type: ModelErrorType.QuotaExceeded, retryable: false },
    { status: 500, type: ModelErrorType.ServerError, retryable: true },
    { status: 502, type: ModelErrorType.ServerError, retryable: true },
    { status: 503, type: ModelErrorType.ServerError, retryable: true },
    { status: 408, type: ModelErrorType.Timeout, retryable: true },
    { status: 401, code: 'invalid_api_key', type: ModelErrorType.Authentication, retryable: false },
    { status: 403, type: ModelErrorType.PermissionDenied, retryable: false },
    { status: 404, code: 'model_not_found', type: ModelErrorType.NotFound, retryable: false },
    { status: 400, type: ModelErrorType.BadRequest, retryable: false },
    { status: 400, code: 'context_length_exceeded', type: ModelErrorType.ContextOverflow, retryable: false },
    { status: 400, message: "This model's maximum context length is 8192 tokens", type: ModelErrorType.ContextOverflow, retryable: false },
  ])('$status ($code) -> $type', async ({ status, code, message, headers, type, retryable, delay }) => {
    const failure = await failureFor(status, { code, message, headers: headers as Record<string, string> | undefined });
    expect(failure.type).toBe(type);
    expect(failure.nonRetryable).toBe(!retryable);
    if (delay !== undefined) expect(failure.nextRetryDelay).toBe(delay);
  });

  test('connection failures and timeouts are retried', () => {
    const refused = classifyModelError(new OpenAI.APIConnectionError({ message: 'ECONNREFUSED' }));
    expect([refused.type, refused.nonRetryable]).toEqual([ModelErrorType.Connection, false]);
    const timeout = classifyModelError(new OpenAI.APIConnectionTimeoutError());
    expect([timeout.type, timeout.nonRetryable]).toEqual([ModelErrorType.Timeout, false]);
  });

  test('retry-after as an HTTP date', () => {
    const headers = new Headers({ 'retry-after': new Date(Date.UTC(2026, 0, 1, 0, 0, 30)).toUTCString() });
    expect(retryAfterMs(headers, Date.UTC(2026, 0, 1, 0, 0, 0))).toBe(30_000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
  });
});

describe('callModel', () => {
  test('a call that ends within a second sends no heartbeat; a pure fast tool call is marked local', async () => {
    model.register('quick', [{ toolCalls: [{ id: 'q1', name: 'listFiles', arguments: {} }, { id: 'q2', name: 'writeFile', arguments: { path: 'b', content: 'c' } }] }]);
    const env = new MockActivityEnvironment(undefined, quiet);
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => heartbeats.push(d));
    const response = await runIn(env, callModel, request('quick'));
    expect(heartbeats).toEqual([]);
    // listFiles is registered `local` and has no side effects (an interrupting message may stop it); writeFile has side effects.
    expect(response.toolCalls).toEqual([
      { id: 'q1', name: 'listFiles', arguments: '{}', local: true, pure: true, cancellable: true },
      { id: 'q2', name: 'writeFile', arguments: '{"path":"b","content":"c"}' },
    ]);
  });

  test("a what-if fork's recorded answer is replayed with no tokens spent and the prompt tokens the first run's provider counted, a fork of a fork too", async () => {
    model.register('recorded-call', [{ text: 'first' }]);
    const first = await act(callModel, request('recorded-call'));
    expect(first.usage.promptTokens).toBeGreaterThan(0);
    const { requestHash, conversation: _c, ...answer } = first;
    const replayed = await act(callModel, { ...request('recorded-call'), replay: { [requestHash!]: answer } });
    expect(replayed).toMatchObject({ text: 'first', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, replayed: true, recordedPromptTokens: first.usage.promptTokens });
    // A fork of that fork records the replayed answer as recorded.ts does (without `replayed`): its count stays the first run's.
    const { requestHash: _h, replayed: _r, conversation: _c2, ...again } = replayed;
    const twice = await act(callModel, { ...request('recorded-call'), replay: { [requestHash!]: again } });
    expect(twice).toMatchObject({ replayed: true, recordedPromptTokens: first.usage.promptTokens });
    expect(model.requests('recorded-call')).toHaveLength(1);
  });

  test('a call to a tool that declares timeoutMs carries it, for the run to use as start-to-close', async () => {
    const slow = defineTool({ name: 'slowLookup', description: 'slow', parameters: z.object({}), sideEffects: false, timeoutMs: 120_000, execute: async () => 'x' });
    const withSlow = createActivities({ openai, defaultModel: 'unset', workspace, tools: [slow] });
    model.register('hinted', [{ toolCalls: [{ id: 'h1', name: 'slowLookup', arguments: {} }, { id: 'h2', name: 'readFile', arguments: { path: 'a.txt' } }] }]);
    const response = await act(answering(withSlow.callModel), request('hinted'));
    expect(response.toolCalls).toEqual([
      { id: 'h1', name: 'slowLookup', arguments: '{}', pure: true, cancellable: true, timeoutMs: 120_000 },
      { id: 'h2', name: 'readFile', arguments: '{"path":"a.txt"}', local: true, pure: true, cancellable: true },
    ]);
    const registry = new ToolRegistry([slow]);
    expect([registry.timeoutOf('slowLookup'), registry.timeoutOf('nope')]).toEqual([120_000, undefined]);
    expect(() => new ToolRegistry([{ ...slow, timeoutMs: 0 }])).toThrow('tool "slowLookup" has an invalid timeoutMs 0');
  });

  test('a call an interrupting message may stop is marked: no side effects, or a tool that declares it stops cleanly', () => {
    const tool = (name: string, sideEffects: boolean, cancellable?: boolean) =>
      defineTool({ name, description: name, parameters: z.object({}), sideEffects, ...(cancellable !== undefined ? { cancellable } : {}), execute: async () => 'x' });
    const registry = new ToolRegistry([tool('pure', false), tool('effect', true), tool('stoppable', true, true)]);
    expect(['pure', 'effect', 'stoppable', 'unknown'].map((name) => registry.withHints({ id: 'c', name, arguments: '{}' }).cancellable)).toEqual([true, undefined, true, undefined]);
  });

  test('a model call heartbeats every MODEL_HEARTBEAT_MS, and the worker lets every beat through to the server', async () => {
    // Cancellation (an interrupt) reaches a call on another worker than its run's workflow task only in a heartbeat's
    // reply: beats a second apart left the provider's stream open up to a second after the message (docs/steering.md).
    model.register('beats', [{ text: 'x'.repeat(24), chunkSize: 1, chunkDelayMs: 250 }]);
    const env = modelCallEnv();
    const beats = heartbeatsOf(env);
    await runIn(env, callModel, request('beats'));
    // About 6 s of stream: 7 beats at MODEL_HEARTBEAT_MS (800 ms); 5 or 6 at the old second.
    expect(MODEL_HEARTBEAT_MS).toBeLessThan(1_000);
    expect(beats.length).toBeGreaterThanOrEqual(Math.floor(6_000 / MODEL_HEARTBEAT_MS) - 1);
    const options = agentWorkerOptions({ openai, defaultModel: 'unset', workspace });
    expect(msToNumber(options.maxHeartbeatThrottleInterval!)).toBeLessThan(MODEL_HEARTBEAT_MS);
    const slower = agentWorkerOptions({ openai, defaultModel: 'unset', workspace, modelHeartbeatMs: 1_000 });
    expect(msToNumber(slower.maxHeartbeatThrottleInterval!)).toBeLessThan(1_000);
  });

  test('a call waiting in the fleet budget beats only to be seen alive, not at its text pace', async () => {
    // 400 waiting calls of one tenant beating at the degraded pace (no live stream: 200 ms) were 2,000 heartbeat RPCs a
    // second on the server, which slowed every other tenant (BENCHMARKS.md (i)).
    const port = await freePort();
    const redis = await startRedis(port);
    const budget = await RedisBudget.connect({ url: `redis://127.0.0.1:${port}`, name: 'waiting-beats', tokensPerMinute: 6_000 });
    try {
      expect((await budget.tryAcquire('fill', 6_000, { arrivedMs: Date.now() })).granted).toBe(true);
      const budgeted = createActivities({ openai, defaultModel: 'unset', workspace, budget });
      model.register('waits', [{ text: 'never sent' }]);
      const env = modelCallEnv();
      const beats = heartbeatsOf(env);
      // A call that has waited before waits up to 4 minutes inside the activity: here, until the run cancels it.
      const running = runIn(env, budgeted.callModel, request('waits', { quota: { queuedAt: Date.now() } })).catch((e: unknown) => e);
      await pause(4_000);
      env.cancel();
      expect(await running).toBeInstanceOf(CancelledFailure);
      // A third of the 5 s heartbeat timeout: two beats in 4 s, where the text's degraded pace (no stream) sends 19.
      expect(beats.length).toBeGreaterThanOrEqual(1);
      expect(beats.length).toBeLessThanOrEqual(2);
      expect(model.requests('waits')).toHaveLength(0);
    } finally {
      await budget.close();
      redis.kill('SIGKILL');
    }
  });

  describe('stopped by its run on this worker (ModelCallsInFlight)', () => {
    const execution = { workflowId: 'wf-stop', runId: 'run-stop' };
    const turns: ChatMessage[] = ['sys', 'the task', 'a1', 'u2', 'a3', 'u4'].map((content, i) => ({ role: i === 0 ? 'system' : i % 2 ? 'user' : 'assistant', content }));
    const stoppable = (calls: ModelCallsInFlight, name: string) => {
      model.register(name, [{ text: 'y'.repeat(400), chunkSize: 2, chunkDelayMs: 50 }]);
      const withCalls = createActivities({ openai, defaultModel: 'unset', workspace, callsInFlight: calls });
      const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 5_000, workflowExecution: execution }, quiet);
      const running = runIn(env, answering(withCalls.callModel), request(name, { callNumber: 3 }));
      running.catch(() => undefined);
      return { env, running };
    };
    const streaming = async (name: string, calls: ModelCallsInFlight) => {
      while (!(model.requests(name)[0] && calls.size === 1)) await pause(20);
    };

    test('its stream closes at once; it ends cancelled when Temporal cancels it, not before', async () => {
      const calls = new ModelCallsInFlight();
      const { env, running } = stoppable(calls, 'stop-here');
      await streaming('stop-here', calls);
      // Another run's call, or another call of this run: not this one.
      expect([calls.stop('wf-stop', 'run-other', 3), calls.stop('wf-stop', 'run-stop', 2)]).toEqual([false, false]);
      expect(calls.stop('wf-stop', 'run-stop', 3)).toBe(true);
      let settled = false;
      const settle = () => (settled = true);
      void running.then(settle, settle);
      while (!model.requests('stop-here')[0].closedByClient) await pause(20);
      expect(model.requests('stop-here')[0].completed).toBe(false);
      // Closed, but still waiting for the cancellation its heartbeat will bring: a failure now would be retried.
      await pause(300);
      expect(settled).toBe(false);
      env.cancel('CANCELLED');
      await expect(running).rejects.toBeInstanceOf(CancelledFailure);
      expect([calls.size, calls.stop('wf-stop', 'run-stop', 3)]).toEqual([0, false]);
    });

    test('a stop with no cancellation after it: the call fails, retryable, once the grace has passed', async () => {
      const calls = new ModelCallsInFlight(200);
      const { running } = stoppable(calls, 'stop-no-cancel');
      await streaming('stop-no-cancel', calls);
      calls.stop('wf-stop', 'run-stop', 3);
      const err = await running.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect(err).toMatchObject({ type: 'StoppedWithoutCancellation', nonRetryable: false });
      expect(model.requests('stop-no-cancel')[0]).toMatchObject({ completed: false, closedByClient: true });
    });

    test.each([
      ['the critic', 'stop-critic', criticCall(3), (a: ReturnType<typeof createActivities>, m: string) => a.critiqueAnswer({ model: m, task: 'Add 2 and 2', answer: '4', callNumber: 3 })],
      ['a compaction', 'stop-compaction', COMPACTION_CALL, (a: ReturnType<typeof createActivities>, m: string) => a.compactContext({ model: m, messages: turns, keepRecent: 2 })],
    ] as const)('%s: its request closes at once; it ends cancelled when Temporal cancels it, not before', async (_what, name, key, start) => {
      const calls = new ModelCallsInFlight();
      model.register(name, [{ text: 'never read', firstChunkDelayMs: 20_000 }]);
      const withCalls = createActivities({ openai, defaultModel: 'unset', workspace, callsInFlight: calls });
      const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 5_000, workflowExecution: execution }, quiet);
      const running = env.run(() => start(withCalls, name));
      let settled = false;
      const settle = () => (settled = true);
      running.then(settle, settle);
      while (!(model.requests(name)[0] && calls.size === 1)) await pause(20);
      // Keyed apart from the model call of the same number.
      expect(calls.stop('wf-stop', 'run-stop', 3)).toBe(false);
      expect(calls.stop('wf-stop', 'run-stop', key)).toBe(true);
      while (!model.requests(name)[0].closedByClient) await pause(20);
      await pause(300);
      expect(settled).toBe(false);
      env.cancel('CANCELLED');
      await expect(running).rejects.toBeInstanceOf(CancelledFailure);
      expect([calls.size, model.requests(name)]).toEqual([0, [expect.objectContaining({ completed: false, closedByClient: true })]]);
    });

    test('a call that streamed its whole answer is no longer found', async () => {
      const calls = new ModelCallsInFlight();
      model.register('stop-after', [{ text: 'done' }]);
      const withCalls = createActivities({ openai, defaultModel: 'unset', workspace, callsInFlight: calls });
      const env = new MockActivityEnvironment({ workflowExecution: execution }, quiet);
      await expect(runIn(env, answering(withCalls.callModel), request('stop-after', { callNumber: 3 }))).resolves.toMatchObject({ text: 'done' });
      expect([calls.size, calls.stop('wf-stop', 'run-stop', 3)]).toEqual([0, false]);
    });
  });

  test('streams text and tool calls, collects usage and heartbeats while streaming', async () => {
    // About 2 s of stream: the first heartbeat comes after a second.
    model.register('stream', [{ text: 'Looking.', toolCalls: [{ id: 't1', name: 'readFile', arguments: { path: 'a.txt' } }], chunkSize: 2, chunkDelayMs: 300 }]);
    const env = new MockActivityEnvironment(undefined, quiet);
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => heartbeats.push(d));
    const response = await runIn(env, callModel, request('stream', { tools: ['readFile'] }));
    expect(response).toMatchObject({ text: 'Looking.', toolCalls: [{ id: 't1', name: 'readFile', arguments: '{"path":"a.txt"}' }], finishReason: 'tool_calls' });
    expect(response.usage.totalTokens).toBe(response.usage.promptTokens + response.usage.completionTokens);
    expect(response.usage.completionTokens).toBeGreaterThan(0);
    expect(heartbeats.length).toBeGreaterThan(0);
    const [sent] = model.requests('stream');
    expect(sent.body.tools.map((t: any) => t.function.name)).toEqual(['readFile']);
    expect(sent.body.stream_options).toEqual({ include_usage: true });
  });

  test('its heartbeats carry the text so far (the only road of partial text into Temporal: issue 49); as a local activity it has none; the result carries the whole', async () => {
    const beats = async (isLocal: boolean): Promise<unknown[]> => {
      const name = `beats-${isLocal}`;
      model.register(name, [{ text: 'Some text.', chunkSize: 3, chunkDelayMs: 200 }]);
      const env = new MockActivityEnvironment({ isLocal, heartbeatTimeoutMs: isLocal ? undefined : 5_000 }, quiet);
      const details: unknown[] = [];
      env.on('heartbeat', (d: unknown) => details.push(d));
      const response = await runIn(env, callModel, request(name));
      expect(response.text).toBe('Some text.');
      return details;
    };
    // Streamed for longer than a beat (no channel: every 200 ms): a beat carries a prefix of the answer.
    const texts = (await beats(false)).map((d) => (d as { text?: unknown }).text).filter((t): t is string => typeof t === 'string' && t.length > 0);
    expect(texts.length).toBeGreaterThanOrEqual(1);
    for (const t of texts) expect('Some text.'.startsWith(t)).toBe(true);
    expect(await beats(true)).toEqual([]);
  });

  test('cancellation aborts the HTTP stream', async () => {
    model.register('long', [{ text: 'y'.repeat(500), chunkSize: 1, chunkDelayMs: 50 }]);
    const env = new MockActivityEnvironment(undefined, quiet);
    const running = runIn(env, callModel, request('long'));
    await new Promise((r) => setTimeout(r, 500));
    env.cancel('CANCELLED');
    await expect(running).rejects.toBeInstanceOf(CancelledFailure);
    await new Promise((r) => setTimeout(r, 300));
    expect(model.requests('long')[0]).toMatchObject({ closedByClient: true, completed: false });
  });

  test('a stalled stream is cut and reported as a retryable timeout', async () => {
    model.register('stall', [{ text: 'ab', chunkSize: 1, chunkDelayMs: 3_000 }]);
    const err = await act(callModel, request('stall')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).type).toBe(ModelErrorType.Timeout);
    expect((err as ApplicationFailure).nonRetryable).toBe(false);
  });
});

describe('callModel: runLocalTools', () => {
  test("runs the answer's calls of local tools and answers with their results; side effects, approvals and throws are left to the run", async () => {
    let flakyCalls = 0;
    const flaky = defineTool({
      name: 'flaky',
      description: 'a local tool that asks to be retried',
      parameters: z.object({}),
      sideEffects: false,
      local: true,
      execute: async () => {
        flakyCalls++;
        throw new RetryableToolError('busy');
      },
    });
    const withFlaky = createActivities({ openai, defaultModel: 'unset', workspace, tools: [flaky] });
    model.register('local-calls', [
      {
        toolCalls: [
          { id: 'r1', name: 'readFile', arguments: { path: 'a.txt' } },
          { id: 'r2', name: 'readFile', arguments: { path: 'missing.txt' } },
          { id: 'l1', name: 'listFiles', arguments: {} },
          { id: 'f1', name: 'flaky', arguments: {} },
          { id: 'w1', name: 'writeFile', arguments: { path: 'b.txt', content: 'x' } },
          { id: 'r3', name: 'readFile', arguments: { path: 'b.txt' } },
        ],
      },
    ]);
    const response = await act(answering(withFlaky.callModel), request('local-calls', { runLocalTools: true, approvalTools: ['listFiles'] }));
    expect(response.toolCalls.map((c) => c.id)).toEqual(['r1', 'r2', 'l1', 'f1', 'w1', 'r3']);
    expect(response.toolResults).toEqual([
      { toolCallId: 'r1', name: 'readFile', ok: true, content: 'alpha' },
      { toolCallId: 'r2', name: 'readFile', ok: false, content: expect.stringMatching(/^Error: .*missing\.txt/) },
    ]);
    expect(flakyCalls).toBe(1);
    // writeFile has side effects: it waits for the run's own activity, and the read after it waits for the write.
    expect(existsSync(path.join(workspace, 'b.txt'))).toBe(false);

    model.register('local-calls-off', [{ toolCalls: [{ id: 'r1', name: 'readFile', arguments: { path: 'a.txt' } }] }]);
    expect((await act(callModel, request('local-calls-off'))).toolResults).toBeUndefined();
  });
});

describe('callModel: the tool policy', () => {
  test("the plugin's policy decides before local tools run: a rewrite runs, a denial, a throw and nonsense do not", async () => {
    writeFileSync(path.join(workspace, 'b.txt'), 'beta');
    const policy: ToolPolicy = (call) => {
      if (call.id === 'rw') return { action: 'rewrite', arguments: { path: 'b.txt' }, reason: 'b instead' };
      if (call.id === 'dn') return { action: 'deny', message: 'No reading.' };
      if (call.id === 'th') throw new Error('policy service down');
      if (call.id === 'ns') return { action: 'maybe' } as unknown as ToolPolicyDecision;
      return { action: 'allow' };
    };
    const plugin = agentPlugin({ openai, llm: { model: 'unset' }, workspace, toolPolicy: policy, dataConverter: false });
    // workflowsPath given: the plugin bundles no workflow code for this test.
    const fromPlugin = plugin.configureWorker({ taskQueue: 'policy-test', workflowsPath: __filename }).activities as ReturnType<typeof createActivities>;
    model.register('policy-calls', [
      { toolCalls: ['rw', 'dn', 'th', 'ns', 'ok'].map((id) => ({ id, name: 'readFile', arguments: { path: 'a.txt' } })) },
    ]);
    const response = await act(answering(fromPlugin.callModel), request('policy-calls', { runLocalTools: true }));
    expect(response.toolCalls.map((c) => [c.id, c.arguments, c.policy])).toEqual([
      ['rw', '{"path":"b.txt"}', { action: 'rewrite', original: '{"path":"a.txt"}', reason: 'b instead' }],
      ['dn', '{"path":"a.txt"}', { action: 'deny', message: 'No reading.' }],
      ['th', '{"path":"a.txt"}', { action: 'deny', message: 'Not executed: the tool policy failed: policy service down' }],
      ['ns', '{"path":"a.txt"}', { action: 'deny', message: 'Not executed: the tool policy answered {"action":"maybe"}, not allow, deny, approve or rewrite.' }],
      ['ok', '{"path":"a.txt"}', undefined],
    ]);
    expect(response.toolResults).toEqual([
      { toolCallId: 'rw', name: 'readFile', ok: true, content: 'beta' },
      { toolCallId: 'ok', name: 'readFile', ok: true, content: 'alpha' },
    ]);
    // The workspace is shared with the file tools' own test, which lists it.
    rmSync(path.join(workspace, 'b.txt'));
  });
});

describe('callModel: tools checked, output limit, context window', () => {
  test('a run naming tools the worker lacks fails UnknownTool, for good, before any request', async () => {
    model.register('checked', [{ text: 'never sent' }]);
    const err = await act(callModel, request('checked', { checkTools: ['readFile', 'bogusTool', 'otherTool'] })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({
      type: FailureType.UnknownTool,
      nonRetryable: true,
      message: 'unknown tools: bogusTool, otherTool; this worker has: listFiles, readFile, writeFile',
    });
    expect(model.requests('checked')).toEqual([]);
    // Known tools pass the check and the call goes ahead.
    const response = await act(callModel, request('checked', { checkTools: ['readFile', 'writeFile'] }));
    expect(response.text).toBe('never sent');
    expect(model.requests('checked')).toHaveLength(1);
  });

  test('maxOutputTokens goes out as max_tokens; absent, no limit is sent', async () => {
    model.register('limited', [{ text: 'a' }, { text: 'b' }]);
    await act(callModel, request('limited', { maxOutputTokens: 256 }));
    await act(callModel, request('limited'));
    const [limited, unlimited] = model.requests('limited').map((r) => r.body);
    expect(limited.max_tokens).toBe(256);
    expect(limited).not.toHaveProperty('max_completion_tokens');
    expect(unlimited).not.toHaveProperty('max_tokens');
    expect(unlimited).not.toHaveProperty('max_completion_tokens');
  });

  test('an answer cut at the output limit is returned with its finish reason, not thrown', async () => {
    model.register('cut', [{ text: 'half an answ', finishReason: 'length' }]);
    const response = await act(callModel, request('cut', { maxOutputTokens: 3 }));
    expect(response).toMatchObject({ text: 'half an answ', finishReason: 'length', toolCalls: [] });
  });

  test('the context window comes from the worker setting, else the table of known models, else is left out', async () => {
    model.register('gpt-4o-mini', [{ text: 'known' }, { text: 'set' }]);
    model.register('local-gguf', [{ text: 'unknown' }]);
    expect((await act(callModel, request('gpt-4o-mini'))).contextWindowTokens).toBe(128_000);
    expect(await act(callModel, request('local-gguf'))).not.toHaveProperty('contextWindowTokens');
    const configured = createActivities({ openai, defaultModel: 'unset', workspace, contextWindowTokens: 8_192 });
    expect((await act(answering(configured.callModel), request('gpt-4o-mini'))).contextWindowTokens).toBe(8_192);
  });

  test('LLM_CONTEXT_WINDOW_TOKENS is read as a positive whole number', () => {
    expect(llmSettings({ LLM_CONTEXT_WINDOW_TOKENS: ' 32768 ' }).contextWindowTokens).toBe(32_768);
    expect(llmSettings({})).not.toHaveProperty('contextWindowTokens');
    for (const bad of ['8k', '8192.5', '0', '-1', '1e6']) {
      expect(() => llmSettings({ LLM_CONTEXT_WINDOW_TOKENS: bad })).toThrow(`LLM_CONTEXT_WINDOW_TOKENS must be a positive whole number of tokens, got "${bad}"`);
    }
  });
});

describe('tools', () => {
  const run = (name: string, args: unknown, allowed?: string[]) =>
    act(activities.executeTool, { call: { id: 'c', name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }, allowed, callNumber: 1 });

  test('file tools read, write and list inside the workspace', async () => {
    expect(await run('readFile', { path: 'a.txt' })).toEqual({ toolCallId: 'c', name: 'readFile', ok: true, content: 'alpha' });
    expect((await run('writeFile', { path: 'sub/b.txt', content: 'beta' })).content).toBe('wrote 4 bytes to sub/b.txt');
    expect((await run('listFiles', { path: '.' })).content).toBe('a.txt\nsub/');
    expect((await run('listFiles', {})).content).toBe('a.txt\nsub/');
  });

  test.each([
    ['unknown tool', 'deleteAll', {}, /^Error: unknown tool "deleteAll"\. Available tools: listFiles, readFile, writeFile\.$/],
    ['malformed JSON', 'readFile', '{"path": ', /^Error: the arguments are not valid JSON/],
    ['missing field', 'readFile', {}, /^Error: invalid arguments for readFile: path: /],
    ['wrong type', 'readFile', { path: 3 }, /^Error: invalid arguments for readFile: path: Invalid input: expected string/],
    ['missing file', 'readFile', { path: 'nope.txt' }, /^Error: .*ENOENT/],
    ['parent escape', 'readFile', { path: '../etc/passwd' }, /^Error: path leaves the workspace: \.\.\/etc\/passwd$/],
    ['absolute path', 'readFile', { path: '/etc/passwd' }, /^Error: absolute paths are not allowed: \/etc\/passwd$/],
    ['over-long path', 'readFile', { path: 'a'.repeat(2_000) }, /^Error: invalid arguments for readFile: path: Too big/],
  ])('%s goes back to the model as an error result', async (_name, tool, args, expected) => {
    const result = await run(tool, args);
    expect(result.ok).toBe(false);
    expect(result.content).toMatch(expected);
  });

  test('a tool the run does not allow is unknown to it', async () => {
    const result = await run('writeFile', { path: 'x', content: 'y' }, ['readFile']);
    expect(result).toMatchObject({ ok: false, content: 'Error: unknown tool "writeFile". Available tools: readFile.' });
  });

  test('symlinks cannot lead out of the workspace', async () => {
    const outside = mkdtempSync(path.join(os.tmpdir(), 'outside-'));
    writeFileSync(path.join(outside, 'secret.txt'), 'secret');
    symlinkSync(outside, path.join(workspace, 'escape'));
    mkdirSync(path.join(workspace, 'inner'), { recursive: true });
    symlinkSync(path.join(workspace, 'a.txt'), path.join(workspace, 'inner', 'link.txt'));
    await expect(resolveInWorkspace(workspace, 'escape/secret.txt')).rejects.toThrow('path leaves the workspace through a symbolic link');
    await expect(resolveInWorkspace(workspace, 'escape/new.txt')).rejects.toThrow('symbolic link');
    expect((await run('readFile', { path: 'inner/link.txt' })).content).toBe('alpha');
    expect((await run('writeFile', { path: 'escape/x.txt', content: 'no' })).ok).toBe(false);
    expect((await run('readFile', { path: 'escape/secret.txt' })).content).toMatch(/^Error: path leaves the workspace through a symbolic link/);
  });

  test('a dangling symlink cannot be written through to outside the workspace', async () => {
    const outside = mkdtempSync(path.join(os.tmpdir(), 'outside-'));
    symlinkSync(path.join(outside, 'planted.txt'), path.join(workspace, 'dangling'));
    const result = await run('writeFile', { path: 'dangling', content: 'no' });
    expect(result).toMatchObject({ ok: false, content: expect.stringMatching(/^Error: .*ENOENT/) });
    expect(existsSync(path.join(outside, 'planted.txt'))).toBe(false);
  });

  test('a workspace removed after a read reads as missing until a write makes it again', async () => {
    const own = mkdtempSync(path.join(os.tmpdir(), 'agent-root-'));
    const tools = createActivities({ openai, defaultModel: 'unset', workspace: own });
    const call = (name: string, args: unknown) => act(tools.executeTool, { call: { id: 'c', name, arguments: JSON.stringify(args) }, callNumber: 1 });
    writeFileSync(path.join(own, 'x.txt'), 'one');
    expect((await call('readFile', { path: 'x.txt' })).content).toBe('one');
    rmSync(own, { recursive: true });
    expect(await call('readFile', { path: 'x.txt' })).toMatchObject({ ok: false, content: expect.stringMatching(/^Error: .*ENOENT/) });
    expect((await call('writeFile', { path: 'x.txt', content: 'two' })).ok).toBe(true);
    expect((await call('readFile', { path: 'x.txt' })).content).toBe('two');
  });

  describe('a slow tool', () => {
    let aborted: boolean[];
    const slowTools = () => {
      aborted = [];
      return createActivities({
        openai,
        defaultModel: 'unset',
        workspace,
        tools: [
          defineTool({
            name: 'slowCheck',
            description: 'takes 10 s unless cancelled',
            parameters: z.object({}),
            sideEffects: false,
            timeoutMs: 60_000,
            execute: (_args, { signal }) =>
              waitUnlessAborted(10_000, 'checked', { signal }).catch((err: unknown) => {
                aborted.push(signal.aborted);
                throw err;
              }),
          }),
          // Ignores its signal: the activity must still end when cancelled.
          defineTool({ name: 'deafCheck', description: 'takes 10 s', parameters: z.object({}), sideEffects: false, execute: () => pause(10_000).then(() => 'late') }),
        ],
      });
    };
    const call = (name: string) => ({ call: { id: 's1', name, arguments: '{}' }, callNumber: 3 });

    test('heartbeats while it works, and its signal aborts within a second of cancellation', async () => {
      const tools = slowTools();
      const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 30_000 }, quiet);
      const beats = heartbeatsOf(env);
      const running = runIn(env, tools.executeTool, call('slowCheck'));
      await pause(2_300);
      expect(beats.length).toBeGreaterThanOrEqual(2);
      expect(beats[0]).toMatchObject({ tool: 'slowCheck', callNumber: 3 });
      const tookMs = await cancelAfterFirstHeartbeat(env, beats, running);
      expect(aborted).toEqual([true]);
      expect(tookMs).toBeLessThan(1_000);
    });

    test('a tool that ignores its signal still ends as cancelled at once', async () => {
      const tools = slowTools();
      const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 30_000 }, quiet);
      const beats = heartbeatsOf(env);
      const running = runIn(env, tools.executeTool, call('deafCheck'));
      expect(await cancelAfterFirstHeartbeat(env, beats, running)).toBeLessThan(1_000);
    });
  });

  test('tool output is bounded and retryable errors are left to Temporal', async () => {
    const registry = new ToolRegistry([
      defineTool({ name: 'big', description: 'big', parameters: z.object({}), sideEffects: false, execute: async () => 'z'.repeat(MAX_TOOL_OUTPUT_CHARS + 5) }),
      defineTool({ name: 'flaky', description: 'flaky', parameters: z.object({}), sideEffects: false, execute: async () => { throw new RetryableToolError('try later'); } }),
    ]);
    const ctx = { idempotencyKey: 'k', signal: new AbortController().signal };
    const big = await registry.run({ id: '1', name: 'big', arguments: '{}' }, ctx);
    expect(big.content).toHaveLength(MAX_TOOL_OUTPUT_CHARS + '\n[output truncated: 5 more characters]'.length);
    await expect(registry.run({ id: '2', name: 'flaky', arguments: '{}' }, ctx)).rejects.toThrow('try later');
    expect(() => new ToolRegistry([...fileTools(workspace), ...fileTools(workspace)])).toThrow('tool "listFiles" is registered twice');
  });
});

describe('compaction', () => {
  const history = (n: number): ChatMessage[] => [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'the task' },
    ...Array.from({ length: n }, (_, i): ChatMessage => (i % 2 ? { role: 'user', content: `u${i} ${'w'.repeat(300)}` } : { role: 'assistant', content: `a${i}` })),
  ];

  test('keeps system, task and recent turns and summarises the rest', async () => {
    model.register('summariser', ({ request }) => ({ text: `S(${request.messages[1].content.length})` }));
    const deps = createActivities({ openai, defaultModel: 'summariser', workspace });
    const messages = history(40);
    const result = await act(deps.compactContext, { messages, keepRecent: 4 });
    expect(result.summarizedMessages).toBe(36);
    expect(result.messages.slice(0, 2)).toEqual(messages.slice(0, 2));
    expect(result.messages[2].content).toMatch(/^Summary of the earlier conversation:\nS\(/);
    expect(result.messages.slice(3)).toEqual(messages.slice(-4));
    expect(model.requests('summariser').length).toBe(1);
  });

  test('halves the chunk when a chunk overflows the model and still converges', async () => {
    model.register('tight', ({ request }) =>
      request.messages[1].content.length > 3_000
        ? { error: { status: 400, message: 'too long', code: 'context_length_exceeded' } }
        : { text: 'short summary' },
    );
    const deps = createActivities({ openai, defaultModel: 'tight', workspace });
    const result = await act(deps.compactContext, { messages: history(60), keepRecent: 4 });
    expect(result.messages[2].content).toBe('Summary of the earlier conversation:\nshort summary');
    const sent = model.requests('tight').map((r) => r.body.messages[1].content as string);
    expect(sent.some((c) => c.length > 3_000)).toBe(true); // overflowed first
    expect(sent.filter((c) => c.length <= 3_000 && !c.startsWith('short summary')).length).toBeGreaterThan(1); // then several chunks
    expect(sent.at(-1)).toMatch(/^short summary\nshort summary/); // and the summaries summarised
  });

  test('heartbeats while a slow summary is written, and returns its usage', async () => {
    model.register('slow-summariser', [{ text: 'slow summary', firstChunkDelayMs: 2_500, usage: { prompt_tokens: 40, completion_tokens: 3 } }]);
    const deps = createActivities({ openai, defaultModel: 'slow-summariser', workspace });
    const env = modelCallEnv();
    const beats = heartbeatsOf(env);
    const result = await runIn(env, deps.compactContext, { messages: history(10), keepRecent: 4 });
    expect(result.messages[2].content).toBe('Summary of the earlier conversation:\nslow summary');
    expect(result.usage).toEqual({ promptTokens: 40, completionTokens: 3, totalTokens: 43 });
    expect(beats.length).toBeGreaterThanOrEqual(2);
    expect(beats[0]).toEqual({ round: 0, done: 0 });
  });

  test('a cancellation while the summary is awaited aborts the HTTP request within a second', async () => {
    model.register('stuck-summariser', [{ text: 'never read', firstChunkDelayMs: 20_000 }]);
    const deps = createActivities({ openai, defaultModel: 'stuck-summariser', workspace });
    const env = modelCallEnv();
    const beats = heartbeatsOf(env);
    const running = runIn(env, deps.compactContext, { messages: history(10), keepRecent: 4 });
    expect(await cancelAfterFirstHeartbeat(env, beats, running)).toBeLessThan(1_000);
    await pause(200);
    expect(model.requests('stuck-summariser')).toEqual([expect.objectContaining({ closedByClient: true, completed: false })]);
  });

  test("a what-if fork's recorded summaries answer the same requests without sending them; a changed chunk is sent", async () => {
    model.register('recorded-summariser', ({ request }) => ({ text: `S(${request.messages[1].content.length})`, usage: { prompt_tokens: 20, completion_tokens: 2 } }));
    const compactContext = createCompactContext({ openai, defaultModel: 'recorded-summariser', chunkChars: 3_000 });
    const messages = history(40);
    const first = await act(compactContext, { messages, keepRecent: 4 });
    const sent = model.requests('recorded-summariser').length;
    expect(sent).toBeGreaterThan(2); // several chunks, then their summaries summarised
    expect(Object.keys(first.summaries ?? {})).toHaveLength(sent);
    expect(first.replayed).toBeUndefined();
    const replay = Object.fromEntries(Object.entries(first.summaries!).map(([hash, summary]) => [hash, { summary }]));

    const again = await act(compactContext, { messages, keepRecent: 4, replay });
    expect(model.requests('recorded-summariser')).toHaveLength(sent);
    expect(again).toEqual({ ...first, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, replayed: true });

    // The last older message changed: its chunk, and the summary of the summaries, are new requests; the other chunks are not.
    const changed = messages.map((m, i) => (i === messages.length - 5 ? { ...m, content: `${m.content} and more` } : m)) as ChatMessage[];
    const edited = await act(compactContext, { messages: changed, keepRecent: 4, replay });
    expect(model.requests('recorded-summariser')).toHaveLength(sent + 2);
    expect(edited.replayed).toBeUndefined();
    expect(edited.usage.totalTokens).toBe(44);
  });

  test('chunking and the recent window never split a tool call from its results', () => {
    expect(chunkTranscript(['aaaa', 'bbbb', 'cccc'], 9)).toEqual(['aaaa\nbbbb', 'cccc']);
    expect(chunkTranscript(['x'.repeat(50)], 30)[0]).toHaveLength(30);
    const msgs: ChatMessage[] = [
      { role: 'system', content: 's' },
      { role: 'user', content: 't' },
      { role: 'assistant', content: null, toolCalls: [{ id: '1', name: 'a', arguments: '{}' }, { id: '2', name: 'a', arguments: '{}' }] },
      { role: 'tool', toolCallId: '1', content: 'r1' },
      { role: 'tool', toolCallId: '2', content: 'r2' },
      { role: 'assistant', content: 'done' },
    ];
    expect(recentStart(msgs, 2, 2)).toBe(2);
  });
});

describe('model critic', () => {
  const critique = (model: string): CritiqueRequest => ({ model, task: 'Add 2 and 2', answer: '4', callNumber: 2 });
  const verdict = (extra: object = {}) => ({ text: JSON.stringify({ action: 'complete', reason: 'the sum is right', confidence: 0.9 }), ...extra });
  const formatOf = (r: { body: any }) => r.body.response_format?.type ?? 'plain';

  test('asks for a strict JSON schema, heartbeats while the verdict is awaited, and returns the verdict with its usage', async () => {
    model.register('slow-critic', [verdict({ firstChunkDelayMs: 2_500, usage: { prompt_tokens: 50, completion_tokens: 12 } })]);
    const env = modelCallEnv();
    const beats = heartbeatsOf(env);
    const outcome = await runIn(env, activities.critiqueAnswer, critique('slow-critic'));
    expect(outcome).toEqual({ action: 'complete', reason: 'the sum is right', confidence: 0.9, usage: { promptTokens: 50, completionTokens: 12, totalTokens: 62 }, requestHash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(beats.length).toBeGreaterThanOrEqual(2);
    expect(beats[0]).toEqual({ callNumber: 2, format: 'json_schema' });
    const [sent] = model.requests('slow-critic');
    expect(sent.stream).toBe(false);
    expect(sent.body.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'critique', strict: true, schema: { required: ['action', 'reason', 'confidence'], additionalProperties: false } },
    });
  });

  test('a cancellation while the verdict is awaited aborts the HTTP request within a second', async () => {
    model.register('stuck-critic', [verdict({ firstChunkDelayMs: 20_000 })]);
    const env = modelCallEnv();
    const beats = heartbeatsOf(env);
    const running = runIn(env, activities.critiqueAnswer, critique('stuck-critic'));
    expect(await cancelAfterFirstHeartbeat(env, beats, running)).toBeLessThan(1_000);
    await pause(200);
    expect(model.requests('stuck-critic')).toEqual([expect.objectContaining({ closedByClient: true, completed: false })]);
  });

  test('falls back json_schema -> json_object -> plain on 400s about response_format, and remembers it per model', async () => {
    // Refusals as providers word them: vLLM/OpenAI-style for json_schema, a proxy's for JSON mode.
    const picky = ({ request }: { request: any }) => {
      if (request.response_format?.type === 'json_schema') return { error: { status: 400, message: "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model." } };
      if (request.response_format?.type === 'json_object') return { error: { status: 400, message: 'json_object response format is not supported', code: 'invalid_request' } };
      return verdict({ usage: { prompt_tokens: 30, completion_tokens: 10 } });
    };
    model.register('plain-only', picky);
    const critic = createActivities({ openai, defaultModel: 'unset', workspace });
    const first = await act(critic.critiqueAnswer, critique('plain-only'));
    expect(first).toMatchObject({ action: 'complete', usage: { promptTokens: 30, completionTokens: 10, totalTokens: 40 } });
    expect(model.requests('plain-only').map(formatOf)).toEqual(['json_schema', 'json_object', 'plain']);
    // The worker remembers: the next critique of this model asks plainly at once.
    await act(critic.critiqueAnswer, critique('plain-only'));
    expect(model.requests('plain-only').map(formatOf)).toEqual(['json_schema', 'json_object', 'plain', 'plain']);

    // A provider with JSON mode but no schemas stops at json_object; another model starts from the top again.
    model.register('json-mode', ({ request }) => (request.response_format?.type === 'json_schema' ? picky({ request }) : verdict()));
    await act(critic.critiqueAnswer, critique('json-mode'));
    await act(critic.critiqueAnswer, critique('json-mode'));
    expect(model.requests('json-mode').map(formatOf)).toEqual(['json_schema', 'json_object', 'json_object']);
  });

  test("a what-if fork's recorded decision answers the same request without sending it; another request is sent", async () => {
    model.register('recorded-critic', () => verdict({ usage: { prompt_tokens: 30, completion_tokens: 10 } }));
    const first = await act(activities.critiqueAnswer, critique('recorded-critic'));
    const { requestHash } = first;
    expect(requestHash).toMatch(/^[0-9a-f]{64}$/);
    const replay = { [requestHash!]: { critique: { action: 'retry' as const, reason: 'recorded', confidence: 70 } } };
    // The recorded decision, not the provider's (which would say complete): nothing sent, no tokens.
    expect(await act(activities.critiqueAnswer, { ...critique('recorded-critic'), replay })).toEqual({
      action: 'retry',
      reason: 'recorded',
      confidence: 70,
      usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
      requestHash,
      replayed: true,
    });
    expect(model.requests('recorded-critic')).toHaveLength(1);
    const other = await act(activities.critiqueAnswer, { ...critique('recorded-critic'), answer: '5', replay });
    expect(other).toMatchObject({ action: 'complete', usage: { totalTokens: 40 } });
    expect(other.replayed).toBeUndefined();
    expect(other.requestHash).not.toBe(requestHash);
    expect(model.requests('recorded-critic')).toHaveLength(2);
  });

  test('a 400 about something else is not a format refusal: it fails at once, classified', async () => {
    model.register('bad-critic', [{ error: { status: 400, message: 'messages: too many' } }]);
    const err = await act(activities.critiqueAnswer, critique('bad-critic')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).nonRetryable).toBe(true);
    expect(model.requests('bad-critic').map(formatOf)).toEqual(['json_schema']);
  });

  test('a confidence is on the 0-100 scale, a 1 being 1%; above 100 is no decision', async () => {
    model.register('percent-critic', [{ text: JSON.stringify({ action: 'complete', reason: 'right', confidence: 85 }) }, { text: JSON.stringify({ action: 'complete', reason: 'right', confidence: 1 }) }, { text: JSON.stringify({ action: 'complete', reason: 'right', confidence: 120 }) }]);
    expect(await act(activities.critiqueAnswer, critique('percent-critic'))).toMatchObject({ action: 'complete', confidence: 85 });
    expect(await act(activities.critiqueAnswer, critique('percent-critic'))).toMatchObject({ confidence: 1 });
    expect(await act(activities.critiqueAnswer, critique('percent-critic')).catch((e: unknown) => e)).toMatchObject({ type: 'CritiqueUnparsable' });
  });

  test('an answer that is not a decision fails without retries', async () => {
    model.register('rambling-critic', [{ text: 'Looks fine to me!' }]);
    const err = await act(activities.critiqueAnswer, critique('rambling-critic')).catch((e: unknown) => e);
    expect(err).toMatchObject({ type: 'CritiqueUnparsable', nonRetryable: true });
  });
});

describe('requestHash', () => {
  /** The hash's definition, as it was first written (issue 51): runs recorded then must still match. */
  const reference = (value: unknown): string => {
    if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : reference(v))).join(',')}]`;
    if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
      return `{${entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`;
    }
    return JSON.stringify(value);
  };
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

  test('is the SHA-256 of the canonical request, for message objects it has hashed before too', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You help.' },
      { content: 'quote " and é, \u2028', role: 'user' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'readFile', arguments: '{"path":"a.txt"}' }] },
      { role: 'tool', toolCallId: 'c1', content: 'contents' },
    ];
    const first = { model: 'm', messages, tools: ['readFile'], maxOutputTokens: null };
    expect(requestHash(first)).toBe(sha256(reference(first)));
    // The next call: the same message objects (a run's conversation in memory), one more, another output limit.
    const next = { model: 'm', messages: [...messages, { role: 'user' as const, content: 'go on' }], tools: null, maxOutputTokens: 64 };
    expect(requestHash(next)).toBe(sha256(reference(next)));
    expect(requestHash(next)).not.toBe(requestHash(first));
    // A critic's request with the same messages is another request.
    const critic = { ...first, kind: 'critic' as const };
    expect(requestHash(critic)).toBe(sha256(reference(critic)));
    expect(requestHash(critic)).not.toBe(requestHash(first));
    // Equal messages that are other objects hash alike.
    expect(requestHash({ ...first, messages: structuredClone(messages) })).toBe(requestHash(first));
  });

  test('going on from a base conversation it hashed gives the hash of the whole', () => {
    const sha = (request: Parameters<typeof requestHash>[0]) => sha256(reference(request));
    const base: ChatMessage[] = [{ role: 'system', content: 'You help.' }, { role: 'user', content: 'read a.txt' }];
    const first = { model: 'm', messages: base, tools: ['readFile'], maxOutputTokens: null };
    expect(requestHash(first)).toBe(sha(first));
    // As a model call's chain goes on: its base's messages, then the new ones, a call after another.
    let conversation = base;
    for (let call = 0; call < 3; call++) {
      const next = conversation.concat([{ role: 'assistant', content: `answer ${call}` }, { role: 'user', content: `more ${call}` }]);
      const request = { ...first, messages: next };
      expect(requestHash(request, conversation)).toBe(sha(request));
      conversation = next;
    }
    // Another request around the same base (another output limit, a critic's): its own text around the messages.
    const other = { ...first, kind: 'critic' as const, maxOutputTokens: 32, messages: conversation.concat([{ role: 'user', content: 'judge' }]) };
    expect(requestHash(other, conversation)).toBe(sha(other));
    // A base that grew after it was hashed, or is not where the messages begin, is hashed whole.
    const grown = [...base];
    requestHash({ ...first, messages: grown });
    grown.push({ role: 'user', content: 'added later' });
    const afterGrown = { ...first, messages: grown.concat([{ role: 'user', content: 'then this' }]) };
    expect(requestHash(afterGrown, grown)).toBe(sha(afterGrown));
    const elsewhere = { ...first, messages: [{ role: 'user' as const, content: 'unrelated' }] };
    expect(requestHash(elsewhere, conversation)).toBe(sha(elsewhere));
  });
});
