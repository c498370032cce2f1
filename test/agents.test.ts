/**
 * Named agents and the agent plugin on the real dev server: a run started with `agent` uses that agent's
 * instructions, tools, model and limits (as the scripted model received them), start fields override the agent's,
 * an unknown name fails the run at once with no model request, and a plain `Worker.create` with `agentPlugin` runs an
 * agent to completion.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { createActivities, defineAgent, defineTool } from '../src/activities';
import { AgentClient } from '../src/client';
import { WORKFLOW_TYPE } from '../src/common/constants';
import { FailureType } from '../src/common/failures';
import { pauseSignal, resumeSignal, stateQuery } from '../src/common/messages';
import { agentPlugin } from '../src/worker/plugin';
import { agentWorkerOptions, openAIClient } from '../src/worker';
import { InflightActivities, thisProcess } from '../src/activities/inflight';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { failureOf } from './support/failures';
import { testServerAddress } from './support/temporal';

const EventType = temporal.api.enums.v1.EventType;

const weather = defineTool({
  name: 'weather',
  description: 'The weather in a city',
  parameters: z.object({ city: z.string() }),
  sideEffects: false,
  execute: async ({ city }) => `sunny in ${city}`,
});

const researcher = defineAgent({
  name: 'researcher',
  instructions: 'You are the researcher. Check the weather before you answer.',
  tools: ['readFile', weather],
  model: 'agent-research',
  limits: { maxLoops: 5, maxToolCalls: 7 },
});
const writer = defineAgent({ name: 'writer', instructions: 'You write one sentence.', tools: ['writeFile'], model: 'agent-writer' });

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness(undefined, { agents: [researcher, writer] });
}, 120_000);
afterAll(async () => h?.close());

const weatherThenAnswer = ({ callIndex }: { callIndex: number }) =>
  callIndex === 0 ? { toolCalls: [{ id: 'w1', name: 'weather', arguments: { city: 'Paris' } }] } : { text: 'Sunny in Paris.' };
const toolNames = (body: { tools?: Array<{ function: { name: string } }> }) => (body.tools ?? []).map((t) => t.function.name);

async function historyOf(handle: { fetchHistory(): Promise<{ events?: temporal.api.history.v1.IHistoryEvent[] | null }> }) {
  return (await handle.fetchHistory()).events ?? [];
}

test("a run started with an agent's name uses its instructions, tools, model and limits", async () => {
  h.model.register('agent-research', weatherThenAnswer);
  const handle = await h.start({ agent: 'researcher', prompt: 'What is the weather in Paris?' });
  expect(await handle.result()).toMatchObject({ status: 'COMPLETED', answer: 'Sunny in Paris.', toolCalls: 1 });

  const [first, second] = h.model.requests('agent-research');
  expect(first.body.messages[0]).toEqual({ role: 'system', content: researcher.instructions });
  expect(first.body.messages[1]).toEqual({ role: 'user', content: 'What is the weather in Paris?' });
  expect(toolNames(first.body)).toEqual(['readFile', 'weather']);
  expect(second.body.messages.at(-1)).toMatchObject({ role: 'tool', content: 'sunny in Paris' });
  expect((await handle.query(stateQuery)).limits).toMatchObject({ maxLoops: 5, maxToolCalls: 7, timeoutMs: 300_000 });

  // The agent's spec is resolved by a local activity: a marker in history, before the first model call.
  const events = await historyOf(handle);
  const firstSchedule = events.findIndex((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
  const resolved = events.findIndex((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED && e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
  expect(resolved).toBeGreaterThan(0);
  expect(resolved).toBeLessThan(firstSchedule);
}, 30_000);

test("fields given at start override the agent's: scalars and tools replace, limits merge key by key", async () => {
  h.model.register('agent-override', [{ text: 'Overridden.' }]);
  const before = h.model.requests('agent-research').length;
  const handle = await h.start({
    agent: 'researcher',
    prompt: 'Answer at once',
    model: 'agent-override',
    systemPrompt: 'You answer at once.',
    tools: ['listFiles'],
    limits: { maxToolCalls: 3 },
  });
  expect(await handle.result()).toMatchObject({ status: 'COMPLETED', answer: 'Overridden.' });
  const [request] = h.model.requests('agent-override');
  expect(request.body.messages[0]).toEqual({ role: 'system', content: 'You answer at once.' });
  expect(toolNames(request.body)).toEqual(['listFiles']);
  expect(h.model.requests('agent-research')).toHaveLength(before);
  expect((await handle.query(stateQuery)).limits).toMatchObject({ maxLoops: 5, maxToolCalls: 3 });
}, 30_000);

test('an unknown agent fails the run at once as invalid input, naming it and the agents there are, with no model request', async () => {
  const requestsBefore = h.model.requests().length;
  const handle = await h.start({ agent: 'reseacher', prompt: 'Anything' });
  const failure = await failureOf(handle.result());
  expect(failure).toEqual({ type: FailureType.InvalidInput, message: 'unknown agent "reseacher"; the worker\'s agents: researcher, writer' });
  expect(h.model.requests()).toHaveLength(requestsBefore);
  const events = await historyOf(handle);
  expect(events.some((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)).toBe(false);
  expect(await handle.query(stateQuery)).toMatchObject({ state: 'FAILED', reason: expect.stringMatching(/unknown agent "reseacher"/) });
}, 30_000);

test('AgentClient.start accepts `agent` (checking only its shape) and the worker resolves it', async () => {
  h.model.register('agent-writer', [{ text: 'One sentence.' }]);
  const agents = new AgentClient(h.env.client, h.taskQueue);
  const run = await agents.start({ agent: 'writer', prompt: 'Write a sentence' });
  expect(await run.result()).toMatchObject({ status: 'COMPLETED', answer: 'One sentence.' });
  expect(toolNames(h.model.requests('agent-writer')[0].body)).toEqual(['writeFile']);
  await expect(agents.start({ agent: 'not a name', prompt: 'x' })).rejects.toThrow(/agent: must be 1-64 characters/);
}, 30_000);

test('agentPlugin on a plain Worker.create adds the workflow, the activities, the tools and the agents; on a Client, the data converter', async () => {
  h.model.register('plugin-model', weatherThenAnswer);
  const plugin = agentPlugin({
    llm: { baseURL: h.model.url, apiKey: 'scripted', model: 'plugin-model' },
    tools: [weather],
    agents: [defineAgent({ name: 'forecaster', instructions: 'You forecast.', tools: ['weather'] })],
    workspace: h.workspace,
    dataConverter: h.dataConverter,
  });
  const taskQueue = `plugin-${randomUUID()}`;
  // The worker as a team already has it, plus one line: no workflowsPath, no activities, no data converter of its own.
  const worker = await Worker.create({ connection: h.env.nativeConnection, taskQueue, plugins: [plugin] });
  const client = new Client({ connection: h.env.connection, plugins: [plugin] });
  expect(client.options.dataConverter.payloadCodecs).toEqual(h.dataConverter.payloadCodecs);

  const result = await worker.runUntil(async () => {
    const handle = await client.workflow.start(WORKFLOW_TYPE, {
      taskQueue,
      workflowId: `plugin-${randomUUID()}`,
      args: [{ agent: 'forecaster', prompt: 'Weather in Paris?' }],
    });
    return handle.result();
  });
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'Sunny in Paris.', toolCalls: 1 });
  const [first] = h.model.requests('plugin-model');
  expect(first.body.messages[0]).toEqual({ role: 'system', content: 'You forecast.' });
  expect(toolNames(first.body)).toEqual(['weather']);
}, 90_000);

test("a run that names an agent answers the state query while the worker resolves the agent, and applies a signal sent then before its first step", async () => {
  h.model.register('slow-agent-model', [{ text: 'Resolved and answered.' }]);
  // A worker whose resolveAgent holds until the test lets it go: the window before the run knows its input is real.
  let entered!: () => void;
  const resolving = new Promise<void>((resolve) => (entered = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const deps = {
    openai: openAIClient({ baseURL: h.model.url, apiKey: 'scripted' }),
    defaultModel: 'unset',
    workspace: h.workspace,
    agents: [defineAgent({ name: 'slow', instructions: 'You answer.', tools: [], model: 'slow-agent-model' })],
  };
  const own = createActivities(deps);
  const activities = { ...own, resolveAgent: async (name: string) => (entered(), await released, own.resolveAgent(name)) };
  const taskQueue = `slow-agent-${randomUUID()}`;
  const worker = await Worker.create({ ...agentWorkerOptions(deps), activities, connection: h.env.nativeConnection, taskQueue, workflowBundle: h.bundle, dataConverter: h.dataConverter });
  const result = await worker.runUntil(async () => {
    const handle = await h.env.client.workflow.start(WORKFLOW_TYPE, { taskQueue, workflowId: `slow-agent-${randomUUID()}`, args: [{ agent: 'slow', prompt: 'Answer.' }] });
    try {
      await resolving;
      await handle.signal(pauseSignal);
      // Answered when the open workflow task gives way (a local activity holds it up to 80% of its timeout); the
      // pause waits, held by the SDK, until the run has its snapshot.
      expect(await handle.query(stateQuery)).toMatchObject({ state: 'IDLE', step: 0, loops: 0, model: null, pauseRequested: false });
    } finally {
      release();
    }
    // The pause sent while the agent resolved holds the run before its first model call.
    await h.waitForState(handle, (s) => s.state === 'PAUSED');
    expect(h.model.requests('slow-agent-model')).toHaveLength(0);
    await handle.signal(resumeSignal);
    return handle.result();
  });
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'Resolved and answered.' });
}, 60_000);

test('agentPlugin({ inflight }): a worker that starts hands back the attempt a crashed worker process of this host left, and the run goes on at once', async () => {
  // The first call would take a minute; the retry answers at once.
  h.model.register('inflight-model', ({ callIndex }) => (callIndex === 0 ? { text: 'too late', firstChunkDelayMs: 60_000 } : { text: 'Handed back and answered.' }));
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'inflight-')), 'tool-ledger.sqlite');
  const llm = { baseURL: h.model.url, apiKey: 'scripted', model: 'inflight-model' };
  const taskQueue = `inflight-${randomUUID()}`;
  // Worker A writes its attempts down as a process that is gone (this pid with a start time it never had): the
  // worker a crash took down, still polling here only because a test cannot kill its own process.
  const gone = new InflightActivities(file, { ...thisProcess(), start: '0' });
  const crashed = await Worker.create({ connection: h.env.nativeConnection, taskQueue, plugins: [agentPlugin({ llm, workspace: h.workspace, dataConverter: h.dataConverter, inflight: gone })] });
  const crashedRun = crashed.run();
  const client = new Client({ connection: h.env.connection, dataConverter: h.dataConverter });
  const handle = await client.workflow.start(WORKFLOW_TYPE, { taskQueue, workflowId: `inflight-${randomUUID()}`, args: [{ prompt: 'Answer.' }] });
  await waitFor(() => (h.model.requests('inflight-model').length ? true : undefined), 20_000, 'the first model call');
  expect(gone.rows()).toHaveLength(1);

  // The restarted worker, on a connection of its own (one process may not poll a task queue twice on one connection).
  const journal = new InflightActivities(file);
  const connection = await NativeConnection.connect({ address: testServerAddress() });
  try {
    const restarted = await Worker.create({ connection, taskQueue, plugins: [agentPlugin({ llm, workspace: h.workspace, dataConverter: h.dataConverter, inflight: journal })] });
    const result = await restarted.runUntil(handle.result());
    expect(result).toMatchObject({ status: 'COMPLETED', answer: 'Handed back and answered.' });
  } finally {
    crashed.shutdown();
    await crashedRun;
    await connection.close();
  }
  const started = (await handle.fetchHistory()).events!.flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes] : []));
  expect(started.map((a) => a.attempt)).toEqual([2]);
  expect(started[0].lastFailure?.applicationFailureInfo?.type).toBe(FailureType.WorkerCrashed);
  expect(journal.rows()).toEqual([]);
  gone.close();
  journal.close();
}, 60_000);

