/**
 * With every worker stopped, `state` still answers from the copy the run stored, and a control fails at its deadline
 * and is never applied later: client, CLI and gateway.
 */
import { runCli } from '../src/cli/cli';
import { AgentClient, AgentControlTimeoutError } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import { sleep, startAgentHarness, type AgentHarness } from './support/agent-harness';

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness();
}, 120_000);
afterAll(async () => h?.close());

test('state of a completed run and of a run waiting for approval answers within 10 s from the stored copy', async () => {
  h.model.register('stored-done', [{ text: 'all done' }]);
  h.model.register('stored-wait', [{ toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'a.txt', content: 'a' } }] }]);
  const client = new AgentClient(h.env.client, h.taskQueue);
  const done = await client.start({ prompt: 'finish', model: 'stored-done' });
  await done.result();
  const waiting = await client.start({ prompt: 'write', model: 'stored-wait', approval: { tools: ['writeFile'] } });
  await h.waitForState(await h.env.client.workflow.getHandle(waiting.workflowId), (s) => s.state === 'AWAITING_APPROVAL');
  // While a worker answers, the state is live.
  expect((await client.handle(done.workflowId).state()).stored).toBeUndefined();

  await h.stopWorker();
  for (const [run, expected] of [
    [done, { state: 'COMPLETED', answer: 'all done' }],
    [waiting, { state: 'AWAITING_APPROVAL', pendingApproval: [expect.objectContaining({ toolCallId: 'w1', name: 'writeFile' })] }],
  ] as const) {
    const started = Date.now();
    const view = await client.handle(run.workflowId).state();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(view).toMatchObject(expected);
    expect(view.stored?.reason).toMatch(/^no worker is answering/);
  }

  let out = '';
  const code = await runCli(['state', waiting.workflowId], { connect: async () => client, out: (t) => (out += t), err: (t) => (out += t) });
  expect(code).toBe(0);
  expect(out).toMatch(/^\(stored copy from .*no worker is answering/);
  expect(out).toContain('approval: w1  writeFile');

  const app = buildGateway({ agents: client, token: 't', heartbeatMs: 200, pollIntervalMs: 100 });
  const res = await app.inject({ method: 'GET', url: `/v1/runs/${done.workflowId}`, headers: { authorization: 'Bearer t' } });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toMatchObject({ state: 'COMPLETED', stored: { reason: expect.stringMatching(/^no worker is answering/) } });

  // Time travel replays the run on a worker: with none, a timeout that says so (504), not a 30 s hang and a 500.
  const travel = Date.now();
  await expect(client.handle(done.workflowId).snapshotAt(1, { timeoutMs: 2_000 })).rejects.toThrow(/^no worker answered the stateAt query of .* within 2000 ms/);
  expect(Date.now() - travel).toBeLessThan(6_000);
  const step = await app.inject({ method: 'GET', url: `/v1/runs/${done.workflowId}/steps/1`, headers: { authorization: 'Bearer t' } });
  expect({ status: step.statusCode, code: step.json().error.code }).toEqual({ status: 504, code: 'query_timeout' });
  await app.close();
}, 120_000);

test('a control sent while no worker runs fails at its deadline, says so, and is not applied when a worker comes back', async () => {
  h.model.register('late-controls', ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'late.txt', content: 'a' } }] } : { text: 'written' },
  );
  await h.startWorker(); // the test above stopped it
  const client = new AgentClient(h.env.client, h.taskQueue);
  const run = await client.start({ prompt: 'write', model: 'late-controls', approval: { tools: ['writeFile'] } });
  await h.waitForState(h.env.client.workflow.getHandle(run.workflowId), (s) => s.state === 'AWAITING_APPROVAL');
  await h.stopWorker();

  const timeoutMs = 1_500;
  const noWorker = new RegExp(`^no worker is polling task queue ${h.taskQueue}: \\w+ did not reach ${run.workflowId} within ${timeoutMs} ms; nothing was recorded`);
  const handle = client.handle(run.workflowId);
  const started = Date.now();
  const outcomes = await Promise.allSettled([
    handle.approve({ toolCallId: 'w1', approved: true }, { timeoutMs }),
    handle.sendMessage('a late message', { timeoutMs }),
    handle.pause({ timeoutMs }),
    handle.abort('a late abort', { timeoutMs }),
  ]);
  const elapsed = Date.now() - started;
  expect(elapsed).toBeGreaterThanOrEqual(timeoutMs);
  expect(elapsed).toBeLessThan(timeoutMs + 4_000);
  for (const [outcome, control] of outcomes.map((o, i) => [o, ['approve', 'sendMessage', 'pause', 'abort'][i]] as const)) {
    expect(outcome.status).toBe('rejected');
    const err = (outcome as PromiseRejectedResult).reason;
    expect(err).toBeInstanceOf(AgentControlTimeoutError);
    expect(err).toMatchObject({ control, workerPolling: false, taskQueue: h.taskQueue, message: expect.stringMatching(noWorker) });
  }

  let out = '';
  let err = '';
  const cli = (...argv: string[]) => runCli(argv, { connect: async () => client, out: (t) => (out += t), err: (t) => (err += t) });
  expect(await cli('approve', run.workflowId, 'w1', '--reject', '--wait-ms', String(timeoutMs))).toBe(1);
  expect(await cli('resume', run.workflowId, '--wait-ms', String(timeoutMs))).toBe(1);
  expect(out).toBe('');
  expect(err.trim().split('\n')).toEqual([expect.stringMatching(/^error: no worker is polling task queue .*approve did not reach/), expect.stringMatching(/^error: no worker is polling .*resume did not reach/)]);

  const app = buildGateway({ agents: client, token: 't', controlTimeoutMs: timeoutMs });
  const post = (path: string, payload?: object) =>
    app.inject({ method: 'POST', url: `/v1/runs/${run.workflowId}/${path}`, headers: { authorization: 'Bearer t' }, ...(payload ? { payload } : {}) });
  for (const [path, payload, control] of [
    ['approvals', { toolCallId: 'w1', approved: false }, 'approve'],
    ['abort', { reason: 'late over HTTP' }, 'abort'],
  ] as const) {
    const res = await post(path, payload);
    expect([res.statusCode, res.json()]).toEqual([
      504,
      { error: { code: 'control_timeout', message: expect.stringMatching(noWorker), control, taskQueue: h.taskQueue, workerPolling: false } },
    ]);
  }
  await app.close();

  // Every deadline has passed: the worker that starts now gets the waiting updates and refuses each of them.
  await h.startWorker();
  await sleep(500);
  const view = await handle.state();
  expect(view).toMatchObject({ state: 'AWAITING_APPROVAL', pauseRequested: false, queuedMessages: [], rejectedEvents: [] });
  expect(view.pendingApproval).toEqual([expect.not.objectContaining({ decision: expect.anything() })]);
  // Had any late approval been applied, this one would be refused as already decided.
  expect(await handle.approve({ toolCallId: 'w1', approved: true })).toEqual({ toolCallId: 'w1', approved: true, remaining: 0 });
  expect(await handle.result()).toMatchObject({ status: 'COMPLETED', answer: 'written' });
  const end = await handle.state({ includeMessages: true });
  expect(end.messages?.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['write']);
}, 90_000);
