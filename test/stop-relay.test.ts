/**
 * Issue 49: an interrupt closes the provider's stream at once even when the model call runs on another worker than
 * the run's workflow task. The workflows run on one worker, the activities on another whose model calls heartbeat
 * only every 4 s (the heartbeat timeout is 5 s): without the stop relay the call would hear of its stop at its next
 * heartbeat, 0 to 4 s later; with it (the gateway's hub, and Redis pub/sub) within a round trip.
 */
import type { ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Worker } from '@temporalio/worker';
import { AgentClient } from '../src/client';
import { ModelCallsInFlight } from '../src/activities';
import { buildGateway } from '../src/gateway/index';
import { httpStopRelay, httpTarget, liveStream, MemoryHub, RedisChannel, redisStopRelay, streamSinks, type CallStop, type LiveStream, type StopRelay } from '../src/stream';
import { agentWorkerOptions, openAIClient } from '../src/worker';
import { sleep, startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { freePort, startRedis } from './support/redis';

jest.setTimeout(120_000);

const TOKEN = 'stop-relay-token';
const LONG = 'A long answer goes on. '.repeat(2_000);
const quiet = { warn: () => undefined, info: () => undefined };

/** A relay that counts what it announces and what it hands its listeners. */
function counted(relay: StopRelay) {
  const announced: CallStop[] = [];
  const heard: CallStop[] = [];
  return {
    announced,
    heard,
    relay: {
      announce: (s: CallStop) => {
        announced.push(s);
        relay.announce(s);
      },
      listen: (onStop: (s: CallStop) => void) =>
        relay.listen((s) => {
          heard.push(s);
          onStop(s);
        }),
      close: () => relay.close(),
    } satisfies StopRelay,
  };
}

/** The harness's own worker stops; a workflow-only worker and an activity-only worker take its task queue. */
async function splitWorkers(h: AgentHarness, stream: LiveStream, workflowRelay: StopRelay, activityRelay: StopRelay) {
  await h.stopWorker();
  const connection = h.env.nativeConnection;
  const workflows = await Worker.create({
    connection,
    taskQueue: h.taskQueue,
    workflowBundle: h.bundle,
    dataConverter: h.dataConverter,
    sinks: streamSinks(stream, new ModelCallsInFlight(undefined, workflowRelay)),
  });
  const activities = await Worker.create({
    connection,
    taskQueue: h.taskQueue,
    dataConverter: h.dataConverter,
    ...agentWorkerOptions({
      openai: openAIClient({ baseURL: h.model.url, apiKey: 'scripted' }),
      defaultModel: 'slow',
      workspace: h.workspace,
      modelHeartbeatMs: 4_000,
      stream,
      callsInFlight: new ModelCallsInFlight(undefined, activityRelay),
    }),
  });
  const running = Promise.all([workflows.run(), activities.run()]);
  return {
    async close() {
      workflows.shutdown();
      activities.shutdown();
      await running;
    },
  };
}

/** Interrupts `n` runs mid-stream, each at a random moment: ms from sending the interrupt to the provider seeing its stream closed. */
async function interruptLatencies(h: AgentHarness, n: number): Promise<number[]> {
  const client = new AgentClient(h.env.client, h.taskQueue);
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) {
    const before = h.model.requests('slow').length;
    const handle = await client.start({ prompt: 'Write', model: 'slow' });
    await waitFor(async () => {
      const s = await handle.state();
      return s.state === 'STREAMING' && s.partialText.length > 0 ? true : undefined;
    }, 20_000, 'the first streamed text');
    await sleep(Math.random() * 1_000);
    const sent = Date.now();
    await handle.sendMessage('stop', { interrupt: true });
    const closedAt = await waitFor(() => h.model.requests('slow')[before]?.closedAt, 20_000, 'the provider stream to close');
    latencies.push(closedAt - sent);
    await handle.result();
  }
  return latencies;
}

/** Two relays of one kind, the workflows' and the activities': every interrupt is announced by one, heard by the other, and closes the stream at once. */
async function expectRelayed(h: AgentHarness, stream: LiveStream, relay: () => StopRelay): Promise<void> {
  const a = counted(relay());
  const b = counted(relay());
  const workers = await splitWorkers(h, stream, a.relay, b.relay);
  try {
    const latencies = await interruptLatencies(h, 4);
    expect(a.announced).toHaveLength(4);
    expect(b.heard.length).toBeGreaterThanOrEqual(4);
    for (const ms of latencies) expect(ms).toBeLessThan(1_500);
  } finally {
    await workers.close();
    await a.relay.close();
    await b.relay.close();
  }
}

function registerSlow(h: AgentHarness) {
  // The first call streams for minutes; the call after the interrupt (its last message is the user's) answers.
  h.model.register('slow', ({ request }) => (request.messages.at(-1)?.content === 'stop' ? { text: 'short' } : { text: LONG, chunkSize: 5, chunkDelayMs: 50 }));
}

describe('a stop reaches the model call on another worker through the relay', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await startAgentHarness();
    registerSlow(h);
  });
  afterAll(async () => h?.close());

  test('the gateway hub: every interrupt closes the provider stream within 1.5 s (the call heartbeats every 4 s)', async () => {
    const hub = new MemoryHub();
    const app: FastifyInstance = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, stream: hub });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    try {
      await expectRelayed(h, liveStream(httpTarget(url, TOKEN), quiet), () => httpStopRelay(url, TOKEN));
    } finally {
      await app.close();
    }
  });

  test('the hub refuses a stop without the gateway token, and one that is not a stop', async () => {
    const app = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, stream: new MemoryHub() });
    try {
      const stop = { workflowId: 'w', runId: 'r', call: 1 };
      expect((await app.inject({ method: 'POST', url: '/internal/v1/stops', payload: stop })).statusCode).toBe(401);
      const bad = await app.inject({ method: 'POST', url: '/internal/v1/stops', headers: { authorization: `Bearer ${TOKEN}` }, payload: { workflowId: 'w' } });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error.message).toMatch(/runId/);
      const start = await app.inject({ method: 'GET', url: '/internal/v1/stops', headers: { authorization: `Bearer ${TOKEN}` } });
      const { next } = start.json();
      expect((await app.inject({ method: 'POST', url: '/internal/v1/stops', headers: { authorization: `Bearer ${TOKEN}` }, payload: stop })).statusCode).toBe(204);
      const read = await app.inject({ method: 'GET', url: `/internal/v1/stops?after=${next}&waitMs=1000`, headers: { authorization: `Bearer ${TOKEN}` } });
      expect(read.json()).toEqual({ stops: [stop], next: next + 1 });
    } finally {
      await app.close();
    }
  });

  describe('Redis (a real redis-server)', () => {
    let redis: ChildProcess;
    let url: string;
    beforeAll(async () => {
      const port = await freePort();
      redis = await startRedis(port);
      url = `redis://127.0.0.1:${port}`;
    });
    afterAll(() => void redis?.kill('SIGKILL'));

    test('every interrupt closes the provider stream within 1.5 s (the call heartbeats every 4 s)', async () => {
      const channel = RedisChannel.open({ url });
      await channel.ready;
      try {
        await expectRelayed(h, liveStream(channel, quiet), () => redisStopRelay(url));
      } finally {
        await channel.close();
      }
    });
  });
});
