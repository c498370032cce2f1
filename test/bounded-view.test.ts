/**
 * The `state` view stays the same size however long the run: a run of many tool calls on the real server carries its
 * last transitions, says how many there were and where its tail starts, and the whole list is paged from the steps
 * (`steps()`, `agent history`, the gateway's `/steps`); `agent state` says how many came earlier.
 */
import type { FastifyInstance } from 'fastify';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { VIEW_TRANSITIONS, type RunStateView } from '../src/common/view';
import { buildGateway } from '../src/gateway/index';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

const TOKEN = 'bounded-view-token';
const LONG = 120;
const SHORT = 10;
/** Bytes the view of a finished run may take, however many steps it made. */
const MAX_VIEW_BYTES = 24 * 1024;

let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;

beforeAll(async () => {
  h = await startAgentHarness({ 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c', 'd.txt': 'd', 'e.txt': 'e' });
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, heartbeatMs: 200, pollIntervalMs: 100, logger: false });
  // Reads the files round and round (a cycle longer than the loop guard looks for), then answers after `calls` model calls.
  for (const calls of [LONG, SHORT]) {
    h.model.register(`reader-${calls}`, ({ request }) => {
      const done = request.messages.filter((m: any) => m.role === 'tool').length;
      if (done >= calls - 1) return { text: `read ${done} files` };
      return { toolCalls: [{ name: 'readFile', arguments: { path: `${'abcde'[done % 5]}.txt` } }] };
    });
  }
}, 120_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

async function finishedRun(calls: number): Promise<{ workflowId: string; view: RunStateView }> {
  const run = await agents.start({ prompt: 'read the files', model: `reader-${calls}`, limits: { maxLoops: calls + 5, maxToolCalls: calls + 5 } });
  expect(await run.result()).toMatchObject({ status: 'COMPLETED', loops: calls });
  return { workflowId: run.workflowId, view: await run.state() };
}

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

test(`the view of a run of ${LONG} model calls is as small as one of ${SHORT}, and its steps are paged`, async () => {
  const [long, short] = [await finishedRun(LONG), await finishedRun(SHORT)];
  const { view } = long;
  // Four state changes a tool step, and the start and the answer's: far more than the view carries.
  expect(view.step).toBeGreaterThan(4 * (LONG - 1));
  expect(view.transitions).toHaveLength(VIEW_TRANSITIONS);
  expect(view.transitionCount).toBe(view.step);
  expect(view.transitionsFrom).toBe(view.step - VIEW_TRANSITIONS + 1);
  expect(view.transitions.at(-1)).toMatchObject({ to: 'COMPLETED' });
  expect(view.recentToolCalls).toHaveLength(20);
  // The short run's view is not bounded by the tail: it holds every one of its transitions.
  expect(short.view.transitions).toHaveLength(short.view.step);
  expect(short.view.transitionsFrom).toBe(1);
  expect(bytes(view)).toBeLessThan(MAX_VIEW_BYTES);
  expect(bytes(view)).toBeLessThan(bytes(short.view) * 1.5);

  // The whole list, paged from the run: the client's steps, a small page, the CLI's history, the gateway's route.
  const handle = agents.handle(long.workflowId);
  const steps = await handle.steps();
  const unbounded = bytes({ ...view, transitions: steps.map(({ step: _step, ...t }) => t) });
  console.log(`state view after ${LONG} model calls (${view.step} steps): ${bytes(view)} bytes (with every transition: ${unbounded}); after ${SHORT} (${short.view.step} steps): ${bytes(short.view)} bytes`);
  expect(steps.map((s) => s.step)).toEqual(Array.from({ length: view.step }, (_, i) => i + 1));
  expect(steps.slice(-VIEW_TRANSITIONS)).toEqual(view.transitions.map((t, i) => ({ step: view.transitionsFrom + i, ...t })));
  const page = await handle.stepsPage({ from: 7, limit: 3 });
  expect(page).toEqual({ steps: steps.slice(6, 9), next: 10 });
  expect((await handle.stepsPage({ from: view.step })).next).toBeNull();

  const res = await app.inject({ method: 'GET', url: `/v1/runs/${long.workflowId}/steps`, headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.statusCode).toBe(200);
  expect(res.json().steps).toEqual(steps);

  let out = '';
  const cli = (...argv: string[]) => runCli(argv, { connect: async () => new AgentClient(h.env.client, h.taskQueue), out: (t) => (out += t), err: () => undefined });
  expect(await cli('history', long.workflowId)).toBe(0);
  expect(out.trim().split('\n')).toHaveLength(view.step + 1); // step 0, the run before its start, then every step
  out = '';
  expect(await cli('state', long.workflowId)).toBe(0);
  expect(out).toContain(`transitions (last 5 of ${view.step}; ${view.step - 5} earlier: agent history):`);

  // The copy the run stored in its memo (served with no worker) says where its shorter tail starts.
  const stored = (await handle.storedState())!;
  expect(stored.transitions).toHaveLength(10);
  expect(stored.transitionsFrom).toBe(view.step - 9);
  expect(stored.transitionCount).toBe(view.step);
}, 120_000);
