import { approvalCovers } from '../common/approval';
import type { ToolCall } from '../common/chat';
import type { RunSnapshot } from './snapshot';

/** The run has made as many model calls as its `maxLoops` allows. */
export const isLoopLimitReached = (s: RunSnapshot): boolean => s.counters.loops >= s.limits.maxLoops;

/** Executing `pending` more calls would exceed `maxToolCalls`. */
export const isToolCallLimitReached = (s: RunSnapshot, pending: number): boolean =>
  s.counters.toolCalls + pending > s.limits.maxToolCalls;

/** The run's approval settings guard this tool. */
export const needsApproval = (s: RunSnapshot, toolName: string): boolean => approvalCovers(s.options.approvalTools, toolName);

/** A stable text for one call, so equal calls compare equal whatever the key order or spacing of their JSON. */
export function toolSignature(call: Pick<ToolCall, 'name' | 'arguments'>): string {
  let args = call.arguments.trim();
  try {
    args = JSON.stringify(sortKeys(JSON.parse(args)));
  } catch {
    // malformed JSON compares as written
  }
  return `${call.name}(${args})`;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value as object)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

export interface Repetition {
  /** The repeating unit, e.g. `['readFile({"path":"a"})']` or a cycle of two calls. */
  unit: string[];
  times: number;
}

/**
 * The longest-standing repetition at the end of `signatures`: a unit of 1..maxPeriod calls repeated at least
 * `minRepeats` times in a row. A run that repeats itself without new calls in between is making no progress.
 */
export function findRepetition(signatures: readonly string[], minRepeats: number, maxPeriod = 3): Repetition | null {
  for (let period = 1; period <= maxPeriod; period++) {
    const unit = signatures.slice(-period);
    if (unit.length < period) break;
    // a cycle of identical calls is reported as period 1
    if (period > 1 && unit.every((sig) => sig === unit[0])) continue;
    let times = 1;
    while (signatures.length >= period * (times + 1)) {
      const start = signatures.length - period * (times + 1);
      const previous = signatures.slice(start, start + period);
      if (!previous.every((sig, i) => sig === unit[i])) break;
      times++;
    }
    if (times >= minRepeats) return { unit, times };
  }
  return null;
}

export const describeRepetition = (r: Repetition): string =>
  r.unit.length === 1
    ? `${r.unit[0]} called ${r.times} times in a row`
    : `the cycle ${r.unit.join(' -> ')} repeated ${r.times} times`;

/** The critic has asked for another attempt more often in a row than `maxRepeats` allows: the run is not progressing. */
export const isStuckInSetbacks = (s: RunSnapshot): boolean => s.counters.setbacksInARow > s.limits.maxRepeats;

/**
 * The limit the next model call comes close to (`limits.wrapUpAt` of it), in words, or null: the model is then told
 * once to conclude with what it has. The first call is never near a limit.
 */
export function nearLimit(s: RunSnapshot): string | null {
  const share = s.limits.wrapUpAt;
  if (share >= 1 || s.counters.loops === 0) return null;
  const { maxLoops, maxToolCalls } = s.limits;
  if (s.counters.loops + 1 >= share * maxLoops) return `this is model call ${s.counters.loops + 1} of at most ${maxLoops}`;
  if (s.counters.toolCalls >= share * maxToolCalls) return `${s.counters.toolCalls} of at most ${maxToolCalls} tool calls are used`;
  const b = s.options.budget;
  const factor = 1 + s.counters.budgetGrants;
  if (b?.maxTokens !== undefined && s.usage.totalTokens >= share * b.maxTokens * factor) return `${s.usage.totalTokens} of ${b.maxTokens * factor} budgeted tokens are used`;
  if (b?.maxCostUsd !== undefined && s.usage.costUsd >= share * b.maxCostUsd * factor) return `$${s.usage.costUsd.toFixed(4)} of the $${b.maxCostUsd * factor} budget is spent`;
  return null;
}
