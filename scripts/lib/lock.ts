/** A cross-process lock for builds into a shared cache (the real model, the Temporal Server). */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * An exclusive lock file holding the owner's pid; a lock whose owner is gone is taken over. Resolves with the
 * function that releases it. `what` names the work in messages ("real model").
 */
export async function acquireLock(lockFile: string, what: string, waitMs: number, log: (line: string) => void): Promise<() => void> {
  const deadline = Date.now() + waitMs;
  let told = false;
  for (;;) {
    try {
      const fd = openSync(lockFile, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(lockFile, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = readOwner(lockFile);
    if (owner !== undefined && !isAlive(owner)) {
      // Re-read right before removing, so a lock another waiter just took over is left alone.
      if (readOwner(lockFile) === owner) rmSync(lockFile, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${what}: gave up waiting for ${lockFile} (held by pid ${owner})`);
    if (!told) log(`${what}: waiting for pid ${owner}, which is provisioning ${path.dirname(lockFile)}`);
    told = true;
    await sleep(1_000);
  }
}

function readOwner(lockFile: string): number | undefined {
  try {
    const pid = Number(readFileSync(lockFile, 'utf8').trim());
    // An empty file is a lock being written this instant: treat its owner as alive.
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process with this pid exists (EPERM: it does, under another user). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
