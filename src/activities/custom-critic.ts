/**
 * Custom critics: the worker's `critics`, each a function a run chooses by name (`critique: { custom: 'name' }`). It
 * gets the model critic's request (the task, the answer or the tool step's calls and results) and answers the same
 * decision, as the `customCritique` activity: retried, heartbeated and timed out as the model critic is
 * (`timeouts.criticMs`); when it fails for good, the rule critic decides, as when the model critic fails.
 */
import { ApplicationFailure } from '@temporalio/common';
import { CancelledFailure, Context } from '@temporalio/activity';
import { z } from 'zod';
import type { CritiqueOutcome, CritiqueRequest } from '../common/chat';
import { FailureType } from '../common/failures';
import { CRITIC_NAME_PATTERN, CRITIC_NAME_RULE, describeZodError, unknownCriticMessage } from '../common/input';
import { heartbeating } from './heartbeat';

/** What a critic answers: the model critic's decision; `confidence` (0 to 100) may be left out, and is then 100. */
export interface CriticDecision {
  /** `complete` ends the run with the answer; `continue` goes on after a tool step; `retry` and `replan` ask again. */
  action: 'continue' | 'retry' | 'replan' | 'complete';
  /** Told to the model with a `retry` or `replan`, and recorded as the run's `lastCritique`. */
  reason: string;
  /** A `complete` below the run's `critiqueMinConfidence` is taken as `retry`. @default 100 */
  confidence?: number;
}

/** What a critic is given beside the request. */
export interface CriticContext {
  /** Aborted when the run no longer needs the decision (an abort, an interrupt, a timeout). */
  signal: AbortSignal;
  /** The run's workflow id and run id. */
  workflowId: string;
  runId: string;
  /** The activity's attempt, from 1: a critic that threw is retried within `timeouts.criticMs`. */
  attempt: number;
}

/**
 * A critic: judges a final answer (`request.toolResults` absent) or a tool step against `request.task`. Throwing is
 * a failure, retried within the run's `timeouts.criticMs` (an `ApplicationFailure` with `nonRetryable` is final at once).
 */
export type Critic = (request: CritiqueRequest, context: CriticContext) => CriticDecision | Promise<CriticDecision>;

/** Thrown by a worker given bad `critics`: names the critic and what is wrong. */
export class InvalidCriticError extends Error {
  override name = 'InvalidCriticError';
}

const CriticDecisionSchema = z
  .object({
    action: z.enum(['continue', 'retry', 'replan', 'complete']),
    reason: z.string().trim().min(1, 'must be a non-empty string'),
    confidence: z.number().min(0).max(100).default(100),
  })
  .strict();

/** The worker's critics, checked: each name a critic name, each value a function. */
export function checkCritics(critics: Record<string, Critic> = {}): Map<string, Critic> {
  const checked = new Map<string, Critic>();
  for (const [name, critic] of Object.entries(critics)) {
    if (!CRITIC_NAME_PATTERN.test(name)) throw new InvalidCriticError(`critic "${name}": the name ${CRITIC_NAME_RULE}`);
    if (typeof critic !== 'function') throw new InvalidCriticError(`critic "${name}": must be a function (request, context) => decision, not ${typeof critic}`);
    checked.set(name, critic);
  }
  return checked;
}

export function createCustomCritics(given: Record<string, Critic> | undefined) {
  const critics = checkCritics(given);
  const names = [...critics.keys()];
  /** The named critic, or a non-retryable `UnknownCritic` failure naming those the worker has. */
  const critic = (name: string): Critic => {
    const found = critics.get(name);
    if (!found) throw ApplicationFailure.create({ type: FailureType.UnknownCritic, message: unknownCriticMessage(name, names), nonRetryable: true });
    return found;
  };
  return {
    /** A run's start that names a custom critic checks that the worker has it (a local activity, kept in history). */
    async checkCritic(name: string): Promise<void> {
      critic(name);
    },
    /** The run's custom critic's decision on the request, heartbeating while it works; cancelled at once. */
    async customCritique(request: CritiqueRequest): Promise<CritiqueOutcome> {
      const ctx = Context.current();
      const name = request.critic ?? '';
      const judge = critic(name);
      const { workflowExecution, attempt } = ctx.info;
      const context: CriticContext = { signal: ctx.cancellationSignal, workflowId: workflowExecution?.workflowId ?? '', runId: workflowExecution?.runId ?? '', attempt };
      const answer = await heartbeating(
        () => ({ critic: name, callNumber: request.callNumber }),
        () => Promise.race([Promise.resolve().then(() => judge(request, context)), ctx.cancelled]),
      );
      if (ctx.cancellationSignal.aborted) throw new CancelledFailure(`critic ${name} cancelled`);
      const parsed = CriticDecisionSchema.safeParse(answer);
      if (!parsed.success) {
        throw ApplicationFailure.create({ type: FailureType.CritiqueUnparsable, message: `critic "${name}" did not answer with a decision: ${describeZodError(parsed.error)}`, nonRetryable: true });
      }
      return parsed.data;
    },
  };
}
