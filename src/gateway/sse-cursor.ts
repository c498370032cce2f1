/**
 * Event ids of the SSE stream, and what a reconnecting client has already seen. Pure: no I/O.
 *
 * An id is `<offset>_<cursor>` (`formatStreamId`), the cursor `<step>.<callNumber>.<attempt>.<chars>`: the client has
 * every transition up to `step` and the first `chars` characters of the text of model call `callNumber`, attempt `attempt`. A stream opened with
 * `Last-Event-ID` starts a fresh watch and drops what the cursor covers, so the client gets only what is new.
 */
import type { WatchEvent } from '../client';
import type { RunStateView } from '../common/messages';

export interface StreamCursor {
  step: number;
  callNumber: number;
  attempt: number;
  chars: number;
}

/** One event as sent: `event:` is `type`, `id:` is `id`, `data:` is the JSON of `data`. */
export interface SseEvent {
  /** `stream` and `gap` come only on a stream served from the channel (src/gateway/live-events.ts). */
  type: WatchEvent['type'] | 'error' | 'stream' | 'gap';
  id: string;
  data: unknown;
}

export const formatCursor = (c: StreamCursor): string => `${c.step}.${c.callNumber}.${c.attempt}.${c.chars}`;

/**
 * The one SSE id of every stream route, from the channel or polled: `<offset>_<cursor>`, the channel offset of the
 * last event the watcher has from the channel (`0-0`: none) and the polling cursor of everything it has. A stream
 * resumes from the offset where the channel serves it, skipping what the cursor says it had by polling; else it polls
 * from the cursor. Either way a reconnect gets the same ids, whether the stream was degraded or not.
 */
export interface StreamId {
  offset: string;
  cursor: StreamCursor;
}

export const ZERO_CURSOR: StreamCursor = { step: 0, callNumber: 0, attempt: 0, chars: 0 };

export const formatStreamId = (offset: string, cursor: StreamCursor | undefined): string => `${offset}_${formatCursor(cursor ?? ZERO_CURSOR)}`;

/** The id in a `Last-Event-ID`; `undefined` when absent or not one of ours. */
export function parseStreamId(id: string | undefined): StreamId | undefined {
  const m = /^(\d{1,20}-\d{1,20})_(\S+)$/.exec(id?.trim() ?? '');
  const cursor = m ? parseCursor(m[2]) : undefined;
  return m && cursor ? { offset: m[1], cursor } : undefined;
}

/** The cursor in a `Last-Event-ID` header; `undefined` (start from the beginning) when absent or not ours. */
export function parseCursor(id: string | undefined): StreamCursor | undefined {
  const m = /^(\d{1,15})\.(\d{1,15})\.(\d{1,15})\.(\d{1,15})$/.exec(id?.trim() ?? '');
  if (!m) return undefined;
  const [step, callNumber, attempt, chars] = m.slice(1).map(Number);
  return { step, callNumber, attempt, chars };
}

/**
 * Turns the events of one `watch` into SSE events with cursor ids. Call `observe` with each polled view (the
 * `onView` of `watch`) before `next` with that view's events.
 */
export class EventCursor {
  private cursor: StreamCursor;
  private view: RunStateView | undefined;
  /** The watch's own position in the text of the call it reports on: its text events are deltas from here. */
  private watched = { callNumber: 0, attempt: 0, chars: 0 };

  /** `offset`: the channel offset the watcher had when the stream began polling; it stays in every id. */
  constructor(
    resumeFrom?: StreamCursor,
    private readonly offset = '0-0',
  ) {
    this.cursor = resumeFrom ? { ...resumeFrom } : { ...ZERO_CURSOR };
  }

  /** The id of the last event sent (or of the resume point). */
  get id(): string {
    return formatStreamId(this.offset, this.cursor);
  }

  observe(view: RunStateView): void {
    this.view = view;
  }

  /** The SSE events for one watch event: none when the client has it already, two for a restart it missed. */
  next(event: WatchEvent): SseEvent[] {
    switch (event.type) {
      case 'transition': {
        const step = this.stepOf(event.transition);
        if (step <= this.cursor.step) return [];
        this.cursor.step = step;
        return [this.emit('transition', { type: 'transition', step, transition: event.transition })];
      }
      case 'restart':
        this.watched = { callNumber: event.callNumber, attempt: event.attempt, chars: 0 };
        this.cursor = { ...this.cursor, callNumber: event.callNumber, attempt: event.attempt, chars: 0 };
        return [this.emit('restart', event)];
      case 'resume':
        // Only the channel sends it; the polled stream never does, but a watch event is a watch event.
        this.watched = { callNumber: event.callNumber, attempt: event.attempt, chars: event.chars };
        this.cursor = { ...this.cursor, callNumber: event.callNumber, attempt: event.attempt, chars: event.chars };
        return [this.emit('resume', event)];
      case 'text':
        return this.text(event);
      case 'toolStart':
      case 'toolEnd':
        // A resumed stream has the tool events of the steps before its cursor (those of the cursor's own step may repeat).
        return event.step < this.cursor.step ? [] : [this.emit(event.type, event)];
      case 'approval':
      case 'approvalReminder':
      case 'retry':
      case 'end':
        return [this.emit(event.type, event)];
    }
  }

  /** An error that ends the stream; it carries the cursor so that a reconnect resumes where the stream stopped. */
  error(code: string, message: string): SseEvent {
    return this.emit('error', { error: { code, message } });
  }

  private text(event: Extract<WatchEvent, { type: 'text' }>): SseEvent[] {
    const { callNumber, attempt } = event;
    if (this.watched.callNumber !== callNumber || this.watched.attempt !== attempt) this.watched = { callNumber, attempt, chars: 0 };
    const start = this.watched.chars;
    const end = (this.watched.chars += event.text.length);
    const out: SseEvent[] = [];
    if (this.cursor.callNumber === callNumber && this.cursor.attempt === attempt) {
      const seen = this.cursor.chars;
      if (end <= seen) return [];
      this.cursor.chars = end;
      return [this.emit('text', { ...event, text: event.text.slice(Math.max(0, seen - start)) })];
    }
    // The client last saw another attempt of this call: tell it to start over, as a watch that saw the retry would.
    if (this.cursor.callNumber === callNumber && this.cursor.chars > 0) {
      this.cursor = { ...this.cursor, attempt, chars: 0 };
      out.push(this.emit('restart', { type: 'restart', callNumber, attempt }));
    }
    this.cursor = { ...this.cursor, callNumber, attempt, chars: end };
    out.push(this.emit('text', event));
    return out;
  }

  /** A transition's step: the view's transitions are its last `transitions.length` steps (a continued run trims them). */
  private stepOf(transition: Extract<WatchEvent, { type: 'transition' }>['transition']): number {
    const index = this.view?.transitions.indexOf(transition) ?? -1;
    if (!this.view || index < 0) return this.cursor.step + 1;
    return this.view.step - this.view.transitions.length + 1 + index;
  }

  private emit(type: SseEvent['type'], data: unknown): SseEvent {
    return { type, id: this.id, data };
  }
}
