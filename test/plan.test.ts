/**
 * The structured plan (`plan: 'steps'`) on the real dev server with the scripted model, through the client, the
 * gateway and the CLI: a plan of 3 steps moves to all done; a malformed plan is asked for again, once; a rejected step
 * is retried, then replanned.
 */
import type { FastifyInstance } from 'fastify';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import { planRetryInstruction } from '../src/machine/plan';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

const TOKEN = 't';
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;

beforeAll(async () => {
  h = await startAgentHarness({ 'hello.txt': 'Hello from the workspace\n' });
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, heartbeatMs: 200, pollIntervalMs: 100 });
}, 120_000);
afterAll(async () => {
  await app?.close();
  await h?.close();
});

async function cli(argv: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await runCli(argv, { connect: async () => agents, out: (t) => (out += t), err: (t) => (out += t) });
  return { code, out };
}

const gateway = async (method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${TOKEN}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() as Record<string, any> };
};

const steps = (...titles: string[]) => ({ text: JSON.stringify({ steps: titles }) });
type Sent = Array<{ role: string; content?: string | null }>;

test('a plan of 3 steps moves to all done; the client, the gateway and the CLI show the progress', async () => {
  h.model.register('plan-three', ({ callIndex }) =>
    [
      steps('List the files.', 'Read hello.txt.', 'Answer.'),
      { toolCalls: [{ name: 'listFiles', arguments: { path: '.' } }] },
      { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] },
      { text: 'It says hello.' },
    ][callIndex] ?? { error: { status: 400, message: 'unexpected call' } },
  );
  // Through the gateway: the same input the client takes.
  const started = await gateway('POST', '/v1/runs', { prompt: 'What does the workspace say?', model: 'plan-three', plan: 'steps' });
  expect(started.status).toBe(201);
  const run = agents.handle(started.body.workflowId);
  await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'It says hello.' });
  const view = await run.state();
  expect(view.plan).toBe('1. List the files.\n2. Read hello.txt.\n3. Answer.');
  expect(view.planSteps?.map((s) => s.status)).toEqual(['done', 'done', 'done']);
  expect(view.planProgress).toEqual({ done: 3, total: 3, allDone: true });
  // The planner was asked for JSON, without tools.
  const [plan] = h.model.requests('plan-three');
  expect((plan.body.messages as Sent).at(-1)?.content).toContain('Reply with JSON only');
  expect(plan.body.tools).toBeUndefined();

  const state = await gateway('GET', `/v1/runs/${run.workflowId}`);
  expect(state.body).toMatchObject({ planProgress: { done: 3, total: 3, allDone: true }, planSteps: [{ title: 'List the files.', status: 'done', attempts: 0 }, {}, {}] });
  const { code, out } = await cli(['state', run.workflowId]);
  expect(code).toBe(0);
  expect(out).toContain('plan: 3/3 steps done (all done)');
  expect(out).toContain('[x] 2. Read hello.txt.');
}, 60_000);

test('a malformed plan is asked for again once, with what was wrong; the run goes on with the steps it then gets', async () => {
  h.model.register('plan-malformed', ({ callIndex }) =>
    [{ text: 'Sure! First I look, then I answer.' }, steps('Answer from memory.'), { text: 'The answer.' }][callIndex] ?? { error: { status: 400, message: 'unexpected call' } },
  );
  const run = await agents.start({ prompt: 'Answer me', model: 'plan-malformed', plan: 'steps' });
  await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'The answer.', loops: 3 });
  const requests = h.model.requests('plan-malformed');
  expect(requests).toHaveLength(3);
  const reask = requests[1].body.messages as Sent;
  expect(reask.slice(-2)).toEqual([
    { role: 'assistant', content: 'Sure! First I look, then I answer.' },
    { role: 'user', content: planRetryInstruction('the answer is not JSON') },
  ]);
  expect((await run.state()).planSteps).toEqual([{ title: 'Answer from memory.', status: 'done', attempts: 0 }]);
}, 60_000);

test('a rejected step is retried, then replanned: the new steps replace those not begun', async () => {
  h.model.register('plan-rejected', ({ callIndex }) =>
    [
      steps('Read missing.txt.', 'Answer.'),
      { toolCalls: [{ name: 'readFile', arguments: { path: 'missing.txt' } }] },
      { toolCalls: [{ name: 'readFile', arguments: { path: 'missing-too.txt' } }] },
      steps('Read hello.txt.', 'Answer.'),
      { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] },
      { text: 'It says hello.' },
    ][callIndex] ?? { error: { status: 400, message: 'unexpected call' } },
  );
  const run = await agents.start({ prompt: 'What does the file say?', model: 'plan-rejected', plan: 'steps' });
  // After the first failure: the step is retried.
  const retried = await h.waitForState(h.env.client.workflow.getHandle(run.workflowId), (s) => s.planSteps?.[0]?.status === 'retried' || s.planSteps?.[0]?.status === 'replanned');
  expect(retried.planSteps?.[0]).toMatchObject({ title: 'Read missing.txt.', attempts: 1 });
  await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'It says hello.' });
  const view = await run.state();
  expect(view.planSteps?.map((s) => `${s.title} ${s.status} ${s.attempts}`)).toEqual(['Read missing.txt. replanned 1', 'Read hello.txt. done 0', 'Answer. done 0']);
  expect(view.planProgress).toEqual({ done: 2, total: 2, allDone: true });
  const { out } = await cli(['state', run.workflowId]);
  expect(out).toContain('[-] 1. Read missing.txt. (1 more attempt) [replanned]');
}, 60_000);
