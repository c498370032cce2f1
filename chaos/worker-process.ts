/** One chaos worker child process: started, awaited until it polls, and killed for real with SIGKILL. */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const READY_LINE = /chaos worker \d+ polling/;

export class WorkerProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private readonly killedByUs = new WeakSet<ChildProcess>();
  /** Called when a worker ends without being killed by `kill9`, e.g. when it gives up on a vanished server. */
  onUnplannedExit: (pid: number, code: number | null, signal: string | null) => void = () => undefined;

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly logFile: string,
  ) {
    // A worker must not outlive a harness that dies or is interrupted.
    process.on('exit', () => this.child?.kill('SIGKILL'));
  }

  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.alive ? this.child!.pid : undefined;
  }

  /** Spawns the worker and resolves once it polls; rejects if it exits first or takes longer than `timeoutMs`. */
  start(timeoutMs = 60_000): Promise<void> {
    const out = openSync(this.logFile, 'a');
    const child = spawn(process.execPath, ['--import', 'tsx', 'chaos/worker.ts'], { cwd: ROOT, env: this.env, stdio: ['ignore', 'pipe', out] });
    closeSync(out); // the child holds its own copy
    this.child = child;
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        if (!this.killedByUs.has(child)) this.onUnplannedExit(child.pid ?? -1, code, signal);
        resolve();
      }),
    );
    return new Promise((resolve, reject) => {
      const fail = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      };
      const timer = setTimeout(() => fail(new Error(`worker ${child.pid} not polling after ${timeoutMs} ms`)), timeoutMs);
      child.once('exit', (code, signal) => fail(new Error(`worker ${child.pid} exited before polling (code ${code}, signal ${signal})`)));
      let seen = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        seen = (seen + chunk.toString()).slice(-500);
        if (READY_LINE.test(seen)) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }

  /** kill -9, and wait until the process is gone. */
  async kill9(): Promise<void> {
    const child = this.child;
    if (!child || !this.alive) return;
    this.killedByUs.add(child);
    child.kill('SIGKILL');
    await this.exited;
  }

  /** Resolves when the current process ends, whoever ended it. */
  whenExited(): Promise<void> {
    return this.exited;
  }
}
