import { z } from 'zod';
import { ActorSchema } from './actor';
import { ConversationSchema } from './conversation';

/** What an agent may be called: a word that is safe in a CLI flag, a URL and a log line. */
export const AGENT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const AGENT_NAME_RULE = 'must be 1-64 characters of [A-Za-z0-9_.-], starting with a letter or digit';
/** What a memory namespace or key may be called (common/memory.ts). */
export const MEMORY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;
export const MEMORY_NAME_RULE = 'must be 1-128 characters of [A-Za-z0-9_.:@-], starting with a letter or digit';

/** How long a run waits for an approval (a tool call's, a budget's) by default before `approval.onTimeout` applies: a week, weekends and holidays included. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 7 * 24 * 3600_000;
/** How long a run stays PAUSED by default before it is aborted: a week. */
export const DEFAULT_MAX_PAUSED_MS = 7 * 24 * 3600_000;

/** What a custom critic may be called (a worker's `critics` key): the same words as an agent's name. */
export const CRITIC_NAME_PATTERN = AGENT_NAME_PATTERN;
export const CRITIC_NAME_RULE = AGENT_NAME_RULE;

/**
 * The run's activity timeouts as they were before they became options (workflows/effects.ts applies them): a model
 * call's attempt 5 minutes and the call with its retries 20, the critic 2, a compaction 20.
 */
export const DEFAULT_TIMEOUTS = { modelAttemptMs: 300_000, modelCallMs: 1_200_000, criticMs: 120_000, compactionMs: 1_200_000 } as const;
/** The bounds of every `timeouts` field: a second, a day. */
export const MIN_TIMEOUT_MS = 1_000;
export const MAX_TIMEOUT_MS = 24 * 3600_000;

/** The run snapshot's one schema version, the 1.0 baseline (machine/snapshot-schema.ts). */
export const SNAPSHOT_VERSION = '1.0';

/** `schemaVersion` of a stored snapshot: any other version is refused, naming the one this worker knows. */
export function snapshotVersion() {
  // Only a string or a number is quoted back: the input may be anything (a BigInt, an object).
  const shown = (v: unknown) => (typeof v === 'string' ? `'${v.slice(0, 20)}'` : typeof v === 'number' ? String(v) : `of type ${typeof v}`);
  return z.literal(SNAPSHOT_VERSION, { error: (issue) => `unknown snapshot version ${shown(issue.input)}: this worker reads version '${SNAPSHOT_VERSION}' only` });
}

/**
 * The run input's schemas. A process that parses many inputs (the client, the gateway, the CLI, and the schemas made
 * of these) shares one set, `runInputSchemas()`; a run's workflow code builds a set for its one parse and drops it
 * (`parseAgentRunInput(raw, buildRunInputSchemas())`): every run evaluates the workflow bundle's modules in its own
 * instances and keeps them while it is cached, so a parked run would otherwise hold the input's schemas for nothing
 * (BENCHMARKS.md, figure (h)).
 */
export const buildRunInputSchemas = () => {
  /** `plan`: off, a free-text plan (`true`, `'text'`), or a structured one (`'steps'`). */
  const PlanOptionSchema = z.union([z.boolean(), z.enum(['steps', 'text'])]);
  /** The three lines of defence every run has, plus the repetition guard. */
  const LimitsSchema = z
    .object({
      /** Model calls (planning and answering) before the run fails. @default 50 */
      maxLoops: z.number().int().min(1).max(10_000).default(50),
      /** Tool calls before the run fails. @default 100 */
      maxToolCalls: z.number().int().min(1).max(100_000).default(100),
      /**
       * The run's working time, on a durable timer: time spent waiting for a person (AWAITING_APPROVAL, PAUSED) does not
       * count. @default 300000 (5 minutes)
       */
      timeoutMs: z.number().int().min(1_000).max(30 * 24 * 3600_000).default(300_000),
      /**
       * Longest wait for one approval (AWAITING_APPROVAL: tool calls, or a spent budget with `budget.onExceed: 'approve'`)
       * before `approval.onTimeout` applies (the run fails by default); null waits until decided. @default 604800000 (7 days)
       */
      approvalTimeoutMs: z.number().int().min(1_000).max(365 * 24 * 3600_000).nullable().default(DEFAULT_APPROVAL_TIMEOUT_MS),
      /** Longest time PAUSED before the run is aborted with a reason that says so; null waits until resumed. @default 604800000 (7 days) */
      maxPausedMs: z.number().int().min(1_000).max(365 * 24 * 3600_000).nullable().default(DEFAULT_MAX_PAUSED_MS),
      /**
       * The run's total wall-clock time from its start, waits for a person included, across continue-as-new: the last
       * line of defence; the run fails when it runs out, whatever it was doing or waiting for. @default none
       */
      totalTimeoutMs: z.number().int().min(1_000).max(365 * 24 * 3600_000).optional(),
      /**
       * What reaching `maxLoops` or `maxToolCalls` does: `fail` fails the run; `complete` ends it COMPLETED with the last
       * text as its answer and a reason that names the limit. @default 'fail'
       */
      onLimit: z.enum(['fail', 'complete']).default('fail'),
      /** How many times the same tool call (or cycle of calls) may repeat before the model is warned; once more ends the run. @default 3 */
      maxRepeats: z.number().int().min(2).max(100).default(3),
      /**
       * Share of `maxLoops`, `maxToolCalls` and the budget at which the model is told, once, to conclude with what it
       * has rather than run into the limit; 1 never tells it. @default 0.8
       */
      wrapUpAt: z.number().min(0.1).max(1).default(0.8),
      /** History events after which the run continues as new at the next model step (Temporal's own suggestion also counts). @default 10000 */
      historyEvents: z.number().int().min(100).max(50_000).default(10_000),
    })
    .strict();

  const PriceSchema = z
    .object({ inputPerMTok: z.number().min(0), outputPerMTok: z.number().min(0) })
    .strict();

  /** Per-run spending limits, reserved before each model call. */
  const BudgetSchema = z
    .object({
      /** Total tokens (prompt and completion) the run may use. */
      maxTokens: z.number().int().min(1).optional(),
      /** Total cost in US dollars, from the price table. */
      maxCostUsd: z.number().positive().optional(),
      /** Completion tokens reserved for each call on top of its estimated prompt. @default 1024 */
      reserveOutputTokens: z.number().int().min(0).max(1_000_000).default(1024),
      /** `fail` ends the run; `approve` waits for an `approve` of toolCallId `budget`, which extends the budget by its original size. @default 'fail' */
      onExceed: z.enum(['fail', 'approve']).default('fail'),
      /** USD per million tokens by model name (longest prefix wins), over the defaults in prices.ts. */
      prices: z.record(z.string().min(1), PriceSchema).optional(),
    })
    .strict()
    .refine((b) => b.maxTokens !== undefined || b.maxCostUsd !== undefined, { message: 'set maxTokens, maxCostUsd or both' });

  const ApprovalSchema = z
    .object({
      /** Tool names whose calls wait for an `approve` update; `*` guards every tool. */
      tools: z.array(z.string().min(1)).min(1),
      /**
       * What `limits.approvalTimeoutMs` running out does: `fail` fails the run; `reject` rejects the calls still waiting,
       * tells the model nobody approved them in time, and goes on (a budget request still fails). @default 'fail'
       */
      onTimeout: z.enum(['fail', 'reject']).optional(),
      /** Share of `limits.approvalTimeoutMs` after which a wait still undecided raises an `approvalReminder` event. */
      reminderAt: z.number().gt(0).lt(1).optional(),
    })
    .strict();

  /** When the run summarises older turns before the model would refuse them (needs a known context window). */
  const CompactionSchema = z
    .object({
      /** Share of the context window the next request may fill before the run compacts first. @default 0.8 */
      threshold: z.number().min(0.1).max(1).default(0.8),
      /** Most recent messages kept verbatim by a compaction. @default 6 */
      keepRecentMessages: z.number().int().min(1).max(1_000).default(6),
    })
    .strict();

  /**
   * Who judges each answer and tool step: `rules` (free, deterministic), `model` (the model, asked for a decision), or
   * `{ custom: name }`, a critic the worker registers (`critics`), run as an activity with the model critic's request.
   */
  const CritiqueSchema = z.union([
    z.enum(['rules', 'model']),
    z.object({ custom: z.string().regex(CRITIC_NAME_PATTERN, `the critic's name ${CRITIC_NAME_RULE}`) }).strict(),
  ], { error: "must be 'rules', 'model' or { custom: '<critic name>' }" });

  /** Milliseconds within the bounds; a refusal says which (the path names the field). */
  const timeout = () =>
    z
      .number({ error: 'must be a number of milliseconds' })
      .int('must be a whole number of milliseconds')
      .min(MIN_TIMEOUT_MS, `must be at least ${MIN_TIMEOUT_MS} ms (1 second)`)
      .max(MAX_TIMEOUT_MS, `must be at most ${MAX_TIMEOUT_MS} ms (24 hours)`);

  /**
   * The run's per-state timeouts: how long its model requests may take. Each attempt of a model request (a model call,
   * the critic, a compaction) is also cut at `modelAttemptMs`, and then retried within its own bound.
   */
  const TimeoutsSchema = z
    .object({
      /** One attempt of a model call, the critic or a compaction; a stalled one is retried. @default 300000 (5 minutes) */
      modelAttemptMs: timeout().default(DEFAULT_TIMEOUTS.modelAttemptMs),
      /**
       * A model call (PLANNING, STREAMING), retries included; when it runs out the run moves to its next fallback model,
       * or fails with `ModelInvocationError.RetriesExhausted`. @default 1200000 (20 minutes)
       */
      modelCallMs: timeout().default(DEFAULT_TIMEOUTS.modelCallMs),
      /** The critic (CRITIQUE), model or custom, retries included; when it runs out the rule critic decides. @default 120000 (2 minutes) */
      criticMs: timeout().default(DEFAULT_TIMEOUTS.criticMs),
      /** A compaction (COMPACTING), retries included; when it runs out the run fails as a compaction that failed. @default 1200000 (20 minutes) */
      compactionMs: timeout().default(DEFAULT_TIMEOUTS.compactionMs),
    })
    .strict();

  /** The one input object of the `agentRun` workflow. */
  const AgentRunInputSchema = z
    .object({
      prompt: z.string().trim().min(1, 'must be a non-empty string'),
      /**
       * A named agent registered in the worker (`defineAgent`): its instructions, tools, model and settings, under the
       * fields given here (common/agents.ts, `applyAgent`). The client checks only the shape; the worker knows the names.
       */
      agent: z.string().regex(AGENT_NAME_PATTERN, AGENT_NAME_RULE).optional(),
      /** Model name for this run; the worker's `LLM_MODEL` when absent. */
      model: z.string().min(1).optional(),
      /**
       * Models tried in order when the one in use is gone (404), refuses the worker's keys (401/403), has spent its
       * quota (429 insufficient_quota), its retry budget on 5xx and overload errors, or its time (the call's 20-minute
       * activity timeout). `provider/model` names a provider configured on the worker (docs/models.md). @default []
       */
      fallbackModels: z.array(z.string().min(1)).max(20).default([]),
      /**
       * A prior conversation in OpenAI's Chat Completions format; `prompt` is the user turn that follows it. A system
       * message may only come first, and is the system prompt unless `systemPrompt` (or the agent's) is given.
       */
      messages: ConversationSchema.optional(),
      /** The result carries the whole conversation (`messages`, OpenAI's format), claim-checked like any large payload. @default false */
      returnMessages: z.boolean().default(false),
      systemPrompt: z.string().min(1).optional(),
      limits: LimitsSchema.default(() => LimitsSchema.parse({})),
      /** Tool names this run may use, named agents among them (each call a child run); every tool but the agents when absent. */
      tools: z.array(z.string().min(1)).optional(),
      /**
       * How a turn's tool calls run: `model` in the model's order wherever order can matter (a call with side effects
       * after every call before it; calls without side effects beside each other); `concurrent` all at once, as a
       * fan-out of named agents may want. @default 'model'
       */
      toolOrder: z.enum(['model', 'concurrent']).default('model'),
      /**
       * Ask the model for a plan before the first answer: `'steps'` for a list of steps, schema-checked (a malformed one
       * is asked for again, once), each with a status the critique moves and the view shows (docs/plan.md); `true` (or
       * `'text'`) for a free-text plan, as every run before `'steps'` had. @default false
       */
      plan: PlanOptionSchema.default(false),
      /**
       * `rules` is free and deterministic; `model` asks the model to judge each final answer and tool step;
       * `{ custom: 'name' }` asks the worker's critic of that name (`critics`), and a run naming one the worker lacks
       * fails at its start, naming the critics there are. @default 'rules'
       */
      critique: CritiqueSchema.default('rules'),
      /** A critic's `complete` with a lower confidence (0 to 100, the critic's own scale) is taken as `retry`. @default 50 */
      critiqueMinConfidence: z.number().min(0).max(100).default(50),
      /** Longest answer per model call in tokens, sent as the provider's output limit; a text answer cut off by it is continued. */
      maxOutputTokens: z.number().int().min(1).max(1_000_000).optional(),
      /**
       * The model's context window in tokens. With it (or a model the worker knows), the run compacts before a request
       * would fill `compaction.threshold` of it, instead of waiting for the provider to refuse.
       */
      contextWindowTokens: z.number().int().min(256).max(100_000_000).optional(),
      compaction: CompactionSchema.default(() => CompactionSchema.parse({})),
      /** How long each state's model requests may take (`TimeoutsSchema`); absent: today's values (`DEFAULT_TIMEOUTS`). */
      timeouts: TimeoutsSchema.optional(),
      approval: ApprovalSchema.optional(),
      budget: BudgetSchema.optional(),
      /** Its place in the fleet's provider budget (`LLM_TOKENS_PER_MINUTE` and the like): 0 goes first, 9 last. @default 5 */
      priority: z.number().int().min(0).max(9).optional(),
      /**
       * The tenant the run belongs to: the fleet's provider budget shares its room fairly between tenants, and the task
       * queue its dispatch (the tenant is the run's fairness key), so one that floods them does not starve the others
       * (docs/quota.md, "Fair share"). The gateway sets it from its caller. Absent: the one default tenant every run
       * without one shares.
       */
      tenant: z.string().min(1).max(200).optional(),
      /**
       * The namespace the run's `remember` and `recall` tools use (a user, an agent), under its tenant: memories
       * outlive the run (docs/memory.md). The tools are offered only to a run whose `tools` name them. @default 'default'
       */
      memory: z
        .object({ namespace: z.string().regex(MEMORY_NAME_PATTERN, MEMORY_NAME_RULE) })
        .strict()
        .optional(),
      /** After an answer, how long the run stays open for a `sendMessage` that continues the conversation. @default 0 */
      keepOpenMs: z.number().int().min(0).max(30 * 24 * 3600_000).default(0),
      /** Set by the workflow itself when it continues as new, and by `fork`: the snapshot to carry on from. */
      resume: z
        .object({
          kind: z.enum(['continue', 'fork']),
          /** A run snapshot of version `SNAPSHOT_VERSION`; checked for its version, state and step, the rest is the workflow's own output. */
          snapshot: z.looseObject({ schemaVersion: snapshotVersion(), phase: z.looseObject({ type: z.string() }), counters: z.looseObject({ step: z.number().int().min(0) }) }),
          origin: z.object({ workflowId: z.string(), step: z.number().int().min(0) }).strict().optional(),
          /**
           * A what-if fork's edits, applied to the carried snapshot when the fork starts: `model`, `systemPrompt`, a
           * `message` queued for the next model call, and `toolResults` (by tool call id) replacing a result already in
           * the conversation or, for a call made later, the result when it comes. A continued run carries `toolResults` on.
           */
          edits: z
            .object({
              toolResults: z.record(z.string(), z.string()).optional(),
              message: z.string().min(1).optional(),
              model: z.string().min(1).optional(),
              systemPrompt: z.string().min(1).optional(),
            })
            .strict()
            .optional(),
          /**
           * A what-if fork's recorded answers of the run it was forked from (those after the fork step), by the hash of
           * their requests: a model call's response, the model critic's decision (`critique`), a compaction's summary
           * (`summary`). The activities answer a request found here with its recorded answer until the first request that
           * is not (common/replay.ts). A continued run carries on those still unused.
           */
          replay: z
            .record(
              z.string(),
              z.union([
                z.looseObject({ text: z.string(), toolCalls: z.array(z.looseObject({})) }),
                z.looseObject({ critique: z.looseObject({ action: z.enum(['continue', 'retry', 'replan', 'complete']), reason: z.string(), confidence: z.number() }) }),
                z.looseObject({ summary: z.string() }),
              ]),
            )
            .optional(),
        })
        .strict()
        .optional(),
    })
    .strict();
  return { LimitsSchema, PriceSchema, BudgetSchema, ApprovalSchema, CompactionSchema, CritiqueSchema, TimeoutsSchema, PlanOptionSchema, AgentRunInputSchema };
};
export type RunInputSchemas = ReturnType<typeof buildRunInputSchemas>;
let shared: RunInputSchemas | undefined;
/** The process's one set of the run input's schemas, built on first use. */
export const runInputSchemas = (): RunInputSchemas => (shared ??= buildRunInputSchemas());

export type AgentRunInput = z.input<RunInputSchemas['AgentRunInputSchema']>;
export type ResolvedInput = z.output<RunInputSchemas['AgentRunInputSchema']>;
export type Limits = z.output<RunInputSchemas['LimitsSchema']>;
export type Budget = z.output<RunInputSchemas['BudgetSchema']>;
export type Price = z.output<RunInputSchemas['PriceSchema']>;
export type CompactionOptions = z.output<RunInputSchemas['CompactionSchema']>;
/** `rules`, `model` or `{ custom: name }`. */
export type Critique = z.output<RunInputSchemas['CritiqueSchema']>;
/** The run's per-state timeouts, every field set (`DEFAULT_TIMEOUTS` where the input gave none). */
export type RunTimeouts = z.output<RunInputSchemas['TimeoutsSchema']>;
/** The run's per-state timeouts as a start gives them: any field may be left to its default. */
export type RunTimeoutsInput = z.input<RunInputSchemas['TimeoutsSchema']>;

/** The name of the custom critic a run chose, or undefined for `rules` and `model`. */
export const customCritic = (critique: Critique | undefined): string | undefined => (typeof critique === 'object' ? critique.custom : undefined);

/** The failure of a run that names a critic the worker lacks: the name and the ones it has. */
export function unknownCriticMessage(name: string, known: readonly string[]): string {
  const have = known.length ? `the worker's critics: ${[...known].sort().join(', ')}` : 'the worker has no critics registered (createAgentWorker({ critics }))';
  return `unknown critic "${name}"; ${have}`;
}

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

/** `parseWith`, throwing the readable error: for update validators, whose throw refuses the update. */
export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const parsed = parseWith(schema, value, what);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

/** A run's input, checked and with its defaults: with the process's schemas unless given a set (the workflow's own). */
export function parseAgentRunInput(value: unknown, schemas: RunInputSchemas = runInputSchemas()): ParseResult<ResolvedInput> {
  const parsed = parseWith(schemas.AgentRunInputSchema, value, 'agentRun input');
  const problem = parsed.ok ? approvalProblem(parsed.value) : null;
  return problem ? { ok: false, error: `Invalid agentRun input: ${problem}` } : parsed;
}

/**
 * Cross-field rules the schema cannot say: approval tools the run's `tools` leave out (a call to one could never run),
 * and approval settings that only mean something with a deadline (`limits.approvalTimeoutMs` not null).
 */
export function approvalProblem(input: Pick<ResolvedInput, 'approval' | 'limits' | 'tools'>): string | null {
  const { tools } = input;
  const outside = tools ? (input.approval?.tools ?? []).filter((t) => t !== '*' && !tools.includes(t)) : [];
  if (outside.length > 0) return `approval.tools: ${outside.join(', ')} ${outside.length === 1 ? 'is' : 'are'} not among the run's tools (${tools!.join(', ')}): add ${outside.length === 1 ? 'it' : 'them'} to tools, or leave ${outside.length === 1 ? 'it' : 'them'} out of approval.tools`;
  if (input.limits.approvalTimeoutMs !== null) return null;
  if (input.approval?.reminderAt !== undefined) return 'approval.reminderAt: needs limits.approvalTimeoutMs (the window it is a share of), not null';
  if (input.approval?.onTimeout === 'reject') return "approval.onTimeout: 'reject' needs limits.approvalTimeoutMs, not null";
  return null;
}

export const AbortInputSchema = z.object({ reason: z.string().max(1_000).optional() }).strict();
export const ApproveInputSchema = z
  .object({
    toolCallId: z.string().min(1),
    approved: z.boolean(),
    /** Told to the model with the decision, in one user message after the turn's tool results. */
    feedback: z.string().max(10_000).optional(),
    /** Approve with these arguments instead of the model's; they must pass the tool's schema. */
    arguments: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/** Why `args` do not pass a tool's JSON `schema` (each field named), or null when they do. */
export function argumentsProblem(schema: Record<string, unknown>, args: unknown): string | null {
  const result = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]).safeParse(args);
  return result.success ? null : describeZodError(result.error);
}
/** `interrupt`: stop the work in flight for this message instead of queueing it for the next model call (README, "Steering"). */
export const SendMessageInputSchema = z.object({ text: z.string().trim().min(1).max(100_000), interrupt: z.boolean().optional().describe('Stop the work in flight for this message (docs/steering.md).') }).strict();

export type AbortInput = z.input<typeof AbortInputSchema>;
export type ApproveInput = z.input<typeof ApproveInputSchema>;
export type SendMessageInput = z.input<typeof SendMessageInputSchema>;

/**
 * A control update's deadline, set by the client: the run refuses an update whose delivery comes later (by workflow
 * time), so one that waited for a worker past the point where the client gave up is never applied. Optional: old
 * clients send none.
 */
const deadline = () => z.iso.datetime({ offset: true }).optional();
/**
 * Who sent the control (common/actor.ts): the run records it. Set by the client from its caller, never taken from an
 * HTTP body (the gateway's bodies are the inputs above, without it). Absent: the service.
 */
const by = () => ActorSchema.optional();
/** The arguments of the control updates: each input as clients give it, plus the deadline and who sent it. */
export const AbortUpdateSchema = AbortInputSchema.extend({ deadline: deadline(), by: by() });
export const ApproveUpdateSchema = ApproveInputSchema.extend({ deadline: deadline(), by: by() });
export const SendMessageUpdateSchema = SendMessageInputSchema.extend({ deadline: deadline(), by: by() });
/** The argument of the pause and resume updates. */
export const ControlUpdateSchema = z.object({ deadline: deadline(), by: by() }).strict();
/** The payloads of the abort, pause and resume signals (the fallback to runs without the updates): who sent it. */
export const AbortSignalSchema = AbortInputSchema.extend({ by: by() });
export const ControlSignalSchema = z.object({ by: by() }).strict();

export type AbortUpdateInput = z.input<typeof AbortUpdateSchema>;
export type ApproveUpdateInput = z.input<typeof ApproveUpdateSchema>;
export type SendMessageUpdateInput = z.input<typeof SendMessageUpdateSchema>;
export type ControlUpdateInput = z.input<typeof ControlUpdateSchema>;
export type AbortSignalInput = z.input<typeof AbortSignalSchema>;
export type ControlSignalInput = z.input<typeof ControlSignalSchema>;

