/** The stack's long-lived processes: started detached with their output in a log file, found again by pid. */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive } from '../lock';

/** What `.stack/state.json` keeps of one process. */
export interface ProcessRecord {
  pid: number;
  /** A word of its command line, checked before a signal is sent, so a reused pid is never killed. */
  marker: string;
  log: string;
  ports: number[];
  startedAt: string;
}

export interface SpawnOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  logFile: string;
  /** Run as this user (PostgreSQL refuses to run as root). */
  user?: { uid: number; gid: number };
}

/** Starts `command` in its own process group, outliving this process, its output appended to `logFile`. */
export function spawnDetached(command: string, args: string[], opts: SpawnOptions): number {
  mkdirSync(path.dirname(opts.logFile), { recursive: true });
  const fd = openSync(opts.logFile, 'a');
  try {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', fd, fd], detached: true, ...(opts.user ?? {}) });
    if (child.pid === undefined) throw new Error(`could not start ${command}`);
    child.unref();
    return child.pid;
  } finally {
    closeSync(fd); // the child holds its own copy
  }
}

/** The process is alive and still the one recorded (its command line holds the marker). */
export function isRunning(record: ProcessRecord | undefined): boolean {
  if (!record || !isAlive(record.pid)) return false;
  try {
    const cmdline = readFileSync(`/proc/${record.pid}/cmdline`, 'utf8');
    // A zombie (killed, not yet reaped by its parent) has an empty command line: it is not running.
    return cmdline.includes(record.marker);
  } catch {
    return false;
  }
}

/** SIGTERM to the process group, SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopProcess(record: ProcessRecord, graceMs: number): Promise<'stopped' | 'killed' | 'gone'> {
  if (!isRunning(record)) return 'gone';
  signalGroup(record.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isRunning(record)) return 'stopped';
    await sleep(100);
  }
  signalGroup(record.pid, 'SIGKILL');
  while (isRunning(record)) await sleep(50);
  return 'killed';
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // Gone in between.
    }
  }
}

/** The last `chars` characters of a log file, for an error message. */
export function logTail(file: string, chars = 3_000): string {
  try {
    return readFileSync(file, 'utf8').slice(-chars);
  } catch {
    return '(no log)';
  }
}


/** Polls `check` until it returns true; fails with `what` and, when given, the tail of `logFile`. */
export async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean> | boolean, logFile?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}${logFile ? `\n  log: ${logFile}\n--- last lines ---\n${logTail(logFile)}` : ''}`);
    }
    await sleep(250);
  }
}
