/**
 * Offsets, the positions of a run's events in the stream channel, on a real worker, dev server and gateway with the
 * embedded hub: the client refuses offsets where it has no channel, and an id past the end of the stream is refused.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import { httpTarget, liveStream, MemoryHub, type PublishTarget } from '../src/stream';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';
import { readSse } from './support/sse';

const TOKEN = 'stream-offsets-token';
const auth = { authorization: `Bearer ${TOKEN}` };
let h: AgentHarness;
let app: FastifyInstance;
let baseUrl: string;
const hub = new MemoryHub();

beforeAll(async () => {
  let publishTo: PublishTarget | undefined;
  h = await startAgentHarness(undefined, { stream: liveStream({ publish: (id, e) => publishTo!.publish(id, e) }, { warn: () => undefined, info: () => undefined }) });
  app = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, heartbeatMs: 200, pollIntervalMs: 100, stream: hub });
  await app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  publishTo = httpTarget(baseUrl, TOKEN);
}, 120_000);
afterAll(async () => {
  await app?.close();
  await h?.close();
});

/** A completed run, and every event of its stream as the gateway sends it. */
async function completedRun(model: string) {
  h.model.register(model, [{ text: 'one two three four', chunkSize: 4 }]);
  const res = await app.inject({ method: 'POST', url: '/v1/runs', headers: auth, payload: { prompt: 'talk', model } });
  const id = res.json().workflowId as string;
  const all = (await readSse(await fetch(`${baseUrl}/v1/runs/${id}/events`, { headers: auth }), (m) => m.event === 'end')).filter((m) => m.event);
  expect(all.at(-1)?.event).toBe('end');
  return { id, all, last: all.at(-1)!.id! };
}

/** An offset of the hub's epoch that it has not given yet: `<epoch>-<n + 100>`. */
/** The channel offset in an SSE id (`<offset>_<cursor>`), and an id 100 events past it. */
const offsetOf = (id: string) => id.split('_')[0];
const past = (id: string) => {
  const [offset, cursor] = id.split('_');
  const [epoch, n] = offset.split('-');
  return `${epoch}-${Number(n) + 100}${cursor === undefined ? '' : `_${cursor}`}`;
};

describe('client: offsets need a stream channel', () => {
  test('watch({ after }) or ({ onOffset }) without stream is refused, naming stream, instead of ignoring the offset', async () => {
    const { id, all, last } = await completedRun('offsets-client');
    const handle = new AgentClient(h.env.client, h.taskQueue).handle(id);
    const events: string[] = [];
    await expect(handle.watch((e) => void events.push(e.type), { after: offsetOf(last) })).rejects.toThrow(/after needs stream: offsets are positions in a stream channel/);
    await expect(handle.watch((e) => void events.push(e.type), { onOffset: () => undefined })).rejects.toThrow(/onOffset needs stream/);
    await expect(handle.watch((e) => void events.push(e.type), { stream: hub, after: 'yesterday' })).rejects.toThrow(/after: expected an offset/);
    expect(events).toEqual([]);
    // With the channel: the offset is honoured, and one past the end is refused rather than replayed to.
    const rest: string[] = [];
    await handle.watch((e) => void rest.push(e.type), { stream: hub, after: offsetOf(all[2].id!) });
    expect(rest).toEqual(all.slice(3).map((m) => m.event));
    await expect(handle.watch(() => undefined, { stream: hub, after: past(offsetOf(last)) })).rejects.toThrow(
      `after: ${past(offsetOf(last))} is past the end of run ${id}'s stream (its last event is ${offsetOf(last)})`,
    );
  }, 60_000);
});

describe('gateway: a Last-Event-ID past the end of the stream', () => {
  test('is 400 naming it and the last id, not a gap followed by a replay whose ids go backwards', async () => {
    const { id, last } = await completedRun('offsets-gateway');
    // As the header, and as the query parameter a new EventSource uses.
    for (const [query, headers] of [['', { 'last-event-id': past(last) }], [`?lastEventId=${past(last)}`, {}]] as Array<[string, Record<string, string>]>) {
      const res = await fetch(`${baseUrl}/v1/runs/${id}/events${query}`, { headers: { ...auth, ...headers } });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        error: {
          code: 'invalid_input',
          message: `Last-Event-ID ${past(last)} is past the end of this run's stream (its last event is ${offsetOf(last)}): not an id this stream sent; reconnect without it to read the run from the start`,
          head: offsetOf(last),
        },
      });
    }
  }, 60_000);
});
