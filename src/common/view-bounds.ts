/**
 * The view's bounds and the plan's step statuses, apart from the view's schemas (view.ts): the workflow needs these
 * constants in every run, and the schemas only where a view is parsed (the client, the gateway), so a run does not
 * build them.
 */

/** Where a structured plan's step stands (`PlanStep.status`). */
export const PLAN_STEP_STATUSES = ['pending', 'active', 'done', 'retried', 'replanned'] as const;
export type PlanStepStatus = (typeof PLAN_STEP_STATUSES)[number];

/** Transitions the view carries: the view of a run of 10,000 model calls is as small as one of 10. */
export const VIEW_TRANSITIONS = 50;
/** Child runs the view lists beside those still running. */
export const VIEW_CHILDREN = 20;
