/**
 * The event stream served from the stream channel (src/stream): one state read when a watcher attaches, then the
 * run's events as they are published, each with its offset as SSE id. Nothing is asked of the run while it is
 * quiet. Returns where the watcher is when the channel cannot serve it, so that the caller goes on by polling.
 */
import type { StreamEvent } from '../common/stream';
import type { RunStateView } from '../common/view';
import type { StreamChannel } from '../stream/channel';
import type { StreamCursor } from './sse-cursor';

export interface LiveIo {
  /** Opens the response (once). */
  open(): void;
  write(type: string, id: string, data: unknown): Promise<void>;
  /** The run's state now (a gap: events were lost to this watcher). */
  state(): Promise<RunStateView>;
  /** Whether a worker has taken the run's first workflow task (and so could have published); absent: assume so. */
  taken?(): Promise<boolean>;
  signal: AbortSignal;
}

/** How long a watcher waits for a run that no worker has taken yet before polling its state. */
const MAX_UNTAKEN_WAIT_MS = 30_000;

/** Why the channel did not serve (to the end) a watcher: it then gets the state by polling, marked `degraded`. */
export interface Fallback {
  reason: string;
  /** What the watcher has seen, as the polling stream's cursor. */
  cursor: StreamCursor | undefined;
}

/**
 * Serves `runId` from `after` until its `end`; resolves `undefined` when done (or the client left), or a fallback.
 * `attachWaitMs`: how long a channel that has no stream for a running run is given to show one (its first events
 * may be on their way); a run no worker publishes for is then polled. `closed`: the run's workflow is closed, so
 * nothing more will be published.
 */
export async function serveLive(channel: StreamChannel, runId: string, after: string, closed: boolean, attachWaitMs: number, io: LiveIo): Promise<Fallback | undefined> {
  const head = await channel.head(runId).catch((err: unknown) => ({ down: String(err) }));
  if (typeof head === 'object' && head !== null) return { reason: `the stream channel is down: ${head.down}`, cursor: undefined };
  const sub = channel.subscribe(runId, after);
  const items = sub[Symbol.asyncIterator]();
  const stop = () => sub.close();
  io.signal.addEventListener('abort', stop, { once: true });
  try {
    let next = items.next();
    if (head === null) {
      let first = await Promise.race([next, delay(closed ? 0 : attachWaitMs)]);
      // A run no worker has picked up yet (workers busy with many starting runs) has published nothing because it has
      // done nothing: waiting costs nothing, while polling it would add a state query per watcher to the backlog.
      for (const until = Date.now() + MAX_UNTAKEN_WAIT_MS; !first && !closed && Date.now() < until && io.taken && !(await io.taken()); ) {
        first = await Promise.race([next, delay(attachWaitMs)]);
      }
      if (!first) return { reason: 'no stream is published for this run', cursor: undefined };
    }
    io.open();
    let cursor: StreamCursor | undefined;
    let lastId = after;
    for (;;) {
      const { value: item, done } = await next;
      if (done) return undefined;
      if (item.kind === 'down') return { reason: `the stream channel is down: ${item.reason}`, cursor };
      if (item.kind === 'gap' || item.event.type === 'lost') {
        // Lost to this watcher (it read too slowly, the channel trimmed them) or never published (the worker could
        // not reach the channel): the state says where the run is.
        if (item.kind === 'event') lastId = item.offset;
        const reason = item.kind === 'gap' ? item.reason : `the worker could not publish ${item.event.type === 'lost' ? item.event.count : 0} events (the stream channel failed)`;
        const state = await io.state();
        cursor = state.stream ? { step: state.step, ...state.stream, chars: state.partialText.length } : { step: state.step, callNumber: 0, attempt: 0, chars: 0 };
        await io.write('gap', lastId, { reason, state });
      } else {
        lastId = item.offset;
        cursor = advance(cursor, item.event);
        await io.write(item.event.type, item.offset, item.event);
        if (item.event.type === 'end') return undefined;
      }
      next = items.next();
    }
  } finally {
    io.signal.removeEventListener('abort', stop);
    stop();
  }
}

/** The polling stream's cursor after an event the watcher got from the channel. */
function advance(c: StreamCursor = { step: 0, callNumber: 0, attempt: 0, chars: 0 }, e: StreamEvent): StreamCursor {
  switch (e.type) {
    case 'transition':
      return { ...c, step: Math.max(c.step, e.step) };
    case 'restart':
      return { ...c, callNumber: e.callNumber, attempt: e.attempt, chars: 0 };
    case 'resume':
      return { ...c, callNumber: e.callNumber, attempt: e.attempt, chars: e.chars };
    case 'text':
      return e.callNumber === c.callNumber && e.attempt === c.attempt ? { ...c, chars: c.chars + e.text.length } : { ...c, callNumber: e.callNumber, attempt: e.attempt, chars: e.text.length };
    default:
      return c;
  }
}

const delay = (ms: number): Promise<undefined> => new Promise((resolve) => setTimeout(() => resolve(undefined), ms).unref());
