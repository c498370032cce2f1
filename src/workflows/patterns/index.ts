/**
 * Sub-agent patterns: workflows whose work is done by child `agentRun` workflows, one at a time.
 * `planExecute`: a planner, one executor per step, a synthesiser. `agentPipeline`: stages that each refine the
 * previous stage's output. Progress is the `patternState` query; the `abort` signal cancels the running child.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import {
  type AgentPipelineResult,
  parseAgentPipelineInput,
  parsePlanExecuteInput,
  type PlanExecuteResult,
  type StageResult,
  type StepResult,
} from '../../common/pattern-messages';
import { AgentState } from '../../common/states';
import { FailureType } from '../../common/failures';
import { executorPrompt, parseSteps, plannerPrompt, stagePrompt, synthesiserPrompt } from './prompts';
import { subAgents } from './sub-agents';

const invalidInput = (message: string) => ApplicationFailure.create({ type: FailureType.InvalidInput, message, nonRetryable: true });

export async function planExecute(rawInput: unknown): Promise<PlanExecuteResult> {
  const agents = subAgents('planExecute');
  const parsed = parsePlanExecuteInput(rawInput);
  if (!parsed.ok) {
    agents.end(AgentState.FAILED, parsed.error);
    throw invalidInput(parsed.error);
  }
  const { task, model, maxSteps, tools, limits, priority } = parsed.value;
  const common = { model, limits, ...(priority !== undefined ? { priority } : {}) };
  let plan: string[] = [];
  const steps: StepResult[] = [];
  const finish = (answer: string | null): PlanExecuteResult => {
    const status = agents.isAborted() ? AgentState.ABORTED : AgentState.COMPLETED;
    agents.end(status, agents.abortReason());
    return { status, answer, plan, steps, reason: agents.abortReason() };
  };

  const planner = await agents.run('planner', { ...common, prompt: plannerPrompt(task, maxSteps), tools: [] });
  if (planner.status !== AgentState.COMPLETED) return finish(null);
  plan = parseSteps(planner.answer ?? '', maxSteps, task);

  for (const [index, step] of plan.entries()) {
    if (agents.isAborted()) return finish(null);
    const outcome = await agents.run(`step-${index + 1}`, { ...common, prompt: executorPrompt(task, plan, steps, index), tools });
    steps.push({ step, ...outcome });
    if (outcome.status !== AgentState.COMPLETED) return finish(null);
  }

  if (agents.isAborted()) return finish(null);
  const synthesiser = await agents.run('synthesiser', { ...common, prompt: synthesiserPrompt(task, steps), tools: [] });
  return finish(synthesiser.status === AgentState.COMPLETED ? synthesiser.answer : null);
}

export async function agentPipeline(rawInput: unknown): Promise<AgentPipelineResult> {
  const agents = subAgents('agentPipeline');
  const parsed = parseAgentPipelineInput(rawInput);
  if (!parsed.ok) {
    agents.end(AgentState.FAILED, parsed.error);
    throw invalidInput(parsed.error);
  }
  const { task, stages, model, tools, limits, priority } = parsed.value;
  const results: StageResult[] = [];

  for (const stage of stages) {
    if (agents.isAborted()) break;
    const previous = results[results.length - 1];
    const outcome = await agents.run(stage.name, {
      prompt: stagePrompt(task, stage, previous),
      model: stage.model ?? model,
      tools: stage.tools ?? tools,
      limits,
      ...(priority !== undefined ? { priority } : {}),
    });
    results.push({ name: stage.name, ...outcome });
    if (outcome.status !== AgentState.COMPLETED) break;
  }

  const status = agents.isAborted() ? AgentState.ABORTED : AgentState.COMPLETED;
  agents.end(status, agents.abortReason());
  const answer = status === AgentState.COMPLETED ? (results[results.length - 1]?.answer ?? null) : null;
  return { status, answer, stages: results, reason: agents.abortReason() };
}
