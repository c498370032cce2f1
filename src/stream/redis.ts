/**
 * The production channel: one Redis stream per run (`XADD` with `MAXLEN ~`, an expiry after the run's last event),
 * its ids the offsets. Any gateway instance serves any run, and offsets outlive a gateway restart. Each gateway reads
 * a run once (`XREAD BLOCK` on a connection of its own) for all its watchers of that run.
 */
import { createClient } from '@redis/client';
import type { StreamEvent } from '../common/stream';
import { compareOffsets, START, type Offset, type Readable, type ReadPage, type StreamChannel, type SubscribeOptions, type Subscription, type HearsWorkers, type WorkerHello } from './channel';
import { Fanout, type Entry } from './fanout';

export interface RedisChannelOptions {
  /** `redis://host:port` (`AGENT_STREAM_REDIS_URL`). */
  url: string;
  /** Events kept per run (approximately: `MAXLEN ~`). @default 10000 */
  maxEventsPerRun?: number;
  /** A run's stream is deleted this long after its last event. @default 86400 (a day) */
  ttlSeconds?: number;
  /** The key of a run's stream is this followed by its workflow id. @default `agent:stream:` */
  keyPrefix?: string;
  /** Called with each connection error (the channel logs them once). */
  onError?: (err: Error) => void;
}

/** RESP2: replies come as the plain arrays parsed below. */
const newClient = (url: string) =>
  createClient({
    url,
    RESP: 2,
    // Fail at once while disconnected: a publish must never wait for Redis to come back.
    disableOfflineQueue: true,
    socket: { connectTimeout: 2_000, reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2_000) },
  });
type RedisClient = ReturnType<typeof newClient>;
type RawEntry = [string, string[]];

/** How long one blocking read waits before it asks again (a stopped reader's connection is destroyed at once). */
const BLOCK_MS = 30_000;

export class RedisChannel implements StreamChannel, Readable, HearsWorkers {
  private readonly fanout: Fanout;
  private readonly maxEvents: number;
  private readonly ttl: number;
  private readonly prefix: string;

  private constructor(
    private readonly client: RedisClient,
    opts: RedisChannelOptions,
  ) {
    this.maxEvents = opts.maxEventsPerRun ?? 10_000;
    this.ttl = opts.ttlSeconds ?? 86_400;
    this.prefix = opts.keyPrefix ?? 'agent:stream:';
    this.fanout = new Fanout({ range: (runId, after, count) => this.range(runId, after, count), follow: (...args) => this.follow(...args) });
  }

  /**
   * Opens the channel and connects in the background, reconnecting after outages: until connected, publishes fail
   * fast and subscriptions end with `down`. `ready` resolves once connected.
   */
  static open(opts: RedisChannelOptions): RedisChannel {
    const client = newClient(opts.url);
    client.on('error', (err: Error) => opts.onError?.(err));
    const channel = new RedisChannel(client, opts);
    channel.ready = client.connect().then(
      () => undefined,
      (err: unknown) => opts.onError?.(err as Error),
    );
    return channel;
  }

  /** Every worker's last hello, in one hash beside the streams: `agent:stream-workers` by default, never a run's key (`agent:stream:<id>`). */
  private get workersKey(): string {
    return `${this.prefix.replace(/:+$/, '')}-workers`;
  }

  async hello(hello: WorkerHello): Promise<void> {
    await Promise.all([this.client.sendCommand(['HSET', this.workersKey, hello.identity, String(Date.now())]), this.client.sendCommand(['EXPIRE', this.workersKey, String(this.ttl)])]);
  }

  async heard(): Promise<Map<string, number>> {
    const flat = await this.client.sendCommand<string[]>(['HGETALL', this.workersKey]);
    const heard = new Map<string, number>();
    for (let i = 0; i + 1 < flat.length; i += 2) heard.set(flat[i]!, Number(flat[i + 1]));
    return heard;
  }

  /** Resolves once the first connection is up (or failed). */
  ready: Promise<void> = Promise.resolve();

  async publish(runId: string, events: StreamEvent[]): Promise<Offset[]> {
    const key = this.key(runId);
    // Sent in one tick, so on one connection in order: the ids come out in the order of `events`.
    const added = events.map((e) => this.client.sendCommand<string>(['XADD', key, 'MAXLEN', '~', String(this.maxEvents), '*', 'e', JSON.stringify(e)]));
    const expiry = this.client.sendCommand(['EXPIRE', key, String(this.ttl)]);
    const [offsets] = await Promise.all([Promise.all(added), expiry]);
    return offsets;
  }

  async head(runId: string): Promise<Offset | null> {
    const last = await this.client.sendCommand<RawEntry[]>(['XREVRANGE', this.key(runId), '+', '-', 'COUNT', '1']);
    return last[0]?.[0] ?? null;
  }

  subscribe(runId: string, after: Offset, opts: SubscribeOptions = {}): Subscription {
    return this.fanout.subscribe(runId, after, opts.bufferSize);
  }

  read(runId: string, after: Offset, count: number): Promise<ReadPage> {
    return this.range(runId, after, count);
  }

  async close(): Promise<void> {
    this.fanout.closeAll('the channel closed');
    await this.client.close().catch(() => this.client.destroy());
  }

  private async range(runId: string, after: Offset, count: number): Promise<{ entries: Entry[]; gap: boolean }> {
    const key = this.key(runId);
    const info = await this.client.sendCommand<unknown[]>(['XINFO', 'STREAM', key]).catch((err: unknown) => {
      if (/no such key/i.test(String(err))) return undefined;
      throw err;
    });
    if (!info) return { entries: [], gap: after !== START };
    const field = (name: string) => String(info[info.indexOf(name) + 1]);
    // Trimmed past `after`, or `after` is an id this stream never gave (the key was deleted and made anew).
    const gap = compareOffsets(after, field('max-deleted-entry-id')) < 0 || compareOffsets(after, field('last-generated-id')) > 0;
    const from = gap || after === START ? '-' : `(${after}`;
    const raw = await this.client.sendCommand<RawEntry[]>(['XRANGE', key, from, '+', 'COUNT', String(count)]);
    return { entries: raw.map(toEntry), gap };
  }

  private follow(runId: string, after: Offset, deliver: (entries: Entry[]) => void, fail: (reason: string) => void): () => void {
    // A blocking read holds its connection: one of its own, which fails instead of reconnecting behind the readers' backs.
    const reader = this.client.duplicate({ disableOfflineQueue: true, socket: { connectTimeout: 2_000, reconnectStrategy: false } });
    reader.on('error', () => undefined); // reported through the read that fails
    let stopped = false;
    let position = after;
    const key = this.key(runId);
    const loop = async () => {
      await reader.connect();
      while (!stopped) {
        const reply = await reader.sendCommand<Array<[string, RawEntry[]]> | null>(['XREAD', 'COUNT', '1000', 'BLOCK', String(BLOCK_MS), 'STREAMS', key, position]);
        const entries = reply?.[0]?.[1].map(toEntry) ?? [];
        if (stopped || entries.length === 0) continue;
        position = entries.at(-1)!.offset;
        deliver(entries);
      }
    };
    loop().catch((err: unknown) => {
      if (!stopped) fail(`redis: ${err instanceof Error ? err.message : String(err)}`);
      stopped = true;
      reader.destroy();
    });
    return () => {
      if (stopped) return;
      stopped = true;
      reader.destroy();
    };
  }

  private key(runId: string): string {
    return this.prefix + runId;
  }
}

function toEntry([offset, fields]: RawEntry): Entry {
  return { offset, event: JSON.parse(fields[fields.indexOf('e') + 1]) as StreamEvent };
}
