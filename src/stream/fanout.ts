/**
 * The subscriber side shared by the channels: each subscriber catches up from its offset by ranges, then joins the
 * run's live feed, which the channel reads once per run however many subscribers it has. A subscriber's unread items
 * are bounded: past the bound they are dropped for one `gap`, so a slow reader never holds back the others.
 */
import type { StreamEvent } from '../common/stream';
import { compareOffsets, START, type Offset, type StreamItem, type Subscription } from './channel';

export interface Entry {
  offset: Offset;
  event: StreamEvent;
}

/** How a channel reads its store. */
export interface Backend {
  /** Entries after `after`, oldest first, at most `count`; `gap` when some after `after` are gone (then from the oldest kept). */
  range(runId: string, after: Offset, count: number): Promise<{ entries: Entry[]; gap: boolean }>;
  /** Hands the run's entries after `after` to `deliver` as they come, until stopped; `fail` when it cannot go on. */
  follow(runId: string, after: Offset, deliver: (entries: Entry[]) => void, fail: (reason: string) => void): () => void;
}

const RANGE_COUNT = 500;
export const DEFAULT_BUFFER_SIZE = 1000;

class Subscriber implements Subscription {
  private queue: StreamItem[] = [];
  private wake: (() => void) | undefined;
  private ended = false;

  constructor(
    public last: Offset,
    private readonly bound: number,
    private readonly onClose: (s: Subscriber) => void,
  ) {}

  /** Takes an item; an event at or before the last one taken is a duplicate and dropped. */
  push(item: StreamItem): void {
    if (this.ended) return;
    if (item.kind === 'event') {
      if (compareOffsets(item.offset, this.last) <= 0) return;
      this.last = item.offset;
      if (this.queue.length >= this.bound) this.queue = [{ kind: 'gap', reason: `more than ${this.bound} events unread` }];
    }
    this.queue.push(item);
    if (item.kind === 'down') this.ended = true;
    this.wakeUp();
  }

  get closed(): boolean {
    return this.ended;
  }

  close(): void {
    if (this.ended && this.queue.length === 0) return;
    this.ended = true;
    this.queue = [];
    this.wakeUp();
    this.onClose(this);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StreamItem> {
    try {
      for (;;) {
        const item = this.queue.shift();
        if (item) yield item;
        else if (this.ended) return;
        else await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      this.close();
    }
  }

  private wakeUp(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

interface Topic {
  subscribers: Set<Subscriber>;
  /** The offset of the last entry the live feed delivered. */
  position: Offset;
  stop: () => void;
}

export class Fanout {
  private readonly topics = new Map<string, Topic>();

  constructor(private readonly backend: Backend) {}

  subscribe(runId: string, after: Offset, bufferSize = DEFAULT_BUFFER_SIZE): Subscription {
    const sub = new Subscriber(after, bufferSize, (s) => this.leave(runId, s));
    this.catchUp(runId, sub).catch((err: unknown) => sub.push({ kind: 'down', reason: String(err) }));
    return sub;
  }

  /** Ranges until the subscriber is where the live feed is, then joins it (in the same tick, so nothing falls between). */
  private async catchUp(runId: string, sub: Subscriber): Promise<void> {
    for (let first = true; !sub.closed; first = false) {
      const { entries, gap } = await this.backend.range(runId, sub.last, RANGE_COUNT);
      if (gap && first) {
        // What follows a gap is what the channel still has, from its oldest.
        sub.push({ kind: 'gap', reason: 'the channel no longer has some of these events' });
        sub.last = START;
      }
      for (const e of entries) sub.push({ kind: 'event', ...e });
      if (entries.length === RANGE_COUNT) continue;
      const topic = this.topics.get(runId);
      if (topic && compareOffsets(topic.position, sub.last) > 0) continue;
      if (topic) topic.subscribers.add(sub);
      else this.open(runId, sub);
      return;
    }
  }

  private open(runId: string, sub: Subscriber): void {
    const topic: Topic = { subscribers: new Set([sub]), position: sub.last, stop: () => undefined };
    this.topics.set(runId, topic);
    topic.stop = this.backend.follow(
      runId,
      sub.last,
      (entries) => {
        for (const e of entries) {
          topic.position = e.offset;
          for (const s of topic.subscribers) s.push({ kind: 'event', ...e });
        }
      },
      (reason) => {
        if (this.topics.get(runId) === topic) this.topics.delete(runId);
        for (const s of topic.subscribers) s.push({ kind: 'down', reason });
      },
    );
  }

  private leave(runId: string, sub: Subscriber): void {
    const topic = this.topics.get(runId);
    if (!topic?.subscribers.delete(sub) || topic.subscribers.size > 0) return;
    this.topics.delete(runId);
    topic.stop();
  }

  /** Ends every subscription (the channel closes). */
  closeAll(reason: string): void {
    for (const [runId, topic] of this.topics) {
      this.topics.delete(runId);
      topic.stop();
      for (const s of topic.subscribers) s.push({ kind: 'down', reason });
    }
  }
}
