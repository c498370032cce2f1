/**
 * The event stream served from the stream channel (src/stream): one state read when a watcher attaches, then the
 * run's events as they are published, each with its offset as SSE id. Nothing is asked of the run while it is
 * quiet. Returns where the watcher is when the channel cannot serve it, so that the caller goes on by polling.
 */
import type { StreamEvent } from '../common/stream';
import type { RunStateView } from '../common/view';
import type { StreamChannel, StreamItem } from '../stream/channel';
import { formatStreamId, type StreamCursor } from './sse-cursor';

export interface LiveIo {
  /** Opens the response (once). */
  open(): void;
  write(type: string, id: string, data: unknown): Promise<void>;
  /** The run's state now (a gap: events were lost to this watcher). */
  state(): Promise<RunStateView>;
  /** Whether a worker has taken the run's first workflow task (and so could have published); absent: assume so. */
  taken?(): Promise<boolean>;
  /** Whether the run's model call says it cannot publish (its heartbeats carry its text instead); absent: never. */
  degraded?(): Promise<boolean>;
  signal: AbortSignal;
}

/** How long a watcher waits for a run that no worker has taken yet before polling its state. */
const MAX_UNTAKEN_WAIT_MS = 30_000;

/**
 * While nothing comes from the channel, how often a watcher asks whether the run's model call is degraded (it cannot
 * publish: its text is in its heartbeats only). Then the watcher polls at once, instead of after `attachWaitMs`.
 */
const DEGRADED_CHECK_MS = 250;

/** Why the channel did not serve (to the end) a watcher: it then gets the state by polling, marked `degraded`. */
export interface Fallback {
  reason: string;
  /** What the watcher has seen, as the polling stream's cursor. */
  cursor: StreamCursor | undefined;
  /** The offset of the last event it has from the channel. */
  offset: string;
}

/**
 * Serves `runId` from `after` until its `end`; resolves `undefined` when done (or the client left), or a fallback.
 * `attachWaitMs`: how long a channel that has no stream for a running run is given to show one (its first events
 * may be on their way); a run no worker publishes for is then polled. `closed`: the run's workflow is closed, so
 * nothing more will be published.
 */
export async function serveLive(
  channel: StreamChannel,
  runId: string,
  after: string,
  closed: boolean,
  attachWaitMs: number,
  io: LiveIo,
  /** What the watcher had when it left (its id's cursor): events after `after` it got by polling are not sent again. */
  seen?: StreamCursor,
): Promise<Fallback | undefined> {
  const head = await channel.head(runId).catch((err: unknown) => ({ down: String(err) }));
  if (typeof head === 'object' && head !== null) return { reason: `the stream channel is down: ${head.down}`, cursor: seen, offset: after };
  const sub = channel.subscribe(runId, after);
  const items = sub[Symbol.asyncIterator]();
  const stop = () => sub.close();
  io.signal.addEventListener('abort', stop, { once: true });
  try {
    let next = items.next();
    /** The next item, or `undefined` after `ms`, or `degraded` as soon as the run's model call says it cannot publish. */
    const within = async (ms: number): Promise<IteratorResult<StreamItem> | undefined | 'degraded'> => {
      if (!io.degraded || ms === 0) return Promise.race([next, delay(ms)]);
      for (const until = Date.now() + ms; Date.now() < until; ) {
        const item = await Promise.race([next, delay(Math.min(DEGRADED_CHECK_MS, until - Date.now()))]);
        if (item) return item;
        if (await io.degraded()) return 'degraded';
      }
      return undefined;
    };
    const cannotPublish = { reason: "the run's worker cannot publish to the stream channel", cursor: seen, offset: after };
    if (head === null) {
      const waited = await within(closed ? 0 : attachWaitMs);
      if (waited === 'degraded') return cannotPublish;
      let first = waited;
      // A run no worker has picked up yet (workers busy with many starting runs) has published nothing because it has
      // done nothing: waiting costs nothing, while polling it would add a state query per watcher to the backlog.
      for (const until = Date.now() + MAX_UNTAKEN_WAIT_MS; !first && !closed && Date.now() < until && io.taken && !(await io.taken()); ) {
        const again = await within(attachWaitMs);
        if (again === 'degraded') return cannotPublish;
        first = again;
      }
      if (!first) return { reason: 'no stream is published for this run', cursor: seen, offset: after };
    }
    io.open();
    let cursor: StreamCursor | undefined = seen;
    let lastId = after;
    for (;;) {
      const { value: item, done } = await next;
      if (done) return undefined;
      if (item.kind === 'down') return { reason: `the stream channel is down: ${item.reason}`, cursor, offset: lastId };
      if (item.kind === 'gap' || item.event.type === 'lost') {
        // Lost to this watcher (it read too slowly, the channel trimmed them) or never published (the worker could
        // not reach the channel): the state says where the run is.
        if (item.kind === 'event') lastId = item.offset;
        const reason = item.kind === 'gap' ? item.reason : `the worker could not publish ${item.event.type === 'lost' ? item.event.count : 0} events (the stream channel failed)`;
        const state = await io.state();
        cursor = state.stream ? { step: state.step, ...state.stream, chars: state.partialText.length } : { step: state.step, callNumber: 0, attempt: 0, chars: 0 };
        await io.write('gap', formatStreamId(lastId, cursor), { reason, state });
      } else {
        lastId = item.offset;
        const event = seen ? unseen(item.event, seen) : item.event;
        if (event) {
          cursor = advance(cursor, event);
          await io.write(event.type, formatStreamId(item.offset, cursor), event);
        }
        if (item.event.type === 'end') return undefined;
      }
      next = items.next();
    }
  } finally {
    io.signal.removeEventListener('abort', stop);
    stop();
  }
}

/**
 * What of `e` a watcher that has `seen` (by polling, after its last offset) has not had: `undefined` when it has it
 * all, a text event's tail when it has its start. Events after the offset it has not seen pass unchanged.
 */
function unseen(e: StreamEvent, seen: StreamCursor): StreamEvent | undefined {
  switch (e.type) {
    case 'transition':
      return e.step <= seen.step ? undefined : e;
    case 'toolStart':
    case 'toolEnd':
      return e.step < seen.step ? undefined : e;
    case 'restart':
    case 'resume':
      return e.callNumber < seen.callNumber || (e.callNumber === seen.callNumber && e.attempt <= seen.attempt) ? undefined : e;
    case 'text': {
      if (e.callNumber < seen.callNumber || (e.callNumber === seen.callNumber && e.attempt < seen.attempt)) return undefined;
      if (e.callNumber !== seen.callNumber || e.attempt !== seen.attempt || e.at === undefined) return e;
      const had = seen.chars - e.at;
      if (had <= 0) return e;
      return had >= e.text.length ? undefined : { ...e, text: e.text.slice(had), at: e.at + had };
    }
    default:
      return e;
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
