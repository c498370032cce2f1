/**
 * Child processes of the bench: the scripted model, the workers and the in-process runners each run in their own
 * process, so their peak RSS can be read and the driver's own work shares no event loop with them.
 * Messages are `{ id, type, ... }` requests answered by `{ id, ok, value | error }`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';

export const BENCH_DIR = path.resolve(__dirname, '..');
export const PROJECT_ROOT = path.resolve(BENCH_DIR, '..');

export interface Child {
  proc: ChildProcess;
  pid: number;
  /** Sends a request and resolves with the child's answer. */
  call<T = unknown>(type: string, body?: Record<string, unknown>, timeoutMs?: number): Promise<T>;
  /** Resolves with the exit code (or the signal's name) once the process ends. */
  exited: Promise<number | string | null>;
  /** Last lines of the child's stderr, for error messages. */
  stderrTail(): string;
}

export interface SpawnOptions {
  /** `tsx` runs a TypeScript file from the project's tree; `node` runs a peer's plain JavaScript from its own node_modules. */
  runtime: 'tsx' | 'node';
  /** More node flags for the child. */
  nodeArgs?: string[];
  env?: Record<string, string>;
  cwd?: string;
  args?: string[];
  /** The child's stdout goes to this file (workers log there); absent, it is dropped. */
  stdoutFile?: string;
}

/** Starts `file` with an IPC channel and waits for its `{ type: 'ready' }` message. */
export async function spawnChild(file: string, opts: SpawnOptions): Promise<Child> {
  const out = opts.stdoutFile ? openSync(opts.stdoutFile, 'a') : 'ignore';
  const proc = fork(file, opts.args ?? [], {
    cwd: opts.cwd ?? PROJECT_ROOT,
    // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of every child when it exits, for finding where a step's time goes.
    execArgv: [...(opts.runtime === 'tsx' ? ['--import', 'tsx'] : []), ...(opts.nodeArgs ?? []), ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : [])],
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', out, 'pipe', 'ipc'],
    serialization: 'advanced',
  });
  if (typeof out === 'number') closeSync(out);
  let tail = '';
  proc.stderr!.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4_000);
    if (process.env.BENCH_VERBOSE) process.stderr.write(chunk);
  });
  const exited = new Promise<number | string | null>((resolve) => proc.once('exit', (code, signal) => resolve(code ?? signal)));
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let next = 0;
  proc.on('message', (msg: any) => {
    const waiter = msg && typeof msg.id === 'number' ? pending.get(msg.id) : undefined;
    if (!waiter) return;
    pending.delete(msg.id);
    if (msg.ok) waiter.resolve(msg.value);
    else waiter.reject(new Error(`${path.basename(file)}: ${msg.error}`));
  });
  void exited.then((code) => {
    for (const w of pending.values()) w.reject(new Error(`${path.basename(file)} exited (${code}) with a request pending\n${tail}`));
    pending.clear();
  });
  const ready = await Promise.race([
    once(proc, 'message').then(([m]) => m as { type?: string }),
    exited.then((code) => ({ type: `exit ${code}` })),
  ]);
  if (ready.type !== 'ready') throw new Error(`${path.basename(file)} did not start (${ready.type}):\n${tail}`);
  return {
    proc,
    pid: proc.pid!,
    exited,
    stderrTail: () => tail,
    call<T>(type: string, body: Record<string, unknown> = {}, timeoutMs = 30 * 60_000): Promise<T> {
      const id = ++next;
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`${path.basename(file)}: ${type} timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        pending.set(id, {
          resolve: (v) => (clearTimeout(timer), resolve(v)),
          reject: (e) => (clearTimeout(timer), reject(e)),
        });
        proc.send({ id, type, ...body });
      });
    },
  };
}

/** Ends a child: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopChild(child: Child, graceMs = 10_000): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill('SIGTERM');
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
}

/** Peak resident set size of a live process in bytes (VmHWM), or undefined once it is gone. */
export function peakRss(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
    return kb ? Number(kb) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) a live process and its descendants have used so far, in ms; 0 once it is gone. */
/** Resident set size (VmRSS) of a process now, in bytes; undefined once it is gone. */
export function currentRss(pid: number): number | undefined {
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export function cpuTimeMs(pid: number): number {
  try {
    // Fields after the command name, which is in parentheses and may hold spaces: utime, stime, cutime and cstime are
    // fields 14 to 17. The children's share counts too (PostgreSQL's backends are the postmaster's children): the ones
    // it has reaped through cutime and cstime, the live ones read one by one.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    return (ticks * 1000) / CLOCK_TICKS + liveChildren(pid).reduce((sum, child) => sum + cpuTimeMs(child), 0);
  } catch {
    return 0;
  }
}

function liveChildren(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** USER_HZ: 100 on every Linux the bench runs on. */
const CLOCK_TICKS = 100;
