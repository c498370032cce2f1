/**
 * Inputs, results and the progress query of the sub-agent patterns (`planExecute`, `agentPipeline`), shared by
 * the workflows and their callers. Each pattern runs child `agentRun` workflows under ids derived from its own.
 */
import { defineQuery } from '@temporalio/workflow';
import { z } from 'zod';
import { parseWith, runInputSchemas, type ParseResult } from './input';

export const PLAN_EXECUTE_WORKFLOW_TYPE = 'planExecute';
export const AGENT_PIPELINE_WORKFLOW_TYPE = 'agentPipeline';
/** The `AgentState` value of a pattern while its children run. */
export const RUNNING_CHILDREN = 'RUNNING_CHILDREN';

export const DEFAULT_STAGES: { name: string; instructions: string; model?: string; tools?: string[] }[] = [
  {
    name: 'designer',
    instructions: 'Design a solution to the task: the approach, the parts and how they fit together, and the risks. Do not write the full implementation.',
  },
  {
    name: 'coder',
    instructions: 'Implement the design from the previous stage. Give the complete code or the concrete result, not a description of it.',
  },
  {
    name: 'reviewer',
    instructions: "Review the previous stage's work against the task, fix any mistakes, and reply with the final, corrected result.",
  },
];

/**
 * The patterns' input schemas, built when a pattern parses its input, not when a module imports this one: every
 * `agentRun` evaluates the workflow bundle's modules in its own instances (BENCHMARKS.md, figures (g) and (h)).
 */
const buildInputSchemas = () => {
  const { LimitsSchema, AgentRunInputSchema } = runInputSchemas();
  const task = z.string().trim().min(1, 'must be a non-empty string');
  const tools = z.array(z.string().min(1));
  /**
   * Each child run's `priority`, as `agentRun` takes it (0 first, 9 last): its place in the fleet's provider budget and,
   * as Temporal's priority key, on the task queue. Absent: the children's default (5 in the budget), whatever the
   * pattern was started at.
   */
  const priority = AgentRunInputSchema.shape.priority;

  const PlanExecuteInputSchema = z
    .object({
      task,
      /** Model of every child; the worker's `LLM_MODEL` when absent. */
      model: z.string().min(1).optional(),
      /** Most steps the planner may propose; extra steps are dropped. @default 5 */
      maxSteps: z.number().int().min(1).max(20).default(5),
      /** Tools of the executors (the planner and the synthesiser get none); every tool when absent. */
      tools: tools.optional(),
      /** Limits of each child run. */
      limits: LimitsSchema.optional(),
      priority,
    })
    .strict();

  /** A stage name becomes part of the child's workflow id, so it is kept to a safe alphabet. */
  const stageName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/, 'must be 1-40 letters, digits, _ or -, starting with a letter or digit');

  const StageSchema = z
    .object({
      name: stageName,
      instructions: z.string().trim().min(1, 'must be a non-empty string'),
      model: z.string().min(1).optional(),
      tools: tools.optional(),
    })
    .strict();

  const AgentPipelineInputSchema = z
    .object({
      task,
      /** Stages in order; each gets the task and the previous stage's output. @default designer, coder, reviewer */
      stages: z
        .array(StageSchema)
        .min(1)
        .max(20)
        .refine((stages) => new Set(stages.map((s) => s.name)).size === stages.length, 'stage names must be unique')
        .default(() => DEFAULT_STAGES.map((s) => ({ ...s }))),
      /** Model of stages that name none; the worker's `LLM_MODEL` when absent. */
      model: z.string().min(1).optional(),
      /** Tools of stages that name none; every tool when absent. */
      tools: tools.optional(),
      /** Limits of each child run. */
      limits: LimitsSchema.optional(),
      priority,
    })
    .strict();
  return { PlanExecuteInputSchema, StageSchema, AgentPipelineInputSchema };
};
type InputSchemas = ReturnType<typeof buildInputSchemas>;
let built: InputSchemas | undefined;
/** The patterns' input schemas, built on first use. */
const patternInputSchemas = (): InputSchemas => (built ??= buildInputSchemas());

export type PlanExecuteInput = z.input<InputSchemas['PlanExecuteInputSchema']>;
export type AgentPipelineInput = z.input<InputSchemas['AgentPipelineInputSchema']>;
export type StageInput = z.input<InputSchemas['StageSchema']>;

export const parsePlanExecuteInput = (value: unknown): ParseResult<z.output<InputSchemas['PlanExecuteInputSchema']>> =>
  parseWith(patternInputSchemas().PlanExecuteInputSchema, value, 'planExecute input');
export const parseAgentPipelineInput = (value: unknown): ParseResult<z.output<InputSchemas['AgentPipelineInputSchema']>> =>
  parseWith(patternInputSchemas().AgentPipelineInputSchema, value, 'agentPipeline input');

export type PatternStatus = typeof RUNNING_CHILDREN | 'COMPLETED' | 'ABORTED' | 'FAILED';
export type ChildStatus = 'RUNNING' | 'COMPLETED' | 'ABORTED' | 'FAILED';

export interface ChildView {
  /** `planner`, `step-1`, `synthesiser`, or a pipeline stage name. */
  name: string;
  /** `<pattern workflow id>/<name>`. */
  workflowId: string;
  status: ChildStatus;
}

/** The `patternState` query answer. */
export interface PatternStateView {
  pattern: typeof PLAN_EXECUTE_WORKFLOW_TYPE | typeof AGENT_PIPELINE_WORKFLOW_TYPE;
  status: PatternStatus;
  /** Name of the child running now; null before the first and after the last. */
  stage: string | null;
  children: ChildView[];
  reason: string | null;
}

/** How a pattern ended; a failed child fails the pattern with `SubAgentFailed` instead. */
export type PatternResultStatus = 'COMPLETED' | 'ABORTED';

export interface StepResult {
  step: string;
  workflowId: string;
  status: ChildStatus;
  answer: string | null;
}

export interface PlanExecuteResult {
  status: PatternResultStatus;
  answer: string | null;
  plan: string[];
  steps: StepResult[];
  reason: string | null;
}

export interface StageResult {
  name: string;
  workflowId: string;
  status: ChildStatus;
  answer: string | null;
}

export interface AgentPipelineResult {
  status: PatternResultStatus;
  /** The last stage's answer. */
  answer: string | null;
  stages: StageResult[];
  reason: string | null;
}

/** Progress of a pattern. The `abort` signal of `messages.ts` stops it: the running child is cancelled. */
export const patternStateQuery = defineQuery<PatternStateView>('patternState');
