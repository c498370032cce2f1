/**
 * The worker's side of the stream: `LiveStream.publish` never throws, never waits and never slows the caller. Each
 * run's events go out in order, one request at a time, those that pile up meanwhile in the next; while the channel
 * fails they are dropped (bounded), counted, and the first failure is logged once. Watchers then read the state.
 * After a failure the channel is asked again only after a backoff (0.25 s, doubling to 10 s): a worker whose gateway
 * is not there sends no request per batch.
 */
import type { StreamEvent } from '../common/stream';
import { gatewayRequests, type GatewayAddress } from './discovery';
import { START, type Offset, type Readable, type ReadPage, type StreamChannel, type WorkerHello } from './channel';

export type { WorkerHello } from './channel';

/**
 * Where a worker publishes: a channel, or the gateway's hub over HTTP; with `read`, the worker can read a run back;
 * with `hello`, it tells the gateway it is there (and finds out, while idle, that it can publish again).
 */
export type PublishTarget = Pick<StreamChannel, 'publish'> & Partial<Readable> & { hello?(hello: WorkerHello): Promise<void> };

/** Events one request carries at most (the gateway's route takes 1,000). */
const MAX_BATCH = 500;

/** Events a run may have waiting while its previous publish is in flight; past it the oldest are dropped. */
const MAX_PENDING = 10_000;

export interface LiveStream {
  publish(runId: string, events: StreamEvent[]): void;
  /**
   * Whether the last publish (or hello) went through: while not, the model activity heartbeats its text every
   * `degradedHeartbeatMs` for polling watchers, and marks its beats `degraded`.
   */
  readonly healthy: boolean;
  /** Events dropped because the channel failed. */
  readonly failures: number;
  /**
   * The run's stream as the channel has it now, every page of it (a re-attaching model call reads what its earlier
   * attempt published); `undefined` when the target cannot be read. Rejects when the channel fails.
   */
  read(runId: string): Promise<ReadPage | undefined>;
  /** Waits for what is in flight (tests, shutdown). */
  drain(): Promise<void>;
  /** Stops the hellos (shutdown); publishing still works. */
  close(): void;
}

/** The first wait after a failure, and the longest. */
const BACKOFF_MS = { first: 250, max: 10_000 };

export interface LiveStreamOptions {
  /** What the one log line of an outage says the channel is. @default 'stream channel' */
  name?: string;
  /** @default Date.now */
  now?: () => number;
  /** With a target that takes hellos: who this worker is; it then says hello at once and every `helloMs`. */
  hello?: WorkerHello;
  /** @default 10000 */
  helloMs?: number;
  /** While the channel fails, the warning comes again this often (at a failed publish or hello). @default 60000 */
  remindMs?: number;
  /** What the warning tells the operator to do (which setting to set). */
  advice?: string;
}

export interface Logger {
  warn(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
}

export function liveStream(target: PublishTarget, log: Logger = console, opts: LiveStreamOptions = {}): LiveStream {
  const name = opts.name ?? 'stream channel';
  const now = opts.now ?? Date.now;
  const remindMs = opts.remindMs ?? 60_000;
  const advice = opts.advice ? ` ${opts.advice}` : '';
  const pending = new Map<string, StreamEvent[]>();
  /** Events of a run dropped since its last publish that went through: the next one says so first. */
  const lost = new Map<string, number>();
  const drop = (runId: string, n: number) => {
    failures += n;
    lost.set(runId, (lost.get(runId) ?? 0) + n);
  };
  const inFlight = new Map<string, Promise<void>>();
  let healthy = true;
  let failures = 0;
  /** When the warning was last written; 0: not since the channel last worked. */
  let warnedAt = 0;
  let backoff = 0;
  let retryAt = 0;
  const succeeded = () => {
    if (!healthy) log.info(`${name} is back: watchers get text from the channel again`, { dropped: failures });
    healthy = true;
    warnedAt = 0;
    backoff = 0;
  };
  /** Loud, and again every `remindMs` until it works: an operator looking at the worker's log sees it is degraded. */
  const failed = (err: unknown) => {
    healthy = false;
    backoff = Math.min(backoff ? backoff * 2 : BACKOFF_MS.first, BACKOFF_MS.max);
    retryAt = now() + backoff;
    if (warnedAt && now() - warnedAt < remindMs) return;
    const again = warnedAt !== 0;
    warnedAt = now();
    log.warn(`${name} ${again ? 'still fails' : 'failed'}: streams are degraded (watchers poll the state, model calls heartbeat their text every 200 ms) until it answers.${advice}`, {
      error: String(err),
      dropped: failures,
    });
  };

  const send = (runId: string): void => {
    const waiting = pending.get(runId);
    if (!waiting?.length || inFlight.has(runId)) return;
    if (!healthy && now() < retryAt) {
      // Backing off: what comes meanwhile is dropped without a request, as a failed request would drop it.
      drop(runId, waiting.length);
      pending.delete(runId);
      return;
    }
    // One probe at a time while unhealthy: the others wait for its answer or drop with the next backoff.
    if (!healthy) retryAt = Number.POSITIVE_INFINITY;
    const dropped = lost.get(runId);
    lost.delete(runId);
    const events: StreamEvent[] = [...(dropped ? [{ type: 'lost' as const, count: dropped }] : []), ...waiting.splice(0, MAX_BATCH)];
    if (waiting.length === 0) pending.delete(runId);
    const done = target.publish(runId, events).then(succeeded, (err: unknown) => {
      // The marker's count was counted when those were dropped; it goes with the next attempt again.
      const carried = events[0]?.type === 'lost' ? events[0].count : 0;
      const real = events.length - (carried ? 1 : 0);
      failures += real;
      lost.set(runId, (lost.get(runId) ?? 0) + carried + real);
      failed(err);
    });
    inFlight.set(
      runId,
      done.finally(() => {
        inFlight.delete(runId);
        send(runId);
      }),
    );
  };

  // The hello finds out, with no run publishing, that the channel works (or not): calls start degraded, not after a failure.
  const { hello } = opts;
  const sayHello = hello && target.hello ? () => void target.hello!(hello).then(succeeded, failed) : undefined;
  sayHello?.();
  const helloTimer = sayHello ? setInterval(sayHello, opts.helloMs ?? 10_000) : undefined;
  helloTimer?.unref();

  return {
    publish(runId, events) {
      if (events.length === 0) return;
      const queued = pending.get(runId) ?? [];
      queued.push(...events);
      if (queued.length > MAX_PENDING) {
        drop(runId, queued.length - MAX_PENDING);
        queued.splice(0, queued.length - MAX_PENDING);
      }
      pending.set(runId, queued);
      send(runId);
    },
    get healthy() {
      return healthy;
    },
    get failures() {
      return failures;
    },
    async drain() {
      while (inFlight.size > 0) await Promise.all(inFlight.values());
    },
    close() {
      clearInterval(helloTimer);
    },
    async read(runId) {
      if (!target.read) return undefined;
      const all: ReadPage = { entries: [], gap: false };
      for (let after: Offset = START; ; ) {
        const page = await target.read(runId, after, READ_PAGE);
        if (after === START) all.gap = page.gap;
        else if (page.gap) return { entries: all.entries, gap: true };
        all.entries.push(...page.entries);
        if (page.entries.length < READ_PAGE) return all;
        after = page.entries.at(-1)!.offset;
      }
    },
  };
}

/** Events one read asks for. */
const READ_PAGE = 1_000;

/**
 * Publishes to the gateway's hub (`POST <url>/internal/v1/streams/:id`) and reads it back (`GET`), with the gateway's
 * token: a fixed URL and token, or a gateway looked up at each request (`discoveredGateway`).
 */
export function httpTarget(where: string | (() => GatewayAddress), token?: string, timeoutMs = 2_000): PublishTarget {
  const at = gatewayRequests(where, token);
  return {
    async hello(hello) {
      const { base, headers } = at(true);
      const res = await fetch(`${base}/internal/v1/workers`, { method: 'POST', headers, body: JSON.stringify(hello), signal: AbortSignal.timeout(timeoutMs) });
      if (!res.ok) throw new GatewayRefusal(res.status, (await res.text()).slice(0, 200));
    },
    async publish(runId, events) {
      const { base, headers } = at(true);
      const res = await fetch(`${base}/internal/v1/streams/${encodeURIComponent(runId)}`, { method: 'POST', headers, body: JSON.stringify({ events }), signal: AbortSignal.timeout(timeoutMs) });
      if (!res.ok) throw new GatewayRefusal(res.status, (await res.text()).slice(0, 200));
      return ((await res.json()) as { offsets: string[] }).offsets;
    },
    async read(runId, after, count) {
      const { base, headers } = at(false);
      const query = `after=${encodeURIComponent(after)}&count=${count}`;
      const res = await fetch(`${base}/internal/v1/streams/${encodeURIComponent(runId)}?${query}`, { headers, signal: AbortSignal.timeout(timeoutMs) });
      if (!res.ok) throw new Error(`the gateway answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
      return (await res.json()) as ReadPage;
    },
  };
}

/** The gateway answered, and said no: unlike a gateway that does not answer, this is the worker's settings. */
export class GatewayRefusal extends Error {
  constructor(
    readonly status: number,
    body: string,
  ) {
    super(`the gateway answered ${status}: ${body}`);
    this.name = 'GatewayRefusal';
  }
}

/**
 * Checked once as the worker starts: a URL where something answers but refuses the worker's hello is a setting to
 * fix, and the worker refuses to start, saying which (`undefined`: it took it, or nothing answered, which a gateway
 * still starting explains: the worker then starts degraded, and warns until it answers).
 */
export async function helloRefusal(target: PublishTarget, hello: WorkerHello, url: string): Promise<string | undefined> {
  const answer = await target.hello?.(hello).then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(answer instanceof GatewayRefusal) || ![401, 403, 404, 405].includes(answer.status)) return undefined;
  const off = 'or AGENT_STREAM_URL=off to publish nothing (streams then poll the state)';
  if (answer.status === 401 || answer.status === 403) {
    return `the gateway at ${url} refused the worker's token (${answer.status}): set AGENT_STREAM_TOKEN (or GATEWAY_TOKEN) to that gateway's GATEWAY_TOKEN, ${off}`;
  }
  return `${url} is not an agent gateway with the embedded stream hub (POST /internal/v1/workers answered ${answer.status}): set AGENT_STREAM_URL to the gateway's URL (http://<host>:<its GATEWAY_PORT>), AGENT_STREAM_REDIS_URL to the Redis its gateway uses, ${off}`;
}
