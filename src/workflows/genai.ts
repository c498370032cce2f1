/**
 * The run as the GenAI conventions' `invoke_agent` operation: the attributes go on the workflow's own span (the one
 * Temporal's OpenTelemetry interceptors open around the run, `RunWorkflow:agentRun`), at its start and at its end with
 * the tokens the run spent. Without tracing there is no active span and nothing is written. Only span attributes:
 * no command, so histories are the same either way.
 */
import { trace } from '@opentelemetry/api';
import { GenAiAttribute as A, GenAiOperation } from '../common/genai';
import type { RunSnapshot } from '../machine/snapshot';

/** Marks the run's span as the agent's invocation: its id (the workflow id), name and the model it asks for. */
export function markRunSpan(s: RunSnapshot, agent: string | undefined): void {
  const span = trace.getActiveSpan();
  if (!span || !s.workflowId) return;
  span.setAttributes({
    [A.OPERATION]: GenAiOperation.INVOKE_AGENT,
    [A.AGENT_ID]: s.workflowId,
    [A.AGENT_NAME]: agent ?? 'agentRun',
    [A.CONVERSATION_ID]: s.workflowId,
    ...(s.options.model ? { [A.REQUEST_MODEL]: s.options.model } : {}),
  });
}

/** The tokens the run spent, the model that answered last, and how it ended, as it ends (or continues as new). */
export function endRunSpan(s: RunSnapshot): void {
  const span = trace.getActiveSpan();
  if (!span) return;
  span.setAttributes({
    [A.INPUT_TOKENS]: s.usage.promptTokens,
    [A.OUTPUT_TOKENS]: s.usage.completionTokens,
    ...(s.lastModel ? { [A.RESPONSE_MODEL]: s.lastModel } : {}),
    'agent.state': s.phase.type,
  });
}
