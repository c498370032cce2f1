/**
 * The embedded channel: an in-memory hub in the gateway process, which workers publish to over HTTP
 * (`POST /internal/v1/streams/:id`). Offsets are `<epoch>-<n>`, the epoch being when the hub started, so that an
 * offset from before a gateway restart is known as lost (a `gap`), never mistaken for a new one.
 * What it gives up: one gateway only, and streams lost when it restarts (watchers then get the state).
 */
import type { StreamEvent } from '../common/stream';
import { compareOffsets, START, type Offset, type Readable, type ReadPage, type StreamChannel, type SubscribeOptions, type Subscription, type HearsWorkers, type WorkerHello } from './channel';
import { Fanout, type Entry } from './fanout';

export interface HubOptions {
  /** Events kept per run; older ones are dropped (a subscriber from before them gets a `gap`). @default 10000 */
  maxEventsPerRun?: number;
  /** Runs kept; the one least recently published to goes first. @default 10000 */
  maxRuns?: number;
}

interface RunLog {
  entries: Entry[];
  /** The `n` of the next event. */
  next: number;
  /** Entries up to this `n` were dropped. */
  dropped: number;
  listeners: Set<(entries: Entry[]) => void>;
}

/** A worker silent this long is forgotten. */
const FORGET_MS = 86_400_000;

export class MemoryHub implements StreamChannel, Readable, HearsWorkers {
  private readonly epoch = Date.now();
  private readonly hellos = new Map<string, number>();
  private readonly runs = new Map<string, RunLog>();
  private readonly fanout: Fanout;
  private readonly maxEvents: number;
  private readonly maxRuns: number;

  constructor(opts: HubOptions = {}) {
    this.maxEvents = opts.maxEventsPerRun ?? 10_000;
    this.maxRuns = opts.maxRuns ?? 10_000;
    this.fanout = new Fanout({
      range: async (runId, after, count) => this.range(runId, after, count),
      follow: (runId, _after, deliver) => {
        const log = this.log(runId);
        log.listeners.add(deliver);
        return () => log.listeners.delete(deliver);
      },
    });
  }

  async publish(runId: string, events: StreamEvent[]): Promise<Offset[]> {
    const log = this.log(runId);
    // Most recently published last: the first key is the one to evict.
    this.runs.delete(runId);
    this.runs.set(runId, log);
    const added = events.map((event): Entry => ({ offset: `${this.epoch}-${log.next++}`, event }));
    log.entries.push(...added);
    const excess = log.entries.length - this.maxEvents;
    if (excess > 0) log.dropped = Number(log.entries.splice(0, excess).at(-1)!.offset.split('-')[1]);
    for (const deliver of log.listeners) deliver(added);
    this.evict();
    return added.map((e) => e.offset);
  }

  async head(runId: string): Promise<Offset | null> {
    return this.runs.get(runId)?.entries.at(-1)?.offset ?? null;
  }

  subscribe(runId: string, after: Offset, opts: SubscribeOptions = {}): Subscription {
    return this.fanout.subscribe(runId, after, opts.bufferSize);
  }

  async read(runId: string, after: Offset, count: number): Promise<ReadPage> {
    return this.range(runId, after, count);
  }

  async close(): Promise<void> {
    this.fanout.closeAll('the hub closed');
  }

  async hello(hello: WorkerHello): Promise<void> {
    this.hellos.set(hello.identity, Date.now());
    // A fleet's workers come and go: forget those silent for a day.
    for (const [identity, at] of this.hellos) if (at < Date.now() - FORGET_MS) this.hellos.delete(identity);
  }

  async heard(): Promise<Map<string, number>> {
    return new Map(this.hellos);
  }

  private range(runId: string, after: Offset, count: number): { entries: Entry[]; gap: boolean } {
    const log = this.runs.get(runId);
    const [epoch, n] = after.split('-').map(Number);
    // Another epoch's offset (before a restart), or one this hub never gave: what followed it is gone.
    const foreign = after !== START && (epoch !== this.epoch || !log || n >= log.next);
    if (!log || foreign) return { entries: log?.entries.slice(0, count) ?? [], gap: foreign };
    const from = log.entries.findIndex((e) => compareOffsets(e.offset, after) > 0);
    return { entries: from < 0 ? [] : log.entries.slice(from, from + count), gap: (after === START ? 0 : n) < log.dropped };
  }

  private log(runId: string): RunLog {
    let log = this.runs.get(runId);
    if (!log) this.runs.set(runId, (log = { entries: [], next: 1, dropped: 0, listeners: new Set() }));
    return log;
  }

  private evict(): void {
    for (const [runId, log] of this.runs) {
      if (this.runs.size <= this.maxRuns) return;
      if (log.listeners.size > 0) continue;
      this.runs.delete(runId);
    }
  }
}
