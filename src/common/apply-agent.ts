/**
 * The one pure rule that lays a run's start fields over a named agent's spec (the package exports it). Apart from
 * the agents' schema (agents.ts) so that a run's code does not build it to merge two objects: every run evaluates
 * the workflow bundle's modules in its own instances and keeps them while it is cached (BENCHMARKS.md, (g) and (h)).
 */
import type { AgentSpec } from './agents';

/** Start fields merged key by key into the agent's object of the same name; every other field replaces the agent's. */
const MERGED_BY_KEY = ['limits', 'compaction', 'timeouts'] as const;
/** Spec fields that are not run fields: the name, and the note for people. `instructions` becomes `systemPrompt`. */
const NOT_RUN_FIELDS = new Set(['name', 'description', 'instructions']);

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The run input of a start that names `agent`: the agent's settings under the start's own fields, without `agent`.
 * - `systemPrompt` given at start replaces the agent's `instructions`;
 * - `limits`, `compaction` and `timeouts` merge key by key (a start's `limits.timeoutMs` keeps the agent's `maxLoops`);
 * - every other field given at start (`model`, `tools`, `approval`, `budget`, `plan`, ...) replaces the agent's whole:
 *   a start's `tools` is the run's tool list, not an addition to the agent's;
 * - `prompt`, `resume` and any unknown field come from the start alone (the input schema then checks them).
 * A field counts as given when it is present and not `undefined`. Pure: the workflow calls it, so must tests.
 */
export function applyAgent(spec: AgentSpec, start: Record<string, unknown>): Record<string, unknown> {
  const { agent: _name, ...given } = start;
  const merged: Record<string, unknown> = { systemPrompt: spec.instructions };
  for (const [key, value] of Object.entries(spec)) {
    if (!NOT_RUN_FIELDS.has(key) && value !== undefined) merged[key] = value;
  }
  for (const [key, value] of Object.entries(given)) {
    if (value === undefined) continue;
    const base = merged[key];
    const byKey = (MERGED_BY_KEY as readonly string[]).includes(key) && isPlainObject(base) && isPlainObject(value);
    merged[key] = byKey ? { ...base, ...definedEntries(value) } : value;
  }
  return merged;
}

const definedEntries = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
