/** Waits that an `AbortSignal` ends, for the handle's queries and the watcher's polls. */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Runs one call with its own signal that follows `signal`. The SDK adds an abort listener per call and never removes
 * it, so a long `watch` would otherwise pile one listener (and its finished call) per poll onto the caller's signal.
 */
export async function perCall<T>(signal: AbortSignal, fn: (callSignal: AbortSignal) => Promise<T>): Promise<T> {
  const call = new AbortController();
  const forward = () => call.abort(signal.reason);
  signal.addEventListener('abort', forward, { once: true });
  try {
    return await fn(call.signal);
  } finally {
    signal.removeEventListener('abort', forward);
  }
}

/** Sleeps; an abort rejects with the signal's reason, like `throwIfAborted`. */
export async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  await sleep(ms, undefined, { signal }).catch((err: unknown) => {
    signal?.throwIfAborted();
    throw err;
  });
}

