/**
 * The live stream beside history (issue 24), through the gateway's SSE on a real worker and dev server: with the
 * embedded hub (the worker publishes over HTTP) and with a real Redis server started here.
 */
import type { ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import { createServer as createHttpServer } from 'node:http';
import { parseAgentRunInput } from '../src/common/input';
import type { RunStateView } from '../src/common/messages';
import { initialSnapshot } from '../src/machine/snapshot';
import { publicView } from '../src/workflows/view';
import { compareOffsets, httpTarget, liveStream, MemoryHub, RedisChannel, type LiveStream, type PublishTarget, type StreamChannel } from '../src/stream';
import { configuredStream } from '../src/worker/worker';
import { sleep, startAgentHarness, type AgentHarness } from './support/agent-harness';
import { freePort, startRedis } from './support/redis';
import { readSse as readEvents, type SseMessage } from './support/sse';

const TOKEN = 'live-stream-token';
const auth = { authorization: `Bearer ${TOKEN}` };

/** The events of an SSE response (no comments) until it closes, or until `stop` (then cancels it). `pause` runs before each read. */
const readSse = async (res: Response, stop: (m: SseMessage) => boolean = () => false, pause?: () => Promise<void>): Promise<SseMessage[]> =>
  (await readEvents(res, (m) => !!m.event && stop(m), pause)).filter((m) => m.event);

/** A gateway over `channel` with a worker publishing to `target` (set once the gateway listens). */
async function setUp(channel: StreamChannel, target: (baseUrl: string) => PublishTarget) {
  let publishTo: PublishTarget | undefined;
  const stream: LiveStream = liveStream({ publish: (id, e) => publishTo!.publish(id, e) }, { warn: () => undefined, info: () => undefined });
  const h = await startAgentHarness(undefined, { stream });
  const app = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, heartbeatMs: 200, pollIntervalMs: 100, stream: channel });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  publishTo = target(baseUrl);
  return { h, app, baseUrl, stream, channel };
}

interface Env {
  h: AgentHarness;
  app: FastifyInstance;
  baseUrl: string;
  stream: LiveStream;
  channel: StreamChannel;
}

const startRun = async (env: Env, input: object): Promise<string> => {
  const res = await env.app.inject({ method: 'POST', url: '/v1/runs', headers: auth, payload: input });
  expect(res.statusCode).toBe(201);
  return res.json().workflowId;
};
const events = (env: Env, id: string, headers: Record<string, string> = {}, query = '') =>
  fetch(`${env.baseUrl}/v1/runs/${encodeURIComponent(id)}/events${query}`, { headers: { ...auth, ...headers } });
const textOf = (ms: SseMessage[]) =>
  ms
    .filter((m) => m.event === 'text')
    .map((m) => m.data.text)
    .join('');
const isOffsetId = (id: string | undefined) => /^\d+-\d+_\d+\.\d+\.\d+\.\d+$/.test(id ?? '');

/** A whole view of a completed run, as a worker's `end` carries it: the gateway sends each event through its schema. */
function completedView(): RunStateView {
  const input = parseAgentRunInput({ prompt: 'x' });
  if (!input.ok) throw new Error(input.error);
  return { ...publicView(initialSnapshot(input.value, '2026-01-01T10:00:00.000Z'), false), state: 'COMPLETED' };
}

/** The behaviours both channels must have. */
function channelContract(name: string, env: () => Env) {
  test(`${name}: offsets rise; two watchers get the same stream; re-attach from any id gives no duplicate and no gap`, async () => {
    const e = env();
    const answer = Array.from({ length: 30 }, (_, i) => `w${i} `).join('');
    e.h.model.register(`${name}-slow`, [{ text: answer, chunkSize: 3, chunkDelayMs: 20 }]);
    const id = await startRun(e, { prompt: 'talk', model: `${name}-slow` });
    const [a, b] = await Promise.all([readSse(await events(e, id)), readSse(await events(e, id))]);

    expect(a.at(-1)).toMatchObject({ event: 'end', data: { state: { state: 'COMPLETED', answer } } });
    expect(a.every((m) => isOffsetId(m.id))).toBe(true);
    for (let i = 1; i < a.length; i++) expect(compareOffsets(a[i].id!.split('_')[0], a[i - 1].id!.split('_')[0])).toBeGreaterThan(0);
    expect(b).toEqual(a);
    expect(textOf(a)).toBe(answer);
    const kinds = a.map((m) => (m.event === 'transition' ? `to:${m.data.transition.to}` : m.event));
    expect(kinds.indexOf('text')).toBeGreaterThan(kinds.indexOf('to:STREAMING'));
    expect(a.filter((m) => m.event === 'transition').map((m) => m.data.step)).toEqual(a.at(-1)!.data.state.transitions.map((_: unknown, i: number) => i + 1));

    // Re-attach after every event in turn: what was read plus what comes is the whole stream, exactly.
    for (const at of [0, 3, Math.floor(a.length / 2), a.length - 2]) {
      const rest = await readSse(await events(e, id, { 'last-event-id': a[at].id! }));
      expect([...a.slice(0, at + 1), ...rest]).toEqual(a);
    }
    // A late joiner from now gets nothing of a finished run's past.
    const late = await fetch(`${e.baseUrl}/v1/runs/${id}/events?from=now`, { headers: auth, signal: AbortSignal.timeout(1_500) })
      .then((r) => readSse(r))
      .catch(() => []);
    expect(late).toEqual([]);
  });

  test(`${name}: watch({ stream }) reports the pushed events, re-attaches after an offset, and polls where the channel has nothing`, async () => {
    const e = env();
    const answer = Array.from({ length: 20 }, (_, i) => `v${i} `).join('');
    e.h.model.register(`${name}-watch`, [{ text: answer, chunkSize: 3, chunkDelayMs: 10 }]);
    const id = await startRun(e, { prompt: 'talk', model: `${name}-watch` });
    const handle = new AgentClient(e.h.env.client, e.h.taskQueue).handle(id);
    const got: Array<{ type: string; text?: string; offset?: string }> = [];
    let last = '';
    const end = await handle.watch((ev) => void got.push({ type: ev.type, ...(ev.type === 'text' ? { text: ev.text } : {}) }), { stream: e.channel, onOffset: (o) => void (last = got[got.length - 1].offset = o) });
    expect(end).toMatchObject({ state: 'COMPLETED', answer });
    expect(got.filter((g) => g.type === 'text').map((g) => g.text).join('')).toBe(answer);
    expect(got.every((g) => /^\d+-\d+$/.test(g.offset ?? ''))).toBe(true); // the channel's own offsets
    expect(last).toBe(got.at(-1)!.offset);
    // Re-attached after the fifth event: exactly the rest.
    const rest: string[] = [];
    await handle.watch((ev) => void rest.push(ev.type), { stream: e.channel, after: got[4].offset });
    expect(rest).toEqual(got.slice(5).map((g) => g.type));
    // A channel without this run's stream: the state, polled, says the same.
    const polled: string[] = [];
    await handle.watch((ev) => void polled.push(ev.type === 'text' ? ev.text : ev.type), { stream: new MemoryHub(), intervalMs: 50 });
    expect(polled.at(-1)).toBe('end');
    expect(polled).toContain(answer);
  });

  test(`${name}: a watcher that does not read gets a gap marker with the state, while another keeps receiving`, async () => {
    const e = env();
    const answer = 'x'.repeat(3_000);
    e.h.model.register(`${name}-big`, [{ text: answer, chunkSize: 1, chunkDelayMs: 0 }]);
    const id = await startRun(e, { prompt: 'talk', model: `${name}-big` });
    const channel = e.channel;
    // Below the gateway: one subscriber reads at once, one (of 100 items at most) not until the run has ended.
    const fast = channel.subscribe(id, '0-0', { bufferSize: 10_000 });
    const slow = channel.subscribe(id, '0-0', { bufferSize: 100 });
    const fastItems: string[] = [];
    let fastText = '';
    for await (const item of fast) {
      fastItems.push(item.kind === 'event' ? item.event.type : item.kind);
      if (item.kind === 'event' && item.event.type === 'text') fastText += item.event.text;
      if (item.kind === 'event' && item.event.type === 'end') break;
    }
    const slowItems: string[] = [];
    for await (const item of slow) {
      slowItems.push(item.kind === 'event' ? item.event.type : item.kind);
      if (item.kind === 'event' && item.event.type === 'end') break;
    }
    expect(fastItems).not.toContain('gap');
    expect(fastText).toBe(answer);
    expect(slowItems).toContain('gap');
    expect(slowItems.length).toBeLessThanOrEqual(102);
    expect(slowItems.at(-1)).toBe('end');
  });
}

describe('events the worker could not publish', () => {
  test('are never lost silently: the next publish says how many, and the watcher gets a gap with the state', async () => {
    let down = false;
    const e = await setUp(new MemoryHub(), (url) => {
      const target = httpTarget(url, TOKEN);
      return { publish: (id, events) => (down ? Promise.reject(new Error('the gateway is unreachable')) : target.publish(id, events)) };
    });
    try {
      e.h.model.register('lossy', [{ text: 'word '.repeat(100), chunkSize: 5, chunkDelayMs: 30 }]);
      const id = await startRun(e, { prompt: 'talk', model: 'lossy' });
      const reading = readSse(await events(e, id));
      await e.h.waitForState(e.h.env.client.workflow.getHandle(id), (v) => v.partialText.length > 0, 20_000);
      down = true;
      await sleep(500);
      down = false;
      const ms = await reading;
      expect(e.stream.failures).toBeGreaterThan(0);
      const gap = ms.find((m) => m.event === 'gap');
      expect(gap?.data.reason).toMatch(/^the worker could not publish \d+ events/);
      expect(gap?.data.state).toMatchObject({ state: expect.any(String) });
      expect(ms.at(-1)).toMatchObject({ event: 'end', data: { state: { answer: 'word '.repeat(100) } } });
    } finally {
      await e.app.close();
      await e.h.close();
    }
  });
});

describe('embedded hub (workers publish over HTTP)', () => {
  let e: Env;
  const hub = new MemoryHub();
  beforeAll(async () => {
    e = await setUp(hub, (url) => httpTarget(url, TOKEN));
  });
  afterAll(async () => {
    await e?.app.close();
    await e?.h.close();
  });
  channelContract('hub', () => e);

  test('hub: the internal route takes only the gateway token; a run that no one publishes is polled, marked degraded', async () => {
    const refused = await fetch(`${e.baseUrl}/internal/v1/streams/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"events":[{"type":"text"}]}' });
    expect(refused.status).toBe(401);
    const hubless = buildGateway({ agents: new AgentClient(e.h.env.client, e.h.taskQueue), token: TOKEN, pollIntervalMs: 100, stream: new MemoryHub(), attachWaitMs: 300 });
    await hubless.listen({ port: 0, host: '127.0.0.1' });
    try {
      e.h.model.register('hub-unpublished', [{ text: 'polled answer', chunkSize: 2, chunkDelayMs: 20 }]);
      const id = await startRun(e, { prompt: 'talk', model: 'hub-unpublished' });
      const ms = await readSse(await fetch(`http://127.0.0.1:${(hubless.server.address() as AddressInfo).port}/v1/runs/${id}/events`, { headers: auth }));
      expect(ms[0]).toMatchObject({ event: 'stream', data: { status: 'degraded' } });
      expect(ms.at(-1)).toMatchObject({ event: 'end', data: { state: { answer: 'polled answer' } } });
      expect(textOf(ms)).toBe('polled answer');
    } finally {
      await hubless.close();
    }
  });
});

describe('attaching a watcher', () => {
  test('asks nothing of a worker: a run no worker serves is still streamed from the channel', async () => {
    const h = await startAgentHarness();
    const hub = new MemoryHub();
    const app = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, stream: hub });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const id = `unserved-${Date.now()}`;
    // On a queue no worker polls: a state query would wait for a worker until it times out.
    const run = await h.env.client.workflow.start('agentRun', { taskQueue: `nobody-${id}`, workflowId: id, args: [{ prompt: 'x' }] });
    try {
      await hub.publish(id, [
        { type: 'text', callNumber: 1, attempt: 1, text: 'from the channel' },
        { type: 'end', state: completedView() },
      ]);
      const env = { h, app, baseUrl: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, stream: undefined as never, channel: hub };
      const ms = await readSse(await events(env, id));
      expect(ms.map((m) => m.event)).toEqual(['text', 'end']);
      expect(textOf(ms)).toBe('from the channel');
    } finally {
      await run.terminate();
      await app.close();
      await h.close();
    }
  });
  test('waits for the stream of a run no worker has taken yet, instead of polling it', async () => {
    const h = await startAgentHarness();
    const hub = new MemoryHub();
    const app = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, stream: hub, attachWaitMs: 200 });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const id = `untaken-${Date.now()}`;
    const run = await h.env.client.workflow.start('agentRun', { taskQueue: `nobody-${id}`, workflowId: id, args: [{ prompt: 'x' }] });
    try {
      const env = { h, app, baseUrl: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, stream: undefined as never, channel: hub };
      const reading = events(env, id).then((res) => readSse(res));
      await sleep(1_500); // several attach waits: the worker that takes the run is late
      await hub.publish(id, [
        { type: 'text', callNumber: 1, attempt: 1, text: 'late but streamed' },
        { type: 'end', state: completedView() },
      ]);
      const ms = await reading;
      expect(ms.map((m) => m.event)).toEqual(['text', 'end']);
    } finally {
      await run.terminate();
      await app.close();
      await h.close();
    }
  });
});

describe('the embedded default (no stream variable set)', () => {
  const quiet = { warn: () => undefined, info: () => undefined };

  test('a worker with neither AGENT_STREAM_URL nor AGENT_STREAM_REDIS_URL publishes to the local gateway on GATEWAY_PORT', async () => {
    const port = await freePort();
    const stream = configuredStream({ GATEWAY_PORT: String(port), GATEWAY_TOKEN: TOKEN }, () => undefined);
    expect(stream).toBeDefined();
    const h = await startAgentHarness(undefined, { stream });
    const app = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, pollIntervalMs: 100, stream: new MemoryHub() });
    await app.listen({ port, host: '127.0.0.1' });
    try {
      const env = { h, app, baseUrl: `http://127.0.0.1:${port}`, stream: stream!, channel: new MemoryHub() };
      h.model.register('default-hub', [{ text: 'pushed by default', chunkSize: 3, chunkDelayMs: 30 }]);
      const id = await startRun(env, { prompt: 'talk', model: 'default-hub' });
      const ms = await readSse(await events(env, id));
      expect(ms.every((m) => isOffsetId(m.id))).toBe(true);
      expect(ms.some((m) => m.event === 'stream')).toBe(false);
      expect(textOf(ms)).toBe('pushed by default');
      expect(stream!.failures).toBe(0);
    } finally {
      await app.close();
      await h.close();
    }
  });

  test('AGENT_STREAM_URL=off: the worker publishes nothing', () => {
    expect(configuredStream({ AGENT_STREAM_URL: 'off' }, () => undefined)).toBeUndefined();
  });

  test('a gateway that is not there is asked again only after a backoff, not once per batch', async () => {
    let requests = 0;
    const down = createHttpServer((req, res) => {
      requests++;
      req.resume();
      res.writeHead(503).end('not yet');
    });
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    let now = 1_000;
    const stream = liveStream(httpTarget(`http://127.0.0.1:${(down.address() as AddressInfo).port}`, TOKEN), quiet, { now: () => now });
    try {
      stream.publish('r1', [{ type: 'text', callNumber: 1, attempt: 1, text: 'a' }]);
      await stream.drain();
      expect(stream.healthy).toBe(false);
      for (let i = 0; i < 200; i++) stream.publish(`r${i % 5}`, [{ type: 'text', callNumber: 1, attempt: 1, text: 'b' }]);
      await stream.drain();
      expect(requests).toBe(1);
      expect(stream.failures).toBe(201);
      now += 250; // the first backoff: one probe
      for (let i = 0; i < 5; i++) stream.publish(`r${i}`, [{ type: 'text', callNumber: 1, attempt: 1, text: 'c' }]);
      await stream.drain();
      expect(requests).toBe(2);
      now += 250; // the backoff doubled: not yet
      stream.publish('r1', [{ type: 'text', callNumber: 1, attempt: 1, text: 'd' }]);
      await stream.drain();
      expect(requests).toBe(2);
    } finally {
      down.close();
    }
  });
});

describe('Redis Streams (a real redis-server)', () => {
  let e: Env;
  let redis: ChildProcess;
  let channel: RedisChannel;
  let workerChannel: RedisChannel;
  beforeAll(async () => {
    const port = await freePort();
    redis = await startRedis(port);
    const url = `redis://127.0.0.1:${port}`;
    channel = RedisChannel.open({ url });
    workerChannel = RedisChannel.open({ url });
    await Promise.all([channel.ready, workerChannel.ready]);
    e = await setUp(channel, () => workerChannel);
  });
  afterAll(async () => {
    await e?.app.close();
    await e?.h.close();
    await channel?.close();
    await workerChannel?.close();
    redis?.kill('SIGKILL');
  });
  channelContract('redis', () => e);

  test('redis: another gateway instance serves the same offsets (re-attach after a gateway restart)', async () => {
    e.h.model.register('redis-two', [{ text: 'one two three four five', chunkSize: 3, chunkDelayMs: 10 }]);
    const id = await startRun(e, { prompt: 'talk', model: 'redis-two' });
    const first = await readSse(await events(e, id));
    const other = buildGateway({ agents: new AgentClient(e.h.env.client, e.h.taskQueue), token: TOKEN, stream: channel });
    await other.listen({ port: 0, host: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${(other.server.address() as AddressInfo).port}/v1/runs/${id}/events`;
      const rest = await readSse(await fetch(url, { headers: { ...auth, 'last-event-id': first[2].id! } }));
      expect([...first.slice(0, 3), ...rest]).toEqual(first);
    } finally {
      await other.close();
    }
  });

  // Last: it stops the server.
  test('redis: the channel goes down mid-run: the run completes, the watcher falls back to the state, marked degraded', async () => {
    const answer = Array.from({ length: 40 }, (_, i) => `t${i} `).join('');
    e.h.model.register('redis-down', [{ text: answer, chunkSize: 4, chunkDelayMs: 50 }]);
    const id = await startRun(e, { prompt: 'talk', model: 'redis-down' });
    let killed = false;
    const ms = await readSse(await events(e, id), undefined, async () => {
      if (killed) return;
      killed = true;
      await sleep(300); // a few text events in
      redis.kill('SIGKILL');
    });
    const degraded = ms.findIndex((m) => m.event === 'stream');
    expect(degraded).toBeGreaterThanOrEqual(0);
    expect(ms[degraded].data.status).toBe('degraded');
    expect(ms.at(-1)).toMatchObject({ event: 'end', data: { state: { state: 'COMPLETED', answer } } });
    // What came from the channel and what came from polling join without a duplicate or a gap.
    expect(textOf(ms)).toBe(answer);
    expect(e.stream.failures).toBeGreaterThan(0);
  });
});
