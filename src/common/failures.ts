/**
 * Every failure type string the product raises, in one place: the activities throw them, the workflow branches on
 * them, and clients (CLI, gateway, a backend's own code) match on them. Plain constants, safe in workflow code.
 */

/** How a model provider's error is classified (activities/errors.ts); retried or final by class. */
export const ModelErrorType = {
  RateLimit: 'ModelInvocationError.RateLimit',
  ServerError: 'ModelInvocationError.ServerError',
  Timeout: 'ModelInvocationError.Timeout',
  Connection: 'ModelInvocationError.Connection',
  Authentication: 'ModelInvocationError.Authentication',
  PermissionDenied: 'ModelInvocationError.PermissionDenied',
  NotFound: 'ModelInvocationError.NotFound',
  BadRequest: 'ModelInvocationError.BadRequest',
  QuotaExceeded: 'ModelInvocationError.QuotaExceeded',
  ContextOverflow: 'ModelInvocationError.ContextOverflow',
  Unknown: 'ModelInvocationError.Unknown',
  /** A call spent its provider-failure budget on retryable errors (5xx, overload, rate limits, dropped streams). */
  RetriesExhausted: 'ModelInvocationError.RetriesExhausted',
} as const;
export type ModelErrorType = (typeof ModelErrorType)[keyof typeof ModelErrorType];

/** The product's own failures, beside the provider's. */
export const FailureType = {
  /** The run's input (or a carried snapshot) is invalid; the run fails at once, naming the field. */
  InvalidInput: 'InvalidInput',
  /** The workflow's failure when a run ends FAILED; its details hold the run's result. */
  AgentRunFailed: 'AgentRunFailed',
  /** A run names tools the worker does not have; raised before any model request. */
  UnknownTool: 'UnknownTool',
  /** A run names an agent the worker has not registered (`resolveAgent`); the run then fails at once as `InvalidInput`. */
  UnknownAgent: 'UnknownAgent',
  /**
   * A run names a custom critic the worker has not registered (`critics`): checked at the run's start, where the run
   * then fails as `InvalidInput`; a critic activity on a worker without it fails with it and the rule critic decides.
   */
  UnknownCritic: 'UnknownCritic',
  /** A worker cannot read a chained conversation back; the run then sends the whole conversation. */
  ConversationUnavailable: 'ConversationUnavailable',
  /** Nothing older than the task and the recent turns is left to summarise, or summaries did not converge. */
  CompactionImpossible: 'CompactionImpossible',
  /** The model critic did not answer with a decision; the run falls back to the rule critic. */
  CritiqueUnparsable: 'CritiqueUnparsable',
  /** An activity's worker process died mid-attempt; the next worker on its host handed the attempt back (retried at once). */
  WorkerCrashed: 'WorkerCrashed',
  /** A child run of a sub-agent pattern (plan-execute, pipeline) failed; the details name the stage and the child's workflow id. */
  SubAgentFailed: 'SubAgentFailed',
} as const;
export type FailureType = (typeof FailureType)[keyof typeof FailureType];
