/**
 * The structured plan (`plan: 'steps'`): the planner's answer checked against a schema, and each step's status as the
 * critique moves it. A step is one round of work (the planner is asked so): the critique's `continue` ends the
 * current step and starts the next, `retry` marks it retried, `replan` marks it replanned and asks for a new plan,
 * whose steps replace those not begun; `complete` ends every step still open. Pure: zod and src/common only.
 */
import { z } from 'zod';
import { CritiqueAction } from '../common/states';
import type { PlanStep } from '../common/view';

/** Most steps a plan may have: the planner is asked for at most 6, and a longer answer is refused. */
export const MAX_PLAN_STEPS = 10;

/** The plan request's last message in steps mode: it names the turn's task and the answer's exact shape. */
export const stepsPlanInstruction = (task: string) =>
  `Before acting, plan this task:\n${task}\n` +
  'Reply with JSON only, no other text: {"steps": ["first step", "second step", ...]}, at most 6 steps. ' +
  'Make each step one round of tool calls, and the last step the final answer. Do not call tools now.';

/** What the re-ask says after the answer it could not read. */
export const planRetryInstruction = (error: string) =>
  `That is not a plan in the form asked for (${error}). Reply again with JSON only: {"steps": ["first step", "second step", ...]}.`;

/** The plan answer's schema, built when a run first reads a plan (most runs never plan). */
const buildPlanAnswerSchema = () => {
  const StepsSchema = z
    .array(z.union([z.string(), z.object({ title: z.string() }).transform((s) => s.title)]).pipe(z.string().trim().min(1, 'a step must not be empty').max(500, 'a step is at most 500 characters')))
    .min(1, 'a plan needs at least one step')
    .max(MAX_PLAN_STEPS, `a plan has at most ${MAX_PLAN_STEPS} steps`);
  return z.union([z.object({ steps: StepsSchema }), StepsSchema.transform((steps) => ({ steps }))]);
};
let planAnswerSchema: ReturnType<typeof buildPlanAnswerSchema> | undefined;

export type ParsedPlan = { ok: true; steps: string[] } | { ok: false; error: string };

/** The planner's answer as steps: `{"steps": [...]}` or a bare array, strings or `{title}` objects, in a code fence or not. */
export function parsePlan(text: string): ParsedPlan {
  const body = text
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '')
    .trim();
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { ok: false, error: 'the answer is not JSON' };
  }
  const parsed = (planAnswerSchema ??= buildPlanAnswerSchema()).safeParse(json);
  if (parsed.success) return { ok: true, steps: parsed.data.steps };
  const issue = parsed.error.issues[parsed.error.issues.length - 1];
  const at = issue.path.length ? ` at ${issue.path.join('.')}` : '';
  return { ok: false, error: `${issue.message}${at}` };
}

/** The plan's text, for the conversation and the view's `plan`: its steps numbered. */
export const planText = (steps: readonly string[]) => steps.map((step, i) => `${i + 1}. ${step}`).join('\n');

const isOpen = (step: PlanStep) => step.status === 'active' || step.status === 'retried' || step.status === 'pending';

/** The step the run works on: the first one begun and not ended. */
export const currentStep = (steps: readonly PlanStep[]): number => steps.findIndex((step) => step.status === 'active' || step.status === 'retried');

/** A new plan's steps after the ones already done or replanned; the first of them is the current step. */
export function withNewSteps(old: readonly PlanStep[] | undefined, titles: readonly string[]): PlanStep[] {
  const kept = (old ?? []).filter((step) => !isOpen(step));
  return [...kept, ...titles.map((title, i): PlanStep => ({ title, status: i === 0 ? 'active' : 'pending', attempts: 0 }))];
}

/** Where one critique decision moves the steps (see the module's comment). */
export function stepsAfter(steps: readonly PlanStep[], act: CritiqueAction): PlanStep[] {
  const at = currentStep(steps);
  if (act === CritiqueAction.COMPLETE) return steps.map((step) => (isOpen(step) ? { ...step, status: 'done' } : step));
  if (at === -1) return [...steps];
  const next = steps.map((step) => ({ ...step }));
  if (act === CritiqueAction.CONTINUE) {
    next[at].status = 'done';
    const following = next.findIndex((step, i) => i > at && step.status === 'pending');
    if (following !== -1) next[following].status = 'active';
  } else if (act === CritiqueAction.RETRY) {
    next[at] = { ...next[at], status: 'retried', attempts: next[at].attempts + 1 };
  } else if (act === CritiqueAction.REPLAN) {
    next[at].status = 'replanned';
  }
  return next;
}

/** Steps of the current plan done, of those it has (`replanned` ones are not its own any more). */
export function planProgress(steps: readonly PlanStep[]): { done: number; total: number; allDone: boolean } {
  const own = steps.filter((step) => step.status !== 'replanned');
  const done = own.filter((step) => step.status === 'done').length;
  return { done, total: own.length, allDone: own.length > 0 && done === own.length };
}

/** Whether every step of the plan is done. */
export const allStepsDone = (steps: readonly PlanStep[] | undefined): boolean => steps !== undefined && planProgress(steps).allDone;
