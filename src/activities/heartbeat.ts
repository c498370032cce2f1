import { Context } from '@temporalio/activity';

/**
 * Heartbeat on a ticker so that cancellation reaches an activity even while it waits on a silent peer.
 * Returns its own stop function.
 */
export function startHeartbeat(details: () => unknown, everyMs = 1_000): () => void {
  const ctx = Context.current();
  ctx.heartbeat(details());
  const timer = setInterval(() => ctx.heartbeat(details()), everyMs);
  return () => clearInterval(timer);
}
