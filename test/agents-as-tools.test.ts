/**
 * Named agents given to a run as tools, on the real dev server: each call starts a child `agentRun` of the agent;
 * the calls of one model turn run at once; the children get at most what remains of the parent's budget, their usage
 * counts against it, and a spent budget waits for approval; abort and pause reach the children; the parent's state
 * lists them. Driven through the client, and through the gateway.
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { runCli } from '../src/cli/cli';
import { defineAgent } from '../src/activities';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import type { ScriptContext } from '../src/scripted-model/types';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';

const TOKEN = 'agents-as-tools-token';
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;

const helper = defineAgent({ name: 'helper', description: 'Looks one thing up.', instructions: 'You look one thing up.', model: 'helper-model', tools: [] });
const spender = defineAgent({ name: 'spender', instructions: 'You read files.', model: 'spender-model', tools: ['readFile'] });
const sleeper = defineAgent({ name: 'sleeper', instructions: 'You take your time.', model: 'sleeper-model', tools: [] });
const broken = defineAgent({ name: 'broken', instructions: 'You call a model that is gone.', model: 'broken-model', tools: [] });

/** Answers each helper call only once `n` calls are in flight at the same time, or says it was alone after 8 s. */
function barrier(n: number) {
  let waiting: Array<() => void> = [];
  return async ({ request }: ScriptContext) => {
    const together = new Promise<boolean>((resolve) => {
      waiting.push(() => resolve(true));
      setTimeout(() => resolve(false), 8_000);
    });
    if (waiting.length >= n) {
      waiting.forEach((release) => release());
      waiting = [];
    }
    const task = request.messages.at(-1).content as string;
    return { text: `${(await together) ? 'together' : 'alone'}: ${task}`, usage: { prompt_tokens: 40, completion_tokens: 10 } };
  };
}

beforeAll(async () => {
  h = await startAgentHarness(undefined, { agents: [helper, spender, sleeper, broken] });
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, pollIntervalMs: 100 });
  h.model.register('helper-model', barrier(2));
  // Stays in its model call until cancelled (the stream stalls), so the parent has a child running to abort or pause.
  h.model.register('sleeper-model', () => ({ text: 'never finished', stallAfterChunks: 0 }));
  h.model.register('broken-model', () => ({ error: { status: 404, message: 'The model does not exist', code: 'model_not_found' } }));
}, 120_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

const api = async (method: InjectOptions['method'], url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${TOKEN}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() };
};

/** A parent whose first answer calls `agent` once for each task, then answers with what the tools said. */
function delegating(agent: string, tasks: string[], usage = { prompt_tokens: 30, completion_tokens: 20 }) {
  return ({ callIndex, request }: ScriptContext) => {
    if (callIndex === 0) return { toolCalls: tasks.map((prompt, i) => ({ id: `c${i}`, name: agent, arguments: { prompt } })), usage };
    const told = request.messages.filter((m: { role: string }) => m.role === 'tool').map((m: { content: string }) => m.content);
    return { text: told.join(' | '), usage };
  };
}

describe('through the client', () => {
  test('two calls of a named agent in one turn are two child runs, running at once; the state lists them with their usage', async () => {
    h.model.register('boss', delegating('helper', ['weather in Paris', 'weather in Rome']));
    const run = await agents.start({ prompt: 'Compare Paris and Rome', model: 'boss', tools: ['helper'], toolOrder: 'concurrent' });
    const result = await run.result();
    // Each child answered only when the other was in flight too: with toolOrder 'concurrent' they ran in parallel.
    expect(result).toMatchObject({ status: 'COMPLETED', answer: 'together: weather in Paris | together: weather in Rome' });

    // The parent's model was offered the agent as a tool taking a prompt.
    const offered = h.model.requests('boss')[0].body.tools.map((t: { function: { name: string; description: string; parameters: object } }) => t.function);
    expect(offered).toEqual([expect.objectContaining({ name: 'helper', description: 'Looks one thing up.', parameters: expect.objectContaining({ required: ['prompt'] }) })]);

    const state = await run.state();
    const childUsage = { promptTokens: 40, completionTokens: 10, totalTokens: 50, modelCalls: 1, costUsd: expect.any(Number) };
    expect(state.children).toEqual([
      { workflowId: `${run.workflowId}/helper-1`, agent: 'helper', state: 'COMPLETED', usage: childUsage },
      { workflowId: `${run.workflowId}/helper-2`, agent: 'helper', state: 'COMPLETED', usage: childUsage },
    ]);
    // Two parent calls of 50 tokens, and the children's 2 x 50.
    expect(state.usage.totalTokens).toBe(200);
    // Real child workflows of the parent, each run by the agent's own settings.
    const child = await h.env.client.workflow.getHandle(`${run.workflowId}/helper-1`).describe();
    expect(child.parentExecution?.workflowId).toBe(run.workflowId);
    const childRequest = h.model.requests('helper-model').find((r) => r.body.messages.at(-1).content === 'weather in Paris')!;
    expect(childRequest.body.messages[0]).toEqual({ role: 'system', content: helper.instructions });
  }, 60_000);

  test('a run that names no tools is not offered the named agents', async () => {
    h.model.register('plain', [{ text: 'ok' }]);
    await (await agents.start({ prompt: 'Hi', model: 'plain' })).result();
    const offered = (h.model.requests('plain')[0].body.tools ?? []).map((t: { function: { name: string } }) => t.function.name);
    expect(offered).not.toContain('helper');
    expect(offered).toContain('readFile');
  }, 30_000);

  test('one budget: the child gets what remains, its usage counts against the parent, and a spent budget waits for approval', async () => {
    h.model.register('budget-boss', delegating('spender', ['read a.txt'], { prompt_tokens: 80, completion_tokens: 20 }));
    h.model.register('spender-model', ({ callIndex }: ScriptContext) =>
      callIndex === 0
        ? { toolCalls: [{ id: 'r1', name: 'readFile', arguments: { path: 'a.txt' } }], usage: { prompt_tokens: 1_300, completion_tokens: 80 } }
        : { text: 'read it', usage: { prompt_tokens: 90, completion_tokens: 10 } },
    );
    const budget = { maxTokens: 1_500, reserveOutputTokens: 10, onExceed: 'approve' as const };
    const run = await agents.start({ prompt: 'Delegate', model: 'budget-boss', tools: ['spender'], budget });

    // 100 of 1,500 spent by the parent: the child's budget is the 1,400 that remain, and its second call would pass them.
    const childId = `${run.workflowId}/spender-1`;
    const child = agents.handle(childId);
    const childWaiting = await waitFor(async () => {
      const s = await child.state().catch(() => undefined);
      return s?.state === 'AWAITING_APPROVAL' ? s : undefined;
    }, 30_000, 'the child waiting for budget approval');
    expect(childWaiting.reason).toMatch(/^token budget exceeded: 1380 used \+ \d+ reserved for the next call > 1400 \(budget\.maxTokens\)$/);
    expect((await run.state()).children).toEqual([expect.objectContaining({ workflowId: childId, state: 'RUNNING' })]);
    await child.approve({ toolCallId: 'budget', approved: true });

    // The child's 1,480 tokens on top of the parent's 100 pass 1,500: the parent waits for approval too, and is not failed.
    const waiting = await waitFor(async () => {
      const s = await run.state();
      return s.state === 'AWAITING_APPROVAL' ? s : undefined;
    }, 30_000, 'the parent waiting for budget approval');
    expect(waiting.pendingApproval).toEqual([expect.objectContaining({ toolCallId: 'budget', kind: 'budget' })]);
    expect(waiting.usage.totalTokens).toBe(1_580);
    expect(waiting.reason).toMatch(/^token budget exceeded: 1580 used/);
    expect(waiting.children).toEqual([expect.objectContaining({ state: 'COMPLETED', usage: expect.objectContaining({ totalTokens: 1_480 }) })]);
    await run.approve({ toolCallId: 'budget', approved: true });
    await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'read it', usage: expect.objectContaining({ totalTokens: 1_680 }) });
  }, 90_000);

  test("pausing the parent pauses its running children, resuming resumes them, and aborting it aborts them", async () => {
    h.model.register('abort-boss', delegating('sleeper', ['one', 'two']));
    const run = await agents.start({ prompt: 'Delegate and wait', model: 'abort-boss', tools: ['sleeper'], toolOrder: 'concurrent' });
    const ids = [`${run.workflowId}/sleeper-1`, `${run.workflowId}/sleeper-2`];
    const children = ids.map((id) => agents.handle(id));
    for (const c of children) await waitFor(async () => ((await c.state().catch(() => undefined))?.state === 'STREAMING' ? true : undefined), 30_000, 'children streaming');

    await run.pause();
    for (const c of children) await waitFor(async () => ((await c.state()).pauseRequested ? true : undefined), 10_000, 'the child asked to pause');
    await run.resume();
    for (const c of children) await waitFor(async () => ((await c.state()).pauseRequested ? undefined : true), 10_000, 'the child no longer asked to pause');

    await run.abort('enough');
    await expect(run.result()).resolves.toMatchObject({ status: 'ABORTED', reason: 'aborted: enough' });
    for (const c of children) await expect(c.result()).resolves.toMatchObject({ status: 'ABORTED' });
    // The parent waited for its children to end: none is left running.
    for (const id of ids) expect((await h.env.client.workflow.getHandle(id).describe()).status.name).not.toBe('RUNNING');
  }, 60_000);

  test("the parent's timeout ends its children ABORTED", async () => {
    h.model.register('timeout-boss', delegating('sleeper', ['slow']));
    const run = await agents.start({ prompt: 'Delegate', model: 'timeout-boss', tools: ['sleeper'], limits: { timeoutMs: 2_000 } });
    await expect(run.result()).rejects.toThrow();
    expect((await run.state()).reason).toMatch(/timeout|timed out/i);
    await expect(agents.handle(`${run.workflowId}/sleeper-1`).result()).resolves.toMatchObject({ status: 'ABORTED' });
  }, 60_000);

  test("a child that fails answers its parent's model with the failure, and is listed FAILED", async () => {
    h.model.register('failing-boss', delegating('broken', ['anything']));
    const run = await agents.start({ prompt: 'Delegate', model: 'failing-boss', tools: ['broken'] });
    const result = await run.result();
    expect(result.status).toBe('COMPLETED');
    expect(result.answer).toMatch(/^Error: agent broken failed: model call failed: model or endpoint not found/);
    expect((await run.state()).children).toEqual([expect.objectContaining({ workflowId: `${run.workflowId}/broken-1`, state: 'FAILED' })]);
  }, 60_000);
});

describe('through the CLI', () => {
  test('start --tools names an agent; state prints a line per child', async () => {
    let out = '';
    const cli = (argv: string[]) => runCli(argv, { connect: async () => agents, out: (t) => (out += t), err: () => undefined });
    h.model.register('cli-boss', delegating('helper', ['x', 'y']));
    expect(await cli(['start', 'Both', '--model', 'cli-boss', '--tools', 'helper', '--json'])).toBe(0);
    const { workflowId } = JSON.parse(out) as { workflowId: string };
    await agents.handle(workflowId).result();
    out = '';
    expect(await cli(['state', workflowId])).toBe(0);
    expect(out).toContain(`child ${workflowId}/helper-1 (agent helper): COMPLETED, tokens 50`);
    expect(out).toContain(`child ${workflowId}/helper-2 (agent helper): COMPLETED, tokens 50`);
  }, 60_000);
});

describe('through the gateway', () => {
  test('a run started on POST /v1/runs calls the agent as a child; GET /v1/runs/{id} lists the children', async () => {
    h.model.register('gateway-boss', delegating('helper', ['a', 'b']));
    const started = await api('POST', '/v1/runs', { prompt: 'Both', model: 'gateway-boss', tools: ['helper'], toolOrder: 'concurrent' });
    expect(started.status).toBe(201);
    const id = started.body.workflowId as string;
    const result = await api('GET', `/v1/runs/${id}/result`);
    expect(result.body).toMatchObject({ status: 'COMPLETED', answer: 'together: a | together: b' });
    const state = await api('GET', `/v1/runs/${encodeURIComponent(id)}`);
    expect(state.body.children).toEqual([
      expect.objectContaining({ workflowId: `${id}/helper-1`, agent: 'helper', state: 'COMPLETED' }),
      expect.objectContaining({ workflowId: `${id}/helper-2`, agent: 'helper', state: 'COMPLETED' }),
    ]);
    const child = await api('GET', `/v1/runs/${encodeURIComponent(`${id}/helper-1`)}`);
    expect(child.body).toMatchObject({ state: 'COMPLETED', answer: 'together: a' });
    // What the web page links as the run's children.
    const listed = await waitFor(async () => {
      const { body } = await api('GET', `/v1/runs?parent=${encodeURIComponent(id)}`);
      return body.runs?.length === 2 ? (body.runs as Array<{ workflowId: string; parentWorkflowId: string }>) : undefined;
    }, 20_000, 'the children listed by parent');
    expect(listed.map((r) => r.workflowId).sort()).toEqual([`${id}/helper-1`, `${id}/helper-2`]);
  }, 60_000);
});
