/**
 * Redis Streams against NATS JetStream on the live stream's workload (issue 24): one stream per run, token deltas 100 ms
 * apart, each event's offset from the broker, replay from an offset, fan-out to N subscribers; the same code path for
 * both except the broker calls. Each subscriber reads from the broker itself (XREAD BLOCK on its own connection; an
 * ordered JetStream consumer), so the broker's fan-out is what is measured. Reports delay (publish to read), events
 * delivered, replay exactness and CPU of the broker process and of this client process (publishers and subscribers).
 *
 *   npm install --prefix bench/brokers && npx tsx bench/brokers/compare.ts [--events 60] [--gap-ms 100] [--nats-memory]
 *
 * Starts its own redis-server and nats-server (-js) on free ports; nothing else is needed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect as tcp, createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createClient } from '@redis/client';
import { connect as natsConnect } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { cpuTimeMs } from '../lib/ipc';
import { percentile } from '../lib/stats';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const EVENTS = arg('events', 60);
const GAP_MS = arg('gap-ms', 100);
/** JetStream's storage: file (its durable default) or memory (as the bench's redis-server, which persists nothing). */
const NATS_STORAGE = process.argv.includes('--nats-memory') ? StorageType.Memory : StorageType.File;
const SCENARIOS = [
  { runs: 1, subscribers: 1 },
  { runs: 1, subscribers: 100 },
  { runs: 100, subscribers: 2 },
];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the bench needs of a broker: append to a run's stream, read it from an offset, as the channel does. */
interface Broker {
  name: string;
  pid: number;
  /** Appends one event; resolves with its offset. */
  publish(run: string, data: string): Promise<string>;
  /** Calls `onEvent` with each event after `after` (`null`: from the start) until `stop` is called. */
  subscribe(run: string, after: string | null, onEvent: (offset: string, data: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

async function listening(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = tcp(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`nothing listens on ${port}`);
}

async function redisBroker(dir: string): Promise<Broker & { proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  await listening(port);
  const url = `redis://127.0.0.1:${port}`;
  const client = createClient({ url, RESP: 2 });
  await client.connect();
  return {
    name: 'redis',
    proc,
    pid: proc.pid!,
    // As RedisChannel.publish: XADD with an approximate cap; the id is the offset.
    publish: (run, data) => client.sendCommand<string>(['XADD', `s:${run}`, 'MAXLEN', '~', '10000', '*', 'e', data]),
    async subscribe(run, after, onEvent) {
      const reader = client.duplicate();
      await reader.connect();
      let stopped = false;
      let position = after ?? '0-0';
      const loop = (async () => {
        while (!stopped) {
          const reply = await reader.sendCommand<Array<[string, Array<[string, string[]]>]> | null>(['XREAD', 'COUNT', '1000', 'BLOCK', '5000', 'STREAMS', `s:${run}`, position]);
          for (const [id, fields] of reply?.[0]?.[1] ?? []) {
            position = id;
            onEvent(id, fields[1]);
          }
        }
      })().catch(() => undefined);
      return async () => {
        stopped = true;
        reader.destroy();
        await loop;
      };
    },
    async close() {
      await client.close();
      proc.kill('SIGTERM');
    },
  };
}

async function natsBroker(dir: string): Promise<Broker & { proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: 'ignore' });
  await listening(port);
  const nc = await natsConnect({ servers: `127.0.0.1:${port}` });
  const jsm = await jetstreamManager(nc);
  // One stream for all runs, a subject per run: a run's events are those of its subject, offsets the stream's sequence.
  await jsm.streams.add({ name: 'AGENT', subjects: ['agent.stream.>'], storage: NATS_STORAGE, max_msgs_per_subject: 10_000 });
  const js = jetstream(nc);
  return {
    name: `nats-jetstream (${NATS_STORAGE === StorageType.Memory ? 'memory' : 'file'})`,
    proc,
    pid: proc.pid!,
    publish: async (run, data) => String((await js.publish(`agent.stream.${run}`, data)).seq),
    async subscribe(run, after, onEvent) {
      const consumer = await js.consumers.get('AGENT', {
        // One subject as a string: filter_subject, which the nats-server of Debian 12 (2.9) takes; a list needs 2.10.
        filter_subjects: `agent.stream.${run}`,
        ...(after ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: Number(after) + 1 } : { deliver_policy: DeliverPolicy.All }),
      });
      const messages = await consumer.consume();
      const loop = (async () => {
        for await (const m of messages) onEvent(String(m.seq), m.string());
      })().catch(() => undefined);
      return async () => {
        await messages.close();
        await loop;
      };
    },
    async close() {
      await nc.drain();
      proc.kill('SIGTERM');
    },
  };
}

interface Result {
  broker: string;
  runs: number;
  subscribers: number;
  p50: number;
  p95: number;
  max: number;
  /** Subscribers that got every event, in order, once. */
  complete: number;
  /** CPU ms of the broker process and of this process (publishers and subscribers) over the scenario. */
  brokerCpuMs: number;
  clientCpuMs: number;
}

async function scenario(broker: Broker, runs: number, subscribers: number, tag: string): Promise<Result> {
  const ids = Array.from({ length: runs }, (_, i) => `${tag}-${i}`);
  const delays: number[] = [];
  const seen = new Map<string, string[]>();
  const stops: Array<() => Promise<void>> = [];
  for (const run of ids) {
    for (let s = 0; s < subscribers; s++) {
      const got: string[] = [];
      seen.set(`${run}/${s}`, got);
      stops.push(
        await broker.subscribe(run, null, (_offset, data) => {
          const { i, at } = JSON.parse(data) as { i: number; at: number };
          delays.push(Date.now() - at);
          got.push(String(i));
        }),
      );
    }
  }
  const broker0 = cpuTimeMs(broker.pid);
  const client0 = process.cpuUsage();
  await Promise.all(
    ids.map(async (run) => {
      for (let i = 0; i < EVENTS; i++) {
        // A token delta as the model activity publishes it: the event's JSON, stamped with its send time.
        await broker.publish(run, JSON.stringify({ type: 'text', callNumber: 1, attempt: 1, text: 'tok ', i, at: Date.now() }));
        await sleep(GAP_MS);
      }
    }),
  );
  await sleep(500);
  const client = process.cpuUsage(client0);
  const brokerCpuMs = cpuTimeMs(broker.pid) - broker0;
  await Promise.all(stops.map((stop) => stop()));
  const expected = Array.from({ length: EVENTS }, (_, i) => String(i)).join(',');
  const complete = [...seen.values()].filter((got) => got.join(',') === expected).length;
  return {
    broker: broker.name,
    runs,
    subscribers,
    p50: percentile(delays, 50),
    p95: percentile(delays, 95),
    max: Math.max(...delays),
    complete,
    brokerCpuMs,
    clientCpuMs: (client.user + client.system) / 1000,
  };
}

/** A subscriber from the offset of event k gets exactly the events after it. */
async function replay(broker: Broker, tag: string): Promise<boolean> {
  const run = `${tag}-replay`;
  const offsets: string[] = [];
  for (let i = 0; i < 20; i++) offsets.push(await broker.publish(run, JSON.stringify({ i, at: Date.now() })));
  const got: number[] = [];
  const stop = await broker.subscribe(run, offsets[9], (_o, data) => got.push((JSON.parse(data) as { i: number }).i));
  await sleep(500);
  await stop();
  return got.join(',') === Array.from({ length: 10 }, (_, i) => i + 10).join(',');
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'brokers-'));
  const results: Result[] = [];
  const replays: Record<string, boolean> = {};
  try {
    for (const make of [redisBroker, natsBroker]) {
      const sub = path.join(dir, make.name);
      mkdirSync(sub);
      const broker = await make(sub);
      try {
        replays[broker.name] = await replay(broker, 'r');
        for (const { runs, subscribers } of SCENARIOS) {
          const r = await scenario(broker, runs, subscribers, `${runs}x${subscribers}`);
          results.push(r);
          console.log(JSON.stringify(r));
        }
      } finally {
        await broker.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\n${EVENTS} events ${GAP_MS} ms apart per run; load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores\n`);
  console.log('| broker | runs x subscribers | p50 ms | p95 ms | max ms | complete | broker CPU ms | client CPU ms |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results) console.log(`| ${r.broker} | ${r.runs} x ${r.subscribers} | ${r.p50} | ${r.p95} | ${r.max} | ${r.complete}/${r.runs * r.subscribers} | ${r.brokerCpuMs} | ${r.clientCpuMs.toFixed(0)} |`);
  console.log(`\nreplay from an offset gives exactly the events after it: ${Object.entries(replays).map(([b, ok]) => `${b} ${ok ? 'yes' : 'NO'}`).join(', ')}`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
