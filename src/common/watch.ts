/**
 * What a watcher of a run sees: the events `watch` reports and the live stream carries, and `diffState`, which
 * derives them from two consecutive state views. Pure; shared by the client, the gateway and the workflow.
 */
import { isTerminal } from './states';
import type { PendingApproval, RetryInfo, RunStateView, TransitionRecord } from './view';

/** What `watch` reports, computed by `diffState` from two consecutive state views. */
export type WatchEvent =
  | { type: 'transition'; transition: TransitionRecord }
  /** Tool calls that started waiting for an `approve` update since the last view. */
  | { type: 'approval'; pending: PendingApproval[] }
  /**
   * Text the model streamed since the last event of the same call and attempt. `at` (on the live stream): the
   * characters of the call's text before this delta, so that a reader can tell a hole from a join.
   */
  | { type: 'text'; text: string; callNumber: number; attempt: number; at?: number }
  /** The text of the call in flight started over (a retried attempt); the text events after this one replace it. */
  | { type: 'restart'; callNumber: number; attempt: number }
  /**
   * A retried attempt goes on with the text the earlier one streamed (live stream only): its first `chars`
   * characters stay (what the earlier attempt's last heartbeat carried), and the text events of `attempt` that
   * follow extend them.
   */
  | { type: 'resume'; callNumber: number; attempt: number; chars: number }
  /** A tool call started (at `step`, the way into TOOL_EXECUTING). */
  | { type: 'toolStart'; step: number; toolCallId: string; name: string; arguments: string; at: string }
  /**
   * A tool call ended (at `step`, TOOLS_DONE): whether it succeeded, how long it took, the start of its output.
   * `rejected`: a person rejected it (or nobody decided in time), so it never ran and ended at the step it would have started.
   */
  | { type: 'toolEnd'; step: number; toolCallId: string; name: string; ok: boolean; durationMs: number; output: string; at: string; rejected?: true }
  /**
   * An approval wait reached `approval.reminderAt` of its window undecided: `deadline` is when it runs out, `onTimeout`
   * what happens then, `toolCallIds` the calls still waiting. Raised by the run's own timer, once per wait.
   */
  | { type: 'approvalReminder'; at: string; deadline: string; onTimeout: 'fail' | 'reject'; toolCallIds: string[] }
  /** An activity is being retried (a 429 waited out, a tool failing): reported once per attempt. */
  | { type: 'retry'; retry: RetryInfo }
  | { type: 'end'; state: RunStateView };

/**
 * Events between two state views of one run, in order: new transitions, new approvals to decide, new streamed text,
 * then `end` when the run became terminal. Pure. `previous` is `undefined` for the first view, which reports
 * everything it holds.
 */
export function diffState(previous: RunStateView | undefined, next: RunStateView): WatchEvent[] {
  // `step` counts every transition, so this stays right even if the workflow ever trims its transition list.
  const fresh = previous ? clamp(next.step - previous.step, 0, next.transitions.length) : next.transitions.length;
  const first = next.step - fresh + 1;
  const transitions = inStepOrder([
    ...next.transitions.slice(next.transitions.length - fresh).map((transition, k) => ({ step: first + k, event: { type: 'transition', transition } as WatchEvent })),
    ...toolEvents(previous, next),
  ]);
  // The tail of the call already being shown happened before the transitions it led to; a new call's text after them.
  const text = textEvents(previous, next);
  const sameCall = previous?.stream != null && previous.stream.callNumber === next.stream?.callNumber;
  const events: WatchEvent[] = sameCall ? [...text, ...transitions] : [...transitions, ...text];
  const known = new Set(previous?.pendingApproval.map((p) => p.toolCallId));
  const pending = next.pendingApproval.filter((p) => !p.decision && !known.has(p.toolCallId));
  if (pending.length) events.push({ type: 'approval', pending });
  const reminder = next.approvalReminder;
  if (reminder && reminder.at !== previous?.approvalReminder?.at) events.push({ type: 'approvalReminder', ...reminder });
  const retried = new Set(previous?.retrying?.map((r) => `${r.activity}/${r.attempt}`));
  for (const retry of next.retrying ?? []) if (!retried.has(`${retry.activity}/${retry.attempt}`)) events.push({ type: 'retry', retry });
  if (isTerminal(next.state) && !(previous && isTerminal(previous.state))) events.push({ type: 'end', state: next });
  return events;
}

/** Tool calls that started or ended since the previous view. */
function toolEvents(previous: RunStateView | undefined, next: RunStateView): Array<{ step: number; event: WatchEvent; rank?: number }> {
  const before = new Map(previous?.recentToolCalls.map((t) => [t.toolCallId, t]));
  const events: Array<{ step: number; event: WatchEvent; rank?: number }> = [];
  for (const t of next.recentToolCalls) {
    const was = before.get(t.toolCallId);
    if (!was) {
      events.push({ step: t.startStep, event: { type: 'toolStart', step: t.startStep, toolCallId: t.toolCallId, name: t.name, arguments: t.arguments, at: t.startedAt } });
    }
    if (t.endedAt !== null && t.endStep !== null && !was?.endedAt) {
      const durationMs = Date.parse(t.endedAt) - Date.parse(t.startedAt);
      const event: WatchEvent = { type: 'toolEnd', step: t.endStep, toolCallId: t.toolCallId, name: t.name, ok: t.ok ?? false, durationMs, output: t.output ?? '', at: t.endedAt, ...(t.rejected ? { rejected: true as const } : {}) };
      // A call that ended in the step that started it (rejected, denied by the policy) ends after its start.
      events.push({ step: t.endStep, event, ...(t.endStep === t.startStep ? { rank: RANK.toolStart! + 1 } : {}) });
    }
  }
  return events;
}

/** Where an event sorts within its step: a tool's end before the transition that ended it, its start after the one that started it. */
const RANK: Partial<Record<WatchEvent['type'], number>> = { toolEnd: 0, transition: 1, toolStart: 2 };

/** Transitions and tool events in the order they happened: by step, then by RANK. */
function inStepOrder(events: Array<{ step: number; event: WatchEvent; rank?: number }>): WatchEvent[] {
  const rank = (e: { event: WatchEvent; rank?: number }) => e.rank ?? RANK[e.event.type] ?? 1;
  return events
    .map((e, i) => ({ ...e, i }))
    .sort((a, b) => a.step - b.step || rank(a) - rank(b) || a.i - b.i)
    .map((e) => e.event);
}

/** Text is a delta only within one call and attempt; a new call starts fresh, a retried attempt replaces what was shown. */
function textEvents(previous: RunStateView | undefined, next: RunStateView): WatchEvent[] {
  if (!next.stream) return [];
  const { callNumber, attempt } = next.stream;
  const text = (t: string): WatchEvent[] => (t ? [{ type: 'text', text: t, callNumber, attempt }] : []);
  const shown = previous?.stream?.callNumber === callNumber ? previous.partialText : '';
  if (!shown) return text(next.partialText);
  if (previous?.stream?.attempt === attempt && next.partialText.startsWith(shown)) return text(next.partialText.slice(shown.length));
  return [{ type: 'restart', callNumber, attempt }, ...text(next.partialText)];
}

const clamp = (n: number, min: number, max: number) => Math.min(Math.max(n, min), max);
