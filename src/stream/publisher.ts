/**
 * The worker's side of the stream: `LiveStream.publish` never throws, never waits and never slows the caller. Each
 * run's events go out in order, one request at a time, those that pile up meanwhile in the next; while the channel
 * fails they are dropped (bounded), counted, and the first failure is logged once. Watchers then read the state.
 * After a failure the channel is asked again only after a backoff (0.25 s, doubling to 10 s): a worker whose gateway
 * is not there sends no request per batch.
 */
import type { StreamEvent } from '../common/stream';
import { START, type Offset, type Readable, type ReadPage, type StreamChannel } from './channel';

/** Where a worker publishes: a channel, or the gateway's hub over HTTP; with `read`, the worker can read a run back. */
export type PublishTarget = Pick<StreamChannel, 'publish'> & Partial<Readable>;

/** Events one request carries at most (the gateway's route takes 1,000). */
const MAX_BATCH = 500;

/** Events a run may have waiting while its previous publish is in flight; past it the oldest are dropped. */
const MAX_PENDING = 10_000;

export interface LiveStream {
  publish(runId: string, events: StreamEvent[]): void;
  /** Whether the last publish went through: while not, the model activity signals text at the old pace for polling watchers. */
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
}

/** The first wait after a failure, and the longest. */
const BACKOFF_MS = { first: 250, max: 10_000 };

export interface LiveStreamOptions {
  /** What the one log line of an outage says the channel is. @default 'stream channel' */
  name?: string;
  /** The channel is a default nobody configured: its absence is logged at info, not as a warning. */
  optional?: boolean;
  /** @default Date.now */
  now?: () => number;
}

export interface Logger {
  warn(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
}

export function liveStream(target: PublishTarget, log: Logger = console, opts: LiveStreamOptions = {}): LiveStream {
  const name = opts.name ?? 'stream channel';
  const now = opts.now ?? Date.now;
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
  let reported = false;
  let backoff = 0;
  let retryAt = 0;

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
    const done = target.publish(runId, events).then(
      () => {
        if (!healthy) log.info(`${name} is back`, { dropped: failures });
        healthy = true;
        reported = false;
        backoff = 0;
      },
      (err: unknown) => {
        healthy = false;
        // The marker's count was counted when those were dropped; it goes with the next attempt again.
        const carried = events[0]?.type === 'lost' ? events[0].count : 0;
        const real = events.length - (carried ? 1 : 0);
        failures += real;
        lost.set(runId, (lost.get(runId) ?? 0) + carried + real);
        backoff = Math.min(backoff ? backoff * 2 : BACKOFF_MS.first, BACKOFF_MS.max);
        retryAt = now() + backoff;
        if (!reported) {
          if (opts.optional) log.info(`${name} not reached: watchers poll the state until it answers`, { error: String(err) });
          else log.warn(`${name} failed: watchers fall back to the state until it is back`, { error: String(err) });
        }
        reported = true;
      },
    );
    inFlight.set(
      runId,
      done.finally(() => {
        inFlight.delete(runId);
        send(runId);
      }),
    );
  };

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

/** Publishes to the gateway's hub (`POST <url>/internal/v1/streams/:id`) and reads it back (`GET`), with the gateway's token. */
export function httpTarget(url: string, token: string | undefined, timeoutMs = 2_000): PublishTarget {
  const base = url.replace(/\/+$/, '');
  return {
    async publish(runId, events) {
      const res = await fetch(`${base}/internal/v1/streams/${encodeURIComponent(runId)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ events }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) throw new Error(`the gateway answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
      return ((await res.json()) as { offsets: string[] }).offsets;
    },
    async read(runId, after, count) {
      const query = `after=${encodeURIComponent(after)}&count=${count}`;
      const res = await fetch(`${base}/internal/v1/streams/${encodeURIComponent(runId)}?${query}`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) throw new Error(`the gateway answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
      return (await res.json()) as ReadPage;
    },
  };
}
