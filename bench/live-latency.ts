/**
 * Token delay from a provider to SSE clients (issue 24), by hand: `tsx bench/live-latency.ts <mode> <watchers>`
 * with TEMPORAL_ADDRESS (a dev server) and, for redis, AGENT_STREAM_REDIS_URL. A local OpenAI-compatible server
 * streams 60 chunks 100 ms apart, each the time it was sent; every watcher records when each arrived.
 * Modes: `poll` (a gateway with no channel), `hub`, `redis`; and the degraded ones of issue 49, a gateway with its hub
 * and a worker that cannot publish to it: `off` (AGENT_STREAM_URL=off), `wrong-port` (it publishes where nothing
 * listens, as a worker at its defaults does when it finds no gateway of its runs on its host), `wrong-token`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway';
import { httpTarget, liveStream, MemoryHub, RedisChannel, type PublishTarget, type StreamChannel } from '../src/stream';
import { agentWorkerOptions, openAIClient } from '../src/worker';
import { bundleAgentWorkflows } from '../src/worker/workflow-bundle';
import { closeSafeConnectionPlugin } from '../src/config/connection';

const CHUNKS = 60;
const GAP_MS = 100;

function provider(): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: object, finish: string | null = null) =>
      res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    let i = 0;
    const timer = setInterval(() => {
      if (i++ < CHUNKS) return chunk({ content: `${Date.now()};` });
      clearInterval(timer);
      chunk({}, 'stop');
      res.end('data: [DONE]\n\n');
    }, GAP_MS);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** A port nothing listens on (one just given up). */
function closedPort(): Promise<number> {
  const server = createServer();
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    server.close(() => resolve(port));
  }));
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function main(): Promise<void> {
  const [mode = 'poll', watchersArg = '1'] = process.argv.slice(2);
  const watchers = Number(watchersArg);
  const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const model = await provider();
  const modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
  const redisUrl = process.env.AGENT_STREAM_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const degraded = ['off', 'wrong-port', 'wrong-token'].includes(mode);
  const channel: StreamChannel | undefined = mode === 'hub' || degraded ? new MemoryHub() : mode === 'redis' ? RedisChannel.open({ url: redisUrl }) : undefined;
  const workerChannel = mode === 'redis' ? RedisChannel.open({ url: redisUrl }) : undefined;
  let gatewayUrl = '';
  const quiet = { warn: () => undefined, info: () => undefined };
  const hello = { identity: `bench-${process.pid}` };
  const nowhere = `http://127.0.0.1:${await closedPort()}`;
  // Set once the gateway listens (the worker's first hello goes out then).
  let target: PublishTarget | undefined;
  const late: PublishTarget = { publish: (id, events) => target!.publish(id, events), hello: (h) => (target ? target.hello!(h) : Promise.reject(new Error('not yet'))) };
  const stream =
    mode === 'poll' || mode === 'off' ? undefined : liveStream(workerChannel ?? late, quiet, { hello });
  const taskQueue = `bench-${randomUUID()}`;
  const connection = await NativeConnection.connect({ address, plugins: [closeSafeConnectionPlugin] });
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowBundle: await bundleAgentWorkflows(),
    ...agentWorkerOptions({ openai: openAIClient({ baseURL: modelUrl }), defaultModel: 'bench', workspace: '/tmp', stream }),
  });
  const running = worker.run();
  const client = new Client({ connection: await Connection.connect({ address, plugins: [closeSafeConnectionPlugin] }) });
  const agents = new AgentClient(client, taskQueue);
  const app = buildGateway({ agents, token: 'bench', ...(channel ? { stream: channel } : {}) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  gatewayUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  target = httpTarget(mode === 'wrong-port' ? nowhere : gatewayUrl, mode === 'wrong-token' ? 'not-the-gateways' : 'bench');
  // The worker finds out with its first hello, as a worker does at start.
  await new Promise((resolve) => setTimeout(resolve, 500));
  if (degraded && stream?.healthy) throw new Error(`${mode}: the worker can publish, so this is no degraded case`);
  const cpu0 = process.cpuUsage();

  const { workflowId } = await agents.start({ prompt: 'go' });
  const delays: number[] = [];
  const stamped: Array<[number, number]> = [];
  let lastOpened = 0;
  let complete = 0;
  await Promise.all(
    Array.from({ length: watchers }, async () => {
      const res = await fetch(`${gatewayUrl}/v1/runs/${workflowId}/events`, { headers: { authorization: 'Bearer bench' } });
      lastOpened = Math.max(lastOpened, Date.now());
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      let seen = 0;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const now = Date.now();
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!/^event: text$/m.test(block)) continue;
          const data = JSON.parse(/^data: (.*)$/m.exec(block)![1]) as { text: string };
          for (const stamp of data.text.split(';').filter(Boolean)) {
            delays.push(now - Number(stamp));
            stamped.push([Number(stamp), now - Number(stamp)]);
            seen++;
          }
        }
      }
      if (seen === CHUNKS) complete++;
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  // Tokens sent once every watcher was attached: the attach (a state read each, at once) is left out.
  const steady = stamped.filter(([at]) => at > lastOpened).map(([, d]) => d);
  console.log(
    JSON.stringify({ mode, watchers, tokens: delays.length, complete, p50: pct(delays, 50), p95: pct(delays, 95), max: Math.max(...delays), steady: { tokens: steady.length, p50: pct(steady, 50), p95: pct(steady, 95), max: Math.max(...steady) }, cpuSeconds: (cpu.user + cpu.system) / 1e6 }),
  );
  stream?.close();
  await app.close();
  await channel?.close();
  await workerChannel?.close();
  worker.shutdown();
  await running;
  await connection.close();
  model.close();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
