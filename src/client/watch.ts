/**
 * Watching a run: what changed since the last look (see `diffState`), from the run's pushed stream when a channel has
 * it, else by polling its `state`; `AgentRunHandle.watch` is the way in.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunStateView } from '../common/messages';
import { AgentState, isTerminal } from '../common/states';
import { followText, type CallText, type StreamEvent } from '../common/stream';
import { diffState, type WatchEvent } from '../common/watch';
import { isOffset, isPastHead, START, type StreamChannel } from '../stream/channel';
import { pause } from './abortable';
import { InvalidAgentInputError } from './errors';

/** Options of `AgentRunHandle.watch`. */
export interface WatchOptions {
  /** Time between two `state` queries. @default 250 */
  intervalMs?: number;
  /** Stops watching: `watch` then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called with each polled view before the events computed from it (the HTTP gateway derives its resume cursor from it). */
  onView?: (view: RunStateView) => void | Promise<void>;
  /**
   * Reads the run's pushed stream (the channel the workers publish to, e.g. `RedisChannel.open({ url })`) instead of
   * polling: events arrive as they are published, and nothing is asked of the run meanwhile. When the channel has no
   * stream for the run, loses events (a gap) or goes down, `watch` goes on by polling the state, reporting only what
   * the stream had not. Absent: polling only.
   */
  stream?: StreamChannel;
  /**
   * With `stream` only (without, `watch` refuses it: polling has no offsets): re-attach after this offset (the last one
   * `onOffset` gave), so only what came after is reported. One past the run's last event is refused. @default '0-0' (from the start)
   */
  after?: string;
  /** With `stream` only: called with each event's offset once `onEvent` has taken it: keep the last to re-attach with `after`. */
  onOffset?: (offset: string) => void | Promise<void>;
}

export { diffState, type WatchEvent };

/** What `watch` needs of a run: its id and its state (`AgentRunHandle` is one). */
export interface WatchedRun {
  readonly workflowId: string;
  state(opts: { signal?: AbortSignal }): Promise<RunStateView>;
}

/**
 * Polls `state` and reports what changed (see `diffState`) until the run is terminal, then resolves with its last
 * view. An `onEvent` that returns a promise is awaited before the next poll.
 */
export async function watchRun(run: WatchedRun, onEvent: (event: WatchEvent) => void | Promise<void>, opts: WatchOptions = {}): Promise<RunStateView> {
  const intervalMs = opts.intervalMs ?? 250;
  checkOffsetOptions(opts);
  const seen = opts.stream ? await watchStream(run.workflowId, opts.stream, onEvent, opts) : undefined;
  if (seen && 'end' in seen) return seen.end;
  let previous: RunStateView | undefined;
  if (seen) {
    // Polling takes over from the stream: what the stream reported is not reported again.
    const next = await run.state({ signal: opts.signal });
    previous = seenView(next, seen);
  }
  for (;;) {
    const read = await run.state({ signal: opts.signal });
    await opts.onView?.(read);
    const next = withoutLag(previous, read);
    for (const event of diffState(previous, next)) await onEvent(event);
    if (isTerminal(next.state)) return next;
    previous = next;
    await pause(intervalMs, opts.signal);
  }
}

/**
 * `next` with the text `previous` had, when that extends it within the same call and attempt: a view read just as the
 * call answered has no heartbeat to read its text from, and the run has not recorded the answer yet. Text of one
 * attempt never shrinks; taken as is, such a view would read as a restart, and the next one send the text again.
 */
function withoutLag(previous: RunStateView | undefined, next: RunStateView): RunStateView {
  const same = previous?.stream && next.stream && previous.stream.callNumber === next.stream.callNumber && previous.stream.attempt === next.stream.attempt;
  if (!same || next.partialText.length >= previous.partialText.length || !previous.partialText.startsWith(next.partialText)) return next;
  return { ...next, partialText: previous.partialText };
}

/**
 * Offsets are positions in a stream channel: without `stream`, `watch` polls the state, which has none, and would
 * report everything from the start while `onOffset` is never called. A backend whose workers publish to the gateway's
 * embedded hub has no channel of its own to pass: it reads offsets from the gateway's `GET /v1/runs/:id/events`.
 */
function checkOffsetOptions(opts: WatchOptions): void {
  const given = [opts.after !== undefined ? 'after' : '', opts.onOffset ? 'onOffset' : ''].filter(Boolean);
  if (!opts.stream && given.length) {
    throw new InvalidAgentInputError(
      `Invalid watch options: ${given.join(' and ')} need${given.length > 1 ? '' : 's'} stream: offsets are positions in a stream channel, and without one watch polls the state, which has none ` +
        "(with the gateway's embedded hub, follow GET /v1/runs/:id/events, whose event ids are the offsets)",
    );
  }
  if (opts.after !== undefined && opts.after !== START && !isOffset(opts.after)) {
    throw new InvalidAgentInputError(`Invalid watch options: after: expected an offset such as 0-0 or 1732590000000-42 (one onOffset gave), got ${JSON.stringify(opts.after)}`);
  }
}

/**
 * `watch` on the stream channel: reports its events until the run's `end` (resolves with it), or until the channel
 * cannot go on (a gap, down, no stream for the run): then resolves with what was reported, for polling to go on from.
 */
async function watchStream(workflowId: string, channel: StreamChannel, onEvent: (event: WatchEvent) => void | Promise<void>, opts: WatchOptions): Promise<{ end: RunStateView } | Seen> {
  const seen: Seen = { step: 0, toolStarts: new Set(), toolEnds: new Set(), approvals: new Set(), texts: new Map(), call: undefined };
  const head = await channel.head(workflowId).catch(() => undefined);
  if (head === undefined) return seen;
  if (opts.after !== undefined && isPastHead(opts.after.trim(), head)) {
    throw new InvalidAgentInputError(`Invalid watch options: after: ${opts.after} is past the end of run ${workflowId}'s stream (its last event is ${head}): not an offset this channel gave`);
  }
  const sub = channel.subscribe(workflowId, opts.after ?? '0-0');
  const stop = () => sub.close();
  opts.signal?.addEventListener('abort', stop, { once: true });
  try {
    const items = sub[Symbol.asyncIterator]();
    let next = items.next();
    // A run whose first events are on their way is given a second to show them, as the gateway gives it.
    if (head === null && !(await Promise.race([next, sleep(1_000).then(() => undefined)]))) return seen;
    for (;;) {
      const { value: item, done } = await next;
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (done || item.kind !== 'event') return seen;
      const event = item.event;
      // The worker could not publish some events: the state says what they were, as after a gap.
      if (event.type === 'lost') return seen;
      await onEvent(event.type === 'transition' ? { type: 'transition', transition: event.transition } : event);
      await opts.onOffset?.(item.offset);
      if (event.type === 'end') return { end: event.state };
      see(seen, event);
      next = items.next();
    }
  } finally {
    opts.signal?.removeEventListener('abort', stop);
    stop();
  }
}

/** What a watcher has had from the stream: enough to tell which events of a polled view it has not. */
interface Seen {
  step: number;
  toolStarts: Set<string>;
  toolEnds: Set<string>;
  approvals: Set<string>;
  texts: Map<number, CallText>;
  /** The model call whose text came last. */
  call: number | undefined;
}

function see(seen: Seen, e: StreamEvent): void {
  if (e.type === 'transition') seen.step = Math.max(seen.step, e.step);
  else if (e.type === 'toolStart') seen.toolStarts.add(e.toolCallId);
  else if (e.type === 'toolEnd') seen.toolEnds.add(e.toolCallId);
  else if (e.type === 'approval') for (const p of e.pending) seen.approvals.add(p.toolCallId);
  if (followText(seen.texts, e) !== 'none') seen.call = (e as { callNumber: number }).callNumber;
}

/** `next` as the watcher knows it from the stream: `diffState(seenView(next, seen), next)` is what it has not had. */
function seenView(next: RunStateView, seen: Seen): RunStateView {
  const text = seen.call === undefined ? undefined : seen.texts.get(seen.call);
  return {
    ...next,
    state: isTerminal(next.state) ? AgentState.STREAMING : next.state,
    step: seen.step,
    recentToolCalls: next.recentToolCalls
      .filter((t) => seen.toolStarts.has(t.toolCallId))
      .map((t) => (seen.toolEnds.has(t.toolCallId) ? t : { ...t, endStep: null, endedAt: null, ok: null, output: null })),
    pendingApproval: next.pendingApproval.filter((p) => seen.approvals.has(p.toolCallId)),
    stream: text ? { callNumber: text.callNumber, attempt: text.attempt } : null,
    partialText: text?.text ?? '',
  };
}
