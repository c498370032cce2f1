import { Context } from '@temporalio/activity';

/**
 * Heartbeat on a ticker so that cancellation reaches an activity even while it waits on a silent peer.
 * The first beat comes after `everyMs`, not at once: a call that ends sooner costs no heartbeat RPC (bench (a):
 * BENCHMARKS.md). Returns its own stop function.
 */
export function startHeartbeat(details: () => unknown, everyMs = 1_000): () => void {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(details()), everyMs);
  return () => clearInterval(timer);
}
