/**
 * The run against real latencies and real people, on the real dev server with the product's own activity options:
 * time that belongs to people does not count against `limits.timeoutMs`, an approval wait has its own limit, a fork
 * keeps the timeout it carried, an unknown tool fails the run before any model request, and an answer cut off by the
 * output limit is continued.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { AgentClient } from '../src/client';
import { approveUpdate, pauseSignal, resumeSignal, stateQuery } from '../src/common/messages';
import { CONTINUE_PROMPT } from '../src/machine/machine';
import { sleep, startAgentHarness, type AgentHarness } from './support/agent-harness';
import { failureOf } from './support/failures';

const EventType = temporal.api.enums.v1.EventType;

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness();
}, 120_000);
afterAll(async () => h?.close());

const writeThenAnswer = (name: string) =>
  h.model.register(name, ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: `${name}.txt`, content: 'ok' } }] } : { text: 'written' },
  );

/** Durations of the timers the run started, in ms, in order. */
async function timersOf(handle: WorkflowHandle): Promise<number[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  return events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED)
    .map((e) => {
      const d = e.timerStartedEventAttributes!.startToFireTimeout!;
      return Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6);
    });
}

test('an approval given after limits.timeoutMs has passed completes the run: waiting for a person is not working time', async () => {
  writeThenAnswer('late-approval');
  const handle = await h.start({ prompt: 'Write it', model: 'late-approval', approval: { tools: ['writeFile'] }, limits: { timeoutMs: 2_000 } });
  const waiting = await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
  expect(waiting.deadline).toBeNull();
  expect(waiting.workRemainingMs).toBeGreaterThan(0);
  await sleep(3_500); // longer than the whole timeoutMs
  expect((await handle.query(stateQuery)).state).toBe('AWAITING_APPROVAL');

  await handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'w1', approved: true }] });
  expect(await handle.result()).toMatchObject({ status: 'COMPLETED', answer: 'written' });
}, 30_000);

test('a run paused for longer than limits.timeoutMs resumes and completes: paused time is not working time', async () => {
  h.model.register('held', ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ name: 'listFiles', arguments: {} }], firstChunkDelayMs: 500 } : { text: 'listed' },
  );
  const held = await h.start({ prompt: 'List', model: 'held', limits: { timeoutMs: 2_000 } });
  await h.waitForState(held, (s) => s.state === 'STREAMING');
  await held.signal(pauseSignal);
  const paused = await h.waitForState(held, (s) => s.state === 'PAUSED');
  expect(paused.deadline).toBeNull();
  await sleep(3_000);
  expect((await held.query(stateQuery)).state).toBe('PAUSED');
  await held.signal(resumeSignal);
  expect(await held.result()).toMatchObject({ status: 'COMPLETED', answer: 'listed' });
}, 40_000);

test('limits.approvalTimeoutMs ends a run whose approval waits longer, with a reason that says so', async () => {
  writeThenAnswer('no-decision');
  const handle = await h.start({ prompt: 'Write it', model: 'no-decision', approval: { tools: ['writeFile'] }, limits: { approvalTimeoutMs: 1_500 } });
  const failure = await failureOf(handle.result());
  expect(failure.message).toBe('no decision on writeFile within 1500 ms (limits.approvalTimeoutMs)');
  expect((await handle.query(stateQuery)).state).toBe('FAILED');
}, 30_000);

test('a fork keeps the timeout of the run it came from', async () => {
  writeThenAnswer('fork-source');
  const agents = new AgentClient(h.env.client, h.taskQueue);
  const source = await h.start({ prompt: 'Write it', model: 'fork-source', approval: { tools: ['writeFile'] }, limits: { timeoutMs: 600_000 } });
  await h.waitForState(source, (s) => s.state === 'AWAITING_APPROVAL');
  // The working clock's 10 minutes while it streams; then, while a person decides, the approval's default 7 days.
  expect(await timersOf(source)).toEqual([600_000, 604_800_000]);

  // Forked from STREAMING (step 1): the clock runs, with the source's 10 minutes, not the default 5. The fork's
  // model call is the script's second, so it answers and completes.
  const fork = await agents.fork(source.workflowId, 1);
  const forkHandle = h.env.client.workflow.getHandle(fork.workflowId);
  expect(await forkHandle.result()).toMatchObject({ status: 'COMPLETED', answer: 'written' });
  expect((await forkHandle.query(stateQuery)).limits.timeoutMs).toBe(600_000);
  const timers = await timersOf(forkHandle);
  expect(timers).toHaveLength(1);
  expect(timers[0]).toBeGreaterThan(590_000);
  await source.terminate('test over');
}, 30_000);

test('an unknown tool fails the run at once, naming it and the tools the worker has, with no model request', async () => {
  h.model.register('never-asked', [{ text: 'unreachable' }]);
  const handle = await h.start({ prompt: 'Use it', model: 'never-asked', tools: ['bogusTool', 'readFile', 'otherBogus'], approval: { tools: ['otherBogus'] } });
  const failure = await failureOf(handle.result());
  // At once: at most one activity attempt, never retried, before the run fails.
  const attempts = ((await handle.fetchHistory()).events ?? []).flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : []));
  expect(attempts.length).toBeLessThanOrEqual(1);
  expect(attempts.every((attempt) => attempt === 1)).toBe(true);
  expect(failure.message).toMatch(/bogusTool/);
  expect(failure.message).toMatch(/otherBogus/);
  expect(failure.message).toMatch(/readFile/); // among the tools the worker has
  expect(h.model.requests('never-asked')).toEqual([]);
}, 30_000);

test('an answer cut off by maxOutputTokens is continued and joined; the limit is sent to the provider', async () => {
  h.model.register('cut-off', [
    { text: 'The three primary colours are red, ', finishReason: 'length' },
    { text: 'yellow and blue.' },
  ]);
  const handle = await h.start({ prompt: 'Name the primary colours.', model: 'cut-off', maxOutputTokens: 12 });
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'The three primary colours are red, yellow and blue.' });
  const [first, second] = h.model.requests('cut-off');
  expect(first.body.max_tokens).toBe(12);
  expect(second.body.messages.at(-1)).toEqual({ role: 'user', content: CONTINUE_PROMPT });
  const { messages } = await handle.query(stateQuery, { includeMessages: true });
  expect(messages?.filter((m) => m.role === 'assistant')).toEqual([{ role: 'assistant', content: 'The three primary colours are red, yellow and blue.' }]);
}, 30_000);

test('a provider that keeps failing ends the model call after 10 of its own failures, counted across attempts', async () => {
  const unavailable = { error: { status: 503, message: 'The server is overloaded', headers: { 'retry-after-ms': '20' } } };
  h.model.register('always-503', () => unavailable);
  const handle = await h.start({ prompt: 'Hello', model: 'always-503' });
  const failure = await failureOf(handle.result());
  expect(failure.message).toMatch(/^model call failed: model provider error \(503 server_error\): The server is overloaded \(gave up after 10 provider failures\)$/);
  expect(h.model.requests('always-503')).toHaveLength(10);
}, 60_000);

test('a model critic whose provider refuses is replaced by the rule critic, and the run says so', async () => {
  h.model.register('critic-refused', ({ request }) =>
    request.stream ? { text: 'Paris.' } : { error: { status: 400, message: 'this model cannot judge' } },
  );
  const handle = await h.start({ prompt: 'Capital of France?', model: 'critic-refused', critique: 'model' });
  expect(await handle.result()).toMatchObject({ status: 'COMPLETED', answer: 'Paris.' });
  const state = await handle.query(stateQuery);
  expect(state.transitions.map((t) => t.event)).toContain('CRITIC_FAILED');
  expect(state.lastCritique?.reason).toMatch(/^the model answered without calling tools \(model critic unavailable: .*this model cannot judge\)$/);
}, 30_000);
