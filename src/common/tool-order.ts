/**
 * The order a turn's tool calls run in: the model's, wherever order can matter. A call with side effects runs after
 * every call before it, and the calls after it wait for it; calls without side effects (`pure`) run beside each other.
 * The machine, the workflow's effects and the model activity (which runs some calls ahead) share these rules.
 */
import { mayRunAhead } from './approval';
import type { ToolCall } from './chat';

/** A call that may run beside its neighbours: a registered tool without side effects. Any other call counts as one with. */
export const isPure = (call: ToolCall): boolean => call.pure === true;

/**
 * The turn's calls in the batches they run in, one batch after another: each run of pure calls is one batch, each
 * other call a batch of its own. `concurrent` (a run's `toolOrder: 'concurrent'`): one batch of all.
 */
export function inModelOrder<T>(items: readonly T[], callOf: (item: T) => ToolCall, concurrent = false): T[][] {
  if (concurrent) return items.length ? [[...items]] : [];
  const batches: T[][] = [];
  let open: T[] | undefined;
  for (const item of items) {
    if (isPure(callOf(item))) {
      if (!open) batches.push((open = []));
      open.push(item);
    } else {
      batches.push([item]);
      open = undefined;
    }
  }
  return batches;
}

/**
 * The calls the model call may run ahead, before the run decides on the turn (`mayRunAhead`), and whose results the
 * machine may keep: only those before the turn's first call with side effects, which must run before anything after it.
 */
export function runAhead(calls: readonly ToolCall[], approvalTools: readonly string[] | undefined): ToolCall[] {
  const first = calls.findIndex((c) => !isPure(c));
  return (first === -1 ? calls : calls.slice(0, first)).filter((c) => mayRunAhead(c, approvalTools));
}
