/** With every worker stopped, `state` still answers from the copy the run stored: client, CLI and gateway. */
import { runCli } from '../src/cli';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

// As in gateway.test.ts: light-my-request's cookie dependency is ESM only; inject needs no cookies here.
jest.mock(`${__dirname}/../node_modules/light-my-request/node_modules/cookie/dist/index.js`, () => ({
  stringifySetCookie: ({ name, value }: { name: string; value: string }) => `${name}=${encodeURIComponent(value)}`,
}));

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
  await app.close();
}, 90_000);
