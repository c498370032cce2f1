/**
 * Fault tolerance end to end: each provider or stream fault the scripted model can inject, on the real dev server,
 * and the run's outcome. Model calls retry from 1 s, doubling, 6 attempts (agent-run.ts); errors.ts classifies.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { AgentClient } from '../src/client';
import { stateQuery } from '../src/common/messages';
import type { ScriptStep } from '../src/scripted-model';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { failureOf } from './support/failures';

const IDLE_TIMEOUT_MS = 1_500;
/** The retry policy's first interval. */
const INITIAL_RETRY_MS = 1_000;
/** Longer than the first interval, so a wait this long was timed by the provider; the server waits at least ~1 s anyway. */
const RETRY_AFTER_MS = 1_800;
const FILES = ['one.txt', 'two.txt', 'three.txt', 'four.txt'];

let h: AgentHarness;
beforeAll(async () => {
  const files = Object.fromEntries(FILES.map((name) => [name, `contents of ${name}\n`]));
  h = await startAgentHarness(files, { streamIdleTimeoutMs: IDLE_TIMEOUT_MS });
}, 120_000);
afterAll(async () => h?.close());

const toolMessages = (request: any) => request.messages.filter((m: any) => m.role === 'tool');
const gaps = (name: string) => {
  const times = h.model.requests(name).map((r) => r.receivedAt);
  return times.slice(1).map((t, i) => t - times[i]);
};


/** Each finished activity of this type: its last attempt and the failure of the attempt before, from the history. */
async function activityAttempts(
  handle: WorkflowHandle,
  activityType: 'callModel' | 'executeTool' = 'callModel',
): Promise<Array<{ attempt: number; lastFailure?: { message: string; type: string } }>> {
  const events = (await handle.fetchHistory()).events ?? [];
  const names = new Map<string, string>();
  const attempts = [];
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) names.set(String(event.eventId), scheduled.activityType?.name ?? '');
    const started = event.activityTaskStartedEventAttributes;
    if (started && names.get(String(started.scheduledEventId)) === activityType) {
      const failure = started.lastFailure;
      attempts.push({
        attempt: started.attempt ?? 0,
        ...(failure ? { lastFailure: { message: failure.message ?? '', type: failure.applicationFailureInfo?.type ?? '' } } : {}),
      });
    }
  }
  return attempts;
}

test('a 429 in the middle of a run waits for retry-after-ms, not the backoff, and the run completes', async () => {
  h.model.register('limited-mid-run', [
    { toolCalls: [{ name: 'listFiles', arguments: {} }] },
    { error: { status: 429, message: 'Rate limit reached', code: 'rate_limit_exceeded', headers: { 'retry-after-ms': String(RETRY_AFTER_MS) } } },
    { text: 'listed after the wait' },
  ]);
  const handle = await h.start({ prompt: 'List the files', model: 'limited-mid-run' });
  const result = await handle.result();

  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'listed after the wait', toolCalls: 1 });
  expect(result.usage.modelCalls).toBe(2);
  const [, limited, retried] = h.model.requests('limited-mid-run');
  expect(retried.body.messages).toEqual(limited.body.messages);
  const [, wait] = gaps('limited-mid-run');
  expect(wait).toBeGreaterThanOrEqual(RETRY_AFTER_MS - 50);
  expect(wait).toBeLessThan(RETRY_AFTER_MS + 1_000);
  expect((await activityAttempts(handle))[1]).toEqual({
    attempt: 2,
    lastFailure: { message: expect.stringMatching(/^rate limited by the model provider \(429 rate_limit_exceeded/), type: 'ModelInvocationError.RateLimit' },
  });
});

test('while a 429 is waited out, state shows the retry: the attempt, the failure and when the next attempt starts', async () => {
  h.model.register('limited-visible', [
    { error: { status: 429, message: 'Rate limit reached', code: 'rate_limit_exceeded', headers: { 'retry-after-ms': '4000' } } },
    { text: 'answered after the wait' },
  ]);
  const handle = await h.start({ prompt: 'hi', model: 'limited-visible' });
  const run = new AgentClient(h.env.client, h.taskQueue).handle(handle.workflowId);
  const seen = await waitFor(async () => {
    const view = await run.state();
    return view.retrying?.length ? view : undefined;
  }, 10_000, 'the retry in state');
  expect(seen.state).toBe('STREAMING');
  expect(seen.retrying).toEqual([
    {
      activity: 'callModel',
      attempt: 2,
      lastFailure: { type: 'ModelInvocationError.RateLimit', message: expect.stringMatching(/^rate limited by the model provider \(429 rate_limit_exceeded/) },
      nextAttemptAt: expect.any(String),
    },
  ]);
  expect(Date.parse(seen.retrying![0].nextAttemptAt!)).toBeGreaterThan(Date.now() - 1_000);
  expect(await handle.result()).toMatchObject({ status: 'COMPLETED', answer: 'answered after the wait' });
  // Once the call has answered, nothing is being retried.
  expect((await run.state()).retrying).toBeUndefined();
});

test.each([500, 502, 503])('a %i is retried once after the backoff and the run completes', async (status) => {
  const name = `server-error-${status}`;
  h.model.register(name, [{ error: { status, message: `scripted ${status}` } }, { text: `answered after a ${status}` }]);
  const result = await (await h.start({ prompt: 'hi', model: name })).result();

  expect(result).toMatchObject({ status: 'COMPLETED', answer: `answered after a ${status}` });
  expect(h.model.requests(name)).toHaveLength(2);
  expect(gaps(name)[0]).toBeGreaterThanOrEqual(INITIAL_RETRY_MS - 50);
});

test('a connection reset mid-stream is retried; the partial text restarts with attempt 2 and the run completes', async () => {
  const text = 'A streamed answer that is cut off by a connection reset the first time it is sent.';
  h.model.register('reset', [
    { text, chunkSize: 4, chunkDelayMs: 60, resetAfterChunks: 6 },
    { text, chunkSize: 4, chunkDelayMs: 60 },
  ]);
  const handle = await h.start({ prompt: 'Say it', model: 'reset' });

  const first = await h.waitForState(handle, (s) => s.stream?.attempt === 1 && s.partialText.length > 0);
  expect(text.startsWith(first.partialText)).toBe(true);
  // Attempt 2's text replaces attempt 1's instead of being appended to it.
  const second = await h.waitForState(handle, (s) => s.stream?.attempt === 2 && s.partialText.length > 0);
  expect(text.startsWith(second.partialText)).toBe(true);

  const result = await handle.result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: text });
  expect(result.usage.modelCalls).toBe(1);
  const state = await handle.query(stateQuery);
  expect(state.stream).toEqual({ callNumber: 1, attempt: 2 });
  expect(state.partialText).toBe(text);
  expect(state.transitions.map((t) => t.to)).toEqual(['STREAMING', 'PROCESSING', 'CRITIQUE', 'COMPLETED']);
  expect(h.model.requests('reset').map((r) => [r.fault, r.completed])).toEqual([['reset', false], [undefined, true]]);
  // undici's error for a cut body, read by its message even when it comes from another realm: a dropped connection.
  expect(await activityAttempts(handle)).toEqual([
    { attempt: 2, lastFailure: { message: 'connection to the model dropped mid-response: terminated', type: 'ModelInvocationError.Connection' } },
  ]);
});

test('a stream that ends cleanly but early is not taken for an answer: it is retried and the run completes', async () => {
  const text = 'An answer that a proxy cuts short the first time, without an error.';
  h.model.register('truncated', [
    { text, chunkSize: 5, endAfterChunks: 3 },
    { text, chunkSize: 5 },
  ]);
  const handle = await h.start({ prompt: 'Say it', model: 'truncated' });
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: text });
  expect(h.model.requests('truncated').map((r) => [r.fault, r.completed])).toEqual([['truncate', false], [undefined, true]]);
  expect(await activityAttempts(handle)).toEqual([
    { attempt: 2, lastFailure: { message: "the model's stream ended without finishing (after 15 characters)", type: 'ModelInvocationError.Connection' } },
  ]);
});

test('a stalled stream is cut by the idle timeout and retried, and the run completes', async () => {
  const text = 'This answer stalls after two chunks the first time.';
  h.model.register('stall', [{ text, chunkSize: 4, stallAfterChunks: 2 }, { text }]);
  const handle = await h.start({ prompt: 'Say it', model: 'stall' });
  const result = await handle.result();

  expect(result).toMatchObject({ status: 'COMPLETED', answer: text });
  const [stalled, retried] = h.model.requests('stall');
  expect(stalled).toMatchObject({ fault: 'stall', completed: false, closedByClient: true });
  expect(retried).toMatchObject({ completed: true });
  // Idle timeout, then the first backoff interval; far sooner than the 15 s heartbeat timeout.
  const [wait] = gaps('stall');
  expect(wait).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS + INITIAL_RETRY_MS - 100);
  expect(wait).toBeLessThan(IDLE_TIMEOUT_MS + INITIAL_RETRY_MS + 2_000);
  expect(await activityAttempts(handle)).toEqual([
    { attempt: 2, lastFailure: { message: `no data from the model for ${IDLE_TIMEOUT_MS} ms`, type: 'ModelInvocationError.Timeout' } },
  ]);
}, 20_000);

test('malformed tool-call JSON goes back to the model as a tool result, and the run completes', async () => {
  h.model.register('malformed', ({ request, callIndex }): ScriptStep => {
    // writeFile: a task-queue activity, whose attempts history shows (readFile would run as a local activity).
    if (callIndex === 0) return { toolCalls: [{ id: 'bad1', name: 'writeFile', arguments: '{"path": ' }] };
    return { text: `told: ${toolMessages(request)[0].content}` };
  });
  const handle = await h.start({ prompt: 'Write a file', model: 'malformed' });
  const result = await handle.result();

  expect(result).toMatchObject({ status: 'COMPLETED', toolCalls: 1 });
  const [, second] = h.model.requests('malformed');
  const [told] = toolMessages(second.body);
  expect(told.tool_call_id).toBe('bad1');
  expect(told.content).toMatch(/^Error: the arguments are not valid JSON/);
  expect(result.answer).toBe(`told: ${told.content}`);
  // A result for the model, not a failed activity retried and then reported.
  expect(await activityAttempts(handle, 'executeTool')).toEqual([{ attempt: 1 }]);
});

test('an unknown tool name goes back to the model as a tool result, and the run completes', async () => {
  h.model.register('unknown-tool', ({ request, callIndex }): ScriptStep => {
    if (callIndex === 0) return { toolCalls: [{ id: 'u1', name: 'deleteEverything', arguments: {} }] };
    return { text: `told: ${toolMessages(request)[0].content}` };
  });
  const handle = await h.start({ prompt: 'Clean up', model: 'unknown-tool' });
  const result = await handle.result();

  expect(result).toMatchObject({ status: 'COMPLETED', toolCalls: 1 });
  const [told] = toolMessages(h.model.requests('unknown-tool')[1].body);
  expect(told.tool_call_id).toBe('u1');
  expect(told.content).toMatch(/^Error: unknown tool "deleteEverything"/);
  expect(told.content).toContain('listFiles, readFile, writeFile');
  expect(await activityAttempts(handle, 'executeTool')).toEqual([{ attempt: 1 }]);
});

test('context overflow after several turns summarises the older turns, keeps the recent ones, and the run completes', async () => {
  const SUMMARY = 'The agent read one.txt: contents of one.txt.';
  h.model.register('long-overflow', ({ request }): ScriptStep => {
    if (!request.stream) return { text: SUMMARY }; // the compaction call
    const summarised = request.messages.some((m: any) => String(m.content).startsWith('Summary of the earlier conversation:'));
    if (summarised) return { text: 'answer after compaction' };
    const done = toolMessages(request).length;
    if (done < FILES.length) return { toolCalls: [{ name: 'readFile', arguments: { path: FILES[done] } }] };
    return { error: { status: 400, message: "This model's maximum context length is 100 tokens", code: 'context_length_exceeded' } };
  });
  const handle = await h.start({ prompt: 'Read every file', model: 'long-overflow' });
  const result = await handle.result();

  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'answer after compaction', toolCalls: FILES.length });
  const state = await handle.query(stateQuery);
  const states = state.transitions.map((t) => t.to);
  expect(states.filter((s) => s === 'COMPACTING')).toHaveLength(1);
  expect(states.slice(states.indexOf('COMPACTING'), states.indexOf('COMPACTING') + 2)).toEqual(['COMPACTING', 'STREAMING']);

  const requests = h.model.requests('long-overflow');
  const compaction = requests.filter((r) => !r.stream);
  expect(compaction).toHaveLength(1);
  // Only the older turn went to the summariser; the recent six messages stay verbatim.
  const transcript = compaction[0].body.messages[1].content as string;
  expect(transcript).toContain('readFile({"path":"one.txt"})');
  expect(transcript).toContain('tool result: contents of one.txt');
  expect(transcript).not.toContain('two.txt');

  const after = requests[requests.length - 1].body.messages;
  expect(after.map((m: any) => m.role)).toEqual(['system', 'user', 'user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'tool']);
  expect(after[1].content).toBe('Read every file');
  expect(after[2].content).toBe(`Summary of the earlier conversation:\n${SUMMARY}`);
  expect(after[3].tool_calls[0].function.arguments).toBe('{"path":"two.txt"}');
  expect(toolMessages({ messages: after }).map((m: any) => m.content)).toEqual(FILES.slice(1).map((f) => `contents of ${f}\n`));
});

test('a 401 fails the run fast with one request and a reason about authentication', async () => {
  h.model.register('unauthorized', [{ error: { status: 401, message: 'Incorrect API key provided', code: 'invalid_api_key' } }]);
  const handle = await h.start({ prompt: 'hi', model: 'unauthorized' });
  const failure = await failureOf(handle.result());

  expect(failure.type).toBe('AgentRunFailed');
  expect(failure.message).toMatch(/authentication with the model provider failed/);
  expect(h.model.requests('unauthorized')).toHaveLength(1);
  // Fast: the model call's one attempt is its last, with no retry and so no backoff before the run fails.
  expect(await activityAttempts(handle)).toEqual([{ attempt: 1 }]);
});
