/**
 * Counters of model calls, tool calls and tokens, on the activity's metric meter: they go wherever the Temporal
 * runtime exports metrics (Prometheus with AGENT_METRICS_PORT), tagged with the activity's namespace, task queue
 * and workflow type. Without a metrics exporter they cost nothing.
 */
import { Context } from '@temporalio/activity';
import type { ModelRequest, ModelResponse, QuotaWait, ToolResult } from '../common/chat';
import { isQuotaWait } from '../common/chat-helpers';

export const METRIC = {
  modelCalls: 'agent_model_calls',
  toolCalls: 'agent_tool_calls',
  tokens: 'agent_tokens',
  quotaWaits: 'agent_quota_waits',
} as const;

const meter = () => Context.current().metricMeter;

/** Counts each tool call the registry answered, by tool and outcome. */
export function recordToolCall(result: ToolResult): ToolResult {
  meter().createCounter(METRIC.toolCalls, 'calls', 'Tool calls, by tool and outcome').add(1, { tool: result.name, ok: String(result.ok) });
  return result;
}

/** Counts every attempt of a model call (failed ones too) and the tokens of those that answered, by the model asked for. */
export function withModelMetrics(callModel: (request: ModelRequest) => Promise<ModelResponse | QuotaWait>, defaultModel: string) {
  return async (request: ModelRequest): Promise<ModelResponse | QuotaWait> => {
    const model = request.model ?? defaultModel;
    const calls = meter().createCounter(METRIC.modelCalls, 'calls', 'Model call attempts, by model and outcome');
    let response: ModelResponse | QuotaWait;
    try {
      response = await callModel(request);
    } catch (err) {
      calls.add(1, { model, ok: 'false' });
      throw err;
    }
    if (isQuotaWait(response)) {
      meter().createCounter(METRIC.quotaWaits, 'calls', 'Model calls sent back to wait for the fleet\'s provider budget').add(1, { model });
      return response;
    }
    calls.add(1, { model, ok: 'true' });
    const tokens = meter().createCounter(METRIC.tokens, 'tokens', 'Tokens used, by kind (prompt, completion) and model');
    tokens.add(response.usage.promptTokens, { kind: 'prompt', model });
    tokens.add(response.usage.completionTokens, { kind: 'completion', model });
    return response;
  };
}
