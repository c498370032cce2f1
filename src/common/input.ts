import { z } from 'zod';

/** The three lines of defence every run has, plus the repetition guard. */
export const LimitsSchema = z
  .object({
    /** Model calls (planning and answering) before the run fails. @default 50 */
    maxLoops: z.number().int().min(1).max(10_000).default(50),
    /** Tool calls before the run fails. @default 100 */
    maxToolCalls: z.number().int().min(1).max(100_000).default(100),
    /** Total wall-clock budget of the run, on a durable timer. @default 300000 (5 minutes) */
    timeoutMs: z.number().int().min(1_000).max(30 * 24 * 3600_000).default(300_000),
    /** How many times the same tool call (or cycle of calls) may repeat before the model is warned; once more ends the run. @default 3 */
    maxRepeats: z.number().int().min(2).max(100).default(3),
  })
  .strict();

export const ApprovalSchema = z
  .object({
    /** Tool names whose calls wait for an `approve` update; `*` guards every tool. */
    tools: z.array(z.string().min(1)).min(1),
  })
  .strict();

/** The one input object of the `agentRun` workflow. */
export const AgentRunInputSchema = z
  .object({
    prompt: z.string().trim().min(1, 'must be a non-empty string'),
    /** Model name for this run; the worker's `LLM_MODEL` when absent. */
    model: z.string().min(1).optional(),
    systemPrompt: z.string().min(1).optional(),
    limits: LimitsSchema.default(() => LimitsSchema.parse({})),
    /** Tool names this run may use; every tool of the worker's registry when absent. */
    tools: z.array(z.string().min(1)).optional(),
    /** Ask the model for a plan before the first answer. @default false */
    plan: z.boolean().default(false),
    /** `rules` is free and deterministic; `model` asks the model to judge a final answer. @default 'rules' */
    critique: z.enum(['rules', 'model']).default('rules'),
    approval: ApprovalSchema.optional(),
  })
  .strict();

export type AgentRunInput = z.input<typeof AgentRunInputSchema>;
export type ResolvedInput = z.output<typeof AgentRunInputSchema>;
export type Limits = z.output<typeof LimitsSchema>;

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** One line per problem, each naming the field, e.g. `limits.maxLoops: Too small: expected number to be >=1`. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(input)'}: ${issue.message}`)
    .join('; ');
}

export function parseWith<T extends z.ZodType>(schema: T, value: unknown, what: string): ParseResult<z.output<T>> {
  const result = schema.safeParse(value);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, error: `Invalid ${what}: ${describeZodError(result.error)}` };
}

export const parseAgentRunInput = (value: unknown): ParseResult<ResolvedInput> =>
  parseWith(AgentRunInputSchema, value, 'agentRun input');

export const AbortInputSchema = z.object({ reason: z.string().max(1_000).optional() }).strict();
export const ApproveInputSchema = z
  .object({ toolCallId: z.string().min(1), approved: z.boolean(), feedback: z.string().max(10_000).optional() })
  .strict();
export const SendMessageInputSchema = z.object({ text: z.string().trim().min(1).max(100_000) }).strict();

export type AbortInput = z.input<typeof AbortInputSchema>;
export type ApproveInput = z.input<typeof ApproveInputSchema>;
export type SendMessageInput = z.input<typeof SendMessageInputSchema>;
