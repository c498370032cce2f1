/**
 * The chaos loop: kill -9 the worker at random moments (seeded) and restart it; on scheduled events kill -9
 * the server instead and start it again on the same port and database file. Every crash notes when the
 * process was killed and when it was gone, so re-sent model calls can be told apart from calls in flight.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChaosOptions } from './options';
import type { RequestTracker } from './requests';
import type { Rng } from './rng';
import type { ServerProcess } from './server-process';
import type { WorkerProcess } from './worker-process';

/** Longest wait, after the random gap, for a model stream to be open before killing anyway. */
const OPEN_CALL_WAIT_MS = 15_000;
const OPEN_CALL_POLL_MS = 100;

export interface Crash {
  kind: 'worker' | 'server';
  /** When SIGKILL was sent. */
  at: number;
  /** When the process was seen to be gone. */
  goneAt: number;
  /** For a server: when it answered again. */
  upAt?: number;
  pid?: number;
}

export interface ChaosEvents {
  crashes: Crash[];
  unplannedWorkerExits: Array<{ at: number; pid: number; code: number | null; signal: string | null }>;
  unplannedServerExits: number;
  workerStarts: number;
  /** Worker starts that failed (e.g. while the server was down) and were tried again. */
  workerStartFailures: number;
}

export class ChaosMonkey {
  readonly events: ChaosEvents = { crashes: [], unplannedWorkerExits: [], unplannedServerExits: 0, workerStarts: 0, workerStartFailures: 0 };
  /** Set when the chaos itself broke (the server would not start again): the harness gives up. */
  fatal: Error | undefined;
  private readonly stopped = new AbortController();
  private readonly whenStopped = new Promise<void>((resolve) => this.stopped.signal.addEventListener('abort', () => resolve(), { once: true }));
  private loop: Promise<void> = Promise.resolve();
  /** When the first worker polled: the chaos clock starts there. */
  private chaosStartedAt: number | undefined;
  /** Guess of the time between events before any was seen: a mean kill gap plus one worker start. */
  private firstCycleMs = 0;

  constructor(
    private readonly deps: { worker: WorkerProcess; server: ServerProcess; tracker: RequestTracker; rng: Rng; options: ChaosOptions; elapsed: () => string },
  ) {
    deps.worker.onUnplannedExit = (pid, code, signal) => {
      this.events.unplannedWorkerExits.push({ at: Date.now(), pid, code, signal });
      this.say(`worker ${pid} exited on its own (code ${code}, signal ${signal})`);
    };
    deps.server.onUnplannedExit = (code) => {
      this.events.unplannedServerExits++;
      this.say(`server exited on its own (code ${code})`);
    };
  }

  /**
   * Chaos events so far plus the elapsed fraction of the next one (by the mean time between events), so the
   * harness can release runs at a steady pace across the chaos instead of in a burst after each event.
   */
  progress(now = Date.now()): number {
    if (this.chaosStartedAt === undefined) return 0;
    const times = this.events.crashes.map((c) => c.at);
    const last = times.at(-1) ?? this.chaosStartedAt;
    const meanCycle = times.length ? (last - this.chaosStartedAt) / times.length : this.firstCycleMs;
    return times.length + Math.min(1, (now - last) / Math.max(1, meanCycle));
  }

  start(): void {
    this.loop = this.run().catch((err: unknown) => {
      this.fatal = err instanceof Error ? err : new Error(String(err));
      this.say(`chaos loop failed: ${this.fatal.message}`);
    });
  }

  async stop(): Promise<void> {
    this.stopped.abort();
    await this.loop;
  }

  private get stopping(): boolean {
    return this.stopped.signal.aborted;
  }

  /** Waits `ms` (forever when undefined), or less if the worker exits or the chaos is stopped. */
  private async pause(ms: number | undefined, worker: WorkerProcess): Promise<void> {
    const forever = new Promise<void>(() => undefined);
    const waited = ms === undefined ? forever : sleep(ms, undefined, { signal: this.stopped.signal });
    await Promise.race([waited, this.whenStopped, worker.whenExited()]).catch(() => undefined); // an aborted sleep rejects
  }

  private async run(): Promise<void> {
    const { worker, server, rng, options } = this.deps;
    let event = 0;
    while (!this.stopping) {
      if (!server.alive) await server.start();
      if (event >= options.maxChaosEvents) {
        await this.idle(worker);
        continue;
      }
      if (!worker.alive && !(await this.startWorker())) continue;
      await this.pause(rng.between(...options.killGapMs), worker);
      await this.untilModelCallOpen(worker);
      if (this.stopping || !worker.alive) continue;
      if (options.serverRestartAt.includes(event)) await this.restartServer();
      else await this.killWorker();
      event++;
    }
  }

  /** A kill should cut work in flight: wait (a bounded while) until some model stream is open. */
  private async untilModelCallOpen(worker: WorkerProcess): Promise<void> {
    const deadline = Date.now() + OPEN_CALL_WAIT_MS;
    while (this.deps.tracker.openNow().length === 0 && Date.now() < deadline && !this.stopping && worker.alive) {
      await this.pause(OPEN_CALL_POLL_MS, worker);
    }
  }

  /** No more chaos: only keep a worker running until the harness stops the loop. */
  private async idle(worker: WorkerProcess): Promise<void> {
    if (!worker.alive && !(await this.startWorker())) return;
    await this.pause(undefined, worker);
  }

  private async startWorker(): Promise<boolean> {
    try {
      const started = Date.now();
      await this.deps.worker.start();
      if (this.chaosStartedAt === undefined) {
        this.chaosStartedAt = Date.now();
        this.firstCycleMs = (this.deps.options.killGapMs[0] + this.deps.options.killGapMs[1]) / 2 + (Date.now() - started);
      }
      this.events.workerStarts++;
      this.say(`worker ${this.deps.worker.pid} polling`);
      return true;
    } catch (err) {
      this.events.workerStartFailures++;
      this.say(`worker start failed, trying again: ${(err as Error).message}`);
      await sleep(1_000);
      return false;
    }
  }

  private async killWorker(): Promise<void> {
    const { worker, tracker } = this.deps;
    const open = tracker.openNow().length;
    const at = Date.now();
    const pid = worker.pid;
    await worker.kill9();
    this.events.crashes.push({ kind: 'worker', at, goneAt: Date.now(), pid });
    this.say(`kill -9 worker ${pid} (${open} model calls open)`);
  }

  private async restartServer(): Promise<void> {
    const { server, tracker, rng, options } = this.deps;
    const open = tracker.openNow().length;
    const crash: Crash = { kind: 'server', at: Date.now(), goneAt: 0 };
    await server.kill9();
    crash.goneAt = Date.now();
    this.say(`kill -9 server (${open} model calls open)`);
    await sleep(rng.between(...options.serverDownMs));
    await server.start();
    crash.upAt = Date.now();
    this.events.crashes.push(crash);
    this.say(`server back on ${server.address} after ${crash.upAt - crash.at} ms`);
  }

  private say(line: string): void {
    this.deps.options.log(`[${this.deps.elapsed()}] ${line}`);
  }
}
