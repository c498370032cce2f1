import { Context } from '@temporalio/activity';

/**
 * Heartbeat on a ticker, so that a slow peer (a model summarising for 30 s, a tool working for minutes) is never
 * mistaken for a dead worker, and cancellation, which reaches an activity only in the reply to a heartbeat, arrives
 * while it waits. The first beat comes after `everyMs`, not at once: a call that ends sooner costs no heartbeat RPC
 * (bench (a): BENCHMARKS.md). The tick is never longer than a third of the activity's heartbeat timeout. A local
 * activity cannot heartbeat (and is cancelled without it): no ticker. Returns its own stop function.
 */
export function startHeartbeat(details: () => unknown = () => undefined, everyMs = 1_000): () => void {
  const ctx = Context.current();
  if (ctx.info.isLocal) return () => undefined;
  const timeoutMs = ctx.info.heartbeatTimeoutMs;
  const tickMs = timeoutMs ? Math.max(100, Math.min(everyMs, Math.floor(timeoutMs / 3))) : everyMs;
  let last: unknown;
  const timer = setInterval(() => {
    try {
      last = details();
    } catch {
      // A details function that throws must not take the worker down with it: beat with the last details.
    }
    ctx.heartbeat(last);
  }, tickMs);
  return () => clearInterval(timer);
}

/** Runs `work` with a heartbeat ticker (see startHeartbeat) that stops however `work` ends. */
export async function heartbeating<T>(details: () => unknown, work: () => Promise<T>, everyMs?: number): Promise<T> {
  const stop = startHeartbeat(details, everyMs);
  try {
    return await work();
  } finally {
    stop();
  }
}
