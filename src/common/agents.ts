/**
 * Named agents on the ground floor: the JSON an agent definition is (`AgentSpec`), as the worker's `resolveAgent`
 * returns it and the run's history keeps it, and the one pure rule that lays a run's start fields over it
 * (`applyAgent`). `defineAgent` (activities/agents.ts) builds specs; the workflow merges them (workflows/start-input.ts).
 */
import { z } from 'zod';
import { AGENT_NAME_PATTERN, AGENT_NAME_RULE, parseWith, runInputSchemas, type ParseResult } from './input';

/**
 * An agent as JSON: a name, its instructions (the run's system prompt) and any of the run's settings. Values are
 * kept as given, without the run's defaults, so that a start field overrides only what it names.
 */
export const AgentSpecSchema = (() => {
  const { AgentRunInputSchema, ApprovalSchema, BudgetSchema, CompactionSchema, CritiqueSchema, LimitsSchema, PlanOptionSchema, TimeoutsSchema } = runInputSchemas();
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

// `applyAgent`, the rule that lays a start's fields over a spec, is in apply-agent.ts, which builds no schema.

/** The failure of a start that names an agent the worker lacks: the name and the ones it has. */
export function unknownAgentMessage(name: string, known: readonly string[]): string {
  const have = known.length ? `the worker's agents: ${[...known].sort().join(', ')}` : 'the worker has no agents registered';
  return `unknown agent "${name}"; ${have}`;
}
