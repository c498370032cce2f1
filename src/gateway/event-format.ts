import type { RunStateView } from '../common/view';

/**
 * How routes/events.ts writes a run's events: by default one SSE event per event; ag-ui.ts and ui-message-stream.ts
 * map them to other protocols. Its own module, so the formats and the route that serves them do not import each other.
 */
export interface EventFormat {
  headers?: Record<string, string>;
  /** The SSE text for one event (`gap`, `stream` and `error` included), after `start` when first called. */
  event(type: string, id: string, data: unknown): string;
  /** Written once when the response opens (with the run's state then, when it was read), and once after the last event. */
  start?(view?: RunStateView): string;
  /** `start` needs the run's state: it is read when the stream opens, even when a channel has the stream. */
  startsWithState?: boolean;
  end?(): string;
}
