/**
 * Time travel across continue-as-new, on the real server: a run forced to continue as new several times (the lowest
 * `historyEvents`) lists every step from 1 through the client, the CLI and the gateway; a step's state, a diff across
 * a boundary and a fork from a step before the first continue-as-new are read from the run that holds the step.
 */
import type { FastifyInstance } from 'fastify';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import type { StepRecord } from '../src/client/time-travel';
import { buildGateway } from '../src/gateway/index';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

const TOKEN = 'chain-token';
const MODEL = 'chain-long';
const TOOLS = 40;
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;
let run: { workflowId: string; runIds: string[]; last: number; steps: StepRecord[] };

beforeAll(async () => {
  h = await startAgentHarness();
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, logger: false });
  h.model.register(MODEL, ({ request }) => {
    const done = request.messages.filter((m: any) => m.role === 'tool').length;
    return done < TOOLS ? { toolCalls: [{ name: done % 2 ? 'listFiles' : 'readFile', arguments: done % 2 ? { path: '.' } : { path: 'hello.txt' } }] } : { text: `finished after ${done} tools` };
  });
  const handle = await agents.start({ prompt: 'keep going', model: MODEL, limits: { historyEvents: 100, maxRepeats: 50, maxLoops: 60 } });
  await handle.result();
  const final = await handle.state();
  // The runs of the chain, newest first, from the visibility store.
  const runIds: string[] = [];
  for await (const e of h.env.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) runIds.push(e.runId);
  run = { workflowId: handle.workflowId, runIds, last: final.step, steps: await handle.steps() };
}, 120_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

const cli = async (...argv: string[]) => {
  let out = '';
  let err = '';
  const code = await runCli(argv, { connect: async () => new AgentClient(h.env.client, h.taskQueue), out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
};
const api = async (method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${TOKEN}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() };
};

test('the run continued as new more than once, and its newest state no longer lists step 1', async () => {
  expect(run.runIds.length).toBeGreaterThanOrEqual(3);
  const newest = await agents.handle(run.workflowId).state();
  expect(newest.step - newest.transitions.length + 1).toBeGreaterThan(1);
  expect(newest.origin).toMatchObject({ kind: 'continue', workflowId: run.workflowId });
});

test('steps: every step from 1 to the last, numbered on across the runs, the same through the client, the CLI and the gateway', async () => {
  const { steps, last } = run;
  expect(steps.map((s) => s.step)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
  expect(steps[0]).toMatchObject({ step: 1, from: 'IDLE', event: 'START' });
  expect(steps.at(-1)).toMatchObject({ step: last, to: 'COMPLETED' });
  // Each step starts where the one before it ended.
  for (let i = 1; i < steps.length; i++) expect([steps[i].step, steps[i].from]).toEqual([steps[i].step, steps[i - 1].to]);
  const history = await cli('history', run.workflowId, '--json');
  expect(history.code).toBe(0);
  expect(JSON.parse(history.out)).toEqual(steps);
  expect(await api('GET', `/v1/runs/${run.workflowId}/steps`)).toEqual({ status: 200, body: { steps: JSON.parse(JSON.stringify(steps)) } });
});

test("a step's state from the first run, and a diff across the first continue-as-new", async () => {
  const handle = agents.handle(run.workflowId);
  const one = await handle.snapshotAt(1, { includeMessages: true });
  expect(one).toMatchObject({ step: 1, toolCalls: 0, origin: null });
  expect(one.messages?.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['keep going']);
  expect((await api('GET', `/v1/runs/${run.workflowId}/steps/1`)).body).toMatchObject({ step: 1, toolCalls: 0 });

  const newest = await handle.state();
  const newestFirst = newest.step - newest.transitions.length + 1;
  const diff = await handle.diff(2, run.last);
  expect(diff).toMatchObject({ from: 2, to: run.last });
  expect(diff.changed).toEqual(
    expect.arrayContaining([
      { field: 'toolCalls', before: 0, after: TOOLS },
      { field: 'loops', before: 1, after: TOOLS + 1 },
      { field: 'origin', before: null, after: { kind: 'continue', workflowId: run.workflowId, step: expect.any(Number) } },
    ]),
  );
  expect(newestFirst).toBeGreaterThan(2);
  const text = await cli('diff', run.workflowId, '2', String(run.last));
  expect([text.code, text.err]).toEqual([0, '']);
  expect(text.out).toContain(`  toolCalls: 0 -> ${TOOLS}`);
  expect((await api('GET', `/v1/runs/${run.workflowId}/diff?from=2&to=${run.last}`)).body).toEqual(JSON.parse(JSON.stringify(diff)));
  // Past the last step is still refused, by the newest run.
  expect((await api('GET', `/v1/runs/${run.workflowId}/steps/${run.last + 1}`)).body.error.code).toBe('step_not_found');
});

test('a fork from a step before the first continue-as-new completes, carrying that step', async () => {
  const fork = await agents.fork(run.workflowId, 3);
  const result = await fork.result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: `finished after ${TOOLS} tools`, toolCalls: TOOLS });
  // The fork carries the original's limits, so it continued as new too, and still names where it was forked from.
  expect((await fork.state()).origin).toEqual({ kind: 'fork', workflowId: run.workflowId, step: 3 });
  const forkRuns = [];
  for await (const e of h.env.client.workflow.list({ query: `WorkflowId = '${fork.workflowId}'` })) forkRuns.push(e.runId);
  expect(forkRuns.length).toBeGreaterThan(1);
  expect((await fork.steps()).slice(0, 4)).toEqual([...run.steps.slice(0, 3), expect.objectContaining({ step: 4, event: 'FORK' })]);
  const cliFork = await cli('fork', run.workflowId, '--from-step', '2', '--json');
  expect([cliFork.code, cliFork.err]).toEqual([0, '']);
  expect(await agents.handle(JSON.parse(cliFork.out).workflowId).result()).toMatchObject({ status: 'COMPLETED', toolCalls: TOOLS });
}, 90_000);
