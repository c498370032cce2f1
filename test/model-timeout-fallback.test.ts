/**
 * A model call that ends by its activity timeouts (the product's 20-minute schedule-to-close; here 4 s, through a
 * workflow interceptor that shortens the timeouts of `times-out*` models) moves the run to its next fallback model,
 * as other spent retries do. On the real dev server, through the client and the gateway.
 */
import type { FastifyInstance } from 'fastify';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';
import { failureOf } from './support/failures';

const TOKEN = 'timeout-fallback-token';
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;

beforeAll(async () => {
  h = await startAgentHarness(undefined, { workflowInterceptorModules: [require.resolve('./support/short-model-timeouts')] });
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, pollIntervalMs: 100 });
  // Heartbeats on, never a chunk: only the activity's start-to-close and schedule-to-close end the call.
  h.model.register('times-out', () => ({ text: 'too late', firstChunkDelayMs: 120_000 }));
  h.model.register('works', () => ({ text: 'Answered by works.' }));
}, 120_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

test('through the client: a model call that runs out of time moves the run to the next of fallbackModels', async () => {
  const run = await agents.start({ prompt: 'Hello', model: 'times-out', fallbackModels: ['works'] });
  await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'Answered by works.' });
  const state = await run.state();
  expect(state.model).toBe('works');
  expect(state.modelSwitches).toEqual([expect.objectContaining({ from: 'times-out', to: 'works', error: expect.stringContaining('ran out of time') })]);
  expect(state.transitions).toContainEqual(expect.objectContaining({ from: 'STREAMING', to: 'STREAMING', event: 'MODEL_UNAVAILABLE' }));
  // Attempts were retried within the bound before the run moved on: the time bounds the call, not a count.
  expect(h.model.requests('times-out').length).toBeGreaterThanOrEqual(2);
}, 60_000);

test('without fallbackModels the run fails, naming the timeout', async () => {
  const run = await agents.start({ prompt: 'Hello', model: 'times-out-alone' });
  h.model.register('times-out-alone', () => ({ text: 'too late', firstChunkDelayMs: 120_000 }));
  expect((await failureOf(run.result())).message).toMatch(/^model call failed: the model call ran out of time/);
  expect((await run.state()).modelSwitches).toEqual([]);
}, 60_000);

test('through the gateway: the state shows the switch and the model in use', async () => {
  const headers = { authorization: `Bearer ${TOKEN}` };
  const started = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { prompt: 'Hello', model: 'times-out', fallbackModels: ['works'] } });
  expect(started.statusCode).toBe(201);
  const { workflowId } = started.json();
  await agents.handle(workflowId).result();
  const state = (await app.inject({ method: 'GET', url: `/v1/runs/${workflowId}`, headers })).json();
  expect(state).toMatchObject({ model: 'works', modelSwitches: [{ from: 'times-out', to: 'works', error: expect.stringContaining('ran out of time') }] });
}, 60_000);
