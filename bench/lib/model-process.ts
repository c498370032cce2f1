/**
 * Child process: the project's scripted model serving the bench policy (see workload.ts), with a latency the driver
 * sets, and a log of when each model call arrived.
 */
import { performance } from 'node:perf_hooks';
import { startScriptedModel } from '../../src/scripted-model';
import { serve } from './serve';
import { benchScript, BENCH_MODEL, type Arrival, type ModelSettings } from './workload';

async function main(): Promise<void> {
  const settings: ModelSettings = { latencyMs: 0 };
  let arrivals: Arrival[] = [];
  /** The latest call of each run, and the summaries written (compactions' calls), for (b)'s samples. */
  const latest = new Map<string, number>();
  let summaries = 0;
  let waiters: Array<{ runId: string; call: number; after: number; resolve: (t: number) => void }> = [];
  const onArrival = (a: Arrival) => {
    arrivals.push(a);
    latest.set(a.runId, Math.max(latest.get(a.runId) ?? 0, a.call));
    waiters = waiters.filter((w) => {
      const hit = w.runId === a.runId && w.call === a.call && a.t > w.after;
      if (hit) w.resolve(a.t);
      return !hit;
    });
  };
  // Wall-clock milliseconds with sub-millisecond resolution, comparable with Date.now() in other processes.
  const now = () => performance.timeOrigin + performance.now();
  const model = await startScriptedModel({ port: Number(process.env.BENCH_MODEL_PORT ?? 0), recordBodies: false, maxRecordedRequests: 0 });
  const register = () => model.register(BENCH_MODEL, benchScript(() => settings, onArrival, now, () => summaries++));
  register();
  serve({
    url: () => model.url,
    /** A figure's provider: its latency, and its context window (none unless given). */
    configure: (msg: { latencyMs: number; contextWindowTokens?: number }) => {
      settings.latencyMs = msg.latencyMs;
      settings.contextWindowTokens = msg.contextWindowTokens;
    },
    /** How far a run is (its latest call, 0 before its first), and the summaries written so far by every run. */
    progress: (msg: { runId: string }) => ({ call: latest.get(msg.runId) ?? 0, summaries }),
    /** Returns and forgets the arrivals so far. */
    drain: () => {
      const out = arrivals;
      arrivals = [];
      latest.clear();
      register();
      return out;
    },
    count: () => arrivals.length,
    /** Resolves with the arrival time of `call` of `runId` that comes after `after` (ms), or one already logged. */
    waitFor: (msg: { runId: string; call: number; after: number }) => {
      const seen = arrivals.find((a) => a.runId === msg.runId && a.call === msg.call && a.t > msg.after);
      if (seen) return seen.t;
      return new Promise<number>((resolve) => waiters.push({ ...msg, resolve }));
    },
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
