/** Activities in a mock activity context, against the scripted model over real HTTP with the real `openai` client. */
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CancelledFailure } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import { z } from 'zod';
import { createActivities } from '../src/activities';
import { chunkTranscript, recentStart } from '../src/activities/compaction';
import { classifyModelError, ModelErrorType, retryAfterMs } from '../src/activities/errors';
import { fileTools, resolveInWorkspace } from '../src/activities/tools/files';
import { defineTool, MAX_TOOL_OUTPUT_CHARS, RetryableToolError, ToolRegistry } from '../src/activities/tools/registry';
import type { ChatMessage, ModelRequest } from '../src/common/chat';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { openAIClient } from '../src/worker';

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

/** Run an activity in a fresh mock context, keeping its result type. */
const runIn = <P extends unknown[], R>(env: MockActivityEnvironment, fn: (...args: P) => Promise<R>, ...args: P): Promise<R> =>
  env.run<P, R, typeof fn>(fn, ...args);
const act = <P extends unknown[], R>(fn: (...args: P) => Promise<R>, ...args: P) => runIn(new MockActivityEnvironment(), fn, ...args);

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
  const err = await act(activities.callModel, request(name)).catch((e: unknown) => e);
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
    const env = new MockActivityEnvironment();
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => heartbeats.push(d));
    const response = await runIn(env, activities.callModel, request('quick'));
    expect(heartbeats).toEqual([]);
    // listFiles is registered `local` and has no side effects; writeFile has side effects.
    expect(response.toolCalls).toEqual([
      { id: 'q1', name: 'listFiles', arguments: '{}', local: true },
      { id: 'q2', name: 'writeFile', arguments: '{"path":"b","content":"c"}' },
    ]);
  });

  test('streams text and tool calls, collects usage and heartbeats while streaming', async () => {
    // About 2 s of stream: the first heartbeat comes after a second.
    model.register('stream', [{ text: 'Looking.', toolCalls: [{ id: 't1', name: 'readFile', arguments: { path: 'a.txt' } }], chunkSize: 2, chunkDelayMs: 300 }]);
    const env = new MockActivityEnvironment();
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => heartbeats.push(d));
    const response = await runIn(env, activities.callModel, request('stream', { tools: ['readFile'] }));
    expect(response).toMatchObject({ text: 'Looking.', toolCalls: [{ id: 't1', name: 'readFile', arguments: '{"path":"a.txt"}' }], finishReason: 'tool_calls' });
    expect(response.usage.totalTokens).toBe(response.usage.promptTokens + response.usage.completionTokens);
    expect(response.usage.completionTokens).toBeGreaterThan(0);
    expect(heartbeats.length).toBeGreaterThan(0);
    const [sent] = model.requests('stream');
    expect(sent.body.tools.map((t: any) => t.function.name)).toEqual(['readFile']);
    expect(sent.body.stream_options).toEqual({ include_usage: true });
  });

  test('cancellation aborts the HTTP stream', async () => {
    model.register('long', [{ text: 'y'.repeat(500), chunkSize: 1, chunkDelayMs: 50 }]);
    const env = new MockActivityEnvironment();
    const running = runIn(env, activities.callModel, request('long'));
    await new Promise((r) => setTimeout(r, 500));
    env.cancel('CANCELLED');
    await expect(running).rejects.toBeInstanceOf(CancelledFailure);
    await new Promise((r) => setTimeout(r, 300));
    expect(model.requests('long')[0]).toMatchObject({ closedByClient: true, completed: false });
  });

  test('a stalled stream is cut and reported as a retryable timeout', async () => {
    model.register('stall', [{ text: 'ab', chunkSize: 1, chunkDelayMs: 3_000 }]);
    const err = await act(activities.callModel, request('stall')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).type).toBe(ModelErrorType.Timeout);
    expect((err as ApplicationFailure).nonRetryable).toBe(false);
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
