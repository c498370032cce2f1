/**
 * A run's input as it starts. A run that names `agent` asks the worker for that agent's spec (`resolveAgent`, a local
 * activity whose answer history keeps, so replay never asks again) and lays its own fields over it (`applyAgent`).
 * A run that chooses a custom critic asks the worker whether it has it (`checkCritic`, a local activity too).
 * Every other run is parsed as it always was, with no await and no command: its history is what it was before agents.
 */
import { ActivityFailure, ApplicationFailure, isCancellation, proxyLocalActivities } from '@temporalio/workflow';
import type { AgentActivities } from '../activities';
import { applyAgent } from '../common/apply-agent';
import { FailureType } from '../common/failures';
import { AGENT_NAME_PATTERN, buildRunInputSchemas, customCritic, parseAgentRunInput, type ParseResult, type ResolvedInput } from '../common/input';

/** A lookup in the worker's memory: a failure other than an unknown name is a worker fault, retried a little. */
const { resolveAgent, checkCritic } = proxyLocalActivities<AgentActivities>({ startToCloseTimeout: '10 seconds', retry: { maximumAttempts: 3 } });

/** Whether the start names an agent; a malformed name is left to the input schema, which refuses it naming the field. */
export function namesAgent(raw: unknown): raw is Record<string, unknown> & { agent: string } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return false;
  const { agent } = raw as { agent?: unknown };
  return typeof agent === 'string' && AGENT_NAME_PATTERN.test(agent);
}

/** The start's fields over the named agent's; an unknown agent is invalid input, naming the agents the worker has. */
export async function withAgent(raw: Record<string, unknown> & { agent: string }): Promise<ParseResult<ResolvedInput>> {
  try {
    return parseAgentRunInput(applyAgent(await resolveAgent(raw.agent), raw), buildRunInputSchemas());
  } catch (err) {
    if (isCancellation(err)) throw err;
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure && cause.type === FailureType.UnknownAgent) return { ok: false, error: cause.message };
    const message = cause instanceof Error ? cause.message : String(cause);
    return { ok: false, error: `agent "${raw.agent}" could not be resolved: ${message}` };
  }
}

/** The custom critic a starting run must check first; none for a run continued as new (its first run checked it). */
export function critic(input: ParseResult<ResolvedInput>): string | undefined {
  return input.ok && input.value.resume?.kind !== 'continue' ? customCritic(input.value.critique) : undefined;
}

/** The input as it is when the worker has the critic; else invalid input, naming the critics the worker has. */
export async function withCritic(input: ParseResult<ResolvedInput>, name: string): Promise<ParseResult<ResolvedInput>> {
  try {
    await checkCritic(name);
    return input;
  } catch (err) {
    if (isCancellation(err)) throw err;
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure && cause.type === FailureType.UnknownCritic) return { ok: false, error: `Invalid agentRun input: critique.custom: ${cause.message}` };
    const message = cause instanceof Error ? cause.message : String(cause);
    return { ok: false, error: `critic "${name}" could not be checked: ${message}` };
  }
}
