/** The run's one timer: the machine's `timer` commands keep it on the earliest of the run's clocks (clocks.ts). */
import { CancellationScope, sleep } from '@temporalio/workflow';

export interface RunTimer {
  /** A `timer` command: fire at `due`, or not at all (null). */
  set(due: string | null): void;
  cancel(): void;
}

export function createRunTimer(fire: () => void): RunTimer {
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
    cancel,
  };
}
