/**
 * Stops of model calls between workers (issue 49: an abort or an interrupt closes the provider's stream within half a
 * second). A run's workflow task stops the model call it cancels on its own worker at once (`modelCalls` sink,
 * activities/calls-in-flight.ts); a call that runs on another worker hears of its cancellation only in the reply to its
 * next heartbeat, up to a cadence later (800 ms with a channel). So the worker whose workflow task did not find the
 * call announces the stop over the stream channel as well, and every worker with model calls in flight listens: the
 * one that holds the call stops it, then waits for Temporal's cancellation as a call stopped on its own worker does.
 *
 * Two relays, as the channel goes: Redis pub/sub (`AGENT_STREAM_REDIS_URL`), or the gateway's hub over HTTP
 * (`POST /internal/v1/stops`, and a long poll `GET /internal/v1/stops?after=`), with the gateway's token. A stop that
 * is lost (the channel is down) costs only time: the call still hears at its next heartbeat.
 */
import { z } from 'zod';
import { gatewayRequests, type GatewayAddress } from './discovery';
import type { ModelCallKey } from '../common/sinks';

/** A model call its run stopped: the worker that holds it stops its provider request. */
export const CallStopSchema = z.strictObject({
  workflowId: z.string().min(1).max(1_000),
  runId: z.string().min(1).max(200),
  call: z.union([z.number().int().nonnegative(), z.string().min(1).max(100)]),
});
export type CallStop = z.infer<typeof CallStopSchema> & { call: ModelCallKey };

export interface StopRelay {
  /** Tells the other workers (fire and forget: never throws, never waits). */
  announce(stop: CallStop): void;
  /** Listens for stops; returns the function that stops listening. The relay holds one connection while anyone listens. */
  listen(onStop: (stop: CallStop) => void): () => void;
  close(): Promise<void>;
}

/** Listeners of one relay: it holds its connection from the first listener to the last. */
export class Listeners {
  private readonly set = new Set<(stop: CallStop) => void>();
  constructor(
    private readonly start: () => void,
    private readonly stop: () => void,
  ) {}
  add(onStop: (stop: CallStop) => void): () => void {
    this.set.add(onStop);
    if (this.set.size === 1) this.start();
    return () => {
      if (this.set.delete(onStop) && this.set.size === 0) this.stop();
    };
  }
  /** Hands a stop that passes its schema to every listener (anything else is dropped). */
  deliver(raw: unknown): void {
    const parsed = CallStopSchema.safeParse(raw);
    if (!parsed.success) return;
    for (const onStop of this.set) onStop(parsed.data);
  }
  get size(): number {
    return this.set.size;
  }
}

/** How long one long poll of the hub waits for a stop before it asks again. */
export const STOP_POLL_MS = 25_000;

/** The gateway's hub: stops are posted to it and long-polled from it (`routes/stops.ts` is its end). */
export function httpStopRelay(where: string | (() => GatewayAddress), token?: string, timeoutMs = 2_000): StopRelay {
  const gateway = gatewayRequests(where, token);
  /** The hub's stops route and the headers of a request to it, as of now (a discovered gateway may move). */
  const at = () => {
    const { base, headers } = gateway(true);
    return { base: `${base}/internal/v1/stops`, headers };
  };
  let polling: AbortController | undefined;
  const poll = async (controller: AbortController) => {
    let after: number | undefined;
    let polled: string | undefined;
    let backoff = 0;
    while (!controller.signal.aborted) {
      try {
        const { base, headers } = at();
        // A cursor counts the stops of one hub: another gateway's starts afresh.
        if (base !== polled) after = undefined;
        polled = base;
        const query = after === undefined ? '' : `?after=${after}&waitMs=${STOP_POLL_MS}`;
        const res = await fetch(base + query, { headers, signal: AbortSignal.any([controller.signal, AbortSignal.timeout(STOP_POLL_MS + timeoutMs)]) });
        if (!res.ok) throw new Error(`the gateway answered ${res.status}`);
        const page = (await res.json()) as { stops: unknown[]; next: number };
        for (const stop of page.stops) listeners.deliver(stop);
        after = page.next;
        backoff = 0;
      } catch {
        if (controller.signal.aborted) return;
        // The gateway is away: calls hear of their stops at their heartbeats meanwhile.
        backoff = Math.min(backoff ? backoff * 2 : 250, 10_000);
        await new Promise((resolve) => setTimeout(resolve, backoff));
        after = undefined;
      }
    }
  };
  const listeners = new Listeners(
    () => {
      polling = new AbortController();
      void poll(polling);
    },
    () => polling?.abort(),
  );
  return {
    announce(stop) {
      const { base, headers } = at();
      fetch(base, { method: 'POST', headers, body: JSON.stringify(stop), signal: AbortSignal.timeout(timeoutMs) }).catch(() => undefined);
    },
    listen: (onStop) => listeners.add(onStop),
    async close() {
      polling?.abort();
    },
  };
}

/**
 * The hub's end: the last stops posted, numbered, and the long polls waiting for the next. A stop is of use for a
 * heartbeat's time at most, so it keeps few.
 */
export class StopBoard {
  private readonly kept: Array<{ n: number; stop: CallStop }> = [];
  private next = 1;
  private readonly waiting = new Set<() => void>();

  constructor(private readonly keep = 1_000) {}

  post(stop: CallStop): void {
    this.kept.push({ n: this.next++, stop });
    if (this.kept.length > this.keep) this.kept.shift();
    for (const wake of [...this.waiting]) wake();
  }

  /** Stops after `after` (absent: none, and where to start), waiting up to `waitMs` for one. */
  async read(after: number | undefined, waitMs: number, signal?: AbortSignal): Promise<{ stops: CallStop[]; next: number }> {
    const since = () => (after === undefined ? [] : this.kept.filter((k) => k.n > after).map((k) => k.stop));
    if (after === undefined || since().length > 0 || waitMs <= 0) return { stops: since(), next: this.next - 1 };
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiting.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      this.waiting.add(done);
      signal?.addEventListener('abort', done);
    });
    return { stops: since(), next: this.next - 1 };
  }

  /** Ends every long poll (the gateway closes). */
  wakeAll(): void {
    for (const wake of [...this.waiting]) wake();
  }
}
