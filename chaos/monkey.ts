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

  /** Worker kills and server restarts so far. */
  get eventCount(): number {
    return this.events.crashes.length;
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
      if (this.stopping || !worker.alive) continue;
      if (options.serverRestartAt.includes(event)) await this.restartServer();
      else await this.killWorker();
      event++;
    }
  }

  /** No more chaos: only keep a worker running until the harness stops the loop. */
  private async idle(worker: WorkerProcess): Promise<void> {
    if (!worker.alive && !(await this.startWorker())) return;
    await this.pause(undefined, worker);
  }

  private async startWorker(): Promise<boolean> {
    try {
      await this.deps.worker.start();
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
