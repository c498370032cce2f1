/** agentRun end to end on the real dev server, through the real `openai` client and the scripted model over HTTP. */
import { withActivities } from '../src/client/activity-view';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { defaultPayloadConverter } from '@temporalio/common';
import { AgentClient } from '../src/client';
import { abortSignal, approveUpdate, pauseSignal, resumeSignal, sendMessageUpdate, stateQuery, type AgentRunResult } from '../src/common/messages';
import { sleep, startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { failureOf } from './support/failures';
import { streamSinks } from '../src/stream/sinks';

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness();
}, 120_000);
afterAll(async () => h?.close());

const lastMessage = (request: any) => request.messages[request.messages.length - 1];
const toolMessages = (request: any) => request.messages.filter((m: any) => m.role === 'tool');


test('a run lists files and answers', async () => {
  h.model.register('list-and-answer', ({ request, callIndex }) => {
    if (callIndex === 0) return { toolCalls: [{ name: 'listFiles', arguments: { path: '.' } }] };
    const [result] = toolMessages(request);
    return { text: `The workspace holds: ${result.content}`, chunkSize: 4 };
  });
  const handle = await h.start({ prompt: 'What files are in the workspace?', model: 'list-and-answer' });
  const result: AgentRunResult = await handle.result();

  expect(result.status).toBe('COMPLETED');
  expect(result.answer).toBe('The workspace holds: hello.txt');
  expect(result.toolCalls).toBe(1);
  expect(result.usage.modelCalls).toBe(2);
  // The model was offered the registry's JSON schemas.
  const [first] = h.model.requests('list-and-answer');
  expect(first.body.tools.map((t: any) => t.function.name).sort()).toEqual(['listFiles', 'readFile', 'writeFile']);
  expect(first.body.tools.find((t: any) => t.function.name === 'readFile').function.parameters).toMatchObject({
    type: 'object',
    required: ['path'],
  });
  expect(first.stream).toBe(true);

  const state = await handle.query(stateQuery);
  expect(state.state).toBe('COMPLETED');
  expect(state.transitions.map((t) => t.to)).toEqual([
    'STREAMING', 'PROCESSING', 'TOOL_EXECUTING', 'CRITIQUE', 'STREAMING', 'PROCESSING', 'CRITIQUE', 'COMPLETED',
  ]);
  const description = await handle.describe();
  expect(description.searchAttributes.AgentState).toEqual(['COMPLETED']);

  // The recorded history replays deterministically against the same workflow code.
  const history = await handle.fetchHistory();
  await expect(Worker.runReplayHistory({ workflowBundle: h.bundle, sinks: streamSinks(undefined) }, history, handle.workflowId)).resolves.toBeUndefined();
  // The answer streamed within one flush interval: the result carried its text, and no delta signal cost a workflow task.
  expect(history.events!.filter((e) => e.workflowExecutionSignaledEventAttributes)).toEqual([]);
  expect(history.events!.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(3);
});

test('a model that calls readFile forever is stopped by the loop guard, with a reason', async () => {
  h.model.register('read-forever', () => ({ toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] }));
  const handle = await h.start({ prompt: 'Read hello.txt', model: 'read-forever' });
  const failure = await failureOf(handle.result());

  expect(failure.type).toBe('AgentRunFailed');
  expect(failure.message).toBe('loop detected: readFile({"path":"hello.txt"}) called 4 times in a row');
  const calls = h.model.requests('read-forever').length;
  expect(calls).toBe(4);
  // The model was told once before the run ended.
  expect(lastMessage(h.model.requests('read-forever')[3].body).content).toMatch(/^Not executed: this repeats/);
  const state = await handle.query(stateQuery);
  expect(state).toMatchObject({ state: 'FAILED', toolCalls: 2 });
  expect(state.transitions.filter((t) => t.to === 'TOOL_EXECUTING')).toHaveLength(2); // the warned call never ran
});

test('while the model streams slowly, state answers within a second with STREAMING, and the partial text comes from the call\'s heartbeats, never from signals', async () => {
  const text = 'Streaming slowly, one small piece at a time, so that the state can be watched.';
  h.model.register('slow', [{ text, chunkSize: 4, chunkDelayMs: 150 }]);
  const handle = await h.start({ prompt: 'Say something slowly', model: 'slow' });

  const seen = await h.waitForState(handle, (s) => s.state === 'STREAMING' && s.partialText.length > 0);
  expect(text.startsWith(seen.partialText)).toBe(true);
  const before = Date.now();
  const again = await handle.query(stateQuery);
  expect(Date.now() - before).toBeLessThan(1_000);
  expect(again.state).toBe('STREAMING');
  // The run itself holds no text while its call streams: that lives in the call's heartbeat details.
  expect(again.partialText).toBe('');
  const described = await withActivities(handle.client, { workflowId: handle.workflowId }, again);
  expect(text.startsWith(described.partialText)).toBe(true);

  const result = await handle.result();
  expect(result.answer).toBe(text);
  expect((await handle.query(stateQuery)).partialText).toBe(text);
  // No text reached history but the answer: not one signal.
  const events = (await handle.fetchHistory()).events!;
  expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes)).toEqual([]);
});

test('the stack trace of a waiting run (the UI\'s "Stack Trace" tab) names the product\'s sources and lines, from a bundle whose source map leaves out their text', async () => {
  expect(h.bundle.code).not.toContain('"sourcesContent"');
  h.model.register('stack', [{ text: 'y'.repeat(400), chunkSize: 2, chunkDelayMs: 100 }]);
  const handle = await h.start({ prompt: 'Take your time', model: 'stack' });
  await h.waitForState(handle, (s) => s.state === 'STREAMING');
  const trace: string = await handle.query('__stack_trace');
  // Mapped back through the source map: a TypeScript file of src/workflows with its line and column, not bundle offsets.
  expect(trace).toMatch(/src\/workflows\/[\w/-]+\.ts:\d+:\d+/);
  await handle.signal(abortSignal, { reason: 'seen' });
  expect((await handle.result()).status).toBe('ABORTED');
});

test('abort during a stream ends the run ABORTED and closes the HTTP stream before it ends', async () => {
  h.model.register('endless', [{ text: 'x'.repeat(2_000), chunkSize: 2, chunkDelayMs: 100 }]);
  const handle = await h.start({ prompt: 'Talk forever', model: 'endless' });
  await h.waitForState(handle, (s) => s.partialText.length > 0);

  await handle.signal(abortSignal, { reason: 'user clicked stop' });
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'ABORTED', reason: 'aborted: user clicked stop', answer: null, lastText: null });
  // What had streamed before the abort is kept: a prefix of the text the model was writing.
  expect(result.partialText).toMatch(/^x+$/);
  // The stream takes 100 s to finish: the run ended by cutting it, not by waiting for it.
  const request = await waitFor(() => h.model.requests('endless').find((r) => r.closedByClient), 5_000, 'the stream to close');
  expect(request.completed).toBe(false);
  expect(h.model.requests('endless')).toHaveLength(1);
  const description = await handle.describe();
  expect(description.searchAttributes.AgentState).toEqual(['ABORTED']);
});

test('approval holds a guarded tool until approve', async () => {
  h.model.register('writer', ({ callIndex, request }) =>
    callIndex === 0
      ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'approved.txt', content: 'yes' } }] }
      : { text: `done: ${toolMessages(request)[0].content}` },
  );
  const handle = await h.start({ prompt: 'Write approved.txt', model: 'writer', approval: { tools: ['writeFile'] } });
  const waiting = await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
  expect(waiting.pendingApproval).toEqual([
    // The tool's schema comes along, so that a front end can offer to edit the arguments.
    { toolCallId: 'w1', kind: 'tool', name: 'writeFile', arguments: '{"path":"approved.txt","content":"yes"}', parameters: expect.objectContaining({ type: 'object', required: ['path', 'content'] }) },
  ]);

  await sleep(500);
  expect(existsSync(path.join(h.workspace, 'approved.txt'))).toBe(false);
  expect((await handle.query(stateQuery)).state).toBe('AWAITING_APPROVAL');

  // A bad approval is refused before it reaches history, naming what is wrong.
  await expect(handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'nope', approved: true }] })).rejects.toThrow(WorkflowUpdateFailedError);
  await expect(handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'w1' } as never] })).rejects.toThrow(WorkflowUpdateFailedError);

  const approved = await handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'w1', approved: true }] });
  expect(approved).toEqual({ toolCallId: 'w1', approved: true, remaining: 0 });
  const result = await handle.result();
  expect(result.answer).toBe('done: wrote 3 bytes to approved.txt');
  expect(readFileSync(path.join(h.workspace, 'approved.txt'), 'utf8')).toBe('yes');
});

test('approve with edited arguments runs the tool with them; an invalid edit is refused before history, naming the field', async () => {
  h.model.register('edited-writer', ({ callIndex, request }) =>
    callIndex === 0
      ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'model.txt', content: 'from the model' } }] }
      : { text: `done: ${toolMessages(request)[0].content}` },
  );
  const handle = await h.start({ prompt: 'Write a file', model: 'edited-writer', approval: { tools: ['writeFile'] } });
  await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
  const run = new AgentClient(h.env.client, h.taskQueue).handle(handle.workflowId);

  await expect(run.approve({ toolCallId: 'w1', approved: true, arguments: { path: 'edited.txt', content: 42 } })).rejects.toThrow(
    /edited arguments of writeFile are invalid: content: /,
  );
  const updatesBefore = (await handle.fetchHistory()).events?.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
  expect(updatesBefore).toBe(0); // the refused edit left no trace in history

  await run.approve({ toolCallId: 'w1', approved: true, feedback: 'not there', arguments: { path: 'edited.txt', content: 'from a person' } });
  const result = await run.result();
  expect(readFileSync(path.join(h.workspace, 'edited.txt'), 'utf8')).toBe('from a person');
  expect(existsSync(path.join(h.workspace, 'model.txt'))).toBe(false);
  // The tool message is the tool's output alone; the edit is told in a user message after it.
  expect(result.answer).toBe('done: wrote 13 bytes to edited.txt');
  const view = await run.state();
  expect(view.recentToolCalls.at(-1)).toMatchObject({ toolCallId: 'w1', edited: true, arguments: '{"path":"edited.txt","content":"from a person"}' });
  // History keeps the person's decision: the update's input, with the edit and the feedback.
  const accepted = (await handle.fetchHistory()).events?.find((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
  const payload = accepted?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads?.[0];
  expect(payload && defaultPayloadConverter.fromPayload(payload as never)).toEqual({
    toolCallId: 'w1',
    approved: true,
    feedback: 'not there',
    arguments: { path: 'edited.txt', content: 'from a person' },
    deadline: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), // the client's: the run refuses the update after it
  });
});

test('pause and resume hold the run between steps', async () => {
  h.model.register('two-steps', ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ name: 'listFiles', arguments: {} }], firstChunkDelayMs: 1_000 } : { text: 'finished' },
  );
  const handle = await h.start({ prompt: 'List then answer', model: 'two-steps' });
  await h.waitForState(handle, (s) => s.state === 'STREAMING');
  await handle.signal(pauseSignal);

  const paused = await h.waitForState(handle, (s) => s.state === 'PAUSED');
  expect(paused.resumeTo).toBe('TOOL_EXECUTING');
  await sleep(1_500);
  const still = await handle.query(stateQuery);
  expect(still.state).toBe('PAUSED');
  expect(still.toolCalls).toBe(0);
  expect(h.model.requests('two-steps')).toHaveLength(1);

  await handle.signal(resumeSignal);
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'finished', toolCalls: 1 });
  const states = (await handle.query(stateQuery)).transitions.map((t) => t.to);
  expect(states).toEqual(['STREAMING', 'PROCESSING', 'PAUSED', 'TOOL_EXECUTING', 'CRITIQUE', 'STREAMING', 'PROCESSING', 'CRITIQUE', 'COMPLETED']);
});

test('a message sent during the run reaches the model before the run ends', async () => {
  h.model.register('chat', ({ request }) => ({ text: `seen: ${lastMessage(request).content}`, firstChunkDelayMs: 800 }));
  const handle = await h.start({ prompt: 'first', model: 'chat' });
  await h.waitForState(handle, (s) => s.state === 'STREAMING');
  await expect(handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'second' }] })).resolves.toEqual({ queued: 1 });
  const result = await handle.result();
  expect(result.answer).toBe('seen: second');
  await expect(handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'late' }] })).rejects.toThrow('workflow execution already completed');
});

test('bad input fails the run at once with a non-retryable error naming the field', async () => {
  const handle = await h.start({ prompt: 'x', limits: { maxLoops: 0 } });
  const failure = await failureOf(handle.result());
  expect(failure.type).toBe('InvalidInput');
  expect(failure.message).toContain('limits.maxLoops');
  expect((await handle.query(stateQuery)).state).toBe('FAILED');
});

test('a final provider error fails fast; a rate limit is retried and the run completes', async () => {
  h.model.register('unauthorized', [{ error: { status: 401, message: 'Incorrect API key provided', code: 'invalid_api_key' } }]);
  const failure = await failureOf((await h.start({ prompt: 'hi', model: 'unauthorized' })).result());
  expect(failure.message).toMatch(/^model call failed: authentication with the model provider failed; check LLM_API_KEY/);
  expect(h.model.requests('unauthorized')).toHaveLength(1);

  h.model.register('limited', [
    { error: { status: 429, message: 'Slow down', headers: { 'retry-after': '1' } } },
    { text: 'after the wait' },
  ]);
  const result = await (await h.start({ prompt: 'hi', model: 'limited' })).result();
  expect(result.answer).toBe('after the wait');
  // Retried once, after the provider's retry-after (1 s) rather than at once.
  const requests = h.model.requests('limited');
  expect(requests).toHaveLength(2);
  expect(requests[1].receivedAt - requests[0].receivedAt).toBeGreaterThanOrEqual(900);
});

test('context overflow leads to compaction, and the run completes', async () => {
  h.model.register('overflow', ({ request, callIndex }) => {
    if (!request.stream) return { text: 'summary of the early turns' }; // the compaction call
    if (callIndex === 0) return { toolCalls: [{ name: 'listFiles', arguments: {} }] };
    if (!request.messages.some((m: any) => String(m.content).startsWith('Summary of the earlier conversation:'))) {
      return { error: { status: 400, message: 'This model maximum context length is 10 tokens', code: 'context_length_exceeded' } };
    }
    return { text: 'answer after compaction' };
  });
  const handle = await h.start({ prompt: 'Go', model: 'overflow' });
  const result = await handle.result();
  expect(result.answer).toBe('answer after compaction');
  const states = (await handle.query(stateQuery)).transitions.map((t) => t.to);
  expect(states).toContain('COMPACTING');
});

test('planning and the model critic: the demo policy plans, lists, reads, answers and is reviewed', async () => {
  const handle = await h.start({ prompt: 'What does the workspace say?', model: 'scripted-demo', plan: true, critique: 'model' });
  const result = await handle.result();
  expect(result.status).toBe('COMPLETED');
  // Other tests in this file add files to the shared workspace; the demo policy reads the first text file listed.
  const file = /^I read (\S+)\. Its first line is/.exec(result.answer ?? '')?.[1];
  expect(file && existsSync(path.join(h.workspace, file))).toBe(true);
  const state = await handle.query(stateQuery);
  expect(state.plan).toMatch(/^1\. List the files/);
  expect(state.lastCritique).toEqual({ action: 'complete', reason: 'the answer addresses the task', confidence: 80 });
  expect(state.transitions.map((t) => t.to)).toEqual([
    'PLANNING', 'STREAMING', 'PROCESSING', 'TOOL_EXECUTING', 'CRITIQUE', 'STREAMING', 'PROCESSING', 'TOOL_EXECUTING', 'CRITIQUE',
    'STREAMING', 'PROCESSING', 'CRITIQUE', 'COMPLETED',
  ]);
  const planRequest = h.model.requests('scripted-demo')[0].body;
  expect(planRequest.tools).toBeUndefined();
});
