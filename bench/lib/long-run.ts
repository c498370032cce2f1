/**
 * (b) at scale (`--long-10k`): samples of a long run while it goes (how far it is, its processes' CPU, the worker's
 * RSS), and what they say at its start and its end. A step's CPU is read over a stretch of steps between two samples,
 * so it holds every process's share of those steps (compactions and continue-as-new among them), not one step's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuTimeMs, currentRss } from './ipc';
import { percentile } from './stats';

export interface LongSample {
  /** Wall clock, ms. */
  atMs: number;
  /** The run's latest model call then (0 before the first). */
  call: number;
  /** CPU ms so far of each of the system's processes, by role (worker, server, database). */
  cpuMs: Record<string, number>;
  /** The worker's (or runner's) resident set then. */
  rssBytes?: number;
}

/** What a stretch of steps cost: the samples that bound it, and CPU ms a step by role. */
export interface Stretch {
  fromCall: number;
  toCall: number;
  cpuPerStepMs: Record<string, number>;
  /** Median resident set of the worker over the samples in the stretch. */
  rssBytes?: number;
}

/** Samples every `everyMs` until stopped (`stop` again returns the same samples); `at` runs once when the run reaches its call (the view's size early on, say). */
export function startSampler(o: {
  everyMs: number;
  pids: Record<string, number>;
  /** The role whose resident set is sampled. */
  rssOf: string;
  progress: () => Promise<number>;
  at?: { call: number; run: () => Promise<void> };
}): { stop(): Promise<LongSample[]> } {
  const samples: LongSample[] = [];
  let stopped = false;
  let fired = false;
  const take = async () => {
    const call = await o.progress().catch(() => NaN);
    const cpuMs = Object.fromEntries(Object.entries(o.pids).map(([role, pid]) => [role, cpuTimeMs(pid)]));
    samples.push({ atMs: Date.now(), call, cpuMs, rssBytes: currentRss(o.pids[o.rssOf]) });
    if (o.at && !fired && call >= o.at.call) {
      fired = true;
      await o.at.run();
    }
  };
  const loop = (async () => {
    while (!stopped) {
      await take();
      await sleep(o.everyMs);
    }
  })();
  let ended: Promise<LongSample[]> | undefined;
  return {
    stop: () =>
      (ended ??= (async () => {
        stopped = true;
        await loop;
        await take(); // the run's end
        return samples;
      })()),
  };
}

/** CPU a step by role between the last sample at or before `from` and the first at or after `to`; undefined when the samples do not bound it. */
export function stretch(samples: LongSample[], from: number, to: number): Stretch | undefined {
  const ok = samples.filter((s) => Number.isFinite(s.call));
  const a = [...ok].reverse().find((s) => s.call <= from);
  const b = ok.find((s) => s.call >= to);
  if (!a || !b || b.call <= a.call) return undefined;
  const cpuPerStepMs = Object.fromEntries(Object.entries(b.cpuMs).map(([role, ms]) => [role, (ms - (a.cpuMs[role] ?? 0)) / (b.call - a.call)]));
  const rss = ok.filter((s) => s.call >= a.call && s.call <= b.call && s.rssBytes !== undefined).map((s) => s.rssBytes!);
  return { fromCall: a.call, toCall: b.call, cpuPerStepMs, ...(rss.length ? { rssBytes: percentile(rss, 50) } : {}) };
}
