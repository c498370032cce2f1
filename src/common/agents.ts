/**
 * Named agents on the ground floor: the JSON an agent definition is (`AgentSpec`), as the worker's `resolveAgent`
 * returns it and the run's history keeps it, and the one pure rule that lays a run's start fields over it
 * (`applyAgent`). `defineAgent` (activities/agents.ts) builds specs; the workflow merges them (workflows/start-input.ts).
 */
import { z } from 'zod';
import {
  AGENT_NAME_PATTERN,
  AGENT_NAME_RULE,
  AgentRunInputSchema,
  ApprovalSchema,
  BudgetSchema,
  CompactionSchema,
  CritiqueSchema,
  LimitsSchema,
  TimeoutsSchema,
  PlanOptionSchema,
  parseWith,
  type ParseResult,
} from './input';

/**
 * An agent as JSON: a name, its instructions (the run's system prompt) and any of the run's settings. Values are
 * kept as given, without the run's defaults, so that a start field overrides only what it names.
 */
export const AgentSpecSchema = (() => {
  const run = AgentRunInputSchema.shape;
  return z
    .object({
      name: z.string().regex(AGENT_NAME_PATTERN, AGENT_NAME_RULE),
      /** For people: what the agent is for (listed by the worker, never sent to the model). */
      description: z.string().max(1_000).optional(),
      /** The system prompt of the agent's runs; a run's `systemPrompt` replaces it. */
      instructions: z.string().trim().min(1, 'must be a non-empty string'),
      model: run.model,
      fallbackModels: z.array(z.string().min(1)).max(20).optional(),
      tools: run.tools,
      limits: LimitsSchema.partial().optional(),
      plan: PlanOptionSchema.optional(),
      critique: CritiqueSchema.optional(),
      timeouts: TimeoutsSchema.partial().optional(),
      critiqueMinConfidence: z.number().min(0).max(100).optional(),
      maxOutputTokens: run.maxOutputTokens,
      contextWindowTokens: run.contextWindowTokens,
      compaction: CompactionSchema.partial().optional(),
      approval: ApprovalSchema.optional(),
      budget: BudgetSchema.optional(),
      keepOpenMs: z.number().int().min(0).max(30 * 24 * 3600_000).optional(),
    })
    .strict();
})();

/** An agent's definition as JSON (what `resolveAgent` returns); `defineAgent` also takes tool objects. */
export type AgentSpec = z.input<typeof AgentSpecSchema>;

/** Checks a spec and, when it is valid, answers it as given: the run's defaults are applied after the merge, not before. */
export function checkAgentSpec(value: unknown): ParseResult<AgentSpec> {
  const parsed = parseWith(AgentSpecSchema, value, 'agent definition');
  return parsed.ok ? { ok: true, value: value as AgentSpec } : parsed;
}

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

/** The failure of a start that names an agent the worker lacks: the name and the ones it has. */
export function unknownAgentMessage(name: string, known: readonly string[]): string {
  const have = known.length ? `the worker's agents: ${[...known].sort().join(', ')}` : 'the worker has no agents registered';
  return `unknown agent "${name}"; ${have}`;
}
