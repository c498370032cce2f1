/** Long-running features on the real server: budgets, multi-turn, time travel and continue-as-new. */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import { WORKFLOW_TYPE } from '../src/common/constants';
import { approveUpdate, stateSnapshotAtQuery, sendMessageUpdate, stateAtQuery, stateQuery } from '../src/common/messages';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';
import { failureOf } from './support/failures';

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness();
}, 120_000);
afterAll(async () => h?.close());

const lastUser = (request: any) => [...request.messages].reverse().find((m: any) => m.role === 'user')?.content;

test('a budget that would be exceeded asks for approval; approving extends it and the run completes', async () => {
  h.model.register('spender', ({ callIndex }) =>
    callIndex === 0
      ? { toolCalls: [{ name: 'listFiles', arguments: {} }], usage: { prompt_tokens: 900, completion_tokens: 100 } }
      : { text: 'done within the extended budget', usage: { prompt_tokens: 900, completion_tokens: 100 } },
  );
  const handle = await h.start({ prompt: 'spend', model: 'spender', budget: { maxTokens: 1_200, reserveOutputTokens: 200, onExceed: 'approve', prices: { spender: { inputPerMTok: 1, outputPerMTok: 2 } } } });
  const waiting = await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
  expect(waiting.pendingApproval[0]).toMatchObject({ toolCallId: 'budget', kind: 'budget' });
  expect(waiting.reason).toMatch(/^token budget exceeded: 1000 used \+ \d+ reserved for the next call > 1200 \(budget\.maxTokens\)$/);
  expect(h.model.requests('spender')).toHaveLength(1);

  await handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'budget', approved: true }] });
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'done within the extended budget' });
  expect(result.usage.totalTokens).toBe(2_000);
  expect(result.usage.costUsd).toBeCloseTo((1_800 * 1 + 200 * 2) / 1e6, 9); // from the run's own price table
});

test('sendMessage continues a completed conversation without a new workflow', async () => {
  h.model.register('chatty', ({ request }) => ({ text: `you said: ${lastUser(request)}` }));
  const handle = await h.start({ prompt: 'hello', model: 'chatty', keepOpenMs: 30_000 });
  const first = await h.waitForState(handle, (s) => s.state === 'COMPLETED');
  expect(first).toMatchObject({ answer: 'you said: hello', turns: 1, conversationOpen: true });

  await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'and again' }] });
  const second = await h.waitForState(handle, (s) => s.turns === 2);
  expect(second).toMatchObject({ state: 'COMPLETED', answer: 'you said: and again' });
  expect((await handle.describe()).status.name).toBe('RUNNING');
  expect(second.transitions.map((t) => t.to).filter((to) => to === 'COMPLETED')).toHaveLength(2);
});

test('the conversation closes after keepOpenMs and the workflow returns the last answer', async () => {
  h.model.register('brief', [{ text: 'only answer' }]);
  const handle = await h.start({ prompt: 'hi', model: 'brief', keepOpenMs: 1_000 });
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'only answer' });
  await expect(handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'late' }] })).rejects.toThrow();
});

test('time travel: every step is queryable, and a run forked from a step carries on from there', async () => {
  h.model.register('traveller', ({ request }) => {
    const tools = request.messages.filter((m: any) => m.role === 'tool');
    if (tools.length === 0) return { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] };
    return { text: `answer after ${tools.length} tool result(s), fork=${String(lastUser(request)).includes('fork')}` };
  });
  const original = await h.start({ prompt: 'read and answer', model: 'traveller' });
  await original.result();
  const final = await original.query(stateQuery);

  // Step 3 is the way into TOOL_EXECUTING: the tool call is pending, nothing executed yet.
  const atStep3 = await original.query(stateAtQuery, { step: 3, includeMessages: true });
  expect(atStep3).toMatchObject({ state: 'TOOL_EXECUTING', step: 3, toolCalls: 0 });
  expect(atStep3.messages?.at(-1)).toMatchObject({ role: 'assistant', toolCalls: [expect.objectContaining({ name: 'readFile' })] });
  expect(final.transitions[2]).toMatchObject({ to: 'TOOL_EXECUTING' });
  const atStep1 = await original.query(stateAtQuery, { step: 1 });
  expect(atStep1).toMatchObject({ state: 'STREAMING', loops: 1 });
  await expect(original.query(stateAtQuery, { step: final.step + 1 })).rejects.toThrow(/is not in this run/);

  // The view is for clients; a fork carries the run's own snapshot of that step.
  const carried = await original.query(stateSnapshotAtQuery, { step: 3 });
  expect(carried).toMatchObject({ schemaVersion: '1.0', counters: { step: 3 }, phase: { type: 'TOOL_EXECUTING' } });
  const requestsBefore = h.model.requests('traveller').length;
  const fork = await h.env.client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: h.taskQueue,
    workflowId: `fork-${randomUUID()}`,
    args: [{ prompt: 'read and answer', resume: { kind: 'fork', snapshot: carried, origin: { workflowId: original.workflowId, step: 3 } } }],
  });
  const forked = await fork.result();
  expect(forked).toMatchObject({ status: 'COMPLETED', answer: 'answer after 1 tool result(s), fork=false', toolCalls: 1 });
  // The fork ran the pending tool and one model call; the first model call was not made again.
  expect(h.model.requests('traveller').length - requestsBefore).toBe(1);
  const forkState = await fork.query(stateQuery);
  expect(forkState.origin).toEqual({ kind: 'fork', workflowId: original.workflowId, step: 3 });
  expect(forkState.transitions.slice(0, 3)).toEqual(final.transitions.slice(0, 3));
});

test('a malformed snapshot fails the run at once as invalid input, naming the field', async () => {
  const malformed = JSON.parse(readFileSync(path.join(__dirname, 'fixtures/snapshots/malformed-wrong-type.json'), 'utf8'));
  const handle = await h.start({ prompt: 'carried', resume: { kind: 'fork', snapshot: malformed, origin: { workflowId: 'a-run', step: malformed.counters.step } } });
  expect(await failureOf(handle.result())).toEqual({
    type: 'InvalidInput',
    message: 'Invalid agentRun input: resume.snapshot: phase.pending.1.arguments: Invalid input: expected string, received object',
  });
});

test('a long run continues as new transparently: same workflow id, state keeps answering, counters carry; lists show only its current execution', async () => {
  h.model.register('long', ({ request }) => {
    const done = request.messages.filter((m: any) => m.role === 'tool').length;
    return done < 24 ? { toolCalls: [{ name: done % 2 ? 'listFiles' : 'readFile', arguments: done % 2 ? { path: '.' } : { path: 'hello.txt' } }] } : { text: `finished after ${done} tools` };
  });
  const handle = await h.start({ prompt: 'keep going', model: 'long', limits: { historyEvents: 100, maxRepeats: 20 } });
  const firstRunId = (await handle.describe()).runId;
  const result = await handle.result();
  // 24 steps: with local tools a step adds about 7 events, so the run passes 100 events and continues as new.
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'finished after 24 tools', toolCalls: 24, loops: 25 });
  const description = await handle.describe();
  expect(description.runId).not.toBe(firstRunId);
  const state = await h.env.client.workflow.getHandle(handle.workflowId).query(stateQuery);
  expect(state).toMatchObject({ state: 'COMPLETED', toolCalls: 24, loops: 25 });
  expect(state.origin).toMatchObject({ kind: 'continue', workflowId: handle.workflowId });
  // One model request per step: continuing as new repeated no model call.
  expect(h.model.requests('long')).toHaveLength(25);

  // The executions it closed by continuing as new (their AgentState still STREAMING) are not runs of their own.
  const agents = new AgentClient(h.env.client, h.taskQueue);
  const mine = <T extends { workflowId: string }>(runs: T[]) => runs.filter((r) => r.workflowId === handle.workflowId);
  expect(mine(await agents.list({ limit: 1_000 }))).toEqual([expect.objectContaining({ status: 'COMPLETED', agentState: 'COMPLETED' })]);
  expect(mine(await agents.list({ state: 'STREAMING', limit: 1_000 }))).toEqual([]);
  let out = '';
  expect(await runCli(['list', '--state', 'STREAMING', '--limit', '1000', '--json'], { connect: async () => agents, out: (t) => (out += t), err: (t) => (out += t) })).toBe(0);
  expect(out).not.toContain(handle.workflowId);
  const app = buildGateway({ agents, token: 't' });
  const get = async (query: string) => (await app.inject({ method: 'GET', url: `/v1/runs?${query}`, headers: { authorization: 'Bearer t' } })).json().runs as Array<{ workflowId: string; origin: unknown }>;
  expect(mine(await get('state=STREAMING&limit=1000'))).toEqual([]);
  // Listed once, and not as a fork: continuing as new keeps the run's id, so it has no origin in the list.
  expect(mine(await get(`q=${handle.workflowId}`))).toEqual([expect.objectContaining({ workflowId: handle.workflowId, origin: null })]);
  await app.close();
}, 120_000);

describe('from the client and the CLI', () => {
  const cli = async (...argv: string[]) => {
    let out = '';
    let err = '';
    const code = await runCli(argv, { connect: async () => new AgentClient(h.env.client, h.taskQueue), out: (t) => (out += t), err: (t) => (err += t) });
    return { code, out, err };
  };

  test('watch shows streamed text from a slow model before the call ends', async () => {
    const text = 'slowly arriving words for the watcher';
    h.model.register('slow-watch', [{ text, chunkSize: 3, chunkDelayMs: 120 }]);
    const handle = await new AgentClient(h.env.client, h.taskQueue).start({ prompt: 'talk', model: 'slow-watch' });
    const seen: string[] = [];
    await handle.watch((event) => {
      if (event.type === 'text') seen.push(`text:${event.text}`);
      if (event.type === 'transition') seen.push(`to:${event.transition.to}`);
    });
    const firstText = seen.findIndex((e) => e.startsWith('text:'));
    const responded = seen.indexOf('to:PROCESSING');
    expect(firstText).toBeGreaterThanOrEqual(0);
    expect(firstText).toBeLessThan(responded);
    expect(seen.filter((e) => e.startsWith('text:')).length).toBeGreaterThan(1); // it arrived in pieces
    expect(seen.filter((e) => e.startsWith('text:')).map((e) => e.slice(5)).join('')).toBe(text);
  });

  test('agent history, diff and fork', async () => {
    h.model.register('cli-travel', ({ request }) =>
      request.messages.some((m: any) => m.role === 'tool') ? { text: 'read it' } : { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] },
    );
    const run = await new AgentClient(h.env.client, h.taskQueue).start({ prompt: 'read', model: 'cli-travel' });
    await run.result();

    const history = await cli('history', run.workflowId, '--json');
    const steps = JSON.parse(history.out);
    expect(steps.map((s: any) => [s.step, s.to])).toEqual([
      [1, 'STREAMING'], [2, 'PROCESSING'], [3, 'TOOL_EXECUTING'], [4, 'CRITIQUE'], [5, 'STREAMING'], [6, 'PROCESSING'], [7, 'CRITIQUE'], [8, 'COMPLETED'],
    ]);

    const diff = await cli('diff', run.workflowId, '3', '4');
    expect(diff.code).toBe(0);
    expect(diff.out).toContain('step 3 -> step 4');
    expect(diff.out).toContain('state: "TOOL_EXECUTING" -> "CRITIQUE"');
    expect(diff.out).toContain('toolCalls: 0 -> 1');
    expect(diff.out).toMatch(/\+ messages\[3\]: \{"role":"tool","toolCallId":"[^"]+","content":"Hello from the workspace/);

    const fork = await cli('fork', run.workflowId, '--from-step', '4', '--json');
    const forked = JSON.parse(fork.out);
    expect(forked.forkedFrom).toEqual({ workflowId: run.workflowId, step: 4 });
    const result = await new AgentClient(h.env.client, h.taskQueue).handle(forked.workflowId).result();
    expect(result).toMatchObject({ status: 'COMPLETED', answer: 'read it', toolCalls: 1 });

    const refused = await cli('fork', run.workflowId, '--from-step', '8');
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('step 8 of');
  });

  test('an aborted run is named ABORTED when it is aborted again, and its state shows no stream', async () => {
    h.model.register('cli-abort', [{ text: 'y'.repeat(2_000), chunkSize: 2, chunkDelayMs: 100 }]);
    const client = new AgentClient(h.env.client, h.taskQueue);
    const run = await client.start({ prompt: 'talk', model: 'cli-abort' });
    await h.waitForState(await h.env.client.workflow.getHandle(run.workflowId), (s) => s.partialText.length > 0);
    await run.abort('enough');
    expect(await run.result()).toMatchObject({ status: 'ABORTED', partialText: expect.stringMatching(/^y+$/) });
    await expect(run.abort('again')).rejects.toThrow(`agent run ${run.workflowId} has already ended (ABORTED)`);
    const again = await cli('abort', run.workflowId);
    expect([again.code, again.err.trim()]).toEqual([1, `error: agent run ${run.workflowId} has already ended (ABORTED)`]);
    const state = await cli('state', run.workflowId);
    expect(state.out).toContain('ABORTED');
    expect(state.out).not.toContain('streaming (call');
  });
});
