/**
 * One state read for all the watchers of a run that poll it (a degraded stream): fifty watchers polling every 250 ms
 * each would ask the run's worker 200 queries a second, and wait in line for them. A read in flight, or one begun
 * less than `freshMs` ago, is shared; each watcher still leaves when its own signal aborts.
 */
import type { RunStateView } from '../common/view';

export interface SharedReads<T> {
  read(runId: string, fetch: () => Promise<T>, signal?: AbortSignal): Promise<T>;
}

export type SharedStates = SharedReads<RunStateView>;

export const sharedStates = (freshMs: number): SharedStates => sharedReads<RunStateView>(freshMs);

/** Reads of anything about a run, shared as the state's are. */
export function sharedReads<T>(freshMs: number): SharedReads<T> {
  const reads = new Map<string, { at: number; view: Promise<T> }>();
  return {
    read(runId, fetch, signal) {
      const now = Date.now();
      let read = reads.get(runId);
      if (!read || now - read.at >= freshMs) {
        read = { at: now, view: fetch() };
        reads.set(runId, read);
        const mine = read;
        // Forgotten once stale: a run nobody watches keeps no entry. A failed read is nobody's to share.
        mine.view.then(
          () => setTimeout(() => reads.get(runId) === mine && reads.delete(runId), freshMs).unref(),
          () => reads.get(runId) === mine && reads.delete(runId),
        );
      }
      if (!signal) return read.view;
      signal.throwIfAborted();
      return new Promise<T>((resolve, reject) => {
        const abort = () => reject(signal.reason);
        signal.addEventListener('abort', abort, { once: true });
        read.view.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
      });
    },
  };
}
