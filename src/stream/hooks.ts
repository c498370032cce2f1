/**
 * The worker's lifecycle hooks on its runs: `onTransition` for each state change, `onRunEnd` once when a run ends. They
 * are the worker's end of the `runHooks` sink (common/sinks.ts): they run outside the workflow's determinism, after the
 * workflow task that made the change, and never during replay. A hook is not awaited: one that throws, rejects or
 * never settles is logged and neither fails nor holds the run.
 */
import type { InjectedSinks } from '@temporalio/worker';
import type { AgentRunResult } from '../common/messages';
import type { RunHookSinks, RunTransitionNote } from '../common/sinks';

/** A run's state change, as `onTransition` is told it. */
export interface RunTransition extends RunTransitionNote {
  workflowId: string;
  runId: string;
}

/** A run's end, as `onRunEnd` is told it: its result, FAILED included (the workflow fails with it in that case). */
export interface RunEnd {
  workflowId: string;
  runId: string;
  result: AgentRunResult;
}

/**
 * Hooks on every run the worker runs. Called after the workflow task that made the change, in the order of the
 * changes; at most once each when workers do not crash (a crash between the hook and the task's completion may call
 * it again on the next worker). A run's end is its final state: continuing as new is not an end, terminating a
 * workflow runs no code and calls no hook.
 */
export interface RunHooks {
  /** Each step of each run, in order: a transition, `from` and `to` the same when a state is entered again. */
  onTransition?(transition: RunTransition): void | Promise<void>;
  /** Once, when a run ends COMPLETED, ABORTED or FAILED. */
  onRunEnd?(end: RunEnd): void | Promise<void>;
}

/** Where a hook's failure is told. */
export interface HookLog {
  warn(message: string, meta?: Record<string, unknown>): void;
}

/** A hook still unsettled this long after its call is logged as hanging (it is not stopped). */
export const HOOK_HANG_WARNING_MS = 30_000;

/** Calls the hook and returns at once: a throw, a rejection or a hang is logged, never passed on. */
function callHook<T>(name: string, hook: ((arg: T) => void | Promise<void>) | undefined, arg: T, meta: Record<string, unknown>, log: () => HookLog, hangMs: number): void {
  if (!hook) return;
  const failed = (err: unknown) => log().warn(`hook ${name} failed: ${err instanceof Error ? err.message : String(err)}`, { ...meta, hook: name });
  let returned: unknown;
  try {
    returned = hook(arg);
  } catch (err) {
    failed(err);
    return;
  }
  if (!(returned instanceof Promise)) return;
  const hanging = setTimeout(() => log().warn(`hook ${name} has not settled after ${hangMs} ms`, { ...meta, hook: name }), hangMs);
  hanging.unref?.();
  void returned.then(
    () => clearTimeout(hanging),
    (err: unknown) => {
      clearTimeout(hanging);
      failed(err);
    },
  );
}

/**
 * The `runHooks` sink: registered on every worker (with no hooks it does nothing), so that the workflow's calls are
 * never unregistered sinks. Its functions return at once: the SDK awaits a sink before it completes the workflow task.
 */
export function runHookSinks(hooks: RunHooks | undefined, log: () => HookLog, hangMs = HOOK_HANG_WARNING_MS): InjectedSinks<RunHookSinks> {
  return {
    runHooks: {
      transitioned: {
        fn: (info, changes) => {
          const { workflowId, runId } = info;
          for (const change of changes) callHook('onTransition', hooks?.onTransition, { workflowId, runId, ...change }, { workflowId, runId, step: change.step }, log, hangMs);
        },
        callDuringReplay: false,
      },
      ended: {
        fn: (info, result) => callHook('onRunEnd', hooks?.onRunEnd, { workflowId: info.workflowId, runId: info.runId, result }, { workflowId: info.workflowId, runId: info.runId }, log, hangMs),
        callDuringReplay: false,
      },
    },
  };
}
