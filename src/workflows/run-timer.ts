/**
 * The run's one timer (limits.timeoutMs, limits.approvalTimeoutMs). Two behaviours, chosen once per run from
 * `patched('real-providers')`, so the interpreter never branches on the patch:
 * - machine-driven (runs begun with it): the machine's `timer` commands keep it on the earliest of the run's clocks,
 *   which stop while a person decides;
 * - legacy (runs begun before): armed at the start for the whole timeout, stopped while a kept-open conversation
 *   waits for a follow-up and armed again for the next turn. Kept so that those runs replay.
 */
import { CancellationScope, sleep } from '@temporalio/workflow';

export interface RunTimer {
  /** A `timer` command: fire at `due`, or not at all (null). */
  set(due: string | null): void;
  /** The run starts or carries on with `ms` left (legacy). */
  started(ms: number): void;
  /** A kept-open conversation waits for a follow-up (legacy: the timer stops). */
  turnEnded(): void;
  /** A follow-up opened a turn that must end by `deadline` (legacy: the timer starts again). */
  turnStarted(deadline: string): void;
  cancel(): void;
}

export function createRunTimer(machineDriven: boolean, fire: () => void): RunTimer {
  let scope: CancellationScope | undefined;
  let due: string | null = null;
  const arm = (ms: number): void => {
    const timer = new CancellationScope();
    void timer.run(() => sleep(ms)).then(fire, () => undefined); // rejected: cancelled, the run moved on
    scope = timer;
  };
  const cancel = (): void => {
    scope?.cancel();
    scope = undefined;
  };
  const msUntil = (iso: string) => Math.max(0, Date.parse(iso) - Date.now());
  return {
    set(next) {
      if (next === due) return;
      cancel();
      due = next;
      if (next !== null) arm(msUntil(next));
    },
    started(ms) {
      if (!machineDriven) arm(ms);
    },
    turnEnded() {
      if (!machineDriven) cancel();
    },
    turnStarted(deadline) {
      if (!machineDriven) arm(msUntil(deadline));
    },
    cancel,
  };
}
