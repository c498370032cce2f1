/**
 * The stream channel beside history (issue 24): each event of a run is published once and gets an offset, monotonic
 * within the run; any number of watchers read the run from an offset. Two implementations: the in-memory hub of the
 * gateway (hub.ts, the embedded default) and Redis Streams (redis.ts, for production).
 */
import type { StreamEvent } from '../common/stream';

/** An offset, `<major>-<minor>` in decimal: a Redis Streams id, or the hub's `<epoch>-<n>`. `0-0` is before the first. */
export type Offset = string;

export const START: Offset = '0-0';

/** What a subscriber reads. */
export type StreamItem =
  | { kind: 'event'; offset: Offset; event: StreamEvent }
  /** Events were lost to this subscriber (it read too slowly, or the channel no longer has them): re-read the state; newer events follow. */
  | { kind: 'gap'; reason: string }
  /** The channel failed: nothing more comes; fall back to the state. Always the last item. */
  | { kind: 'down'; reason: string };

export interface Subscription extends AsyncIterable<StreamItem> {
  /** Ends the iteration and frees what the subscription holds. */
  close(): void;
}

/** A page of a run's stream read once (not followed): events after an offset, oldest first. */
export interface ReadPage {
  entries: Array<{ offset: Offset; event: StreamEvent }>;
  /** Some events after the offset are gone: `entries` start from the oldest kept. */
  gap: boolean;
}

/** A channel a worker can read back from (the model activity re-attaching to a call in flight). */
export interface Readable {
  /** At most `count` events after `after`, oldest first. */
  read(runId: string, after: Offset, count: number): Promise<ReadPage>;
}

export interface SubscribeOptions {
  /** Items a subscriber may have unread; past it, they are dropped for one `gap`. @default 1000 */
  bufferSize?: number;
}

/** What a worker says of itself every few seconds (the hub's `POST /internal/v1/workers`, or Redis): the gateway's health names the silent ones. */
export interface WorkerHello {
  /** The worker's Temporal identity (its pollers'), e.g. `4242@host`. */
  identity: string;
  taskQueue?: string;
}

/** A channel that knows which workers said hello, and when (ms since the epoch). */
export interface HearsWorkers {
  hello(hello: WorkerHello): Promise<void>;
  heard(): Promise<Map<string, number>>;
}

export interface StreamChannel {
  /** Appends events to a run's stream, in order; resolves with their offsets. */
  publish(runId: string, events: StreamEvent[]): Promise<Offset[]>;
  /** The offset of the run's last event; `null` when the channel has no stream for the run. */
  head(runId: string): Promise<Offset | null>;
  /** Every event after `after` (`START`: all it kept), then the live ones. A `gap` comes first when some are gone. */
  subscribe(runId: string, after: Offset, opts?: SubscribeOptions): Subscription;
  close(): Promise<void>;
}

/** Whether `s` is an offset (what `Last-Event-ID` carries on a stream served from a channel). */
export const isOffset = (s: string | undefined): s is Offset => !!s && /^\d{1,20}-\d{1,20}$/.test(s.trim());

/** Orders two offsets: negative when `a` is before `b`. */
export function compareOffsets(a: Offset, b: Offset): number {
  const [a1, a2] = a.split('-').map(BigInt);
  const [b1, b2] = b.split('-').map(BigInt);
  return a1 !== b1 ? (a1 < b1 ? -1 : 1) : a2 === b2 ? 0 : a2 < b2 ? -1 : 1;
}

/**
 * Whether `after` is past the run's last event (`head`). No offset the channel gave can be: it was made up, or comes
 * from another channel. Replaying the stream to it would send ids lower than the one it holds.
 */
export const isPastHead = (after: Offset, head: Offset | null): boolean => head !== null && after !== START && compareOffsets(after, head) > 0;
